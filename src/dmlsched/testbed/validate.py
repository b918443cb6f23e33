"""Probes the speed profile was not fitted on: held-out caps and jobs sharing links.

After :func:`dmlsched.testbed.calibrate.calibrate` has fitted the profile,
:func:`validate` measures (same MLP, F = 64, three machines):

* **split vs co-located** at a cap the fit never saw (``HELD_OUT_CAP``,
  15 Mbit/s): the split probes (W workers on machine 0, S PSs on machine 1)
  for every co-located (W, S) of the calibration; measured speed-up =
  split step ÷ the calibration's co-located step, predicted = the profile's
  ``links`` form's ratio;
* **shared NICs** at the reference cap: each case of :data:`CASES` runs
  two, three or six jobs at once (twice: sync jobs lock into phase patterns that
  change between runs) and each job alone; measured slowdown = step among
  the others ÷ step alone, predicted = the profile's
  :meth:`~dmlsched.model.speed.calibrated.CalibratedSpeed.joint_steps`
  (the flow-level model) ÷ its step alone.

The error of each is predicted ÷ measured − 1; ``profile.json`` keeps every
row under ``validation`` and ``calibration.md`` prints them.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dmlsched.model.cluster import Placement
from dmlsched.testbed.runtime import Job, Testbed, TrainSpec

__all__ = ["CASES", "HELD_OUT_CAP", "SharedCase", "measure_steps", "validate"]

HELD_OUT_CAP = 15.0
MIN_STEPS = 8
BATCH = 64
HIDDEN = 256
REPEATS = 3
SPREAD = 0.20  # repeats of a shared case further apart than this are listed in calibration.md
START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class SharedCase:
    """Jobs run at once: each (workers per machine 0..2, PSs per machine 0..2)."""

    name: str
    jobs: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]


def _on(machine: int) -> tuple[int, ...]:
    """One process on ``machine`` of three."""
    return tuple(int(m == machine) for m in range(3))


CASES = (
    SharedCase("same links, W=1", (((1, 0, 0), (0, 1, 0)), ((1, 0, 0), (0, 1, 0)))),
    SharedCase("same links, W=2", (((2, 0, 0), (0, 1, 0)), ((2, 0, 0), (0, 1, 0)))),
    SharedCase("opposite directions", (((1, 0, 0), (0, 1, 0)), ((0, 1, 0), (1, 0, 0)))),
    SharedCase("one PS machine", (((2, 0, 0), (0, 0, 1)), ((0, 2, 0), (0, 0, 1)))),
    # a worker behind a NIC that carries another job's six PS connections
    SharedCase("busy NIC", (((1, 1, 0), (1, 0, 1)), ((2, 0, 1), (0, 2, 0)))),
    SharedCase(
        "three jobs", (((1, 0, 0), (0, 1, 0)), ((0, 0, 1), (0, 1, 0)), ((2, 0, 0), (0, 0, 1)))
    ),
    SharedCase("co-located beside split", (((1, 0, 0), (1, 0, 0)), ((0, 1, 0), (1, 0, 0)))),
    # six one-worker jobs, each PS on another machine: four connections through every
    # NIC direction.  A job per ordered pair of machines ...
    SharedCase(
        "ring of six",
        tuple((_on(a), _on(b)) for a in range(3) for b in range(3) if a != b),
    ),
    # ... and DRF's: two alike jobs per edge of a cycle (workers on m, PSs on m - 1)
    SharedCase("doubled cycle", tuple((_on(a), _on((a + 2) % 3)) for a in (1, 1, 0, 0, 2, 2))),
)


def measure_steps(
    tb: Testbed,
    placements: list[tuple[tuple[int, ...], tuple[int, ...]]],
    seconds: float,
    first_id: int,
) -> list[float]:
    """Seconds per step of jobs run at once: (Δ wall time) ÷ (Δ steps) of each job's PS 0,
    over ``seconds`` after a one-second warm-up from the moment every job's PS 0
    reported (longer, up to four times, until every job has made ``MIN_STEPS`` steps)."""
    jobs = []
    for k, (w, s) in enumerate(placements):
        spec = TrainSpec(job=first_id + k, target=1e12, batch=BATCH, hidden=HIDDEN, seed=7)
        job = Job(tb, spec)
        job.start(Placement(tuple(range(len(w))), w, s))
        jobs.append(job)
    try:
        paths = [job.dir / "inc-0" / "ps-0.json" for job in jobs]
        deadline = time.monotonic() + START_TIMEOUT_S  # a loaded machine starts slowly
        while not all(p.exists() for p in paths):
            if time.monotonic() > deadline:
                missing = [str(p) for p in paths if not p.exists()]
                raise RuntimeError(f"probe jobs did not start in {START_TIMEOUT_S:g} s: {missing}")
            time.sleep(0.1)
        time.sleep(1.0)
        a = [json.loads(p.read_text()) for p in paths]
        time.sleep(seconds)
        b = [json.loads(p.read_text()) for p in paths]
        for _ in range(int(3 * seconds / 0.5)):  # slow probes: wait for MIN_STEPS steps
            if all(y["step"] - x["step"] >= MIN_STEPS for x, y in zip(a, b, strict=True)):
                break
            time.sleep(0.5)
            b = [json.loads(p.read_text()) for p in paths]
    finally:
        for job in jobs:
            job.request_stop()
        for job in jobs:
            job.wait_stopped()
    out = []
    for x, y in zip(a, b, strict=True):
        steps = y["step"] - x["step"]
        out.append((y["time"] - x["time"]) / steps if steps > 0 else math.nan)
    return out


def _placement(w: tuple[int, ...], s: tuple[int, ...]) -> Placement:
    return Placement(tuple(range(len(w))), w, s)


def validate(
    profile: dict,
    colocated: dict[tuple[int, int], float],
    run_dir: Path,
    *,
    emulation: str,
    ref_cap: float,
    int_mbit: float | None,
    probe_seconds: float,
    state_dir: Path,
    log: Callable[[str], None] = lambda s: None,
) -> dict:
    """Measure the held-out probes and predict them with ``profile`` (module docstring).

    ``colocated``: the calibration's measured co-located step by (W, S).
    """
    from dmlsched.workloads.speed_profile import profile_speed

    rows_split: list[dict] = []
    rows_shared: list[dict] = []
    n = 10_000
    with Testbed(
        3, run_dir, emulation=emulation, ext_mbit=HELD_OUT_CAP, int_mbit=int_mbit,
        state_dir=state_dir,
    ) as tb:  # fmt: skip
        model = profile_speed(profile, form="links", ext_mbit=(HELD_OUT_CAP,))
        for (W, S), co in sorted(colocated.items()):
            w: tuple[int, ...] = (W, 0, 0)
            s: tuple[int, ...] = (0, S, 0)
            (step,) = measure_steps(tb, [(w, s)], probe_seconds, n)
            n += 1
            pred = model.step_seconds(BATCH, (0, 1, 2), w, s) / model.step_seconds(
                BATCH, (0, 1, 2), (W, 0, 0), (S, 0, 0)
            )
            meas = step / co
            rows_split.append(
                {"W": W, "S": S, "cap_mbit": HELD_OUT_CAP, "split_s": step, "colocated_s": co,
                 "measured": meas, "predicted": pred, "error": pred / meas - 1.0}
            )  # fmt: skip
            log(f"held-out split W={W} S={S} at {HELD_OUT_CAP:g}: {meas:.2f}× vs {pred:.2f}×")
    with Testbed(
        3, run_dir, emulation=emulation, ext_mbit=ref_cap, int_mbit=int_mbit,
        state_dir=state_dir,
    ) as tb:  # fmt: skip
        model = profile_speed(profile, form="links", ext_mbit=(ref_cap,))
        for case in CASES:
            alone = []
            for w, s in case.jobs:
                alone.append(measure_steps(tb, [(w, s)], probe_seconds, n)[0])
                n += 1
            shared = []
            for _ in range(REPEATS):
                shared.append(measure_steps(tb, list(case.jobs), probe_seconds, n))
                n += len(case.jobs)
            items = [(BATCH, _placement(w, s)) for w, s in case.jobs]
            joint = model.joint_steps(items)
            solo = [model.step_seconds(BATCH, p.machines, p.workers, p.ps) for _, p in items]
            for k, (w, s) in enumerate(case.jobs):
                meas_steps = [rep[k] for rep in shared]
                meas = float(np.mean(meas_steps)) / alone[k]
                pred = joint[k] / solo[k]
                rows_shared.append(
                    {"case": case.name, "job": k, "workers": list(w), "ps": list(s),
                     "alone_s": alone[k], "shared_s": meas_steps, "measured": meas,
                     "predicted": pred, "error": pred / meas - 1.0}
                )  # fmt: skip
                log(f"{case.name}, job {k}: slowdown {meas:.2f}× measured, {pred:.2f}× model")
    return {"split_vs_colocated": rows_split, "shared": rows_shared}


def summary_lines(val: dict) -> list[str]:
    """Markdown of a ``validation`` blob (calibration.md's last section)."""
    lines = [
        "## Held-out probes (not fitted)",
        "",
        f"Split vs co-located at {HELD_OUT_CAP:g} Mbit/s (a cap the fit never saw):",
        "",
        "| W | S | split ms | co-located ms | measured speed-up | model | error |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in val["split_vs_colocated"]:
        lines.append(
            f"| {r['W']} | {r['S']} | {1e3 * r['split_s']:.1f} | {1e3 * r['colocated_s']:.1f} | "
            f"{r['measured']:.2f} | {r['predicted']:.2f} | {100 * r['error']:+.1f}% |"
        )
    lines += [
        "",
        "Jobs sharing links (slowdown = step among the others ÷ step alone; the shared "
        f"step measured {REPEATS} times):",
        "",
        "| case | job | workers | PSs | alone ms | shared ms | measured | model | error |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in val["shared"]:
        sh = " / ".join(f"{1e3 * x:.0f}" for x in r["shared_s"])
        lines.append(
            f"| {r['case']} | {r['job']} | {r['workers']} | {r['ps']} | {1e3 * r['alone_s']:.0f} "
            f"| {sh} | {r['measured']:.2f} | {r['predicted']:.2f} | {100 * r['error']:+.1f}% |"
        )
    errs = [abs(r["error"]) for r in val["split_vs_colocated"] + val["shared"]]
    if errs:
        lines += [
            "",
            f"Largest |error| {100 * max(errs):.1f}%, median {100 * float(np.median(errs)):.1f}% "
            f"over {len(errs)} held-out slowdowns; {sum(e <= 0.10 for e in errs)} within 10%.",
        ]
    spread = [r for r in val["shared"] if _spread(r["shared_s"]) > SPREAD]
    if spread:
        cases = sorted({r["case"] for r in spread})
        lines += [
            "",
            f"{len(spread)} of {len(val['shared'])} shared rows vary by more than "
            f"{100 * SPREAD:.0f}% between repeats (slowest ÷ fastest − 1, up to "
            f"{100 * max(_spread(r['shared_s']) for r in spread):.0f}%): "
            + "; ".join(cases)
            + ". There the phase the jobs fall into changes from run to run, and a model "
            "of one run can only aim at the mean.",
        ]
    return lines


def _spread(steps: list[float]) -> float:
    live = [x for x in steps if math.isfinite(x) and x > 0]
    return max(live) / min(live) - 1.0 if len(live) > 1 else 0.0
