"""The online primal-dual loop shared by PD-ORS and OASiS (journal Alg. 1–3).

Alg. 1: on each arrival, price every (slot, machine, resource) by Eq. (12)
from the resources already reserved (ρ), find the schedule maximizing
``λ = u(t̃ − a) − cost`` (Alg. 2), admit iff λ > 0 and reserve its resources
for every slot of the schedule.  The scheduler then returns, each slot, the
current slot's part of every committed schedule, and (``release``) releases
the rest of a job's reservation when the engine reports it finished (it can finish early:
worker counts are rounded up and the last quantum may overshoot V; the
engine credits exactly the γ-form rate the plan uses,
:mod:`dmlsched.model.speed.pdors`).

Alg. 2–3 with workload quanta (DESIGN.md "Where the papers leave gaps"): the
job's work V is cut into Q quanta (:class:`Quanta`); a subclass's *slot oracle* gives
θ(t, k), the cost of training k quanta in slot t, for every k at once.  One
forward DP over slots ``Φ_t(k) = min_j θ(t, j) + Φ_{t−1}(k − j)`` gives
``Θ(t̃, V) = Φ_t̃(Q)`` for every completion slot t̃; Alg. 2 then takes the
t̃ with the largest ``u(t̃ − a) − Θ(t̃, V)``.  A quantum is the job's peak
per-slot work — what min(``max_workers``, as many as fit in the cluster)
whole external workers train in one slot — divided by ``quanta_per_slot``
(8), or finer so that Q ≥ ``quanta`` (a job that cannot finish in the T
slots even at its peak gets max(``quanta``, 8T) quanta of V/Q):
a peak slot is a whole number of quanta, and any other slot's work is
rounded down by less than 1/8 of the peak.

Slots are priced lazily, in order: once u(t̃ − a) is no larger than the best
payoff found so far, no later completion can win (λ ≤ u, u non-increasing)
and the remaining slots are never priced.  A payoff below ``payoff_floor``
(1e-9) × the job's best utility counts as 0 (Alg. 1 Step 4 rejects): with
sigmoid utilities u(T − a) can be 1e-40, and admitting a job for such a
"payoff" only blocks resources.

A slot's prices and residual capacities are computed when the DP first
reaches it and cached until a reservation in that slot (or the price
bounds) change; after a reservation, Eq. (12) is recomputed only on the
machines it touched (element-wise: the same floats).

Randomized slot costs (PD-ORS's rounding) are *estimated* in the DP
(``G_δ ×`` LP value, the rounding's expected cost) and realized lazily: the
DP's chosen (t, k) cells are rounded, their true costs written back, and the
DP re-run until the chosen path is made of realized cells (at most
``max_repairs`` rounds; a path with an unrealizable cell is never committed).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import Cluster, ClusterDecision, ClusterJob, Placement
from dmlsched.model.reasons import Reason
from dmlsched.model.speed.pdors import worker_rate
from dmlsched.model.views import ClusterView
from dmlsched.schedulers._shared.pricing import OnlineBounds, PriceBounds, prices

__all__ = ["JobPlan", "PrimalDualScheduler", "Quanta", "SlotOracle", "forward_dp", "quanta_for"]

_TOL = 1e-9
_WARMED: set[type] = set()  # scheduler classes whose compiled kernels this process has loaded


def _warm_up(sched: PrimalDualScheduler, cluster: Cluster) -> None:
    """Plan two throwaway jobs on a throwaway copy, once per class and process.

    The compiled kernels (:mod:`dmlsched.schedulers._shared.kernels`) load from
    numba's cache on first call, which takes a noticeable part of a second; in
    the testbed and the service a slot is wall-clock time, so that load must not
    fall inside the first real decision.  The copy has its own per-run state
    (``reset`` replaces all of it) and its own generator, so the run itself is
    untouched.
    """
    if type(sched) in _WARMED:
        return
    _WARMED.add(type(sched))
    probe = copy.copy(sched)
    cap = np.asarray(cluster.capacity, dtype=float)
    row = cap[int(np.argmax(cap.sum(axis=1)))]
    if not (row > 0).any():
        return
    small = Cluster(np.repeat(row[None, :], 2, axis=0), tuple(cluster.resources))
    probe.reset(small, 4, np.random.default_rng(0))
    demand = tuple(float(x) / 4 for x in row)
    for i, workers in enumerate((2, 16)):  # one job that fits a machine, one that spans both
        job = ClusterJob(
            id=i,
            arrival=0,
            epochs=1,
            samples=64 * workers,
            batch=8 * workers,
            grad_mb=1.0,
            tau=1e-3,
            gamma=1.0,
            worker_demand=demand,
            ps_demand=demand,
            b_int=1.0,
            b_ext=1.0,
        )
        probe.estimator_.observe(job)
        plan = probe.plan(job, 0)
        if plan is not None:
            probe._reserve(job, plan)


class SlotOracle(Protocol):
    """Per-job θ(t, ·) of Alg. 4 (or OASiS's per-slot subroutine)."""

    def costs(self, t: int, price: np.ndarray, free: np.ndarray, key: bytes) -> np.ndarray:
        """(Q+1,) estimated cost of k quanta in slot t (inf = infeasible); [0] = 0.

        ``key`` is ``free.tobytes()``, made once per slot state by the scheduler
        (equal keys, equal states: an oracle may cache by it).
        """
        ...

    def realize(self, t: int, k: int) -> tuple[float, Placement, int] | None:
        """(cost, placement, rounding attempts) for k quanta in slot t, or None."""
        ...


@dataclass(frozen=True)
class JobPlan:
    """A committed schedule: slot → placement, its cost and payoff λ."""

    job: int
    slots: dict[int, Placement]
    cost: float
    payoff: float
    completion: int


@dataclass(frozen=True)
class Quanta:
    """The job's work in ``count`` quanta of ``size`` each (count · size ≥ total work)."""

    count: int
    size: float


def quanta_for(
    job: ClusterJob,
    quanta: int,
    horizon: int,
    per_slot: int = 8,
    capacity: np.ndarray | None = None,
    aligned: bool = True,
    work: float | None = None,
) -> Quanta:
    """The job's quanta (see module docstring) for ``work`` (default: the whole job).

    The peak per-slot work is that of min(max_workers, the workers — with
    their share of PSs — that fit in the whole cluster's ``capacity``), in
    whole workers at the external rate.  ``aligned``: the quantum divides it
    exactly, so a job that needs the whole cluster in every slot loses
    nothing to the discretization (a quantum of V/Q would lose up to one per
    slot: measured on ``pdors-fig10`` jobs=6 seed 7, a job OPT finishes with
    0.3 % to spare was rejected); the last quantum may overshoot V.  Not
    aligned: Q = max(``quanta``, min(8T, ⌈per_slot · V / peak work⌉)) quanta
    of exactly V/Q (the plain discretization of Alg. 3's v ∈ [0, V]).
    """
    total = job.total_work if work is None else float(work)
    peak = float(job.max_workers)
    if capacity is not None:
        share = 1.0 / job.gamma if job.mode == "sync" else 1.0 / job.max_workers
        per = np.asarray(job.worker_demand) + share * np.asarray(job.ps_demand)
        room = np.asarray(capacity, dtype=float).sum(axis=0)
        pos = per > 0
        peak = min(peak, float(np.min(room[pos] / per[pos])))
    if not aligned:
        rate = max(1.0, peak) * worker_rate(job, internal=False)
        need = math.ceil(per_slot * total / rate - _TOL)
        count = int(max(quanta, min(per_slot * horizon, need)))
        return Quanta(count, total / count)
    slot_work = max(1, math.floor(peak + _TOL)) * worker_rate(job, internal=False)
    peak_slots = total / slot_work
    if peak_slots > horizon:  # cannot finish in the horizon even at peak: bound the DP
        cap = max(quanta, per_slot * horizon)
        return Quanta(cap, total / cap)
    per_peak = max(per_slot, math.ceil(quanta / peak_slots - _TOL))  # quanta per peak slot
    return Quanta(max(1, math.ceil(per_peak * peak_slots - _TOL)), slot_work / per_peak)


def forward_dp(theta: np.ndarray, start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Φ (n_slots × Q+1) and argmin choices for ``theta`` (n_slots × Q+1), Eq. (21).

    ``Φ[s, k]`` = cheapest way to train k quanta in the first s+1 slots;
    ``choice[s, k]`` = quanta trained in slot s on that way.
    """
    from dmlsched.schedulers._shared.kernels import min_plus  # numba: imported when used

    theta = np.ascontiguousarray(theta, dtype=float)
    if start is None:
        prev = np.full(theta.shape[1], np.inf)
        prev[0] = 0.0
    else:
        prev = np.array(start, dtype=float)  # a writable copy: the kernel's rows alias it
    return min_plus(theta, prev)


def _backtrack(choice: np.ndarray, last: int, q: int) -> list[tuple[int, int]]:
    """(slot index, quanta) pairs with quanta > 0 of the DP path ending at ``last``."""
    path = []
    k = q
    for s in range(last, -1, -1):
        j = int(choice[s, k])
        if j > 0:
            path.append((s, j))
        k -= j
    return path[::-1]


class PrimalDualScheduler:
    """Alg. 1 around a per-job :class:`SlotOracle`; subclasses give ``_oracle``.

    Parameters: ``quanta`` (minimum Q), ``price_estimate`` ("online": U^r and
    L from the jobs seen so far; "oracle": from ``history``, e.g. the whole
    workload), ``history`` (jobs for the oracle estimate), ``max_repairs``,
    ``quanta_per_slot``, ``payoff_floor``, ``aligned_quanta``
    (:func:`quanta_for`), ``reroute``: when a cell on the DP's chosen path
    cannot be realized (S failed roundings and nothing else), True re-plans
    around it (the cell costs ∞, as Alg. 3 over Alg. 4's results would) and
    False rejects the job (the journal's Sec. V rule, "discard the job"), and
    ``release``: True gives a job's reservations in the slots after it
    finishes back to ρ (its later slots price as free again); False keeps
    them, as Alg. 1 does — it reserves a schedule once and never revisits it.
    ``shortfall``: what happens to a job whose committed schedule has ended
    while the engine still reports work left — which the papers' model rules
    out (the engine credits the rate the plan uses), but a testbed measuring
    real training, or a speed model other than the plan's, does not.
    "replan" (default) plans the work left at the slot after the schedule's
    last, exactly as an arrival there, ahead of that slot's arrivals (Alg. 2
    on the remaining work, the utility still counted from the job's
    arrival), and reserves it if λ > 0 (else the job runs no more,
    explained as ``ran-short``); a new schedule that again ends with work
    left is planned again the same way.  "keep" leaves the job with nothing
    more to run, the literal reading of Alg. 1.  A departure: the papers
    leave the case open.
    """

    name: ClassVar[str]
    setting: ClassVar[str] = "cluster"

    def __init__(
        self,
        quanta: int = 32,
        price_estimate: str = "online",
        history: tuple[ClusterJob, ...] | None = None,
        max_repairs: int = 200,
        quanta_per_slot: int = 8,
        payoff_floor: float = 1e-9,
        aligned_quanta: bool = True,
        reroute: bool = True,
        release: bool = True,
        shortfall: str = "replan",
    ) -> None:
        self.quanta = quanta
        self.release = release
        self.shortfall = shortfall
        self.payoff_floor = payoff_floor
        self.aligned_quanta = aligned_quanta
        self.reroute = reroute
        self.quanta_per_slot = quanta_per_slot
        self.price_estimate = price_estimate
        self.history = history
        self.max_repairs = max_repairs

    # -- per-run state ---------------------------------------------------
    def reset(self, cluster: Cluster, horizon: int, rng: np.random.Generator) -> None:
        if int(self.quanta) != self.quanta or self.quanta < 1:
            raise InvalidInput("quanta", self.quanta, "integer >= 1")
        if self.price_estimate not in ("online", "oracle"):
            raise InvalidInput("price_estimate", self.price_estimate, "online | oracle")
        if self.price_estimate == "oracle" and not self.history:
            raise InvalidInput("history", self.history, "the jobs to estimate U and L from")
        if self.shortfall not in ("replan", "keep"):
            raise InvalidInput("shortfall", self.shortfall, "replan | keep")
        _warm_up(self, cluster)
        self.cluster_ = cluster
        self.horizon_ = horizon
        self.rng_ = rng
        cap = np.asarray(cluster.capacity, dtype=float)
        self.capacity_ = cap
        self.rho_ = np.zeros((horizon, cap.shape[0], cap.shape[1]))
        # slot t's (prices, free) are cached until its reservations change
        self.version_ = np.zeros(horizon, dtype=np.int64)
        self._state: dict[int, tuple[int, PriceBounds, np.ndarray, np.ndarray, bytes]] = {}
        # machines whose reservations in slot t changed since its state was cached
        self._touched: dict[int, list[np.ndarray]] = {}
        self.plans_: dict[int, JobPlan] = {}
        self.estimator_ = OnlineBounds(cap.shape[1], horizon, float(cap.sum()))
        if self.price_estimate == "oracle":
            for job in self.history or ():
                self.estimator_.observe(job)
        self.attempts_: list[int] = []  # rounding attempts of every realized rounding
        self.ratios_: list[float] = []  # rounded cost ÷ LP cost of every successful rounding
        self.payoffs_: dict[int, float] = {}
        self.why_: dict[int, Reason] = {}  # why each rejected job was (explain)
        self.known_: dict[int, ClusterJob] = {}
        self.replans_: dict[int, int] = {}  # job → times its work left was planned again
        self._setup()

    def _setup(self) -> None:
        """Subclass hook after ``reset``."""

    def _oracle(self, job: ClusterJob, quanta: Quanta, bounds: PriceBounds) -> SlotOracle:
        raise NotImplementedError

    # -- Alg. 1 ------------------------------------------------------------
    def decide(self, view: ClusterView) -> ClusterDecision:
        t = view.slot
        for j in [j for j in self.plans_ if j in view.finished]:
            plan = self.plans_.pop(j)  # nothing more to place for it
            if self.release:
                self._release(plan, t)
        if self.shortfall == "replan":
            self._replan_shortfalls(view)
        admit: list[int] = []
        reject: list[int] = []
        for j in view.pending:
            job = view.jobs[j]
            if self.price_estimate == "online":
                self.estimator_.observe(job)
            new = self.plan(job, t)
            if new is None:
                reject.append(j)
                continue
            self._reserve(job, new)
            self.plans_[j] = new
            admit.append(j)
        alloc = {j: p.slots[t] for j, p in self.plans_.items() if t in p.slots}
        return ClusterDecision(
            allocations=alloc, admit=tuple(admit), reject=tuple(reject), until=self._until(t)
        )

    def _replan_shortfalls(self, view: ClusterView) -> None:
        """Plan again the work left of every unfinished job whose schedule ended before
        this slot (``shortfall="replan"``)."""
        t = view.slot
        for j in [j for j, p in self.plans_.items() if p.completion < t]:
            left = float(view.remaining.get(j, 0.0))
            del self.plans_[j]
            if not left > 0:
                continue
            self.replans_[j] = self.replans_.get(j, 0) + 1
            job = view.jobs[j]
            new = self.plan(job, t, work=left)
            if new is None:
                why = self.why_[j]
                self.why_[j] = Reason("ran-short", f"schedule ended {left:.6g} short; {why.text}")
                continue
            self._reserve(job, new)
            self.plans_[j] = new

    def _until(self, t: int) -> int:
        """The first slot after t at which a committed plan's placement changes (or the
        horizon): until then the decision repeats itself (plans change only at an
        arrival — a new plan — or a completion — a released one)."""
        until = self.horizon_
        for p in self.plans_.values():
            now = p.slots.get(t)
            if now is None:  # idle now: the plan's next slot starts it again
                later = [s for s in p.slots if s > t]
                if later:
                    until = min(until, min(later))
                continue
            s = t + 1
            while s < until and p.slots.get(s) == now:
                s += 1
            until = min(until, s)
        return max(until, t + 1)

    def _reserve(self, job: ClusterJob, plan: JobPlan, sign: float = 1.0, since: int = 0) -> None:
        a = np.asarray(job.worker_demand, dtype=float)
        b = np.asarray(job.ps_demand, dtype=float)
        for t, p in plan.slots.items():
            if t < since or not p.machines:
                continue
            idx = np.asarray(p.machines, dtype=np.intp)
            use = np.outer(p.workers, a) + np.outer(p.ps, b)
            self.rho_[t, idx] += sign * use
            if sign < 0:  # only released slots can go (rounding-error) negative
                np.maximum(self.rho_[t], 0.0, out=self.rho_[t])
            self.version_[t] += 1
            self._touched.setdefault(t, []).append(idx)

    def _release(self, plan: JobPlan, since: int) -> None:
        self._reserve(self.known_[plan.job], plan, sign=-1.0, since=since)

    def slot_state(self, t: int, bounds: PriceBounds) -> tuple[np.ndarray, np.ndarray, bytes]:
        """Eq. (12) prices and residual capacities Ĉ of slot t (read-only, cached), and
        Ĉ's bytes as a cache key (one copy per slot state, so its hash is computed once)."""
        hit = self._state.get(t)
        if hit is not None and hit[0] == self.version_[t] and hit[1] == bounds:
            return hit[2], hit[3], hit[4]
        rho = self.rho_[t]
        touched = self._touched.pop(t, None)
        if hit is not None and hit[1] == bounds and touched is not None:
            # Eq. (12) is element-wise: only the machines reserved on or released since
            # the cached state get new prices (the same floats as a full pass)
            # (a machine listed twice gets the same prices twice: no need to deduplicate)
            rows = touched[0] if len(touched) == 1 else np.concatenate(touched)
            price = hit[2].copy()
            price[rows] = prices(rho[rows], self.capacity_[rows], bounds)
        else:
            price = prices(rho, self.capacity_, bounds)
        free = self.capacity_ - rho
        price.flags.writeable = False
        free.flags.writeable = False
        key = free.tobytes()
        if hit is not None and hit[4] == key:
            key = hit[4]  # the same state: keep the bytes whose hash is known
        self._state[t] = (int(self.version_[t]), bounds, price, free, key)
        return price, free, key

    # -- Alg. 2 + 3 ------------------------------------------------------
    def plan(self, job: ClusterJob, now: int, work: float | None = None) -> JobPlan | None:
        """Best schedule for ``job`` from slot ``now`` on (None = reject, λ ≤ 0);
        ``work``: what is left to train (default: the whole job)."""
        self.known_[job.id] = job
        T = self.horizon_
        slots = list(range(max(now, job.arrival), T))
        if not slots:
            self._no(job, "no-schedule", f"no slot left before the horizon {T}")
            return None
        quanta = quanta_for(
            job, self.quanta, T, self.quanta_per_slot, self.capacity_, self.aligned_quanta, work
        )
        q = quanta.count
        bounds = self.estimator_.bounds()
        oracle = self._oracle(job, quanta, bounds)

        def slot_costs(s: int) -> np.ndarray:
            # priced lazily: most jobs never look at most of the horizon
            return oracle.costs(slots[s], *self.slot_state(slots[s], bounds))

        u_all = np.array([job.utility(t - job.arrival) for t in slots])
        zero = self.payoff_floor * float(u_all.max(initial=0.0))
        from dmlsched.schedulers._shared.kernels import min_plus_rows  # numba: when used

        # θ, Φ and the choices for every slot the DP may reach, filled row by row in place
        # (rows beyond ``n`` are never read)
        n_all = len(slots)
        theta = np.empty((n_all, q + 1))
        phi = np.empty((n_all, q + 1))
        choice = np.zeros((n_all, q + 1), dtype=np.int64)
        init = np.full(q + 1, np.inf)
        init[0] = 0.0
        n = 0
        best = -np.inf
        for s in range(n_all):
            # λ(t̃) ≤ u(t̃ − a) and u is non-increasing: later slots cannot beat ``best``
            if s > 0 and u_all[s] <= max(best, zero):
                break
            theta[s] = slot_costs(s)
            min_plus_rows(theta, phi, choice, s, s + 1, init)
            n = s + 1
            best = max(best, u_all[s] - phi[s, q])
        # Φ's row s depends on θ's rows up to s only: rows before ``fresh`` are up to
        # date, the rest are recomputed from there (the same sums as a full pass)
        fresh = n
        realized: dict[tuple[int, int], tuple[float, Placement, int] | None] = {}
        repairs = 0
        while True:
            if fresh < n:
                min_plus_rows(theta, phi, choice, fresh, n, init)
                fresh = n
            payoff = u_all[:n] - phi[:n, q]
            last = int(np.argmax(payoff))
            best = float(payoff[last]) if np.isfinite(phi[last, q]) else -np.inf
            if n < n_all and u_all[n] > max(best, zero):
                # realized costs lowered the best payoff: the next slot may now win
                theta[n] = slot_costs(n)
                n += 1
                continue
            if best <= zero:
                if not math.isfinite(best):
                    self._no(job, "no-schedule", "no feasible schedule before the horizon")
                    return None
                u, c = float(u_all[last]), float(phi[last, q])
                self._no(
                    job,
                    "price-above-payoff",
                    f"price above payoff: λ = {best:.3g} at best (utility {u:.3g} − cost "
                    f"{c:.3g}, completing in slot {slots[last]})",
                )
                return None
            path = _backtrack(choice, last, q)
            changed = False
            for s, k in path:
                if (s, k) in realized:
                    continue
                res = oracle.realize(slots[s], k)
                if res is None and not self.reroute:
                    # journal Sec. V: discard the job after S failed roundings
                    self._no(job, "no-schedule", f"no integer placement in slot {slots[s]}")
                    return None
                realized[(s, k)] = res
                if res is not None and res[2] > 0:
                    self.attempts_.append(res[2])
                cost = res[0] if res is not None else math.inf
                if cost > theta[s, k] * (1 + 1e-9) + 1e-300 or not math.isfinite(cost):
                    changed = True
                theta[s, k] = cost
                fresh = min(fresh, s)
            if not changed:
                break
            repairs += 1
            if repairs >= self.max_repairs:
                self._no(job, "no-schedule", f"no realized schedule in {repairs} repairs")
                return None
        chosen = [(slots[s], realized[(s, k)]) for s, k in path]
        placed = [(slot, r) for slot, r in chosen if r is not None]
        if len(placed) < len(chosen):
            self._no(job, "no-schedule", "a slot of its best schedule has no placement")
            return None
        cost = float(sum(r[0] for _, r in placed))
        completion = placed[-1][0]
        lam = job.utility(completion - job.arrival) - cost
        if lam <= zero:
            self._no(job, "price-above-payoff", f"price above payoff: λ = {lam:.3g} once realized")
            return None
        self.payoffs_[job.id] = lam
        return JobPlan(job.id, {t: r[1] for t, r in placed}, cost, lam, completion)

    def _no(self, job: ClusterJob, code: str, text: str) -> None:
        """Reject ``job`` (plan returns None), keeping why for :meth:`explain`."""
        self.why_[job.id] = Reason(code, text)

    def explain(self, view: ClusterView, jobs: Sequence[int]) -> dict[int, Reason]:
        """Rejected: why (Alg. 1 Step 4, λ ≤ 0, or no schedule); admitted: the slots its
        committed schedule runs in (none is this one)."""
        out: dict[int, Reason] = {}
        for j in jobs:
            plan = self.plans_.get(j)
            if plan is None:
                if j in self.why_:
                    out[j] = self.why_[j]
                continue
            later = [t for t in plan.slots if t > view.slot]
            when = f"next in slot {min(later)}" if later else "no slot after this one"
            out[j] = Reason(
                "planned",
                f"admitted (λ = {plan.payoff:.3g}): its schedule runs {len(plan.slots)} "
                f"slot(s), {when}",
            )
        return out

    @property
    def stats(self) -> dict[str, Any]:
        """Diagnostics of the last run (rounding attempts, payoffs)."""
        att = self.attempts_
        return {
            "rounding_attempts": float(np.mean(att)) if att else 0.0,
            "roundings": float(len(att)),
            "rounding_ratio": float(np.mean(self.ratios_)) if self.ratios_ else 1.0,
        }
