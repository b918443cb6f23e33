"""Helpers shared by the ``interval`` schedulers and the offline optimum.

* :func:`max_counts` — the largest w (with p = 1) and p (with w = 1) Eq. (3) allows;
* :func:`fits` — Eq. (3) for one (w, p);
* :func:`first_fit` — admission of the baselines (ESW, Optimus): jobs in
  submission order (id), each admitted if its limits still fit under C^r
  (Eq. (2)), otherwise skipped.  The SMD paper compares *allocation* policies
  and does not say how they admit; Optimus and Kubernetes (ESW's source)
  queue jobs in arrival order, which is what first fit does within one
  interval.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from dmlsched.model.interval import IntervalJob

__all__ = ["first_fit", "fits", "max_counts"]

_TOL = 1e-9


def fits(job: IntervalJob, workers: int, ps: int) -> bool:
    """Eq. (3): O^r w + G^r p ≤ v^r for every resource."""
    use = job.usage(workers, ps)
    return bool(np.all(use <= np.asarray(job.limit) * (1 + _TOL) + _TOL))


def max_counts(job: IntervalJob) -> tuple[int, int]:
    """(max w with p = 1, max p with w = 1) under Eq. (3)."""
    o = np.asarray(job.worker_demand)
    g = np.asarray(job.ps_demand)
    v = np.asarray(job.limit)
    w_max = min(
        (math.floor((v[r] - g[r]) / o[r] + _TOL) for r in range(v.size) if o[r] > 0), default=10**6
    )
    p_max = min(
        (math.floor((v[r] - o[r]) / g[r] + _TOL) for r in range(v.size) if g[r] > 0), default=10**6
    )
    return max(w_max, 1), max(p_max, 1)


def first_fit(jobs: Iterable[IntervalJob], capacity: np.ndarray) -> list[int]:
    """Ids admitted in submission order while Σ v^r ≤ C^r (Eq. (2))."""
    left = np.array(capacity, dtype=float)
    out: list[int] = []
    for job in sorted(jobs, key=lambda j: j.id):
        lim = np.asarray(job.limit, dtype=float)
        if np.all(lim <= left * (1 + _TOL) + _TOL):
            left -= lim
            out.append(job.id)
    return out
