"""The ``cluster`` run's metrics (see :mod:`dmlsched.sim.cluster` for each one's meaning).

Completion and utility follow the paper: t̃_i is the completion slot and
the job earns u_i(t̃_i − a_i) (Eq. (6), DMLRS objective), so a job that
finishes in its arrival slot has training time 0.  Unfinished or rejected
jobs earn nothing and count T − a_i as training time (PD-ORS Fig. 9).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dmlsched.model.cluster import ClusterJob

__all__ = ["Outcome", "metrics"]


class Outcome(NamedTuple):
    """What a run ended with, by job (the engine's state at the end)."""

    jobs: list[ClusterJob]  # every registered job, by the engine's index
    arrival: np.ndarray  # a_i by index
    finished: np.ndarray  # indices of completed jobs, in completion order
    finished_slot: np.ndarray  # their completion slots t̃_i
    jct: list[float]  # their JCTs in slots, in completion order
    admitted: int  # jobs admitted (completed or still active)
    rejected: int
    progress: np.ndarray  # each admitted job's fraction of its work done
    mean_workers: float  # workers per job per slot it ran


def metrics(
    out: Outcome, resources: tuple[str, ...], horizon: int, slot_seconds: float, util: np.ndarray
) -> dict[str, float]:
    """The run's metrics; ``util``: per-slot used ÷ capacity, slots × resources."""
    ended = np.full(len(out.jobs), horizon, dtype=np.int64)  # the completion slot, else T
    ended[out.finished] = out.finished_slot
    times = ended - out.arrival  # training times: unfinished jobs count T − a_i
    utility = 0.0
    for d in np.sort(out.finished).tolist():  # in the engine's (workload) order
        utility += out.jobs[d].utility(int(times[d]))
    jct = out.jct
    res = {
        "total_utility": utility,
        "median_training_time": float(np.median(times)) if times.size else 0.0,
        "mean_training_time": float(np.mean(times)) if times.size else 0.0,
        "completed_jobs": float(len(out.finished)),
        "admitted_jobs": float(out.admitted),
        "rejected_jobs": float(out.rejected),
        "mean_utilization": float(util.mean()) if util.size else 0.0,
        "mean_jct": float(np.mean(jct)) if jct else float("nan"),
        "mean_jct_s": (float(np.mean(jct)) * slot_seconds if jct else float("nan")),
        "mean_progress": float(np.mean(out.progress)) if out.progress.size else 0.0,
        "mean_workers": out.mean_workers,
    }
    for r, name in enumerate(resources):
        res[f"mean_utilization_{name}"] = float(util[:, r].mean())
    return res
