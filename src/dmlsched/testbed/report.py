"""Write a testbed run: ``results.csv`` (long form), ``slots.csv``, ``summary.md``, PNGs.

``results.csv`` has the project's columns
(experiment,setting,scheduler,param,value,seed,metric,metric_value) with
``param = "job"``: one group of rows per job id (``real_jct``, ``sim_jct``,
``sim_error`` = |sim − real| / real, ``replay_jct``, ``replay_error``,
``work``, ``bytes``, ``final_loss``, ``accuracy``, ``preemptions``,
``moves``, ``resizes``, ``comm_seconds``, ``compute_seconds``) and one with
``value = "all"`` (means, medians, utilities, wall time, decision and
reconfiguration seconds).  ``slots.csv`` has one row per job and slot
(placement, executor action, measured and predicted work, bytes, loss).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from dmlsched.experiments.results import CellKey, append_rows, cell_rows
from dmlsched.testbed.run import Prediction, TestbedRun
from dmlsched.testbed.workload import TestbedWorkload

__all__ = ["job_metrics", "run_metrics", "write_run"]


def _err(sim: float, real: float) -> float:
    if not (math.isfinite(sim) and math.isfinite(real)) or real <= 0:
        return float("nan")
    return abs(sim - real) / real


def job_metrics(tw: TestbedWorkload, run: TestbedRun, pred: Prediction) -> dict[int, dict]:
    out = {}
    for job in tw.workload.jobs:
        j = job.id
        st = run.status.get(j)
        real = run.real_jct.get(j, float("nan"))
        sim = pred.sim_jct.get(j, float("nan"))
        rep = pred.replay_jct.get(j, float("nan"))
        curve = run.loss_curves.get(j) or []
        out[j] = {
            "arrival": float(job.arrival),
            "epochs": float(job.epochs),
            "real_jct": real,
            "sim_jct": sim,
            "sim_error": _err(sim, real),
            "replay_jct": rep,
            "replay_error": _err(rep, real),
            "work": st.work if st else 0.0,
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


def run_metrics(tw: TestbedWorkload, run: TestbedRun, pred: Prediction) -> dict[str, float]:
    per = job_metrics(tw, run, pred)
    real = [m["real_jct"] for m in per.values() if math.isfinite(m["real_jct"])]
    errs = [m["sim_error"] for m in per.values() if math.isfinite(m["sim_error"])]
    rerrs = [m["replay_error"] for m in per.values() if math.isfinite(m["replay_error"])]
    T = tw.workload.horizon
    utility = sum(
        job.utility(run.completion_slot[job.id] - job.arrival)
        for job in tw.workload.jobs
        if job.id in run.completion_slot
    )
    slot_errs = [
        abs(r.pred_work - r.work) / r.work
        for r in pred.rows
        if r.action == "keep" and r.work > 0 and math.isfinite(r.pred_work)
    ]
    nan = float("nan")
    return {
        "completed_jobs": float(len(real)),
        "mean_real_jct": float(np.mean(real)) if real else nan,
        "mean_sim_jct": pred.sim_metrics.get("mean_jct", nan),
        "median_sim_error": float(np.median(errs)) if errs else nan,
        "median_replay_error": float(np.median(rerrs)) if rerrs else nan,
        "median_slot_rate_error": float(np.median(slot_errs)) if slot_errs else nan,
        "total_utility_real": float(utility),
        "total_utility_sim": pred.sim_metrics.get("total_utility", nan),
        "completed_jobs_sim": pred.sim_metrics.get("completed_jobs", nan),
        "total_bytes": float(sum(m["bytes"] for m in per.values())),
        "total_preemptions": float(sum(m["preemptions"] for m in per.values())),
        "wall_seconds": run.wall_s,
        "slots_run": float(run.slots_run),
        "horizon": float(T),
        "mean_decide_seconds": float(np.mean(run.decide_s)) if run.decide_s else 0.0,
        "mean_reconfigure_seconds": float(np.mean(run.apply_s)) if run.apply_s else 0.0,
    }


def write_run(
    out: Path,
    tw: TestbedWorkload,
    run: TestbedRun,
    pred: Prediction,
    *,
    experiment: str = "testbed-run",
    title: str = "",
) -> Path:
    """Write every output file of one run into ``out``; returns ``results.csv``."""
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.csv"
    results.unlink(missing_ok=True)
    per = job_metrics(tw, run, pred)
    rows = []
    for j, m in per.items():
        rows += cell_rows(experiment, "cluster", CellKey(run.scheduler, str(j), run.seed), "job", m)
    summary = run_metrics(tw, run, pred)
    rows += cell_rows(
        experiment, "cluster", CellKey(run.scheduler, "all", run.seed), "job", summary
    )
    append_rows(results, rows)
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
    _gantt(out / "gantt.png", tw, pred, run)
    _loss(out / "loss.png", run)
    lines = [
        f"# {title or f'testbed run: {run.scheduler}'}",
        "",
        "Workload: " + "; ".join(tw.workload.notes),
        "",
    ]
    lines += [f"- {n}" for n in run.notes]
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
        lines.append(
            f"| {j} | {m['arrival']:.0f} | {m['epochs']:.0f} | {m['real_jct']:.3f} | "
            f"{m['sim_jct']:.3f} | {100 * m['sim_error']:.1f}% | {m['replay_jct']:.3f} | "
            f"{' → '.join(shapes.get(j, ['—']))} | {m['preemptions']:.0f}/{m['moves']:.0f}/"
            f"{m['resizes']:.0f} | {m['final_loss']:.4f} | {m['accuracy']:.3f} |"
        )
    lines += ["", "| metric | value |", "|---|---|"]
    lines += [f"| {k} | {v:.4g} |" for k, v in summary.items()]
    lines += ["", "![placements](gantt.png)", "", "![loss](loss.png)", ""]
    (out / "summary.md").write_text("\n".join(lines))
    return results


def _gantt(path: Path, tw: TestbedWorkload, pred: Prediction, run: TestbedRun) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    H = tw.workload.cluster.machines
    cmap = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(9, 1.0 + 0.9 * H))
    for r in pred.rows:
        n = len(r.placement)
        for k, (m, w, s) in enumerate(r.placement):
            y = m + k * 0.0 - 0.4 + 0.8 * (r.job % 4) / 4
            ax.broken_barh([(r.slot, 1)], (y, 0.8 / 4), color=cmap(r.job % 10), alpha=0.85)
            ax.text(r.slot + 0.05, y + 0.1 / 4, f"j{r.job} {w}w{s}p", fontsize=6, va="bottom")
        del n
    ax.set_yticks(range(H), [f"machine {h}" for h in range(H)])
    ax.set_xlabel("slot")
    ax.set_title(f"{run.scheduler}: placements per slot (w = workers, p = PSs)")
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
