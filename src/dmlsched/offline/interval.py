"""Offline optimum of the ``interval`` problem (1) (SMD Sec. V, Fig. 11).

As Sec. V does, every integer (w, p) allowed by Eq. (3) is enumerated per
job and the best utility kept (vectorised over the (w, p) grid); since
Eq. (2) charges admission the limits v^r[i], not the allocation, the
optimum of (1) is then the MKP (16) over these best utilities, solved
exactly by MILP on HiGHS.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmlsched.model.interval import IntervalJob, IntervalWorkload
from dmlsched.model.speed.smd import completion_time, job_etas
from dmlsched.schedulers._shared.interval import max_counts
from dmlsched.solvers.knapsack import mkp_exact

__all__ = ["IntervalOptimum", "best_allocation", "interval_optimum"]


@dataclass(frozen=True)
class IntervalOptimum:
    total_utility: float
    allocations: dict[int, tuple[int, int]]


def best_allocation(job: IntervalJob) -> tuple[int, int, float]:
    """argmax over all feasible integer (w, p) of μ(E/f); ties → least completion time."""
    w_max, p_max = max_counts(job)
    w = np.arange(1, w_max + 1)[:, None]
    p = np.arange(1, p_max + 1)[None, :]
    o = np.asarray(job.worker_demand)
    g = np.asarray(job.ps_demand)
    v = np.asarray(job.limit)
    ok = np.ones((w_max, p_max), dtype=bool)
    for r in range(v.size):
        ok &= o[r] * w + g[r] * p <= v[r] * (1 + 1e-9) + 1e-9
    t = np.where(ok, completion_time(job, w, p, job_etas(job)), np.inf)
    k = np.unravel_index(int(np.argmin(t)), t.shape)  # μ non-increasing: least time is best
    return int(k[0] + 1), int(k[1] + 1), float(job.utility(float(t[k])))


def interval_optimum(workload: IntervalWorkload) -> IntervalOptimum:
    best = [best_allocation(j) for j in workload.jobs]
    values = np.array([b[2] for b in best])
    weights = np.array([j.limit for j in workload.jobs], dtype=float).reshape(len(best), -1)
    pick = mkp_exact(values, weights, workload.capacity)
    allocs = {j.id: (b[0], b[1]) for j, b, x in zip(workload.jobs, best, pick, strict=True) if x}
    return IntervalOptimum(float(values[pick].sum()), allocs)
