"""``peer-replay``: the Pollux artifact's eight 160-job workloads replayed here.

Each point is ``workload-<i>/<speed>``: the Pollux CSV
(``../shared/peers/pollux-osdi21/workloads``, read in place) imported with
60-s slots (:mod:`dmlsched.workloads.peers`) under PD-ORS Eq. (1) (``eq1``) or
the measured Pollux throughput model (``measured``,
:mod:`dmlsched.model.speed.measured`).  Schedulers: ``tiresias`` (the Pollux
artifact's configuration: two queues split at 16 GPU-hours, no promotion),
``srtf`` and ``fifo`` (PD-ORS' FIFO baseline: its own 1–30 workers per job,
not the requested gang).  ``pd-ors`` is left out: with 60-s slots a replay
spans thousands of slots and PD-ORS plans every job over the whole horizon
(Alg. 2–3 price and solve per slot), so one workload-6 replay did not finish
in 10 minutes on the 2-core machine; a coarser-slot PD-ORS replay is future
work.

The summary sets our Tiresias average JCT on workload-6 beside the Pollux
simulator's published 3469.69 s.  Ours is lower for reasons the import
documents: (1) Pollux's simulator counts *statistical* epochs — with the
requested large batches a step advances progress by the gradient-noise gain
(< batch / initial batch), so jobs need more real epochs than the
application's ``max_epochs``, while we count E·K plain samples; (2) every
(re)allocation there costs a 30-s restart, none here; (3) epochs × dataset
sizes are our published-figure estimates, not the artifact's validation
traces; (4) Eq. (1)'s PS model under-predicts all-reduce slowdown
(``dmlsched calibrate``: ~30% mean absolute error), which is why the measured
model gives longer JCTs than ``eq1``.
"""

from __future__ import annotations

from pathlib import Path

from dmlsched.experiments.catalogue import Experiment, Point, default_cell, register
from dmlsched.experiments.claims import Beats, Report
from dmlsched.model.cluster import ClusterWorkload
from dmlsched.workloads.peers import load_pollux
from dmlsched.workloads.profiles import default_profile_dir

__all__ = ["POLLUX_TIRESIAS_W6_S", "build_peer_replay", "peer_replay_cell", "pollux_workload"]

POLLUX_TIRESIAS_W6_S = 3469.69  # Pollux simulator, Tiresias, workload-6 average JCT (s)
SLOT_SECONDS = 60.0
_SPEEDS = ("eq1", "measured")


def pollux_workload(i: int) -> Path:
    """Path of the Pollux artifact's ``workload-<i>.csv`` (may not exist)."""
    prof = default_profile_dir()
    base = prof.parent if prof else Path(__file__).resolve().parents[4] / "shared/peers/x"
    return base / "workloads" / f"workload-{i}.csv"


def _parse(point: Point) -> tuple[int, str]:
    name, speed = str(point).split("/")
    return int(name.rsplit("-", 1)[1]), speed


def build_peer_replay(point: Point, seed: int, quick: bool) -> ClusterWorkload:
    """The point's Pollux workload; deterministic (the seed only drives schedulers)."""
    i, speed = _parse(point)
    return load_pollux(pollux_workload(i), slot_seconds=SLOT_SECONDS, speed=speed)


def peer_replay_cell(
    exp: Experiment, scheduler: str, point: Point, seed: int, quick: bool
) -> dict[str, float]:
    """Default cell plus JCT in seconds (``mean_jct`` is in 60-s slots)."""
    m = dict(default_cell(exp, scheduler, point, seed, quick))
    m["mean_jct_s"] = m["mean_jct"] * SLOT_SECONDS
    if _parse(point)[0] == 6:
        m["w6_mean_jct_s"] = m["mean_jct_s"]
    return m


_SCHEDS = ("tiresias", "srtf", "fifo")

register(
    Experiment(
        id="peer-replay",
        setting="cluster",
        title="Pollux's eight 160-job workloads replayed (60-s slots), Eq. (1) vs measured speed",
        param="workload",
        points=tuple(f"workload-{i}/{s}" for i in range(1, 9) for s in _SPEEDS),
        quick_points=tuple(f"workload-6/{s}" for s in _SPEEDS),
        schedulers=_SCHEDS,
        metrics=("mean_jct_s", "completed_jobs"),
        build=build_peer_replay,
        cell=peer_replay_cell,
        scheduler_params={"tiresias": {"slot_seconds": SLOT_SECONDS}},
        claims=(
            Report(
                "w6_mean_jct_s",
                "tiresias",
                "Tiresias average JCT (s) on workload-6, ours (eq1 – measured) beside the "
                f"Pollux simulator's published {POLLUX_TIRESIAS_W6_S} s; ours is lower because "
                "Pollux counts statistical epochs (large batches need more real epochs), "
                "charges a 30-s restart per reallocation, and uses the artifact's own "
                "epoch/dataset traces, while Eq. (1) also under-predicts all-reduce slowdown",
            ),
            Beats(
                "mean_jct_s",
                "srtf",
                ("fifo",),
                higher=False,
                text="SRTF has a lower average JCT than FIFO on every workload and speed model",
            ),
            Beats(
                "mean_jct_s",
                "tiresias",
                ("fifo",),
                higher=False,
                text="Tiresias has a lower average JCT than FIFO on every workload and speed model",
            ),
        ),
        default_seeds=3,
        plot="bar",
        reproduces="Pollux (OSDI'21) simulator workloads, Tiresias baseline (Sec. 5.3)",
    )
)
