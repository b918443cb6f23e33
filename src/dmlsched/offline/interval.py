"""Offline optimum of the ``interval`` problem (1) (SMD Sec. V, Fig. 11).

As Sec. V does, every integer (w, p) allowed by Eq. (3) is enumerated per
job and the best utility kept (:func:`~dmlsched.schedulers._shared.
interval.best_allocation`, vectorised over the (w, p) grid); since
Eq. (2) charges admission the limits v^r[i], not the allocation, the
optimum of (1) is then the MKP (16) over these best utilities, solved
exactly by MILP on HiGHS.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmlsched.model.interval import IntervalWorkload
from dmlsched.schedulers._shared.interval import best_allocation
from dmlsched.solvers.knapsack import mkp_exact

__all__ = ["IntervalOptimum", "best_allocation", "interval_optimum"]


@dataclass(frozen=True)
class IntervalOptimum:
    total_utility: float
    allocations: dict[int, tuple[int, int]]


def interval_optimum(workload: IntervalWorkload) -> IntervalOptimum:
    best = [best_allocation(j) for j in workload.jobs]
    values = np.array([b[2] for b in best])
    weights = np.array([j.limit for j in workload.jobs], dtype=float).reshape(len(best), -1)
    pick = mkp_exact(values, weights, workload.capacity)
    allocs = {j.id: (b[0], b[1]) for j, b, x in zip(workload.jobs, best, pick, strict=True) if x}
    return IntervalOptimum(float(values[pick].sum()), allocs)
