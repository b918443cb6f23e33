"""Gang allocation for priority schedulers (``tiresias``, ``srtf`` in ``cluster``).

As the peer simulators do it (the Pollux artifact's Tiresias): each slot,

1. *select* in priority order every job whose whole gang (W workers + S PSs)
   still fits the cluster's aggregate remaining capacity — a job that does not
   fit is skipped, lower-priority jobs may still run (no head-of-line
   blocking); preemption is implicit: a running job not selected stops;
2. *place*: a selected job that ran in the previous slot keeps its placement
   (no migration); the others are placed, in priority order, in the capacity
   left — consolidated (:func:`place_packed`, default) or round-robin; one
   that cannot be placed (fragmentation) waits this slot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from dmlsched.model.cluster import ClusterJob
from dmlsched.model.decisions import Placement
from dmlsched.schedulers._shared.placement import demand_of, place_packed, place_round_robin

__all__ = ["fits_empty", "gang_allocate", "place"]

_EPS = 1e-9


def place(
    free: np.ndarray, job: ClusterJob, w: int, s: int, how: str, pointer: int
) -> tuple[Placement, int] | None:
    """One gang on ``free``: ("packed" | "round-robin"); returns (placement, pointer)."""
    if how == "packed":
        p = place_packed(free, job, w, s)
        return None if p is None else (p, pointer)
    return place_round_robin(free, job, w, s, pointer)


def fits_empty(capacity: np.ndarray, job: ClusterJob, w: int, s: int, how: str) -> bool:
    """Whether the gang can be placed on the empty cluster at all."""
    return w > 0 and place(capacity, job, w, s, how, 0) is not None


def gang_allocate(
    order: Sequence[int],
    jobs: Mapping[int, ClusterJob],
    gangs: Mapping[int, tuple[int, int]],
    running: Mapping[int, Placement],
    capacity: np.ndarray,
    how: str = "packed",
    pointer: int = 0,
) -> tuple[dict[int, Placement], int]:
    """This slot's placements for jobs in priority ``order`` (see the module docstring)."""
    H = capacity.shape[0]
    left = capacity.sum(axis=0).astype(float)
    selected = []
    for j in order:
        job = jobs[j]
        w, s = gangs[j]
        need = w * np.asarray(job.worker_demand) + s * np.asarray(job.ps_demand)
        if np.all(need <= left + _EPS):
            left -= need
            selected.append(j)
    free = np.array(capacity, dtype=float)
    out: dict[int, Placement] = {}
    for j in selected:
        if j in running:
            out[j] = running[j]
            free -= demand_of(jobs[j], running[j], H)
    for j in selected:
        if j in out:
            continue
        w, s = gangs[j]
        got = place(free, jobs[j], w, s, how, pointer)
        if got is None:
            continue
        p, pointer = got
        out[j] = p
        free -= demand_of(jobs[j], p, H)
    return out, pointer
