"""A finished testbed run predicted again with this checkout's engine and speed model.

The real runs stay what they were: a run's report (:func:`dmlsched.testbed.report.load_run`)
keeps its placements, measured work and real JCTs, so a change to the engine or the speed
model can be measured on every run already made — held-out runs stay held out, since
nothing is fitted to them here.  ``make testbed-repredict`` (``python -m
dmlsched.experiments.repredict [RUNS]``) does it for every ``testbed-pdors`` run of a
held-out seed and prints their pooled errors (:mod:`dmlsched.testbed.pooled`).
"""

from __future__ import annotations

import json
from pathlib import Path

from dmlsched.errors import InvalidInput
from dmlsched.experiments.defs.testbed import (
    CAL_DIR,
    EXT_MBIT,
    HELD_OUT,
    INT_MBIT,
    SLOT_SECONDS,
    _speed,
    _workload,
)

__all__ = ["AGAIN", "main", "repredict"]

#: the file :func:`repredict` writes beside a run's ``report/results.csv``
AGAIN = "again.csv"


def repredict(run_dir: Path, quick: bool = False, speed: dict | None = None) -> Path:
    """Predict a finished ``testbed-pdors`` run again with this checkout's engine and speed
    model, from what its report kept (:func:`dmlsched.testbed.report.load_run`): the real
    run is what it was, its workload is rebuilt from the seed in its folder's name, its
    profile is the one saved beside the report (else the cached calibration's).  Writes
    the per-job and summary rows ``write_run`` would (the summary's distortion counts
    copied) to ``report/again.csv``; returns its path.  ``speed``: another profile to
    predict with (a new calibration); the schedulers are still told what the run told
    them (its own profile's Eq. (1) bound)."""
    from dmlsched.testbed.predict import predict
    from dmlsched.testbed.report import (
        DISTORTION,
        job_metrics,
        load_run,
        run_metrics,
        write_results,
    )

    emulation, seed = _mode_and_seed(run_dir)
    report = run_dir / "report"
    saved = report / "profile.json"
    if saved.exists():
        prof = json.loads(saved.read_text())
    else:
        prof = json.loads((_calibration(emulation) / "profile.json").read_text())
    run, summary = load_run(report, 10.0 if quick else SLOT_SECONDS)
    tw = _workload(int(seed), quick, prof)
    pred = predict(tw, run, _speed(speed or prof, quick), None)
    m = {**run_metrics(tw, run, pred), **{k: summary.get(k, 0.0) for k in DISTORTION}}
    experiment = run_dir.name[: -len(f"-{run.scheduler}-{emulation}-{seed}")]
    out = write_results(report / AGAIN, experiment, run, job_metrics(tw, run, pred), m)
    return out


def _mode_and_seed(run_dir: Path) -> tuple[str, str]:
    """The emulation and workload seed in a run folder's name."""
    rest, _, seed = run_dir.name.rpartition("-")
    rest, _, emulation = rest.rpartition("-")
    if not seed.isdigit() or emulation not in ("local", "netns"):
        raise InvalidInput("run folder", str(run_dir), "<id>-<scheduler>-<emulation>-<seed>")
    return emulation, seed


def _calibration(emulation: str) -> Path:
    """The cached full calibration's folder of ``emulation``."""
    return CAL_DIR / f"{emulation}-{EXT_MBIT:g}-{INT_MBIT:g}"


def main(argv: list[str] | None = None) -> None:
    """``python -m dmlsched.experiments.repredict [RUNS]``: every ``testbed-pdors`` run of
    a held-out seed in RUNS predicted again (:func:`repredict`), then their pooled errors."""
    import argparse

    from dmlsched.testbed.pooled import DEFAULT_RUNS, pooled_errors, render, require_runs

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("runs", nargs="?", type=Path, default=DEFAULT_RUNS)
    ap.add_argument(
        "--profile",
        choices=("run", "current"),
        default="run",
        help="predict with each run's own profile, or with the current calibration's",
    )
    a = ap.parse_args(argv)
    require_runs("runs", a.runs, "testbed-pdors", HELD_OUT)
    dirs = sorted(p.parent.parent for p in a.runs.glob("testbed-pdors-*/report/results.csv"))
    for d in dirs:
        emulation, seed = _mode_and_seed(d)
        if int(seed) >= HELD_OUT:
            speed = None
            if a.profile == "current":
                speed = json.loads((_calibration(emulation) / "profile.json").read_text())
            print(f"{d.name}: {repredict(d, speed=speed)}", flush=True)
    print(render(pooled_errors(a.runs, results=AGAIN)), end="")


if __name__ == "__main__":
    main()
