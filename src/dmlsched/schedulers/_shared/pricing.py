"""Primal-dual resource prices of PD-ORS (journal Eq. (12)–(14)), shared with OASiS.

Price of resource r on machine h in slot t, Eq. (12)::

    p_h^r[t] = Q_h^r(ρ_h^r[t]) = L · (U^r / L) ^ (ρ_h^r[t] / C_h^r)

so an idle machine costs L per unit and a full one U^r.  The constants:

* Eq. (13) ``U^r = max_i u_i(t_min_i) / (α_i^r + β_i^r)`` — the best utility per
  unit of resource r, at the job's earliest training time ``t_min_i``
  (all ``max_workers`` workers at the internal rate);
* Eq. (14) ``L = min_i u_i(T − a_i) / (2μ · ⌈V_i / r_i^(e)⌉ Σ_r (α_i^r + β_i^r))``
  — the worst utility per unit of resource and worker-slot at the external
  rate, scaled by ``1/μ = min_i ⌈V_i/r_i^(e)⌉ Σ_r (α_i^r + β_i^r) / (T Σ_h Σ_r C_h^r)``
  (the largest 1/μ the paper's condition allows).

Decisions (units; the paper uses E·K/F·(τ + …) "slots" loosely):

* ``V_i / r`` is the number of worker-slots at per-worker rate r
  (:func:`dmlsched.model.speed.pdors.worker_rate`); the earliest duration is
  ``d = V_i / (max_workers · r^(i))`` slots and, since a job finishing in its
  arrival slot has training time 0, ``t_min = ⌈d⌉ − 1``; the latest training
  time of a job that completes is ``T − 1 − a_i``.
* A resource that job i does not use (α^r + β^r = 0) is skipped in U^r; if no
  job uses r, U^r = L (a flat price).  Jobs whose utility at ``T − 1 − a_i``
  is 0 are skipped in L (they would make L = 0 and Eq. (12) undefined); if
  every job is skipped L falls back to ``1e-12 · min_r U^r``.
* Prices are computed in log space: with sigmoid utilities L can be 1e-100.

The paper says U^r and L "can be estimated from historical data".  Two
estimates are offered: :func:`price_bounds` over a given job set (the oracle:
the whole workload), and :class:`OnlineBounds`, which folds in every job seen
so far (the current arrival included).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from dmlsched.model.cluster import ClusterJob
from dmlsched.model.speed.pdors import worker_rate
from dmlsched.numerics import exp, log

__all__ = [
    "OnlineBounds",
    "PriceBounds",
    "earliest_training_time",
    "external_worker_slots",
    "price_bounds",
    "prices",
]


@dataclass(frozen=True)
class PriceBounds:
    """U^r per resource (Eq. (13)) and L (Eq. (14))."""

    upper: tuple[float, ...]
    lower: float

    @functools.cached_property
    def log_ratio(self) -> np.ndarray:
        """ln(U^r / L) per resource (≥ 0; read-only, computed once per bounds)."""
        u = np.maximum(np.asarray(self.upper, dtype=float), self.lower)
        out = log(u) - math.log(self.lower)
        out.flags.writeable = False
        return out


def earliest_training_time(job: ClusterJob) -> int:
    """⌈V / (max_workers · r^(i))⌉ − 1: all workers, all co-located, every slot."""
    d = job.total_work / (job.max_workers * worker_rate(job, internal=True))
    return max(0, math.ceil(d - 1e-9) - 1)


def external_worker_slots(job: ClusterJob) -> float:
    """⌈E K (τ + 2gγ/(b^(e) F))⌉ = ⌈V / r^(e)⌉ worker-slots (Eq. (14)'s denominator)."""
    return float(math.ceil(job.total_work / worker_rate(job, internal=False) - 1e-9))


def _job_terms(job: ClusterJob, horizon: int) -> tuple[np.ndarray, float, float]:
    """(U candidates per r, external demand D_i, u_i(T − 1 − a_i)) of one job."""
    demand = np.asarray(job.worker_demand, float) + np.asarray(job.ps_demand, float)
    best = job.utility(earliest_training_time(job))
    with np.errstate(divide="ignore", invalid="ignore"):
        u_r = np.where(demand > 0, best / np.where(demand > 0, demand, 1.0), -np.inf)
    d_i = external_worker_slots(job) * float(demand.sum())
    worst = job.utility(max(0, horizon - 1 - job.arrival))
    return u_r, d_i, worst


class OnlineBounds:
    """U^r and L over the jobs folded in so far (running max / min, O(R) per job)."""

    def __init__(self, n_resources: int, horizon: int, total_capacity: float) -> None:
        self.horizon = horizon
        self.total_capacity = total_capacity
        self._u = np.full(n_resources, -np.inf)
        self._min_d = math.inf  # min_i D_i, for 1/μ
        self._min_ratio = math.inf  # min_i u_i(T−1−a_i) / D_i over u > 0
        self.count = 0

    def observe(self, job: ClusterJob) -> None:
        u_r, d_i, worst = _job_terms(job, self.horizon)
        self._u = np.maximum(self._u, u_r)
        self._min_d = min(self._min_d, d_i)
        if worst > 0 and d_i > 0:
            self._min_ratio = min(self._min_ratio, worst / d_i)
        self.count += 1

    def bounds(self) -> PriceBounds:
        inv_mu = self._min_d / (self.horizon * self.total_capacity)
        finite_u = self._u[np.isfinite(self._u) & (self._u > 0)]
        if math.isfinite(self._min_ratio) and inv_mu > 0:
            lower = 0.5 * inv_mu * self._min_ratio
        else:
            lower = 1e-12 * (float(finite_u.min()) if finite_u.size else 1.0)
        lower = max(lower, 1e-300)
        upper = np.where(np.isfinite(self._u) & (self._u > lower), self._u, lower)
        return PriceBounds(tuple(float(x) for x in upper), float(lower))


def price_bounds(jobs: Iterable[ClusterJob], horizon: int, capacity: np.ndarray) -> PriceBounds:
    """Eq. (13)–(14) over ``jobs`` (the oracle estimate when given the whole workload)."""
    cap = np.asarray(capacity, dtype=float)
    est = OnlineBounds(cap.shape[1], horizon, float(cap.sum()))
    for job in jobs:
        est.observe(job)
    return est.bounds()


def prices(rho: np.ndarray, capacity: np.ndarray, bounds: PriceBounds) -> np.ndarray:
    """Eq. (12) element-wise: ``rho`` and ``capacity`` are (…, R) arrays, same shape.

    A resource with zero capacity is priced U^r (it can only be used by a
    job that does not need it).
    """
    cap = np.asarray(capacity, dtype=float)
    frac = np.divide(rho, cap, out=np.ones_like(rho, dtype=float), where=cap > 0)
    np.minimum(np.maximum(frac, 0.0, out=frac), 1.0, out=frac)  # np.clip's values, in place
    return exp(math.log(bounds.lower) + frac * bounds.log_ratio)
