"""Helpers shared by the ``interval`` schedulers and the offline optimum.

* :func:`max_counts` — the largest w (with p = 1) and p (with w = 1) Eq. (3) allows;
* :func:`fits` — Eq. (3) for one (w, p);
* :func:`allocation_grid` — every integer (w, p) of Eq. (3)–(8) with its
  completion time (the brute force of SMD Sec. V's optimum, and ``smd+``'s
  exact inner problem);
* :func:`best_allocation` — argmax utility over that grid, optionally the
  smallest allocation within a relative tolerance of the best;
* :func:`first_fit` / :func:`knapsack_admission` / :func:`admit` — the two
  readings of the baselines' admission.  The SMD paper compares *allocation*
  policies and does not say how ESW and Optimus admit (Sec. V).  Optimus and
  Kubernetes (ESW's source) queue jobs in arrival order: ``"first-fit"``
  admits in submission order (id) each job whose limits still fit under C^r
  (Eq. (2)), otherwise skips it.  ``"knapsack"`` gives the baseline SMD's own
  Step 3: the MKP (16) over the baseline's utilities, solved exactly;
* :class:`AdmittingBaseline` — ESW and Optimus as schedulers: each job's own
  allocation, then :func:`admit`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import ClassVar

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.interval import IntervalDecision, IntervalJob
from dmlsched.model.speed.smd import completion_time, job_etas
from dmlsched.model.views import IntervalView
from dmlsched.solvers.knapsack import mkp_exact

__all__ = [
    "ADMISSIONS",
    "AdmittingBaseline",
    "admit",
    "allocation_grid",
    "best_allocation",
    "check_admission",
    "first_fit",
    "fits",
    "knapsack_admission",
    "max_counts",
]

_TOL = 1e-9
ADMISSIONS: tuple[str, ...] = ("first-fit", "knapsack")


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


def allocation_grid(job: IntervalJob) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(w, p, share, t) over the (w, p) box of :func:`max_counts`, infeasible cells t = inf.

    ``share`` is the allocation's size: the mean over resources with a
    positive limit of (O^r w + G^r p) / v^r — the engine's
    ``used_resource_ratio`` for this one job.
    """
    w_max, p_max = max_counts(job)
    w = np.arange(1, w_max + 1)[:, None]
    p = np.arange(1, p_max + 1)[None, :]
    o = np.asarray(job.worker_demand, dtype=float)
    g = np.asarray(job.ps_demand, dtype=float)
    v = np.asarray(job.limit, dtype=float)
    ok = np.ones((w_max, p_max), dtype=bool)
    share = np.zeros((w_max, p_max))
    pos = [r for r in range(v.size) if v[r] > 0]
    for r in range(v.size):
        use = o[r] * w + g[r] * p
        ok &= use <= v[r] * (1 + _TOL) + _TOL
        if v[r] > 0:
            share = share + use / v[r]
    share = share / max(len(pos), 1)
    t = np.where(ok, completion_time(job, w, p, job_etas(job)), np.inf)
    return np.broadcast_to(w, t.shape), np.broadcast_to(p, t.shape), share, t


def best_allocation(job: IntervalJob, tolerance: float | None = None) -> tuple[int, int, float]:
    """(w, p, utility): argmax over every feasible integer (w, p) of μ(E/f).

    ``tolerance = None``: the least completion time (μ is non-increasing, so
    it has the best utility).  ``tolerance ≥ 0``: among the allocations whose
    utility is at least (1 − tolerance) × the best (0: exactly the best — the
    sigmoid saturates to its maximum in floating point far from its
    deadline), the one with the smallest ``share`` (ties: fewer tasks, then
    less completion time).
    """
    w, p, share, t = allocation_grid(job)
    k = np.unravel_index(int(np.argmin(t)), t.shape)
    if tolerance is None:
        return int(w[k]), int(p[k]), float(job.utility(float(t[k])))
    best_u = float(job.utility(float(t[k])))
    # μ is non-increasing: the allocations within tolerance are those with
    # t ≤ the largest grid time whose utility still qualifies (binary search)
    times = np.sort(t[np.isfinite(t)].ravel())
    floor_u = (1.0 - tolerance) * best_u if tolerance > 0 else best_u
    lo, hi = 0, times.size - 1  # times[lo] qualifies (it is the best)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if job.utility(float(times[mid])) >= floor_u:
            lo = mid
        else:
            hi = mid - 1
    cand = np.flatnonzero((t <= times[lo]).ravel())
    order = np.lexsort((t.ravel()[cand], (w + p).ravel()[cand], np.round(share.ravel()[cand], 12)))
    c = np.unravel_index(int(cand[order[0]]), t.shape)
    return int(w[c]), int(p[c]), float(job.utility(float(t[c])))


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


def knapsack_admission(
    jobs: Sequence[IntervalJob], values: Sequence[float], capacity: np.ndarray
) -> list[int]:
    """Ids of the exact MKP (16) solution with the given per-job utilities (SMD Step 3)."""
    if not jobs:
        return []
    weights = np.array([j.limit for j in jobs], dtype=float).reshape(len(jobs), -1)
    pick = mkp_exact(np.asarray(values, dtype=float), weights, np.asarray(capacity, float))
    return [j.id for j, x in zip(jobs, pick, strict=True) if x]


def admit(
    rule: str,
    jobs: Sequence[IntervalJob],
    allocations: Sequence[tuple[int, int]],
    capacity: np.ndarray,
) -> list[int]:
    """Admitted ids under ``rule`` (:data:`ADMISSIONS`) for the given allocations."""
    if rule == "first-fit":
        return first_fit(jobs, capacity)
    values = [
        float(j.utility(float(completion_time(j, w, p))))
        for j, (w, p) in zip(jobs, allocations, strict=True)
    ]
    return knapsack_admission(jobs, values, capacity)


def check_admission(rule: object, scheduler: str) -> None:
    """InvalidInput unless ``rule`` is one of :data:`ADMISSIONS`."""
    if rule not in ADMISSIONS:
        raise InvalidInput("admission", rule, " | ".join(ADMISSIONS), scheduler)


class AdmittingBaseline(ABC):
    """An ``interval`` baseline of SMD Sec. V: every job gets an allocation of its own
    (:meth:`allocation`, within its limits), and the jobs admitted are those of
    :func:`admit` under option ``admission`` (:data:`ADMISSIONS`)."""

    setting: ClassVar[str] = "interval"
    name: ClassVar[str]

    def __init__(self, admission: str = "first-fit") -> None:
        self.admission = admission

    @abstractmethod
    def allocation(self, job: IntervalJob) -> tuple[int, int]:
        """The job's (workers, PSs) should it be admitted."""

    def reset(
        self, capacity: np.ndarray, resources: tuple[str, ...], rng: np.random.Generator
    ) -> None:
        check_admission(self.admission, self.name)

    def decide(self, view: IntervalView) -> IntervalDecision:
        alloc = {j.id: self.allocation(j) for j in view.jobs}
        ids = admit(self.admission, view.jobs, [alloc[j.id] for j in view.jobs], view.capacity)
        return IntervalDecision(allocations={i: alloc[i] for i in ids})
