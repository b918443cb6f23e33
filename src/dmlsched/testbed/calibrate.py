"""``dmlsched testbed calibrate``: fit the speed models to measured step times.

Probes (one job, sync, F = 64, the MLP of :mod:`.training`) on three
machines, for each external cap C in ``caps``:

* co-located — W workers and S PSs on machine 0, (W, S) ∈ {(1,1), (2,1),
  (2,2), (3,1)} (at the first cap only: they do not use the external link);
* split — W workers on machine 0, S PSs on machine 1, (W, S) ∈ {(1,1),
  (2,1), (2,2), (3,1), (4,4)} (the schedulers place up to four workers per
  machine);
* mixed — workers on machines 0 and 1, the PS on machine 0: (1+1, 1),
  (2+1, 1).

Each probe runs ``probe_seconds`` after a one-second warm-up, longer (up to
four times) until it has seen ``MIN_STEPS`` steps — a slow split probe at
5 Mbit/s takes most of a second a step; its step time is (Δ wall time) ÷
(Δ steps) from PS 0's status reports.

Fits (least squares on relative error) of the two forms of
:mod:`dmlsched.model.speed.calibrated`:

* ``eq1`` — PD-ORS Eq. (1): τ, g/b^(i) and g/b^(e) (b^(e) scaled as the
  cap: g/b^(e) = η⁻¹·g/C); linear, non-negative (scipy's ``nnls``);
* ``links`` — τ, η_e⁻¹, η_i⁻¹, a per-step overhead c and the overlap
  fractions κ, ω ∈ [0, 1]; nonlinear in κ (a max), bounded
  (``scipy.optimize.least_squares``, started from the ``nnls`` fit of
  κ = 1, ω = 0 — the form as first fitted).

Reported (``calibration.md``, ``probes.csv``, ``profile.json``): the fitted
constants; per placement class the median and largest relative error of
each form, in-sample and leave-one-out (each probe predicted by a fit
without it); and for each (W, S, C) the measured co-location speed-up
(split step ÷ co-located step) beside each form's, the leave-one-out one
fitted without either probe.  The profile's ``default`` form is the one with
the smaller median leave-one-out error.

Restart probes (``restart`` in the profile): a job started on one placement,
stopped after ``probe_seconds`` (its PSs finish the step and checkpoint) and
started on another (resuming from the checkpoint), for each pair of
:data:`MOVES` — a move, a resize, a shift of every process.  A new
incarnation's cost is the wall time from the request (the start; for a
restart, PS 0's last report before the stop) to a later report, less the
steps done in between at each placement's measured step time: ``start_s``
and ``restart_s``, the medians, are what the engine charges a job's first
incarnation and every later one (:class:`~dmlsched.model.speed.calibrated.CalibratedSpeed`).

Pacing (``pacing`` in the profile, ``local`` only): the token buckets'
depth (:data:`~dmlsched.testbed.emulation.BUCKET_BYTES`) and the mean
pacing lag of the probes' PSs (:mod:`.transport`: how late a message's next
chunk reserves after its reservation allowed it to go) — not fitted, but
measured on the fit's own probes; the flow model's ``fifo`` simulation of
jobs sharing links needs both (:mod:`dmlsched.model.speed.flows`).

``scheduler_eq1`` in the profile: Eq. (1) constants that bound every probe
from above (τ from the fit, each class's g/b the largest the probes need) —
what :func:`dmlsched.testbed.workload.testbed_workload` tells schedulers.  A
scheduler that commits a schedule at admission (PD-ORS) stalls a job whose
real progress falls behind its plan; with an upper bound its plans are long
enough (on the probed placements) and jobs finish early instead.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares, nnls

from dmlsched.model.cluster import Placement
from dmlsched.model.speed.calibrated import link_times, links_step
from dmlsched.numerics import dot
from dmlsched.testbed.emulation import BUCKET_BYTES
from dmlsched.testbed.runtime import Job, Testbed, TrainSpec
from dmlsched.testbed.state import DEFAULT_STATE_DIR
from dmlsched.testbed.training import n_params
from dmlsched.testbed.validate import BATCH, HIDDEN, measure_steps, summary_lines, validate
from dmlsched.workloads.speed_profile import PROFILE_FORMAT

__all__ = ["CALIBRATION_VERSION", "Probe", "calibrate", "fit"]

# 2: the links form's κ, ω fitted by nonlinear least squares; split probes up to W = 4
# 3: held-out probes (a cap not fitted, jobs sharing links) measured and predicted
# 4: the cost of a new incarnation (start, restart) measured and charged
# 5: netns links share their cap per TCP connection (htb), not in one FIFO queue (tbf)
# 6: local: the token buckets' depth and the senders' measured pacing lag (flow model)
CALIBRATION_VERSION = 6

COLOCATED = ((1, 1), (2, 1), (2, 2), (3, 1))
# (workers, PSs) per machine before and after a restart: a move, a resize, a shift
MOVES = (
    (((1, 0, 0), (0, 1, 0)), ((0, 0, 1), (0, 1, 0))),
    (((2, 0, 0), (0, 2, 0)), ((1, 1, 0), (0, 0, 1))),
    (((4, 0, 0), (0, 4, 0)), ((0, 2, 0), (2, 0, 0))),
)
SPLIT = ((1, 1), (2, 1), (2, 2), (3, 1), (4, 4))
MIXED = (((1, 1, 0), (1, 0, 0)), ((2, 1, 0), (1, 0, 0)))


@dataclass(frozen=True)
class Probe:
    workers: tuple[int, ...]  # per machine 0..2
    ps: tuple[int, ...]
    cap_mbit: float
    step_s: float = float("nan")

    @property
    def kind(self) -> str:
        used = {h for h, (w, s) in enumerate(zip(self.workers, self.ps, strict=True)) if w or s}
        if len(used) == 1:
            return "co-located"
        shared = any(w and s for w, s in zip(self.workers, self.ps, strict=True))
        return "mixed" if shared else "split"

    @property
    def W(self) -> int:
        return sum(self.workers)

    @property
    def S(self) -> int:
        return sum(self.ps)


def _plan(caps: list[float]) -> list[Probe]:
    out = []
    for i, cap in enumerate(caps):
        if i == 0:
            out += [Probe((w, 0, 0), (s, 0, 0), cap) for w, s in COLOCATED]
        out += [Probe((w, 0, 0), (0, s, 0), cap) for w, s in SPLIT]
        out += [Probe(w, s, cap) for w, s in MIXED]
    return out


def _pacing(roots: list[Path]) -> dict[str, float]:
    """The ``local`` emulation's bucket depth and the mean pacing lag of the PSs' chunks
    (:mod:`.transport`) over every probe run in ``roots``: what the flow model's ``fifo``
    transport needs besides the fitted constants."""
    lag, chunks = 0.0, 0
    for root in roots:
        for path in sorted(root.glob("job-*/inc-*/ps-*.json")):
            with contextlib.suppress(OSError, ValueError):
                r = json.loads(path.read_text())
                lag += float(r.get("pace_lag_s", 0.0))
                chunks += int(r.get("pace_lag_n", 0))
    mean = lag / chunks if chunks else 0.0
    return {"bucket_bytes": float(BUCKET_BYTES), "lag_s": mean, "chunks": chunks}


def _measure(tb: Testbed, probe: Probe, seconds: float, n: int) -> float:
    return measure_steps(tb, [(probe.workers, probe.ps)], seconds, n)[0]


def _report(path: Path, after: float = -math.inf, timeout_s: float = 60.0) -> dict:
    """PS 0's status report (``step``, ``time``) once one is newer than ``after``."""
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(OSError, ValueError):
            r = json.loads(path.read_text())
            if r["time"] > after:
                return r
        if time.monotonic() > deadline:
            raise RuntimeError(f"no report in {path} after {timeout_s:g} s")
        time.sleep(0.05)


def _steady(path: Path, seconds: float) -> tuple[dict, float]:
    """A report after ``seconds`` and the step time over the second after it."""
    time.sleep(seconds)
    a = _report(path)
    time.sleep(1.0)
    b = _report(path, a["time"])
    while b["step"] - a["step"] < 2:  # a slow placement: wait for two steps
        time.sleep(0.5)
        b = _report(path, b["time"])
    return b, (b["time"] - a["time"]) / (b["step"] - a["step"])


def measure_restart(
    tb: Testbed, before: tuple[tuple[int, ...], tuple[int, ...]],
    after: tuple[tuple[int, ...], tuple[int, ...]], seconds: float, job: int,
) -> dict:  # fmt: skip
    """Seconds lost to a job's first incarnation and to a restart (module docstring)."""
    j = Job(tb, TrainSpec(job=job, target=1e12, batch=BATCH, hidden=HIDDEN, seed=7))
    try:
        t0 = time.time()
        j.start(Placement((0, 1, 2), *before))
        first, step1 = _steady(j.dir / "inc-0" / "ps-0.json", seconds)
        start_s = first["time"] - t0 - first["step"] * step1
        last = _report(j.dir / "inc-0" / "ps-0.json", first["time"])
        j.request_stop()
        j.wait_stopped()
        stopped = json.loads((j.dir / "inc-0" / "ps-0.json").read_text())
        j.start(Placement((0, 1, 2), *after))
        second, step2 = _steady(j.dir / "inc-1" / "ps-0.json", seconds)
    finally:
        j.request_stop()
        j.wait_stopped()
    done_old = stopped["step"] - last["step"]  # steps the old incarnation finished
    done_new = second["step"] - stopped["step"]
    restart_s = second["time"] - last["time"] - done_old * step1 - done_new * step2
    return {"before": [list(x) for x in before], "after": [list(x) for x in after],
            "step_before_s": step1, "step_after_s": step2,
            "start_s": start_s, "restart_s": restart_s}  # fmt: skip


def _features(p: Probe, g: float, int_mbit: float | None) -> tuple[list[float], list[float]]:
    """Rows of the two linear systems (eq1: τ, g/b_i, η⁻¹; links: τ, η_e⁻¹, η_i⁻¹, c)."""
    cap = p.cap_mbit * 1e6 / 8
    icap = (int_mbit or 0) * 1e6 / 8 or float("inf")
    internal = p.kind == "co-located"
    eq1 = [BATCH / p.W, 2.0 / p.S if internal else 0.0, 0.0 if internal else 2.0 / p.S * g / cap]
    t_ext, t_int = link_times(p.workers, p.ps, [cap] * 3, [icap] * 3, g)
    if icap == float("inf"):  # uncapped loopback: the internal time per push is g/S per byte
        t_int = max(w * s for w, s in zip(p.workers, p.ps, strict=True)) * g / p.S / 1e9
    links = [BATCH / p.W, 2 * t_ext, 2 * t_int, 1.0]
    return eq1, links


def fit(probes: list[Probe], g: float, int_mbit: float | None) -> dict:
    """Both forms' constants from ``probes`` (module docstring)."""
    rows = [_features(p, g, int_mbit) for p in probes]
    y = np.array([p.step_s for p in probes])
    out = {}
    for k, form in enumerate(("eq1", "links")):
        A = np.array([r[k] for r in rows]) / y[:, None]
        x, _ = nnls(A, np.ones(len(y)))
        out[form] = x
    # links: κ, ω by bounded nonlinear least squares from the linear fit (κ = 1, ω = 0)
    scale = np.maximum(out["links"], 1e-6)  # parameters of very different sizes
    x0 = np.concatenate([out["links"] / scale, [1.0, 0.0]])

    def rel(z: np.ndarray) -> np.ndarray:
        x = np.concatenate([z[:4] * scale, z[4:]])
        return np.array([_predict("links", x, p, g, int_mbit) for p in probes]) / y - 1.0

    hi = np.array([np.inf] * 4 + [1.0, 1.0])
    r = least_squares(rel, x0, bounds=(np.zeros(6), hi), max_nfev=2000)
    out["links"] = np.concatenate([r.x[:4] * scale, r.x[4:]])
    return out


def _predict(form: str, x: np.ndarray, p: Probe, g: float, int_mbit: float | None) -> float:
    if form == "eq1":
        return dot(_features(p, g, int_mbit)[0], x)
    if len(x) == 4:  # the linear start: κ = 1, ω = 0
        return dot(_features(p, g, int_mbit)[1], x)
    icap = (int_mbit or 0) * 1e6 / 8 or 1e9  # uncapped: as in _features
    return links_step(
        BATCH,
        p.workers,
        p.ps,
        [p.cap_mbit * 1e6 / 8] * 3,
        [icap] * 3,
        g,
        *(float(v) for v in x),
    )


def _consts(form: str, x: np.ndarray, g: float, ref_mbit: float) -> dict:
    if form == "eq1":
        cap = ref_mbit * 1e6 / 8
        return {"batch_tau_s": x[0], "g_over_b_int": x[1], "g_over_b_ext": x[2] * g / cap}
    names = ("batch_tau_s", "inv_eta_ext", "inv_eta_int", "overhead_s", "overlap", "pipeline")
    return dict(zip(names, x, strict=True))


def calibrate(
    out: Path,
    *,
    emulation: str = "local",
    caps: list[float] | None = None,
    int_mbit: float | None = 50.0,
    probe_seconds: float = 3.0,
    slot_seconds: float = 20.0,
    state_dir: Path = DEFAULT_STATE_DIR,
    log: Callable[[str], None] = lambda s: None,
    held_out: bool = True,
) -> Path:
    """Probe, fit, write profile.json, probes.csv and calibration.md; returns the profile.

    ``held_out``: then measure the probes the fit never saw and predict them
    (:mod:`.validate`: a cap not probed, jobs sharing links).
    """
    caps = caps or [5.0, 10.0, 20.0]
    out.mkdir(parents=True, exist_ok=True)
    g = 4.0 * n_params(HIDDEN)
    probes: list[Probe] = []
    roots: list[Path] = []  # the fit probes' job folders (their PSs' pacing lag)
    n = 0
    for cap in caps:
        todo = [p for p in _plan(caps) if p.cap_mbit == cap]
        with Testbed(
            3,
            out / "run",
            emulation=emulation,
            ext_mbit=cap,
            int_mbit=int_mbit,
            state_dir=state_dir,
        ) as tb:
            roots.append(tb.job_root)
            for p in todo:
                step = _measure(tb, p, probe_seconds, n)
                n += 1
                probes.append(Probe(p.workers, p.ps, cap, step))
                log(f"probe {p.kind} w={p.workers} s={p.ps} cap={cap:g}: {1000 * step:.1f} ms/step")
    probes = [p for p in probes if math.isfinite(p.step_s) and p.step_s > 0]
    ref = 10.0 if 10.0 in caps else caps[0]
    with Testbed(
        3, out / "run", emulation=emulation, ext_mbit=ref, int_mbit=int_mbit, state_dir=state_dir
    ) as tb:
        moves = []
        for before, after in MOVES:
            moves.append(measure_restart(tb, before, after, probe_seconds, n))
            n += 1
            log(f"restart {before} -> {after}: start {moves[-1]['start_s']:.2f} s, "
                f"restart {moves[-1]['restart_s']:.2f} s")  # fmt: skip
    restart = {
        "start_s": max(0.0, float(np.median([m["start_s"] for m in moves]))),
        "restart_s": max(0.0, float(np.median([m["restart_s"] for m in moves]))),
        "probes": moves,
    }
    fits = fit(probes, g, int_mbit)
    # leave-one-out predictions
    loo: dict[str, list[float]] = {"eq1": [], "links": []}
    for i, p in enumerate(probes):
        f = fit(probes[:i] + probes[i + 1 :], g, int_mbit)
        for form in loo:
            loo[form].append(_predict(form, f[form], p, g, int_mbit))
    errs: dict[str, dict[str, dict[str, float]]] = {}
    for form in ("eq1", "links"):
        errs[form] = {}
        for kind in ("co-located", "split", "mixed"):
            idx = [i for i, p in enumerate(probes) if p.kind == kind]
            if not idx:
                continue
            ins = [
                abs(_predict(form, fits[form], probes[i], g, int_mbit) / probes[i].step_s - 1)
                for i in idx
            ]
            lo = [abs(loo[form][i] / probes[i].step_s - 1) for i in idx]
            errs[form][kind] = {
                "median": float(np.median(ins)),
                "max": float(np.max(ins)),
                "loo_median": float(np.median(lo)),
                "loo_max": float(np.max(lo)),
            }
    all_loo = {
        f: float(np.median([abs(loo[f][i] / p.step_s - 1) for i, p in enumerate(probes)]))
        for f in loo
    }
    default = min(all_loo, key=lambda f: all_loo[f])
    # co-location speed-ups: split (W on 0, S on 1) vs co-located (W, S on 0)
    speedups = []
    for pc in (p for p in probes if p.kind == "co-located"):
        for i, ps_ in enumerate(probes):
            if ps_.kind == "split" and (ps_.W, ps_.S) == (pc.W, pc.S):
                ic = probes.index(pc)
                rest = [q for k, q in enumerate(probes) if k not in (i, ic)]
                f_loo = fit(rest, g, int_mbit)
                row = {
                    "W": pc.W,
                    "S": pc.S,
                    "cap_mbit": ps_.cap_mbit,
                    "measured": ps_.step_s / pc.step_s,
                }
                for form in ("eq1", "links"):
                    row[form] = _predict(form, fits[form], ps_, g, int_mbit) / _predict(
                        form, fits[form], pc, g, int_mbit
                    )
                    row[f"{form}_loo"] = _predict(form, f_loo[form], ps_, g, int_mbit) / _predict(
                        form, f_loo[form], pc, g, int_mbit
                    )
                speedups.append(row)
    # Eq. (1) constants that bound every probe from above (what the scheduler is told):
    # a plan-ahead scheduler (PD-ORS commits a schedule) stalls a job whose plan ends early
    tau = float(fits["eq1"][0])
    ref_cap = ref * 1e6 / 8
    bound = {"batch_tau_s": tau, "g_over_b_int": 0.0, "g_over_b_ext": 0.0}
    for p in probes:
        excess = max(0.0, p.step_s - BATCH / p.W * tau) * p.S / 2.0
        if p.kind == "co-located":
            bound["g_over_b_int"] = max(bound["g_over_b_int"], excess)
        else:  # scaled to the reference cap (b^(e) ∝ cap)
            bound["g_over_b_ext"] = max(
                bound["g_over_b_ext"], excess * p.cap_mbit * 1e6 / 8 / ref_cap
            )
    profile = {
        "format": PROFILE_FORMAT,
        "calibration_version": CALIBRATION_VERSION,
        "scheduler_eq1": bound,
        "default": default,
        "slot_seconds": slot_seconds,
        "ext_mbit": [ref],
        "int_mbit": [int_mbit or 0.0],
        "grad_bytes": g,
        "batch": BATCH,
        "hidden": HIDDEN,
        "emulation": emulation,
        "forms": {
            f: {k: float(v) for k, v in _consts(f, fits[f], g, ref).items()}
            for f in ("eq1", "links")
        },
        "fit": {"errors": errs, "loo_median": all_loo, "speedups": speedups},
        "restart": restart,
    }
    if emulation == "local":
        pacing = _pacing(roots)
        profile["pacing"] = pacing
        log(f"pacing lag {1e3 * pacing['lag_s']:.3f} ms (mean over {pacing['chunks']} chunks)")
    path = out / "profile.json"
    path.write_text(json.dumps(profile, indent=1) + "\n")  # the fit, whatever happens next
    if held_out:
        colocated = {(p.W, p.S): p.step_s for p in probes if p.kind == "co-located"}
        profile["validation"] = validate(
            profile,
            colocated,
            out / "run",
            emulation=emulation,
            ref_cap=ref,
            int_mbit=int_mbit,
            probe_seconds=probe_seconds,
            state_dir=state_dir,
            log=log,
        )
    path = out / "profile.json"
    path.write_text(json.dumps(profile, indent=1) + "\n")
    with (out / "probes.csv").open("w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(
            [
                "kind",
                "workers",
                "ps",
                "cap_mbit",
                "step_s",
                "eq1_s",
                "links_s",
                "eq1_loo_s",
                "links_loo_s",
            ]
        )
        for i, p in enumerate(probes):
            w.writerow(
                [
                    p.kind,
                    "+".join(map(str, p.workers)),
                    "+".join(map(str, p.ps)),
                    p.cap_mbit,
                    repr(p.step_s),
                    repr(_predict("eq1", fits["eq1"], p, g, int_mbit)),
                    repr(_predict("links", fits["links"], p, g, int_mbit)),
                    repr(loo["eq1"][i]),
                    repr(loo["links"][i]),
                ]
            )
    _write_md(out / "calibration.md", profile, probes, emulation, caps, int_mbit)
    return path


def _write_md(
    path: Path,
    prof: dict,
    probes: list[Probe],
    emulation: str,
    caps: list[float],
    int_mbit: float | None,
) -> None:
    e1 = prof["forms"]["eq1"]
    lk = prof["forms"]["links"]
    g = prof["grad_bytes"]
    ref_cap = prof["ext_mbit"][0] * 1e6 / 8
    lines = [
        f"# Testbed calibration ({emulation})",
        "",
        f"{len(probes)} probes: MLP-{prof['hidden']} ({g / 1e3:.1f} KB of parameters), "
        f"F = {prof['batch']}, external caps {caps} Mbit/s, loopback cap "
        f"{int_mbit or 'none'} Mbit/s.",
        "",
        "## Eq. (1) fitted (PD-ORS journal)",
        "",
        f"- τ = {e1['batch_tau_s'] * 1e6:.2f} µs per sample",
        f"- g = {g / 1e6:.4f} MB (the model); g/b^(i) = {1e3 * e1['g_over_b_int']:.3f} ms → "
        f"b^(i) = {g * 8 / max(e1['g_over_b_int'], 1e-12) / 1e6:.1f} Mbit/s effective",
        f"- g/b^(e) = {1e3 * e1['g_over_b_ext']:.3f} ms at {prof['ext_mbit'][0]:g} Mbit/s → "
        f"b^(e) = {g * 8 / max(e1['g_over_b_ext'], 1e-12) / 1e6:.2f} Mbit/s effective "
        f"(equivalently g_eff = {e1['g_over_b_ext'] * ref_cap / 1e6:.4f} MB at the nominal cap)",
        "",
        "## Link (bottleneck) model fitted",
        "",
        f"- τ = {lk['batch_tau_s'] * 1e6:.2f} µs per sample, η_e⁻¹ = {lk['inv_eta_ext']:.3f}, "
        f"η_i⁻¹ = {lk['inv_eta_int']:.3f}, overhead c = {1e3 * lk['overhead_s']:.2f} ms per step, "
        f"κ = {lk['overlap']:.3f} (NIC and loopback: 0 overlap, 1 add up), "
        f"ω = {lk['pipeline']:.3f} (push/pull overlap across workers)",
        *(
            [
                f"- token buckets {prof['pacing']['bucket_bytes']:.0f} B deep; pacing lag "
                f"{1e3 * prof['pacing']['lag_s']:.3f} ms a chunk (mean over "
                f"{prof['pacing']['chunks']} chunks of the probes' PSs): the flow model's "
                "*fifo* simulation uses both"
            ]
            if "pacing" in prof
            else []
        ),
        "",
        f"Default form of the profile: **{prof['default']}** (smaller median leave-one-out error).",
        "",
        "## Fit error per placement class (|predicted − measured| / measured step time)",
        "",
        "| form | class | median | max | leave-one-out median | leave-one-out max |",
        "|---|---|---|---|---|---|",
    ]
    for form, by in prof["fit"]["errors"].items():
        for kind, e in by.items():
            lines.append(
                f"| {form} | {kind} | {100 * e['median']:.1f}% | {100 * e['max']:.1f}% | "
                f"{100 * e['loo_median']:.1f}% | {100 * e['loo_max']:.1f}% |"
            )
    lines += [
        "",
        "## Co-location speed-up (split step ÷ co-located step)",
        "",
        "| W | S | cap Mbit/s | measured | Eq. (1) fit | Eq. (1) leave-out | links fit | "
        "links leave-out |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in prof["fit"]["speedups"]:
        lines.append(
            f"| {r['W']} | {r['S']} | {r['cap_mbit']:g} | {r['measured']:.2f} | {r['eq1']:.2f} | "
            f"{r['eq1_loo']:.2f} | {r['links']:.2f} | {r['links_loo']:.2f} |"
        )
    lines += [
        "",
        "## Probes (ms per step)",
        "",
        "| class | workers | PSs | cap | measured |",
        "|---|---|---|---|---|",
    ]
    for p in probes:
        lines.append(f"| {p.kind} | {p.workers} | {p.ps} | {p.cap_mbit:g} | {1e3 * p.step_s:.1f} |")
    if "restart" in prof:
        rs = prof["restart"]
        lines += [
            "",
            "## A new incarnation's cost (charged by the engine)",
            "",
            f"Medians: **{rs['start_s']:.2f} s** for a job's first incarnation, "
            f"**{rs['restart_s']:.2f} s** for a later one (stop, checkpoint, start, restore).",
            "",
            "| before (workers / PSs) | after | step before ms | step after ms "
            "| start s | restart s |",
            "|---|---|---|---|---|---|",
            *(
                f"| {m['before'][0]} / {m['before'][1]} | {m['after'][0]} / {m['after'][1]} | "
                f"{1000 * m['step_before_s']:.1f} | {1000 * m['step_after_s']:.1f} | "
                f"{m['start_s']:.2f} | {m['restart_s']:.2f} |"
                for m in rs["probes"]
            ),
        ]
    if "validation" in prof:
        lines += ["", *summary_lines(prof["validation"])]
    path.write_text("\n".join(lines) + "\n")
