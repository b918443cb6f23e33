"""Experiments with real processes on the testbed (:mod:`dmlsched.testbed`).

Marked ``opt_in``: ``reproduce --all`` leaves them out unless ``--only``
names them (``--only 'testbed-*'``); they need a few minutes of wall time
each and, for ``netns``, root.  Run them with ``--workers 1`` — a testbed
cell takes a machine-wide lock anyway, so two never share the CPUs.

``testbed-pdors`` — every cluster scheduler (PD-ORS, PD-ORS+, OASiS, FIFO,
DRF, Tiresias) on twelve testbed jobs (E ∈ [5, 15] epochs, each asking
for 1–3 workers: FIFO and Tiresias honour the request), three machines,
20-s slots, in both emulations (quick: four jobs, 10-s slots, ``local``).
**Held-out seeds:** the cell of seed s runs the workload of seed 1 + s —
workload seed 0 is the one looked at while building the speed model, so
``--seeds 3`` reports on seeds 1–3 only.  Each cell calibrates first
(``dmlsched testbed calibrate`` at the run's cap, with its held-out probes;
cached per emulation and cap for the machine's lifetime in
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
  preemptions, wall seconds;
* what distorts a run: ``distorted_slots`` / ``overrun_slots`` (deciding
  and reconfiguring took > 10% of a slot / longer than the slot),
  ``loaded_slots`` (slots begun with the 1-minute load average above the
  machine's CPUs) and the load average when the run started and ended.

Each cell also writes the run's own report (per-job ``results.csv``,
``slots.csv``, ``summary.md``, Gantt chart, loss curves) to
``/tmp/dmlsched-testbed-calibration/runs/<id>-<scheduler>-<emulation>-<seed>/report``;
:func:`dmlsched.testbed.pooled.pooled_errors` pools their jobs per
scheduler and mode, and over all (``make testbed-validate``).

The ``edge-cloud`` and ``geo`` testbed experiments (``testbed-aonline-fig4``
to ``fig6``, ``testbed-mlbroker-table4``) live in :mod:`.testbed_edge_geo`.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from dmlsched.experiments.catalogue import Experiment, Point, register
from dmlsched.experiments.claims import Bound, Report

if TYPE_CHECKING:  # the testbed's modules load when a cell runs, not with the catalogue
    from dmlsched.model.speed.calibrated import CalibratedSpeed
    from dmlsched.testbed.workload import TestbedWorkload

__all__ = ["testbed_cell"]

CAL_DIR = Path("/tmp/dmlsched-testbed-calibration")
EXT_MBIT = 10.0
INT_MBIT = 50.0
SCHEDULERS = ("pd-ors", "pd-ors+", "oasis", "fifo", "drf", "tiresias")
JOBS = 12
SLOT_SECONDS = 20.0
EPOCHS = (5, 15)
GANGS = (1, 3)  # workers each job asks for (FIFO and Tiresias honour it)
HORIZON = 30
HELD_OUT = 1  # cell seed s runs workload seed 1 + s: seed 0 is the calibration's


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
            held_out=not quick,
        )
    return json.loads(path.read_text())


def _workload(seed: int, quick: bool, profile: dict | None = None) -> TestbedWorkload:
    """The testbed workload of workload seed ``seed`` (told ``profile``'s Eq. (1))."""
    from dmlsched.rng import make_rng, spawn
    from dmlsched.testbed.workload import testbed_workload

    jobs, slot_s, epochs = (4, 10.0, (2, 5)) if quick else (JOBS, SLOT_SECONDS, EPOCHS)
    return testbed_workload(
        jobs, 3, HORIZON, spawn(make_rng(seed), 2)[0],
        slot_seconds=slot_s, ext_mbit=EXT_MBIT, int_mbit=INT_MBIT, epochs=epochs, gangs=GANGS,
        profile=profile,
    )  # fmt: skip


def _speed(profile: dict, quick: bool, form: str | None = None) -> CalibratedSpeed:
    """The engine's speed model of ``profile`` for this experiment's slots and caps."""
    from dmlsched.workloads.speed_profile import profile_speed

    slot_s = 10.0 if quick else SLOT_SECONDS
    return profile_speed(
        profile, form=form, slot_seconds=slot_s, ext_mbit=(EXT_MBIT,), int_mbit=(INT_MBIT,)
    )


def testbed_cell(exp: Experiment, scheduler: str, point: Point, seed: int, quick: bool) -> dict:
    """One testbed run of ``scheduler`` (emulation ``point``) and its predictions."""
    from dmlsched.testbed.predict import predict
    from dmlsched.testbed.report import run_metrics, write_run
    from dmlsched.testbed.run import run_cluster
    from dmlsched.testbed.runtime import Testbed

    emulation = str(point)
    params = dict(exp.scheduler_params.get(scheduler, {}))
    wl_seed = HELD_OUT + seed  # seed 0 of the workloads is the calibration's (module docstring)
    CAL_DIR.mkdir(parents=True, exist_ok=True)
    with (CAL_DIR / "lock").open("w") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)  # one testbed at a time on this machine
        prof = _profile(emulation, quick)
        tw = _workload(wl_seed, quick, prof)
        run_dir = CAL_DIR / "runs" / f"{exp.id}-{scheduler}-{emulation}-{wl_seed}"
        load_start = os.getloadavg()[0]
        with Testbed(
            3,
            run_dir,
            emulation=emulation,
            ext_mbit=EXT_MBIT,
            int_mbit=INT_MBIT,
        ) as tb:
            # no early stop for stalls: OASiS admits jobs whose planned start is slots away
            run = run_cluster(tw, scheduler, tb, wl_seed, scheduler_params=params, stall_slots=0)
        load_end = os.getloadavg()[0]
    pred = predict(tw, run, _speed(prof, quick), params)
    m = run_metrics(tw, run, pred)
    m["load_start"], m["load_end"] = load_start, load_end
    # the run's own report (per-job rows, slots.csv, Gantt, loss) beside its job folders,
    # with the profile it was predicted with (repredict reads both)
    report = run_dir / "report"
    write_run(
        report,
        tw,
        run,
        pred,
        experiment=exp.id,
        title=f"{exp.id}: {scheduler} ({emulation}, workload seed {wl_seed})",
        params=params,
    )
    (report / "profile.json").write_text(json.dumps(prof, indent=1) + "\n")
    pred_eq1 = predict(tw, run, _speed(prof, quick, form="eq1"), params)
    m["median_sim_error_eq1"] = run_metrics(tw, run, pred_eq1)["median_sim_error"]
    tw_nom = dataclasses.replace(tw, workload=_workload(wl_seed, quick).workload)
    m["median_sim_error_nominal"] = run_metrics(tw, run, predict(tw_nom, run, None, params))[
        "median_sim_error"
    ]
    return m


def _claims() -> tuple:
    out: list = []
    for s in SCHEDULERS:
        out.append(
            Bound(
                "median_sim_error",
                s,
                "<=",
                0.05,
                f"calibrated simulator within 5% of the real JCT (median over every started "
                f"job, unfinished censored; {s})",
            )
        )
        out.append(
            Bound(
                "p90_sim_error",
                s,
                "<=",
                0.10,
                f"calibrated simulator within 10% of the real JCT (90th percentile; {s})",
            )
        )
    return (*out, Report("mean_real_jct", "pd-ors", "real mean JCT (slots)"))


register(
    Experiment(
        id="testbed-pdors",
        setting="cluster",
        title="Testbed: every cluster scheduler with real PS jobs, measured vs simulated JCT",
        param="emulation",
        points=("local", "netns"),
        quick_points=("local",),
        schedulers=SCHEDULERS,
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
            "median_slot_rate_error",
            "total_utility_real",
            "total_utility_sim",
            "completed_jobs",
            "counted_jobs",
            "censored_jobs",
            "distorted_slots",
            "overrun_slots",
            "loaded_slots",
            "load_start",
            "load_end",
            "total_bytes",
            "total_preemptions",
            "wall_seconds",
        ),
        build=lambda point, seed, quick: None,
        cell=testbed_cell,
        claims=_claims(),
        default_seeds=3,
        plot="bar",
        reproduces="the schedulers' decisions run for real (no paper figure: a check of the "
        "engine's speed model)",
        opt_in=True,
    )
)
