"""OASiS (Bao, Peng, Wu, Li, INFOCOM 2018; PD-ORS's reference [6]).

The same online primal-dual framework as PD-ORS — exponential prices Eq.
(12)–(14), admission iff the best schedule's payoff λ > 0, the whole schedule
committed at arrival, DP over completion times with workload quanta (shared
code in :mod:`dmlsched.schedulers._shared.primal_dual`) — but workers and PSs
live on two *strictly separated* machine sets (PD-ORS Sec. V: "half of the
machines host parameter servers and the other half host workers").  Hence
every worker–PS link is external (Fact 1) and a slot's subproblem splits into
two independent ones: w workers on worker machines, s PSs on PS machines.
Each machine of a set holds ⌊min_r Ĉ_h^r/α^r⌋ workers (or /β^r PSs) at a
linear price, so filling the cheapest machines first is the exact integer
optimum of the slot problem — no LP or rounding needed (this is the greedy
allocation of OASiS's per-slot subroutine).

Assumptions (OASiS's own model differs in details we align with the
engine's): workers machines are ids 0 … ⌈H/2⌉−1, PS machines the rest (with
H = 1 nothing can run and every job is rejected); workers needed for v work
in a slot are ⌈v / r^(e)⌉, capped by Eq. (4)/(3.2) (OASiS itself does not
fix the global batch); PSs ⌈w/γ⌉ (sync).  Async jobs put their
⌈w·b^(e)/B⌉ ≥ 1 PSs (≤ w, (3.5)) on a single PS machine, so (3.4) holds with
one PS machine.  The price constants U^r, L are PD-ORS's Eq. (13)–(14) (the
same form OASiS uses), estimated the same way (``price_estimate``).  A job
whose committed schedule ends with work left (real training slower than the
plan's rate) has that work planned again (``shortfall="replan"``, a
departure shared with PD-ORS; ``"keep"`` leaves it unfinished, as OASiS's
model, where the plan's rate is exact, never needs to decide).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dmlsched.model.cluster import ClusterJob, Placement
from dmlsched.model.speed.pdors import worker_rate
from dmlsched.numerics import matvec
from dmlsched.schedulers._shared.pricing import PriceBounds
from dmlsched.schedulers._shared.primal_dual import PrimalDualScheduler, Quanta
from dmlsched.schedulers.protocols import register

__all__ = ["Oasis", "greedy_fill"]

_TOL = 1e-9


def greedy_fill(unit_cost: np.ndarray, caps: np.ndarray, n_max: int) -> np.ndarray:
    """Cost of placing 0..n_max identical tasks on the cheapest machines (inf if no room).

    ``unit_cost[h]`` per task on machine h, ``caps[h]`` tasks it can hold.
    """
    order = np.argsort(unit_cost, kind="stable")
    caps_sorted = np.minimum(caps[order], n_max).astype(np.int64)
    units = np.repeat(unit_cost[order], caps_sorted)[:n_max]
    out = np.full(n_max + 1, np.inf)
    out[0] = 0.0
    out[1 : units.size + 1] = np.cumsum(units)
    return out


def _fill(unit_cost: np.ndarray, caps: np.ndarray, n: int, ids: np.ndarray) -> dict[int, int]:
    order = np.argsort(unit_cost, kind="stable")
    left, got = n, {}
    for i in order:
        if left <= 0:
            break
        take = int(min(left, caps[i]))
        if take > 0:
            got[int(ids[i])] = take
            left -= take
    return got


def _caps(free: np.ndarray, demand: np.ndarray) -> np.ndarray:
    pos = demand > 0
    if not pos.any():
        return np.full(free.shape[0], 10**9)
    return np.floor(np.min(free[:, pos] / demand[pos], axis=1) + _TOL).clip(min=0)


@dataclass
class _Slot:
    price: np.ndarray
    free: np.ndarray
    cost: np.ndarray


class OasisOracle:
    """Per-slot exact greedy on separated worker / PS machines."""

    def __init__(self, H: int, job: ClusterJob, quanta: Quanta) -> None:
        self.job = job
        self.q = q = quanta.count
        half = math.ceil(H / 2)
        self.wm = np.arange(0, half)
        self.pm = np.arange(half, H)
        self.alpha = np.asarray(job.worker_demand, dtype=float)
        self.beta = np.asarray(job.ps_demand, dtype=float)
        work = np.arange(q + 1) * quanta.size
        self.m = np.ceil(work / worker_rate(job, False) - _TOL).astype(np.int64)
        self.ok = self.m <= job.max_workers
        if job.mode == "sync":
            self.n_ps = np.where(self.m > 0, np.ceil(self.m / job.gamma - _TOL), 0).astype(np.int64)
        else:
            ps = np.maximum(1, np.ceil(self.m * job.b_ext / job.ps_bandwidth - _TOL))
            self.n_ps = np.where(self.m > 0, ps, 0).astype(np.int64)
            self.ok &= self.n_ps <= self.m
        self.cache: dict[bytes, _Slot] = {}
        self.slot_key: dict[int, bytes] = {}

    def costs(self, t: int, price: np.ndarray, free: np.ndarray, key: bytes) -> np.ndarray:
        self.slot_key[t] = key
        if key not in self.cache:
            self.cache[key] = self._slot(np.array(price), np.array(free))
        return self.cache[key].cost

    def _slot(self, price: np.ndarray, free: np.ndarray) -> _Slot:
        cost = np.full(self.q + 1, np.inf)
        cost[0] = 0.0
        if self.pm.size == 0:
            return _Slot(price, free, cost)
        mmax = int(self.m[self.ok].max()) if self.ok.any() else 0
        w_cost = greedy_fill(
            matvec(price[self.wm], self.alpha), _caps(free[self.wm], self.alpha), mmax
        )
        ps_unit = matvec(price[self.pm], self.beta)
        ps_caps = _caps(free[self.pm], self.beta)
        nmax = int(self.n_ps[self.ok].max()) if self.ok.any() else 0
        if self.job.mode == "sync":
            p_cost = greedy_fill(ps_unit, ps_caps, nmax)
        else:  # all PSs on one PS machine: cheapest machine that holds n
            n = np.arange(nmax + 1)
            per = np.where(ps_caps[None, :] >= n[:, None], n[:, None] * ps_unit[None, :], np.inf)
            p_cost = per.min(axis=1) if per.size else np.full(nmax + 1, np.inf)
            p_cost[0] = 0.0
        for k in range(1, self.q + 1):
            if self.ok[k]:
                cost[k] = w_cost[self.m[k]] + p_cost[self.n_ps[k]]
        return _Slot(price, free, cost)

    def realize(self, t: int, k: int) -> tuple[float, Placement, int] | None:
        d = self.cache[self.slot_key[t]]
        if not math.isfinite(d.cost[k]):
            return None
        workers = _fill(
            matvec(d.price[self.wm], self.alpha),
            _caps(d.free[self.wm], self.alpha),
            int(self.m[k]),
            self.wm,
        )
        ps_unit = matvec(d.price[self.pm], self.beta)
        ps_caps = _caps(d.free[self.pm], self.beta)
        n = int(self.n_ps[k])
        if self.job.mode == "sync":
            ps = _fill(ps_unit, ps_caps, n, self.pm)
        else:
            fits = np.flatnonzero(ps_caps >= n)
            h = fits[np.argmin(ps_unit[fits])]
            ps = {int(self.pm[h]): n}
        return float(d.cost[k]), Placement.from_counts(workers, ps), 0


@register
class Oasis(PrimalDualScheduler):
    """OASiS: primal-dual admission, workers and PSs on separate machine halves."""

    name: ClassVar[str] = "oasis"

    def _oracle(self, job: ClusterJob, quanta: Quanta, bounds: PriceBounds) -> OasisOracle:
        return OasisOracle(self.capacity_.shape[0], job, quanta)
