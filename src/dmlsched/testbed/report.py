"""Write a testbed run: ``results.csv`` (long form), ``slots.csv``, ``summary.md``, PNGs.

``results.csv`` has the project's columns
(experiment,setting,scheduler,param,value,seed,metric,metric_value) with
``param = "job"``: one group of rows per job id (``real_jct``, ``sim_jct``
— NaN where that side did not finish —, ``real_progress``,
``sim_progress``, ``sim_error``, ``sim_error_censored``, ``replay_jct``,
``replay_error`` — the run's own decisions at the model's rates, counted and
censored alike —, ``work`` (as the slots measured it), ``bytes``, ``final_loss``, ``accuracy``,
``preemptions``, ``moves``, ``resizes``, ``comm_seconds``,
``compute_seconds``) and one with ``value = "all"`` (:func:`run_metrics`).
``slots.csv`` has one row per job and slot (placement, executor action,
measured and predicted work, bytes, loss).

**Every job counted.**  The sim-vs-real error covers every job the testbed
or the simulator started (ran at least one slot).  With r, s the real and
simulated JCT (slots from the start of the arrival slot), p_r, p_s the
shares of the job's work each side did by the run's end (the testbed's: the
work measured at its slots' ends, what the engine credited — not what the
processes did while they were being stopped), C_r = the run's end − a and
C_s = T − a the times at which an unfinished job's JCT is censored:

* both finished: |s − r| / r;
* the testbed did not finish (its JCT is at least C_r) — counts as at
  least the missing part: max((C_r − s)⁺ / C_r, 1 − p_r);
* the simulator did not finish: max((C_s − r)⁺ / r, 1 − p_s);
* neither finished: |p_s − p_r| (the share of the work they disagree on).

The last three are flagged ``sim_error_censored``.  A job neither side
started (rejected, or queued to the end, by both) is not counted.  Medians
and 90th percentiles are over the counted jobs; ``finished_share_real`` and
``finished_share_sim`` are the shares of them each side finished.

**What the run says** (``summary.md`` and ``dmlsched testbed run``, from
:func:`run_notes`): a job that did not finish reads "did not finish (x%
done)", never NaN; a scheduler that placed nothing says why (rejections,
whether the jobs fit the empty cluster alone, a size parameter whose default
cannot fit); when the measured work per slot differs from the model's by
more than 50% (median over full slots: placements kept, no job completing
in the slot) the run suggests ``dmlsched testbed calibrate``; slots whose
decision and reconfiguration took more than 10% of the slot are counted as
*distorted* (the model trains for the whole slot) and those that took
longer than the slot as *overruns* — a loaded machine.
A machine can also be loaded without a slow slot: other work on the same
CPUs delays every training step a little (held-out ``pd-ors`` runs gave a
median error of 0.4% with the 1-minute load average below 1 and 5.4% at
5–9, with no distorted slot either way), so slots that began with the load
average above the machine's CPUs are counted as *loaded* and said.
The Gantt chart draws running, preempted (unallocated, later resumed) and
stalled (unallocated to the run's end, unfinished) slots differently and
marks each job's completion or where it was left unfinished.
"""

from __future__ import annotations

import csv
import inspect
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dmlsched.results import CellKey, append_rows, cell_rows, columns, scan_results
from dmlsched.testbed.predict import Prediction
from dmlsched.testbed.run import SlotRow, TestbedRun
from dmlsched.testbed.runtime import JobStatus
from dmlsched.testbed.workload import TestbedWorkload

__all__ = [
    "DISTORTED_SHARE",
    "SPEED_MISMATCH",
    "JobOutcome",
    "headline",
    "job_error",
    "job_metrics",
    "outcomes",
    "run_metrics",
    "run_notes",
    "write_run",
]

SPEED_MISMATCH = 0.5  # measured vs model work per slot beyond which a run suggests calibrating
DISTORTED_SHARE = 0.1  # share of a slot spent deciding and reconfiguring that distorts it


@dataclass(frozen=True)
class JobOutcome:
    """One job on both sides (module docstring); JCTs in slots from its arrival slot."""

    job: int
    counted: bool  # the testbed or the simulator started it
    real_done: bool
    real_jct: float  # the JCT if done, else the censoring time C_r
    real_progress: float
    real_work: float  # as measured at its slots' ends (what the engine credited)
    sim_done: bool
    sim_jct: float  # the JCT if done, else C_s = T − a
    sim_progress: float
    error: float  # NaN when not counted
    censored: bool

    def real_text(self) -> str:
        return f"{self.real_jct:.3f}" if self.real_done else _unfinished(self.real_progress)

    def sim_text(self) -> str:
        return f"{self.sim_jct:.3f}" if self.sim_done else _unfinished(self.sim_progress)

    def error_text(self) -> str:
        if not self.counted:
            return "— (never started)"
        return f"{'≥ ' if self.censored else ''}{100 * self.error:.1f}%"


def _unfinished(progress: float) -> str:
    # rounded down: an unfinished job never reads "100% done"
    return f"did not finish ({math.floor(100 * progress)}% done)"


def job_error(
    real_done: bool,
    real_jct: float,
    real_progress: float,
    sim_done: bool,
    sim_jct: float,
    sim_progress: float,
) -> tuple[float, bool]:
    """(|sim − real| / real, censored) with unfinished sides censored (module docstring).

    An unfinished side's JCT argument is its censoring time (C_r or C_s).
    """
    if real_done and sim_done:
        return abs(sim_jct - real_jct) / real_jct, False
    if sim_done:  # the testbed's JCT is at least C_r = real_jct
        late = max(0.0, real_jct - sim_jct) / real_jct if real_jct > 0 else 1.0
        return max(late, 1.0 - real_progress), True
    if real_done:  # the simulator's JCT is at least C_s = sim_jct
        late = max(0.0, sim_jct - real_jct) / real_jct if real_jct > 0 else 1.0
        return max(late, 1.0 - sim_progress), True
    return abs(sim_progress - real_progress), True


def outcomes(tw: TestbedWorkload, run: TestbedRun, pred: Prediction) -> dict[int, JobOutcome]:
    """Every job of the workload on both sides (module docstring)."""
    T = tw.workload.horizon
    ran = {r.job for r in run.rows if any(w for _, w, _ in r.placement)}
    credited = _credited(run)
    out = {}
    for job in tw.workload.jobs:
        j = job.id
        p_r = min(1.0, credited.get(j, 0.0) / job.total_work)
        real_done = j in run.real_jct
        r = run.real_jct[j] if real_done else max(0.0, float(run.slots_run - job.arrival))
        s_raw = pred.sim_jct.get(j, float("nan"))
        sim_done = math.isfinite(s_raw)
        s = s_raw if sim_done else float(T - job.arrival)
        p_s = 1.0 if sim_done else pred.sim_progress.get(j, 0.0)
        counted = j in ran or j in pred.sim_started or real_done or sim_done
        err, cens = job_error(real_done, r, 1.0 if real_done else p_r, sim_done, s, p_s)
        out[j] = JobOutcome(
            j,
            counted,
            real_done,
            r,
            1.0 if real_done else p_r,
            credited.get(j, 0.0),
            sim_done,
            s,
            p_s,
            err if counted else float("nan"),
            cens and counted,
        )
    return out


def _credited(run: TestbedRun) -> dict[int, float]:
    """Each job's work as measured at its slots' ends (what the engine credited)."""
    out: dict[int, float] = {}
    for row in run.rows:
        out[row.job] = out.get(row.job, 0.0) + row.work
    return out


def job_metrics(tw: TestbedWorkload, run: TestbedRun, pred: Prediction) -> dict[int, dict]:
    out = {}
    outs = outcomes(tw, run, pred)
    for job in tw.workload.jobs:
        j = job.id
        o = outs[j]
        st = run.status.get(j)
        real = run.real_jct.get(j, float("nan"))
        rep = pred.replay_jct.get(j, float("nan"))
        rep_err = float("nan")
        if o.counted:  # the run's own decisions at the model's rates, censored alike
            done = math.isfinite(rep)
            rep_err, _ = job_error(
                o.real_done, o.real_jct, o.real_progress, done, rep if done else o.sim_jct, 0.0
            )
        curve = run.loss_curves.get(j) or []
        out[j] = {
            "arrival": float(job.arrival),
            "epochs": float(job.epochs),
            "real_jct": real,
            "sim_jct": pred.sim_jct.get(j, float("nan")),
            "real_progress": o.real_progress,
            "sim_progress": o.sim_progress,
            "sim_error": o.error,
            "sim_error_censored": float(o.censored),
            "replay_jct": rep,
            "replay_error": rep_err,
            "work": o.real_work,
            "bytes": float(st.bytes) if st else 0.0,
            "final_loss": curve[-1][2] if curve else float("nan"),
            "accuracy": st.accuracy if st and st.accuracy is not None else float("nan"),
            "preemptions": float(run.preemptions.get(j, 0)),
            "moves": float(run.moves.get(j, 0)),
            "resizes": float(run.resizes.get(j, 0)),
            "comm_seconds": st.comm_s if st else 0.0,
            "compute_seconds": st.compute_s if st else 0.0,
            "rejected": float(j in run.rejected),
        }
    return out


def _speed_error(run: TestbedRun, pred: Prediction) -> tuple[float, int]:
    """(median |measured − model| / model work over full slots, how many).

    A full slot is one a job kept its placement through and in which no job
    completed: a job that completes works part of the slot, and the others
    speed up on the links it leaves, while ``pred_work`` is the rate of the
    slot's placements held for the whole slot."""
    last: dict[int, int] = {}
    for r in pred.rows:
        last[r.job] = max(last.get(r.job, r.slot), r.slot)
    ended = {last[j] for j in run.real_jct if j in last}
    errs = [
        abs(r.work - r.pred_work) / r.pred_work
        for r in pred.rows
        if r.action == "keep"
        and r.slot not in ended
        and r.pred_work > 0
        and math.isfinite(r.pred_work)
    ]
    return (float(np.median(errs)) if errs else float("nan")), len(errs)


def _slot_overheads(run: TestbedRun) -> tuple[int, int]:
    """(distorted slots, overrun slots): decision + reconfiguration > 10% / > 100% of a slot."""
    spent = [d + a for d, a in zip(run.decide_s, run.apply_s, strict=False)]
    S = run.slot_seconds
    return sum(x > DISTORTED_SHARE * S for x in spent), sum(x > S for x in spent)


def _loaded_slots(run: TestbedRun) -> int:
    """Slots that began with the 1-minute load average above the machine's CPUs."""
    return sum(x > run.cpus for x in run.load) if run.cpus else 0


def run_metrics(tw: TestbedWorkload, run: TestbedRun, pred: Prediction) -> dict[str, float]:
    per = job_metrics(tw, run, pred)
    outs = outcomes(tw, run, pred)
    counted = [o for o in outs.values() if o.counted]
    errs = [o.error for o in counted]
    real = [m["real_jct"] for m in per.values() if math.isfinite(m["real_jct"])]
    rerrs = [m["replay_error"] for m in per.values() if math.isfinite(m["replay_error"])]
    T = tw.workload.horizon
    utility = sum(
        job.utility(run.completion_slot[job.id] - job.arrival)
        for job in tw.workload.jobs
        if job.id in run.completion_slot
    )
    slot_err, _ = _speed_error(run, pred)
    distorted, overrun = _slot_overheads(run)
    nan = float("nan")
    n = len(counted)
    return {
        "completed_jobs": float(len(real)),
        "counted_jobs": float(n),
        "censored_jobs": float(sum(o.censored for o in counted)),
        "finished_share_real": sum(o.real_done for o in counted) / n if n else nan,
        "finished_share_sim": sum(o.sim_done for o in counted) / n if n else nan,
        "mean_real_jct": float(np.mean(real)) if real else nan,
        "mean_sim_jct": pred.sim_metrics.get("mean_jct", nan),
        "median_sim_error": float(np.median(errs)) if errs else nan,
        "p90_sim_error": float(np.percentile(errs, 90)) if errs else nan,
        "max_sim_error": float(np.max(errs)) if errs else nan,
        "median_replay_error": float(np.median(rerrs)) if rerrs else nan,
        "p90_replay_error": float(np.percentile(rerrs, 90)) if rerrs else nan,
        "median_slot_rate_error": slot_err,
        "total_utility_real": float(utility),
        "total_utility_sim": pred.sim_metrics.get("total_utility", nan),
        "completed_jobs_sim": pred.sim_metrics.get("completed_jobs", nan),
        "total_bytes": float(sum(m["bytes"] for m in per.values())),
        "total_preemptions": float(sum(m["preemptions"] for m in per.values())),
        "wall_seconds": run.wall_s,
        "slots_run": float(run.slots_run),
        "horizon": float(T),
        "distorted_slots": float(distorted),
        "overrun_slots": float(overrun),
        "loaded_slots": float(_loaded_slots(run)),
        "mean_decide_seconds": float(np.mean(run.decide_s)) if run.decide_s else 0.0,
        "mean_reconfigure_seconds": float(np.mean(run.apply_s)) if run.apply_s else 0.0,
    }


def _why_nothing(tw: TestbedWorkload, run: TestbedRun, params: dict | None) -> str:
    """Why the scheduler placed no job (module docstring)."""
    from dmlsched.schedulers._shared.alone import alone_rate
    from dmlsched.schedulers.protocols import registry

    wl = tw.workload
    rej = sorted(run.rejected)
    never = sorted(j.id for j in wl.jobs if j.id not in run.rejected)
    parts = []
    if rej:
        parts.append(f"it rejected job{'s' if len(rej) > 1 else ''} {_ids(rej)}")
    if never:
        parts.append(f"left job{'s' if len(never) > 1 else ''} {_ids(never)} unplaced")
    fits = [(j, *alone_rate(j, wl)) for j in wl.jobs]
    fit = [(j, w) for j, r, w in fits if r > 0]
    if len(fit) == len(fits):
        j0, w0 = fit[0]
        parts.append(f"yet every job fits the empty cluster alone (job {j0.id} with {w0} workers)")
    elif not fit:
        parts.append("no job fits the empty cluster alone")
    text = f"{run.scheduler} placed no job in {run.slots_run} slots: " + "; ".join(parts)
    # a size parameter whose default cannot fit the cluster (FIFO's and DRF's [1, 30] workers)
    cls = registry("cluster").get(("cluster", run.scheduler))
    sig = inspect.signature(cls) if cls is not None else None
    given = params or {}
    if sig is not None and "max_workers" in sig.parameters and "max_workers" not in given:
        default = sig.parameters["max_workers"].default
        procs = int(wl.cluster.capacity[:, 1].sum())  # one CPU per testbed process
        if isinstance(default, int) and default >= procs:
            text += (
                f". Its gangs are drawn up to max_workers = {default} workers (+ PSs), and the "
                f"{wl.cluster.machines} machines hold {procs} processes: try "
                f"--param max_workers={max(1, procs // 2)} (W workers and up to W PSs)"
            )
    return text


def _ids(ids: list[int]) -> str:
    return ", ".join(map(str, ids))


def run_notes(
    tw: TestbedWorkload, run: TestbedRun, pred: Prediction, params: dict | None = None
) -> list[str]:
    """What the run says in words (module docstring): one sentence each."""
    notes: list[str] = []
    outs = outcomes(tw, run, pred)
    if not any(any(w for _, w, _ in r.placement) for r in run.rows):
        notes.append(_why_nothing(tw, run, params))
    for o in sorted(outs.values(), key=lambda o: o.job):
        if o.counted and not o.real_done:
            notes.append(f"job {o.job} {_unfinished(o.real_progress)} on the testbed")
    err, n = _speed_error(run, pred)
    if n and err > SPEED_MISMATCH:
        notes.append(
            f"measured work per slot differs from the model's by {100 * err:.0f}% (median over "
            f"{n} full job-slots): calibrate this machine — `dmlsched testbed calibrate --out "
            f"cal/ --emulation ...` — and run with --profile cal/profile.json"
        )
    distorted, overrun = _slot_overheads(run)
    if distorted:
        notes.append(
            f"{distorted} of {len(run.apply_s)} slots spent more than "
            f"{100 * DISTORTED_SHARE:.0f}% of their {run.slot_seconds:g} s deciding and "
            f"reconfiguring ({overrun} longer than the slot): a loaded machine distorts the "
            "run (the model trains for the whole slot)"
        )
    loaded = _loaded_slots(run)
    if loaded:
        notes.append(
            f"{loaded} of {len(run.load)} slots began with the 1-minute load average above "
            f"the machine's {run.cpus} CPUs (up to {max(run.load):.1f}): other work slowed "
            "the training processes; run on a quiet machine to measure the model's error"
        )
    return notes


def headline(tw: TestbedWorkload, run: TestbedRun, pred: Prediction) -> str:
    """One line: finished jobs on both sides and the error over every counted job."""
    m = run_metrics(tw, run, pred)
    n = len(tw.workload.jobs)
    real = f"{m['completed_jobs']:.0f}/{n} jobs finished on the testbed"
    sim = f"{m['completed_jobs_sim']:.0f}/{n} in the simulator"
    if not m["counted_jobs"]:
        return f"{real}, {sim}; no job started on either side"
    cens = f", {m['censored_jobs']:.0f} censored" if m["censored_jobs"] else ""
    return (
        f"{real}, {sim}; |sim − real| / real JCT over the {m['counted_jobs']:.0f} jobs either "
        f"started{cens}: median {100 * m['median_sim_error']:.1f}%, "
        f"p90 {100 * m['p90_sim_error']:.1f}%"
    )


def _fmt(v: float) -> str:
    return f"{v:.4g}" if math.isfinite(v) else "n/a"


def write_results(
    path: Path,
    experiment: str,
    run: TestbedRun,
    per: dict[int, dict],
    summary: dict[str, float],
) -> Path:
    """``path`` (re)written with a row per job metric (``per``: :func:`job_metrics`) and
    per summary metric (``summary``: :func:`run_metrics`'s); returns ``path``."""
    path.unlink(missing_ok=True)
    rows = []
    for j, m in per.items():
        rows += cell_rows(experiment, "cluster", CellKey(run.scheduler, str(j), run.seed), "job", m)
    rows += cell_rows(
        experiment, "cluster", CellKey(run.scheduler, "all", run.seed), "job", summary
    )
    append_rows(path, rows)
    return path


def write_run(
    out: Path,
    tw: TestbedWorkload,
    run: TestbedRun,
    pred: Prediction,
    *,
    experiment: str = "testbed-run",
    title: str = "",
    params: dict | None = None,
) -> Path:
    """Write every output file of one run into ``out``; returns ``results.csv``."""
    out.mkdir(parents=True, exist_ok=True)
    per = job_metrics(tw, run, pred)
    summary = run_metrics(tw, run, pred)
    results = write_results(out / "results.csv", experiment, run, per, summary)
    outs = outcomes(tw, run, pred)
    with (out / "slots.csv").open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["slot", "job", "placement", "action", "work", "pred_work", "bytes", "loss"])
        for r in sorted(pred.rows, key=lambda r: (r.slot, r.job)):
            pl = " ".join(f"m{m}:{wk}w{s}p" for m, wk, s in r.placement)
            w.writerow(
                [
                    r.slot,
                    r.job,
                    pl,
                    r.action,
                    repr(r.work),
                    repr(r.pred_work),
                    r.bytes,
                    repr(r.loss),
                ]
            )
    _gantt(out / "gantt.png", tw, pred, run, outs)
    _loss(out / "loss.png", run)
    lines = [
        f"# {title or f'testbed run: {run.scheduler}'}",
        "",
        "Workload: " + "; ".join(tw.workload.notes),
        "",
        headline(tw, run, pred) + ".",
        "",
    ]
    lines += [f"- {n}" for n in [*run.notes, *run_notes(tw, run, pred, params)]]
    lines += [
        "",
        "| job | arrival | E | real JCT | sim JCT | error | replay JCT | placements | "
        "preempt/move/resize | final loss | accuracy |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    shapes: dict[int, list[str]] = {}
    for r in sorted(pred.rows, key=lambda r: r.slot):
        s = "+".join(f"{wk}w{s}p@m{m}" for m, wk, s in r.placement)
        if not shapes.get(r.job) or shapes[r.job][-1] != s:
            shapes.setdefault(r.job, []).append(s)
    for j, m in per.items():
        o = outs[j]
        rep = _fmt(m["replay_jct"]) if math.isfinite(m["replay_jct"]) else "—"
        lines.append(
            f"| {j} | {m['arrival']:.0f} | {m['epochs']:.0f} | {o.real_text()} | "
            f"{o.sim_text()} | {o.error_text()} | {rep} | "
            f"{' → '.join(shapes.get(j, ['never placed']))} | {m['preemptions']:.0f}/"
            f"{m['moves']:.0f}/{m['resizes']:.0f} | {_fmt(m['final_loss'])} | "
            f"{_fmt(m['accuracy'])} |"
        )
    lines += ["", "| metric | value |", "|---|---|"]
    lines += [f"| {k} | {_fmt(v)} |" for k, v in summary.items()]
    lines += ["", "![placements](gantt.png)", "", "![loss](loss.png)", ""]
    (out / "summary.md").write_text("\n".join(lines))
    return results


def _job_states(
    run: TestbedRun, outs: dict[int, JobOutcome], arrival: dict[int, int]
) -> dict[int, dict[int, str]]:
    """Per job, per slot from its first placement to the run's end: running, preempted, stalled."""
    placed: dict[int, set[int]] = {}
    for r in run.rows:
        if any(w for _, w, _ in r.placement):
            placed.setdefault(r.job, set()).add(r.slot)
    out: dict[int, dict[int, str]] = {}
    for j, slots in placed.items():
        o = outs[j]
        end = (
            min(run.slots_run, math.ceil(arrival[j] + o.real_jct)) if o.real_done else run.slots_run
        )
        last = max(slots)
        states = {}
        for t in range(min(slots), end):
            if t in slots:
                states[t] = "running"
            elif not o.real_done and t > last:
                states[t] = "stalled"
            else:
                states[t] = "preempted"
        out[j] = states
    return out


def _gantt(
    path: Path,
    tw: TestbedWorkload,
    pred: Prediction,
    run: TestbedRun,
    outs: dict[int, JobOutcome],
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    H = tw.workload.cluster.machines
    arrival = {j.id: j.arrival for j in tw.workload.jobs}
    cmap = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(9, 1.4 + 0.9 * H))
    lane = 0.8 / 4

    def y_of(m: int, j: int) -> float:
        return m - 0.4 + 0.8 * (j % 4) / 4

    where: dict[int, tuple[int, ...]] = {}  # the machines of each job's last placement so far
    by_slot = sorted(pred.rows, key=lambda r: r.slot)
    for r in by_slot:
        for m, w, s in r.placement:
            y = y_of(m, r.job)
            ax.broken_barh([(r.slot, 1)], (y, lane), color=cmap(r.job % 10), alpha=0.85)
            ax.text(r.slot + 0.05, y + 0.1 / 4, f"j{r.job} {w}w{s}p", fontsize=6, va="bottom")
    states = _job_states(run, outs, arrival)
    for j, per in states.items():
        for t, state in sorted(per.items()):
            rows_now = [r for r in by_slot if r.job == j and r.slot <= t and r.placement]
            if rows_now:
                where[j] = tuple(m for m, _, _ in rows_now[-1].placement)
            if state == "running":
                continue
            style: dict[str, Any] = (
                {"facecolor": "none", "edgecolor": "0.4", "hatch": "///"}
                if state == "preempted"
                else {"facecolor": "none", "edgecolor": "tab:red", "hatch": "xxx"}
            )
            for m in where.get(j, ()):
                ax.broken_barh([(t, 1)], (y_of(m, j), lane), lw=0.6, **style)
    for j, o in outs.items():
        if j not in states or not where.get(j):
            continue
        m0 = where[j][0]
        y = y_of(m0, j) + lane / 2
        if o.real_done:
            ax.plot([arrival[j] + o.real_jct], [y], marker="D", color="black", ms=5)
        else:
            ax.plot([run.slots_run], [y], marker="X", color="tab:red", ms=7)
            ax.text(
                run.slots_run + 0.1,
                y,
                f"j{j} {math.floor(100 * o.real_progress)}%",
                fontsize=6,
                va="center",
                color="tab:red",
            )
    ax.set_yticks(range(H), [f"machine {h}" for h in range(H)])
    ax.set_xlabel("slot")
    ax.set_title(f"{run.scheduler}: placements per slot (w = workers, p = PSs)")
    legend = [
        Patch(facecolor="0.6", label="running (colour = job)"),
        Patch(facecolor="none", edgecolor="0.4", hatch="///", label="preempted"),
        Patch(facecolor="none", edgecolor="tab:red", hatch="xxx", label="stalled"),
        Line2D([], [], marker="D", color="black", ls="", label="finished"),
        Line2D([], [], marker="X", color="tab:red", ls="", label="did not finish (% done)"),
    ]
    ax.legend(handles=legend, fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=5)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _loss(path: Path, run: TestbedRun) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for j, curve in sorted(run.loss_curves.items()):
        if curve:
            t = [(c[0] - run.start_time) / run.slot_seconds for c in curve]
            ax.plot(t, [c[2] for c in curve], label=f"job {j}", lw=1)
    ax.set_xlabel("slot (wall time)")
    ax.set_ylabel("training loss (mean per sample)")
    ax.set_yscale("log")
    if any(run.loss_curves.values()):
        ax.legend(fontsize=7, ncol=2)
    ax.set_title(f"{run.scheduler}: loss curves")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


_PLACED = re.compile(r"m(\d+):(\d+)w(\d+)p")  # slots.csv's "m0:2w1p m1:0w1p"

#: what a run's report keeps of what distorted it (``write_run``'s summary rows)
DISTORTION = ("distorted_slots", "overrun_slots", "loaded_slots")


def load_run(report: Path, slot_seconds: float) -> tuple[TestbedRun, dict[str, float]]:
    """A run as far as its report (:func:`write_run`'s ``results.csv`` and ``slots.csv``)
    keeps it — placements, measured work and bytes per slot, each job's work, real JCT
    and counts, the slots run — and the report's summary row; enough to
    :func:`~dmlsched.testbed.predict.predict` it again with another speed model or engine.
    Not kept: per-slot loads and timings, loss curves (the summary's distortion counts
    stand for them)."""
    cols = columns(scan_results(report / "results.csv").rows)
    per: dict[str, dict[str, float]] = {}
    for v, m, x in zip(cols["value"], cols["metric"], cols["metric_value"], strict=True):
        per.setdefault(str(v), {})[str(m)] = float(x)
    summary = per.pop("all", {})
    run = TestbedRun(
        str(cols["scheduler"][0]),
        int(cols["seed"][0]),
        slot_seconds,
        slots_run=int(summary.get("slots_run", 0)),
        wall_s=summary.get("wall_seconds", 0.0),
    )
    for v, m in per.items():
        j = int(v)
        run.status[j] = JobStatus(work=m["work"], bytes=int(m["bytes"]))
        if math.isfinite(m["real_jct"]):
            run.real_jct[j] = m["real_jct"]
            run.completion_slot[j] = int(m["arrival"] + m["real_jct"])
        if m.get("rejected"):
            run.rejected.add(j)
        for name, into in (
            ("preemptions", run.preemptions),
            ("moves", run.moves),
            ("resizes", run.resizes),
        ):
            if m.get(name):
                into[j] = int(m[name])
    with (report / "slots.csv").open(newline="") as f:
        for r in csv.DictReader(f):
            placement = tuple(
                (int(m), int(w), int(p)) for m, w, p in _PLACED.findall(r["placement"])
            )
            run.rows.append(
                SlotRow(
                    int(r["slot"]),
                    int(r["job"]),
                    placement,
                    r["action"],
                    float(r["work"]),
                    int(r["bytes"]),
                    float(r["loss"]),
                )
            )
    return run, summary
