"""PD-ORS: primal-dual online resource scheduling with co-location (journal Alg. 1–4).

Alg. 1–3 (prices, admission, DP over completion times with workload quanta)
live in :mod:`dmlsched.schedulers._shared.primal_dual`; this module is Alg. 4,
θ(t, v): the cheapest way to train v samples (sync) or mini-batches (async)
in slot t at the current prices p_h^r[t] and residual capacities Ĉ_h^r[t].

* **Internal case** (Fact 1: everything on one machine, rate r^(i)): for
  every quantum count k at once, w = ⌈v / r^(i)⌉ workers and the fewest PSs
  the engine accepts — sync ⌈w/γ⌉ (Eq. (2)); async ⌈w·b^(i)/B⌉ ≥ 1 (3.4, the
  thesis's Alg. 4 Step 5) with PSs ≤ workers (3.5) — on the cheapest machine
  where they fit (Steps 2–7; sorting by Σ_r p(αγ + β) and taking the first
  that fits is the same as taking the cheapest that fits).
* **External case**: the LP relaxation of Problem (23) (journal) / (3.22)
  (thesis) on HiGHS: min Σ_h p_h^w w_h + p_h^s s_h subject to the packing rows
  (24), Σ_h w_h ∈ [⌈v / r^(e)⌉, max_workers] (25)–(26) and the PS row that
  Problem (23) lacks (DESIGN.md): Σ s ≥ Σ w / γ (sync) or Σ s ≥ Σ w · b^(e)/B
  with 1 ≤ Σ s ≤ Σ w (async, (3.4)–(3.5) for one PS machine).  The model is
  built once per job; per slot only costs and packing bounds change, per
  quantum only the workload row's bound.  The LP value is convex and
  piecewise linear in the workload bound, so it is traced with few solves:
  bisection over the quanta, skipping a range when the cover row's dual
  predicts the far end to a relative ``lp_tol`` (1e-2; then the range is
  linear up to that tolerance and the interpolated solutions are feasible,
  optimal up to it); the largest feasible workload comes from one
  max-workers LP.  The LP sees the slot's prices divided by their maximum
  and floored at 1e-6 (:func:`conditioned_costs`): Eq. (12) prices near L are
  ~1e-40 with sigmoid utilities, below HiGHS's absolute tolerances, and an
  LP whose costs all look like zero stops at an arbitrary vertex that
  over-provisions PSs and workers (a gap decision: it changes the LP only
  where prices differ by less than a millionth of the slot's dearest one;
  on the fig. 12 instance at H = 50 it took PD-ORS from 339 to 775 total
  utility).  Then the scaled randomized rounding of
  Eq. (27)–(28) (:func:`dmlsched.solvers.rounding.scaled_round`) with G_δ fixed
  or from Eq. (29)/(30), up to S attempts, accepting a rounding that meets the
  packing rows, the workload row and the engine's exact PS rules (⌈W/γ⌉;
  async: the exact (3.4) load and (3.5)); a rounding with more than
  max_workers workers first drops its costliest surplus workers (the paper
  assumes (25) never binds; our engine enforces Eq. (4)).
* **Packing margin** (``safe_packing``, default on; a gap decision): the LP's
  packing bounds are Ĉ_h^r − (α^r + β^r) instead of Ĉ_h^r.  Rounding moves
  each w_h and s_h up by at most one, so every rounding then meets (24) and
  only the cover and PS rows are left to chance.  Without it, idle machines
  all cost L, the LP saturates machines with fractional counts (e.g. 22.5
  workers), and with G_δ = 1 a rounding is packing-feasible only if every
  such machine rounds down (probability 2^-n): we measured jobs rejected or
  finishing later after S = 100 failed attempts.  ``safe_packing=False``
  gives the paper's plain LP.
* **Failed roundings** (``fallback``): after S infeasible draws the thesis's
  Step-12 "heuristic search" (:meth:`PdorsOracle._heuristic`) builds the
  external schedule (default); ``fallback=False`` is the journal's Sec. V rule
  instead — the cell is unrealizable (the DP then routes around it, so the job
  is discarded only when no other schedule is left).  With the fallback,
  G_δ ≠ 1 is never punished: any G whose roundings fail is replaced by the
  greedy heuristic (measured on ``pdors-fig11``, 3 seeds: 95–100 % of roundings fail
  at G_δ ∈ {0.2, …, 0.8, 1.2}; utility 357.07 at every G_δ).
* **Final step**: the cheaper of the two cases.

Parameters: ``g_delta`` (float, "eq29" or "eq30"), ``delta`` (δ of Eq.
(29)/(30)), ``attempts`` (S), ``fallback``, ``quanta``, ``price_estimate`` / ``history``
(see :class:`~dmlsched.schedulers._shared.primal_dual.PrimalDualScheduler`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from dmlsched.errors import InvalidInput, SolverFailed
from dmlsched.model.cluster import ClusterJob
from dmlsched.model.decisions import Placement
from dmlsched.model.speed.pdors import worker_rate
from dmlsched.schedulers._shared.pricing import PriceBounds
from dmlsched.schedulers._shared.primal_dual import PrimalDualScheduler
from dmlsched.schedulers.protocols import register
from dmlsched.solvers.highs import INF, LinearModel
from dmlsched.solvers.rounding import g_delta_cover, g_delta_packing, scaled_round

__all__ = ["Pdors", "PdorsOracle", "conditioned_costs", "internal_ps", "ps_ratio"]

_TOL = 1e-9
_COST_FLOOR = 1e-6  # relative LP cost floor, 10 × HiGHS's dual feasibility tolerance


def internal_ps(job: ClusterJob, workers: np.ndarray) -> np.ndarray:
    """PSs for ``workers`` co-located workers: ⌈w/γ⌉ (sync), ⌈w b^(i)/B⌉ ≥ 1 (async)."""
    w = np.asarray(workers, dtype=float)
    if job.mode == "sync":
        s = np.ceil(w / job.gamma - _TOL)
    else:
        s = np.maximum(1.0, np.ceil(w * job.b_int / job.ps_bandwidth - _TOL))
    return np.where(w > 0, np.maximum(s, 1.0), 0.0)


def ps_ratio(job: ClusterJob) -> float:
    """PSs per worker in the external LP's PS row."""
    return 1.0 / job.gamma if job.mode == "sync" else job.b_ext / job.ps_bandwidth


@dataclass
class _SlotData:
    price: np.ndarray
    free: np.ndarray
    int_cost: np.ndarray
    int_machine: np.ndarray
    ext_est: np.ndarray
    lp: dict[int, tuple[float, np.ndarray]] = field(default_factory=dict)
    lp_margin: set[int] = field(default_factory=set)


def conditioned_costs(cost: np.ndarray, floor: float = _COST_FLOOR) -> tuple[float, np.ndarray]:
    """(scale, LP costs): ``cost`` ÷ its maximum, floored at ``floor``.

    Eq. (12) prices run from L to U^r, and L can be 1e-40 (sigmoid
    utilities), while HiGHS judges optimality with absolute tolerances
    (1e-7): passed as they are, such costs all look like zero, every
    feasible point is "optimal" and the simplex stops at the first vertex,
    which over-provisions PSs and workers.  Normalized and floored, every
    unit still costs something, so the LP keeps Σ w and Σ s at their
    minimum and prefers cheaper machines wherever the prices differ by more
    than the floor; the objective is recomputed with the true prices.
    """
    top = float(np.max(cost, initial=0.0))
    scale = top if top > 0 and np.isfinite(top) else 1.0
    return scale, np.maximum(cost / scale, floor)


class _ExternalLp:
    """Problem (23) + PS row, built once per job; modified per slot and workload."""

    def __init__(self, job: ClusterJob, H: int) -> None:
        a = np.asarray(job.worker_demand, dtype=float)
        b = np.asarray(job.ps_demand, dtype=float)
        self.res = [r for r in range(len(a)) if a[r] > 0 or b[r] > 0]
        rows, cols, vals = [], [], []
        row = 0
        for r in self.res:
            for h in range(H):
                for col, v in ((h, a[r]), (H + h, b[r])):
                    if v > 0:
                        rows.append(row)
                        cols.append(col)
                        vals.append(v)
                row += 1
        self.n_pack = row
        self.cover_row = row
        rows += [row] * H
        cols += list(range(H))
        vals += [1.0] * H
        row += 1
        ratio = ps_ratio(job)
        rows += [row] * (2 * H)
        cols += list(range(2 * H))
        vals += [-ratio] * H + [1.0] * H
        lower = [0.0] * self.n_pack + [1.0, 0.0]
        upper = [INF] * self.n_pack + [float(job.max_workers), INF]
        row += 1
        if job.mode == "async":  # 1 ≤ Σ s ≤ Σ w  ((3.5) and at least one PS)
            rows += [row] * (2 * H)
            cols += list(range(2 * H))
            vals += [-1.0] * H + [1.0] * H
            lower.append(-INF)
            upper.append(0.0)
            row += 1
            rows += [row] * H
            cols += list(range(H, 2 * H))
            vals += [1.0] * H
            lower.append(1.0)
            upper.append(INF)
            row += 1
        self.pack = sp.csr_matrix((vals[: len(vals)], (rows, cols)), shape=(row, 2 * H))[
            : self.n_pack
        ]
        a_full = sp.csc_matrix((vals, (rows, cols)), shape=(row, 2 * H))
        self.H = H
        self.wmax = float(job.max_workers)
        self.model = LinearModel(
            np.zeros(2 * H),
            a_full,
            np.asarray(lower),
            np.asarray(upper),
            np.zeros(2 * H),
            np.full(2 * H, INF),
            name=f"pdors-ext-job{job.id}",
        )
        self._pack_rows = np.arange(self.n_pack)
        # re-solved hundreds of times from the previous basis: presolve only costs time
        self.model._h.setOptionValue("presolve", "off")

    def set_slot(self, cost: np.ndarray, free: np.ndarray, margin: np.ndarray) -> None:
        self.cost = cost
        self.scale, self.lp_cost = conditioned_costs(cost)
        self.model.set_costs(self.lp_cost)
        room = free - margin[None, :]
        ub = np.maximum(room[:, self.res].T.reshape(-1), 0.0)  # row order: r-major, then h
        self.model.set_row_bounds(self._pack_rows, np.full(self.n_pack, -INF), ub)

    def max_workers(self) -> float:
        """Largest Σ w the slot's packing and PS rows allow (0 if none); restores the costs."""
        self.model.set_costs(np.concatenate([-np.ones(self.H), np.zeros(self.H)]))
        self.model.set_row_bounds(
            np.array([self.cover_row]), np.array([0.0]), np.array([self.wmax])
        )
        try:
            sol = self.model.solve()
            best = float(np.floor(sol.x[: self.H].sum() + 1e-7))
        except SolverFailed:
            best = 0.0
        self.model.set_costs(self.lp_cost)
        return best

    def solve(self, m: float) -> tuple[float, np.ndarray, float] | None:
        """(objective, x, |dual of the workload row|) with Σ w ≥ m, or None if infeasible."""
        self.model.set_row_bounds(np.array([self.cover_row]), np.array([m]), np.array([self.wmax]))
        try:
            sol = self.model.solve()
        except SolverFailed:
            return None
        x = np.maximum(sol.x, 0.0)
        dual = abs(float(sol.row_duals[self.cover_row])) if sol.row_duals is not None else 0.0
        return float(self.cost @ x), x, dual * self.scale


class PdorsOracle:
    """Alg. 4 for one job: θ(t, k) for all k per slot, cached by slot state."""

    def __init__(self, sched: Pdors, job: ClusterJob, q: int, bounds: PriceBounds) -> None:
        self.sched = sched
        self.job = job
        self.q = q
        H = sched.capacity_.shape[0]
        self.H = H
        self.alpha = np.asarray(job.worker_demand, dtype=float)
        self.beta = np.asarray(job.ps_demand, dtype=float)
        work = np.arange(q + 1) * (job.total_work / q)
        wmax = job.max_workers
        self.w_int = np.ceil(work / worker_rate(job, True) - _TOL)
        self.s_int = internal_ps(job, self.w_int)
        ok = self.w_int <= wmax
        if job.mode == "async":
            ok &= self.s_int <= self.w_int
        self.int_ok = ok
        self.int_demand = np.outer(self.w_int, self.alpha) + np.outer(self.s_int, self.beta)
        self.m_ext = np.ceil(work / worker_rate(job, False) - _TOL)
        self.ext_ok = (self.m_ext <= wmax) & (self.m_ext >= 1)
        self.cache: dict[bytes, _SlotData] = {}
        self.slot_key: dict[int, bytes] = {}
        self._lp: _ExternalLp | None = None
        self._lp_slot: tuple[bytes, bool] | None = None

    # -- gains ---------------------------------------------------------------
    def gain(self, m: float, free: np.ndarray) -> float:
        g = self.sched.g_delta
        if g == "eq30":
            return g_delta_cover(max(m, 1e-9), self.sched.delta)
        if g == "eq29":
            caps = [self.job.max_workers]
            for d in (self.alpha, self.beta):
                pos = d > 0
                if pos.any():
                    f = free[:, pos] / d[pos]
                    f = f[f > 0]
                    if f.size:
                        caps.append(float(f.min()))
            rows = free.shape[0] * free.shape[1] + 1
            return g_delta_packing(max(min(caps), 1e-9), rows, self.sched.delta)
        return float(g)

    # -- θ(t, ·) -------------------------------------------------------------
    def _lp_for(self, key: bytes, d: _SlotData, margin: bool = True) -> _ExternalLp:
        if self._lp is None:
            self._lp = _ExternalLp(self.job, self.H)
        tag = (key, margin)
        if self._lp_slot != tag:
            cost = np.concatenate([d.price @ self.alpha, d.price @ self.beta])
            use = margin and self.sched.safe_packing
            self._lp.set_slot(cost, d.free, self.alpha + self.beta if use else 0.0 * self.alpha)
            self._lp_slot = tag
        return self._lp

    def _trace_lp(self, key: bytes, d: _SlotData) -> None:
        """LP values at every needed workload bound: margin LP, then the plain LP above it."""
        ms = sorted({int(m) for m in self.m_ext[self.ext_ok]})
        self._trace(key, d, ms, margin=True)
        if self.sched.safe_packing:
            top = max(d.lp, default=0)
            rest = [m for m in ms if m > top]
            if rest:
                self._trace(key, d, rest, margin=False)

    def _trace(self, key: bytes, d: _SlotData, ms: list[int], margin: bool) -> None:
        """LP value (and solution) at every bound in ``ms``, with few solves."""
        if not ms:
            return
        lp = self._lp_for(key, d, margin)
        sols: dict[int, tuple[float, np.ndarray, float]] = {}
        top = lp.solve(ms[-1])
        if top is None:  # largest feasible workload from one max-workers LP
            m_star = lp.max_workers()
            ms = [m for m in ms if m <= m_star + 1e-9]
            if not ms:
                return
            top = lp.solve(ms[-1])
            if top is None:
                return
        sols[ms[-1]] = top
        if ms[0] not in sols:
            r = lp.solve(ms[0])
            if r is None:  # cannot happen for a convex feasible set; be safe
                return
            sols[ms[0]] = r
        stack = [(0, len(ms) - 1)]
        while stack:
            i, j = stack.pop()
            if j - i <= 1:
                continue
            oi, xi, gi = sols[ms[i]]
            oj, xj, _ = sols[ms[j]]
            if abs(oi + gi * (ms[j] - ms[i]) - oj) <= self.sched.lp_tol * abs(oj) + 1e-300:
                for k in range(i + 1, j):
                    f = (ms[k] - ms[i]) / (ms[j] - ms[i])
                    sols[ms[k]] = (oi + f * (oj - oi), xi + f * (xj - xi), gi)
                continue
            mid = (i + j) // 2
            r = lp.solve(ms[mid])
            if r is None:
                return
            sols[ms[mid]] = r
            stack += [(i, mid), (mid, j)]
        for m, (obj, x, _) in sols.items():
            d.lp[m] = (obj, x)
            if margin:
                d.lp_margin.add(m)

    def costs(self, t: int, price: np.ndarray, free: np.ndarray) -> np.ndarray:
        key = free.tobytes()
        self.slot_key[t] = key
        d = self.cache.get(key)
        if d is None:
            d = self._slot(key, np.array(price), np.array(free))
            self.cache[key] = d
        return np.minimum(d.int_cost, d.ext_est)

    def _slot(self, key: bytes, price: np.ndarray, free: np.ndarray) -> _SlotData:
        slack = _TOL * np.maximum(1.0, free)
        room = free + slack
        # only quanta whose single-machine demand fits the roomiest machine
        cand = np.flatnonzero(self.int_ok & np.all(self.int_demand <= room.max(axis=0), axis=1))
        int_cost = np.full(self.q + 1, np.inf)
        h = np.zeros(self.q + 1, dtype=np.int64)
        if cand.size:
            dem = self.int_demand[cand]
            fits = np.all(dem[:, None, :] <= room[None, :, :], axis=2)
            cost = np.where(fits, dem @ price.T, np.inf)
            best = np.argmin(cost, axis=1)
            h[cand] = best
            int_cost[cand] = cost[np.arange(cand.size), best]
        int_cost[0] = 0.0
        d = _SlotData(price, free, int_cost, h, np.full(self.q + 1, np.inf))
        d.ext_est[0] = 0.0
        # the LP is only worth tracing where some quantum lacks a cheap internal option
        self._trace_lp(key, d)
        for k in range(1, self.q + 1):
            if self.ext_ok[k] and int(self.m_ext[k]) in d.lp:
                m = float(self.m_ext[k])
                d.ext_est[k] = self.gain(m, free) * d.lp[int(m)][0]
        return d

    # -- realization (rounding) -----------------------------------------------
    def realize(self, t: int, k: int) -> tuple[float, Placement, int] | None:
        key = self.slot_key[t]
        d = self.cache[key]
        best: tuple[float, Placement, int] | None = None
        if math.isfinite(d.int_cost[k]):
            h = int(d.int_machine[k])
            p = Placement((h,), (int(self.w_int[k]),), (int(self.s_int[k]),))
            best = (float(d.int_cost[k]), p, 0)
        m = int(self.m_ext[k]) if self.ext_ok[k] else -1
        if m in d.lp:
            ext = self._round(key, d, m)
            if ext is not None and (best is None or ext[0] < best[0]):
                best = ext
            elif ext is not None and best is not None:
                best = (best[0], best[1], ext[2])
        return best

    def _round(self, key: bytes, d: _SlotData, m: int) -> tuple[float, Placement, int] | None:
        H = self.H
        lp = self._lp_for(key, d, margin=m in d.lp_margin)
        x_bar = d.lp[m][1]
        cost = np.concatenate([d.price @ self.alpha, d.price @ self.beta])
        cover = (np.concatenate([np.ones(H), np.zeros(H)])[None, :], np.array([float(m)]))
        ub = np.maximum(d.free[:, lp.res].T.reshape(-1), 0.0)
        res = scaled_round(
            x_bar,
            self.gain(m, d.free),
            self.sched.rng_,
            cost=cost,
            cover=cover,
            packing=(lp.pack, ub),
            extra=self._engine_rules,
            attempts=self.sched.attempts,
            repair=self._trim,
        )
        if not res.success:
            self.sched.failed_ += 1
            if not self.sched.fallback:  # journal Sec. V: discard after S failed roundings
                return None
            return self._heuristic(d, m, x_bar, cost, res.attempts)
        lp_cost = d.lp[m][0]
        if lp_cost > 0:
            self.sched.ratios_.append(res.cost / lp_cost)
        x = res.x
        assert x is not None
        p = Placement.from_counts(
            {h: int(x[h]) for h in range(H) if x[h]},
            {h: int(x[H + h]) for h in range(H) if x[H + h]},
        )
        return res.cost, p, res.attempts

    def _heuristic(
        self, d: _SlotData, m: int, x_bar: np.ndarray, cost: np.ndarray, attempts: int
    ) -> tuple[float, Placement, int] | None:
        """The thesis's Step-12 "heuristic search" after S failed roundings.

        Start from ⌊G_δ x̄⌋ (never more than the LP, so within capacity when
        G_δ ≤ 1 or after dropping overflow), then add workers, then PSs, one at
        a time on the cheapest machine with room, until the workload row and
        the engine's PS rules hold.
        """
        H, job = self.H, self.job
        x = np.floor(np.minimum(self.gain(m, d.free), 1.0) * x_bar + 1e-9)
        x[:H] = np.minimum(x[:H], np.floor(x_bar[:H] + 1e-9))
        left = d.free - np.outer(x[:H], self.alpha) - np.outer(x[H:], self.beta)
        if np.any(left < -1e-6 * np.maximum(1.0, d.free)):
            return None
        order_w = np.argsort(cost[:H], kind="stable")
        order_s = np.argsort(cost[H:], kind="stable")

        def add(col: int, dem: np.ndarray) -> bool:
            h = col % H
            if np.all(left[h] >= dem - 1e-9):
                left[h] -= dem
                x[col] += 1
                return True
            return False

        target = min(m, job.max_workers)
        for _ in range(8 * job.max_workers + 8):  # interleave so PSs keep pace with workers
            w_now = x[:H].sum()
            if w_now >= 1 and self._engine_rules(x[None, :])[0]:
                if w_now >= target:
                    break
                if not any(add(int(h), self.alpha) for h in order_w):
                    return None
            elif w_now == 0:
                if not any(add(int(h), self.alpha) for h in order_w):
                    return None
            else:
                on = [h for h in order_s if x[H + h] > 0] + [h for h in order_s if x[H + h] == 0]
                if not any(add(H + int(h), self.beta) for h in on):
                    return None
        else:
            return None
        xi = x.astype(np.int64)
        workers = {h: int(xi[h]) for h in range(H) if xi[h]}
        p = Placement.from_counts(workers, {h: int(xi[H + h]) for h in range(H) if xi[H + h]})
        return float(np.dot(cost, xi)), p, attempts

    def _trim(self, cand: np.ndarray, cost: np.ndarray) -> np.ndarray:
        """Drop workers above max_workers (Eq. (25)/(4)), most expensive machines first.

        The paper takes (25) as never binding ("samples far exceed workers")
        and checks only (24) and (26) after rounding; our engine enforces
        Eq. (4), so a rounding with W > F loses its costliest surplus
        workers.  That keeps (24) and, as the workload bound is ≤ F, (26).
        """
        H = self.H
        w = cand[:, :H]
        excess = w.sum(axis=1) - self.job.max_workers
        rows = np.flatnonzero(excess > 0)
        if rows.size == 0:
            return cand
        out = cand.copy()
        order = np.argsort(-cost[:H], kind="stable")  # costliest machines first
        w_sorted = out[rows][:, order]
        before = np.cumsum(w_sorted, axis=1) - w_sorted  # workers on costlier machines
        cut = np.clip(excess[rows][:, None] - before, 0, w_sorted)
        out[np.ix_(rows, order)] = w_sorted - cut
        return out

    def _engine_rules(self, cand: np.ndarray) -> np.ndarray:
        """Eq. (2)/(4) (sync) or (3.2), (3.4), (3.5) (async) on a batch of roundings."""
        job, H = self.job, self.H
        w, s = cand[:, :H], cand[:, H:]
        W, S = w.sum(axis=1), s.sum(axis=1)
        ok = (W >= 1) & (job.max_workers >= W)
        if job.mode == "sync":
            return ok & (np.ceil(W / job.gamma - _TOL) <= S)
        n_ps = (s > 0).sum(axis=1)
        per = n_ps[:, None] * job.b_ext + (s > 0) * (job.b_int - job.b_ext)
        load = (w * per).sum(axis=1)
        return ok & (S >= 1) & (S <= W) & (load <= S * job.ps_bandwidth * (1 + 1e-9))


@register
class Pdors(PrimalDualScheduler):
    """PD-ORS (journal Alg. 1–4; thesis variant for async jobs)."""

    name: ClassVar[str] = "pd-ors"

    def __init__(
        self,
        g_delta: float | str = 1.0,
        delta: float = 0.5,
        attempts: int = 100,
        quanta: int = 32,
        price_estimate: str = "online",
        history: tuple[ClusterJob, ...] | None = None,
        max_repairs: int = 200,
        quanta_per_slot: int = 8,
        payoff_floor: float = 1e-9,
        safe_packing: bool = True,
        lp_tol: float = 1e-2,
        fallback: bool = True,
    ) -> None:
        self.lp_tol = lp_tol
        super().__init__(
            quanta, price_estimate, history, max_repairs, quanta_per_slot, payoff_floor
        )
        self.safe_packing = safe_packing
        self.fallback = fallback
        self.g_delta = g_delta
        self.delta = delta
        self.attempts = attempts

    def _setup(self) -> None:
        g = self.g_delta
        if isinstance(g, str):
            if g not in ("eq29", "eq30"):
                raise InvalidInput("g_delta", g, "a number > 0 | eq29 | eq30")
        elif not (float(g) > 0):
            raise InvalidInput("g_delta", g, "> 0")
        if not (0 < self.delta <= 1):
            raise InvalidInput("delta", self.delta, "in (0, 1]")
        if int(self.attempts) != self.attempts or self.attempts < 1:
            raise InvalidInput("attempts", self.attempts, "integer >= 1")
        self.failed_ = 0  # roundings with no feasible draw in S attempts

    @property
    def stats(self) -> dict[str, Any]:
        """Adds ``rounding_failures``: roundings whose S attempts all failed."""
        out = dict(super().stats)
        out["rounding_failures"] = float(getattr(self, "failed_", 0))
        return out

    def _oracle(self, job: ClusterJob, q: int, bounds: PriceBounds) -> PdorsOracle:
        return PdorsOracle(self, job, q, bounds)
