"""Reasons schedulers give (``explain``): capacity shortfalls said with their numbers.

:func:`shortfall` says why a gang of W workers and S PSs cannot be placed in
``free`` capacity (machines × resources), checking in this order:

1. the cluster in total — ``insufficient gpu in the cluster: need 8, free 7``;
2. one task — ``insufficient gpu on every machine: need 2 per worker, largest free 1``;
3. one machine, for a gang that must sit on one (``packed`` placements that
   only fit when consolidated, async PSs) —
   ``insufficient gpu on every machine: need 8, largest free 7``;
4. otherwise fragmentation: enough in total and per task, but not as this
   gang (``fragmented: …``).

:func:`too_large` is (1)–(2) against the empty cluster, for a rejection.
"""

from __future__ import annotations

import numpy as np

from dmlsched.model.cluster import RESOURCES, ClusterJob
from dmlsched.model.reasons import Reason

__all__ = ["shortfall", "too_large"]

_EPS = 1e-9


def _name(r: int) -> str:
    return RESOURCES[r] if r < len(RESOURCES) else f"resource {r}"


def _num(x: float) -> str:
    return f"{x:.4g}"


def _gang(workers: int, ps: int) -> str:
    w = "worker" if workers == 1 else "workers"
    p = "PS" if ps == 1 else "PSs"
    return f"{workers} {w} + {ps} {p}"


def shortfall(
    job: ClusterJob, workers: int, ps: int, free: np.ndarray, *, one_machine: bool = False
) -> Reason:
    """Why ``workers`` workers + ``ps`` PSs of ``job`` do not fit ``free`` (module doc)."""
    free = np.clip(np.asarray(free, dtype=float), 0.0, None)
    alpha = np.asarray(job.worker_demand, dtype=float)
    beta = np.asarray(job.ps_demand, dtype=float)
    need = workers * alpha + ps * beta
    total = free.sum(axis=0) if free.size else np.zeros_like(need)
    over = np.flatnonzero(need > total + _EPS)
    if over.size:
        with np.errstate(divide="ignore"):  # the most binding: the largest need ÷ free
            r = int(over[np.argmax(need[over] / total[over])])
        return Reason(
            "insufficient",
            f"insufficient {_name(r)} in the cluster: need {_num(need[r])}, "
            f"free {_num(total[r])} ({_gang(workers, ps)})",
        )
    largest = free.max(axis=0) if free.size else np.zeros_like(need)
    for task, count, demand in (("worker", workers, alpha), ("PS", ps, beta)):
        if not count or (free.size and (free >= demand - _EPS).all(axis=1).any()):
            continue  # some machine holds one such task
        short = np.flatnonzero(demand > largest + _EPS)
        if short.size:
            with np.errstate(divide="ignore"):
                r = int(short[np.argmax(demand[short] / largest[short])])
            return Reason(
                "insufficient",
                f"insufficient {_name(r)} on every machine: need {_num(demand[r])} "
                f"per {task}, largest free {_num(largest[r])}",
            )
        return Reason(
            "insufficient",
            f"no machine has a {task}'s {', '.join(map(_name, range(need.size)))} free at once",
        )
    if one_machine:
        over = np.flatnonzero(need > largest + _EPS)
        if over.size:
            r = int(over[0])
            return Reason(
                "insufficient",
                f"insufficient {_name(r)} on every machine: need {_num(need[r])}, "
                f"largest free {_num(largest[r])}",
            )
    return Reason(
        "insufficient",
        f"fragmented: {_gang(workers, ps)} fit the free capacity in total but "
        "not machine by machine",
    )


def too_large(job: ClusterJob, workers: int, ps: int, capacity: np.ndarray) -> Reason:
    """Why a gang is rejected: it does not fit even the empty cluster."""
    why = shortfall(job, workers, ps, capacity)
    return Reason("too-large", f"fits nowhere even on the empty cluster: {why.text}")
