"""Experiments with real processes on the testbed (:mod:`dmlsched.testbed`).

Marked ``opt_in``: ``reproduce --all`` leaves them out unless ``--only``
names them (``--only 'testbed-*'``); they need a few minutes of wall time
each and, for ``netns``, root.  Run them with ``--workers 1`` — a testbed
cell takes a machine-wide lock anyway, so two never share the CPUs.

``testbed-pdors`` — PD-ORS vs OASiS vs FIFO on six testbed jobs, three
machines, 20-s slots (quick: four jobs, 8-s slots, fewer epochs).  Each cell
calibrates first (``dmlsched testbed calibrate`` at the run's cap, cached
per emulation and cap for the machine's lifetime in
``/tmp/dmlsched-testbed-calibration``), builds the seeded workload with the
profile's Eq. (1) constants (what the scheduler is told), runs it for real
and predicts it with the simulator:

* ``median_sim_error``, ``p90_sim_error`` — median and 90th percentile
  over every job the testbed or the engine started of |sim JCT − real
  JCT| / real JCT, an unfinished job censored (:mod:`dmlsched.testbed.report`),
  the engine running the same scheduler with the profile's default speed
  model (closed loop); ``finished_share_real`` / ``_sim`` — the share of
  those jobs each side finished;
* ``median_sim_error_eq1`` — the same with the profile's Eq. (1) fit;
* ``median_sim_error_nominal`` — before calibration: the engine on the
  nominal workload (τ, b from the caps, Eq. (1));
* ``median_replay_error`` — the run's own decisions replayed with the
  calibrated model;
* real and simulated mean JCT, utility and completed jobs, bytes moved,
  preemptions, wall seconds.

Each cell also writes the run's own report (per-job ``results.csv``,
``slots.csv``, ``summary.md``, Gantt chart, loss curves) to
``/tmp/dmlsched-testbed-calibration/runs/<id>-<scheduler>-<emulation>-<seed>/report``.

Not built (see docs/testbed.md): ``testbed-aonline-fig4``–``fig6`` and
``testbed-mlbroker-table4`` need executors for the ``edge-cloud`` and
``geo`` decisions.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
from pathlib import Path

from dmlsched.experiments.catalogue import Experiment, Point, register
from dmlsched.experiments.claims import Bound, Report

__all__ = ["testbed_cell"]

CAL_DIR = Path("/tmp/dmlsched-testbed-calibration")
EXT_MBIT = 10.0
INT_MBIT = 50.0


def _current(path: Path) -> bool:
    """A cached profile written by this version of the calibration."""
    from dmlsched.testbed.calibrate import CALIBRATION_VERSION

    if not path.exists():
        return False
    return json.loads(path.read_text()).get("calibration_version") == CALIBRATION_VERSION


def _profile(emulation: str, quick: bool) -> dict:
    from dmlsched.testbed.calibrate import calibrate

    full = CAL_DIR / f"{emulation}-{EXT_MBIT:g}-{INT_MBIT:g}" / "profile.json"
    if _current(full):  # a full calibration serves quick runs too
        return json.loads(full.read_text())
    d = CAL_DIR / f"{emulation}-{EXT_MBIT:g}-{INT_MBIT:g}{'-quick' if quick else ''}"
    path = d / "profile.json"
    if not _current(path):
        calibrate(
            d,
            emulation=emulation,
            caps=[EXT_MBIT] if quick else [5.0, EXT_MBIT, 20.0],
            int_mbit=INT_MBIT,
            probe_seconds=2.0 if quick else 3.0,
        )
    return json.loads(path.read_text())


def testbed_cell(exp: Experiment, scheduler: str, point: Point, seed: int, quick: bool) -> dict:
    """One testbed run of ``scheduler`` (emulation ``point``) and its predictions."""
    from dmlsched.rng import make_rng, spawn
    from dmlsched.testbed.predict import predict
    from dmlsched.testbed.report import run_metrics, write_run
    from dmlsched.testbed.run import run_cluster
    from dmlsched.testbed.runtime import Testbed
    from dmlsched.testbed.workload import testbed_workload
    from dmlsched.workloads.speed_profile import profile_speed

    emulation = str(point)
    params = dict(exp.scheduler_params.get(scheduler, {}))
    CAL_DIR.mkdir(parents=True, exist_ok=True)
    with (CAL_DIR / "lock").open("w") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)  # one testbed at a time on this machine
        prof = _profile(emulation, quick)
        jobs, slot_s, epochs = (4, 10.0, (4, 10)) if quick else (6, 20.0, (10, 30))
        kw = dict(slot_seconds=slot_s, ext_mbit=EXT_MBIT, int_mbit=INT_MBIT, epochs=epochs)
        tw = testbed_workload(jobs, 3, 30, spawn(make_rng(seed), 2)[0], profile=prof, **kw)
        run_dir = CAL_DIR / "runs" / f"{exp.id}-{scheduler}-{emulation}-{seed}"
        with Testbed(
            3,
            run_dir,
            emulation=emulation,
            ext_mbit=EXT_MBIT,
            int_mbit=INT_MBIT,
        ) as tb:
            run = run_cluster(tw, scheduler, tb, seed, scheduler_params=params)
    caps = dict(slot_seconds=slot_s, ext_mbit=(EXT_MBIT,), int_mbit=(INT_MBIT,))
    pred = predict(tw, run, profile_speed(prof, **caps), params)
    m = run_metrics(tw, run, pred)
    # the run's own report (per-job rows, slots.csv, Gantt, loss) beside its job folders
    write_run(
        run_dir / "report",
        tw,
        run,
        pred,
        experiment=exp.id,
        title=f"{exp.id}: {scheduler} ({emulation}, seed {seed})",
        params=params,
    )
    pred_eq1 = predict(tw, run, profile_speed(prof, form="eq1", **caps), params)
    m["median_sim_error_eq1"] = run_metrics(tw, run, pred_eq1)["median_sim_error"]
    nominal = testbed_workload(jobs, 3, 30, spawn(make_rng(seed), 2)[0], **kw)
    tw_nom = dataclasses.replace(tw, workload=nominal.workload)
    m["median_sim_error_nominal"] = run_metrics(tw, run, predict(tw_nom, run, None, params))[
        "median_sim_error"
    ]
    return m


register(
    Experiment(
        id="testbed-pdors",
        setting="cluster",
        title="Testbed: PD-ORS vs OASiS vs FIFO with real PS jobs, measured vs simulated JCT",
        param="emulation",
        points=("local", "netns"),
        quick_points=("local",),
        schedulers=("pd-ors", "oasis", "fifo"),
        metrics=(
            "median_sim_error",
            "p90_sim_error",
            "finished_share_real",
            "finished_share_sim",
            "mean_real_jct",
            "mean_sim_jct",
            "median_sim_error_eq1",
            "median_sim_error_nominal",
            "median_replay_error",
            "total_utility_real",
            "total_utility_sim",
            "completed_jobs",
            "total_bytes",
            "total_preemptions",
            "wall_seconds",
        ),
        build=lambda point, seed, quick: None,
        cell=testbed_cell,
        # the paper's FIFO draws 1–30 workers; three 4-process machines hold 12 processes
        scheduler_params={"fifo": {"max_workers": 3}},
        claims=(
            Bound(
                "median_sim_error",
                "pd-ors",
                "<=",
                0.15,
                "calibrated simulator within 15% of the real JCT (median, PD-ORS)",
            ),
            Bound(
                "median_sim_error",
                "oasis",
                "<=",
                0.15,
                "calibrated simulator within 15% of the real JCT (median, OASiS)",
            ),
            Bound(
                "median_sim_error",
                "fifo",
                "<=",
                0.15,
                "calibrated simulator within 15% of the real JCT (median, FIFO)",
            ),
            Report("mean_real_jct", "pd-ors", "real mean JCT (slots)"),
        ),
        default_seeds=1,
        plot="bar",
        reproduces="the PD-ORS decisions run for real (no paper figure: a check of Eq. (1))",
        opt_in=True,
    )
)
