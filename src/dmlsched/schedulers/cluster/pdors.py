"""PD-ORS: primal-dual online resource scheduling with co-location (journal Alg. 1–4).

Alg. 1–3 (prices, admission, DP over completion times with workload quanta)
live in :mod:`dmlsched.schedulers._shared.primal_dual`; this module is Alg. 4,
θ(t, v): the cheapest way to train v samples (sync) or mini-batches (async)
in slot t at the current prices p_h^r[t] and residual capacities Ĉ_h^r[t].

Two entries: ``pd-ors`` is the journal's algorithm as printed,
its gaps filled minimally (below); ``pd-ors+`` (:class:`PdorsPlus`) is our
best version, every departure a named constructor option that ``pd-ors+``
turns on (:data:`PLUS`) and ``pd-ors`` leaves off (:data:`PRINTED`).
``ablation-pdors-*`` measures what each option adds; why roundings fail as
printed is measured in ``docs/pdors-rounding.md``.

**As printed** (both entries):

* **Internal case** (Fact 1: everything on one machine, rate r^(i)): for
  every quantum count k at once, w = ⌈v / r^(i)⌉ workers and the fewest PSs
  the engine accepts — sync ⌈w/γ⌉ (Eq. (2)); async ⌈w·b^(i)/B⌉ ≥ 1 (3.4, the
  thesis's Alg. 4 Step 5) with PSs ≤ workers (3.5) — on the cheapest machine
  where they fit (Steps 2–7; sorting by Σ_r p(αγ + β) and taking the first
  that fits is the same as taking the cheapest that fits).
* **External case**: the LP relaxation of Problem (23) (journal) / (3.22)
  (thesis) (Step 8), then the scaled randomized rounding of Eq. (27)–(28)
  (Steps 9–11, :func:`dmlsched.solvers.rounding.cheapest_round`) with G_δ
  fixed or from Eq. (29)/(30), S = 5000 draws (Sec. V's "preset threshold
  (e.g., 5000)"), keeping the cheapest draw that meets the packing rows (24),
  the workload row (26) and the engine's exact PS rules ("the randomized
  rounding will find at most S integer feasible solutions", Step 12's "the
  one with the lowest cost"; ties: the earliest draw).
* **Final step** (Step 12): the cheaper of the two cases.
* **Reservations** (Alg. 1): a schedule is reserved once, on admission, and
  never revisited: a job that finishes early (worker counts are rounded up,
  the last quantum may overshoot) keeps its later slots' reservations, which
  go on pricing the slots (Eq. (12)) but are not allocated.
* **After S failed roundings** with no internal solution for the cell, the
  job is discarded (Sec. V: "if the total rounds of randomized rounding
  before we find an integer feasible solution exceeds a preset threshold
  (e.g., 5000), we will discard the corresponding job").

Departures of ``pd-ors`` from the printed text — the gaps it fills, each the
least the engine or the paper forces (``tests/schedulers/test_pdors*.py``):

* **Shortfall.**  Alg. 1 reserves a schedule once; the papers' model
  finishes every admitted job within it (the engine credits the rate the
  plan uses).  Where real training is slower (the testbed) or the engine's
  speed model is not the plan's, a job can reach the end of its schedule
  with work left, and as printed it would never run again.  By default
  (``shortfall="replan"``) the work left is planned again at the slot after
  the schedule's last, as an arrival there (Alg. 2 on the work left,
  utility still counted from the job's arrival; no more if λ ≤ 0);
  ``shortfall="keep"`` is the literal reading.  It never acts where the
  plan's rate is the engine's, so no figure of the papers' model changes.
* **PS row.**  Problem (23) has no PS constraint; as printed its LP puts no
  PS anywhere and no rounding could ever run.  The LP gets the job's ratio:
  Σ s ≥ Σ w / γ (sync, Eq. (2)); Σ s ≥ Σ w · b^(e)/B with 1 ≤ Σ s ≤ Σ w
  (async, (3.4)–(3.5) for one PS machine) (DESIGN.md).
* **Engine rules at rounding.**  A draw is accepted only if the engine would
  accept it: ⌈W/γ⌉ ≤ S (sync); the exact (3.4) load and (3.5) (async).  A
  draw with more than F workers first drops its costliest surplus workers
  (the paper assumes (25) never binds; our engine enforces Eq. (4)).
* **Quanta** (Alg. 3 enumerates v ∈ [0, E·K], 10^6–10^8 values): Q ≥
  ``quanta`` quanta of V/Q, at least ``quanta_per_slot`` per slot of the
  job's peak work (:func:`~dmlsched.schedulers._shared.primal_dual.quanta_for`).
* **Lazy realization.**  The DP sees G_δ × the LP value (the rounding's
  expected cost) and rounds only the cells on its chosen path, re-running
  with the realized costs until the path is realized — the values the
  eager Alg. 3 over Alg. 4 would see on that path.
* **LP solved exactly.**  Over machine classes (below) the external LP is a
  min-cost cover with two linking rows (workload, PSs); it is solved without
  a solver by a sorted pass — workers into the cheapest classes, then PSs
  into the room they left — for every needed workload bound at once, and
  each solution is *proved* optimal by an explicit Lagrangian dual bound
  (:mod:`dmlsched.schedulers._shared.cover_lp`; compiled, as are the DP, the
  internal case, the class fill and the rounding test:
  :mod:`dmlsched.schedulers._shared.kernels`).  Classes of equal LP cost are
  taken cheapest at the true prices first.  A bound the pass cannot prove
  (0.1 % of them on a 200-job run) goes to HiGHS, traced with few solves:
  bisection over the quanta, interpolating a range only when the cover
  row's dual predicts its far end to a relative ``lp_tol`` (1e-6: on a
  linear piece, up to solver precision); the largest feasible workload comes
  from one max-workers LP.  ``external_lp="highs"`` uses HiGHS for every
  bound (tests check the pass against it).  The LP's costs are divided by
  the slot's largest one (the same optimum; Eq. (12) prices can be 1e-40
  and HiGHS's tolerances are absolute).
* **Which optimum is rounded** (``vertex``, a reading of the paper, not a
  departure: the figures run both, ``pd-ors`` and ``pd-ors-interior``).  The
  LP optimum is rarely unique (idle machines all cost L) and the paper does
  not say which one Step 9 scales.  ``"fill"`` (default) rounds a vertex, as
  a simplex solver returns: machine classes (below) are split back onto
  their machines by
  :func:`~dmlsched.schedulers._shared.machine_classes.fill_classes`, which
  fills machines one after another in id order, workers first, each as
  full as its room allows (for async jobs PSs go to machines without
  workers first: a PS sharing a machine with workers costs b^(i) per worker
  in (3.4), which the LP does not see).  ``"interior"`` rounds the optimum
  an interior-point solver returns (the paper's complexity bound cites one):
  each class's total split evenly over its machines (sync jobs; async jobs
  keep the fill, for the (3.4) reason).  Same LP value and expected cost;
  a vertex puts its fractional coordinates on machines it filled to
  capacity, where rounding up breaks (24) and rounding down breaks (26), so
  often *no* outcome of the rounding is feasible (docs/pdors-rounding.md);
  the even split leaves each machine slack.
* **Sampling** (the paper draws every coordinate): only the fractional
  coordinates of G_δ x̄ are drawn, the others round to themselves; each
  distinct outcome among the S draws is tested once.
* **Admission** λ > 0 exactly (``payoff_floor`` = 0).
* **Machine classes** (an implementation decision, exact): machines with the
  same residual capacity and price on the resources the job uses are
  interchangeable in Problem (23) — its rows and costs are per machine and
  identical for them, the other rows only see sums.  The LP therefore has
  one pair (W_c, S_c) per class c of n_c machines with packing rows
  α^r W_c + β^r S_c ≤ n_c Ĉ_c^r: same optimum value (a per-machine solution
  summed per class is feasible at the same cost, and a class solution split
  over the class's machines is feasible for the per-machine LP at the same
  cost); tests check equal values against a per-machine LP and every
  per-machine row of the split.  In a 1,000-machine cluster the LP shrinks
  from R·H + 2 rows to R·C + 2 with C in the tens; classes without room for
  a worker's or a PS's every resource are left out (their W_c = S_c = 0 in
  every feasible point).  The internal case scans classes too (numbered by
  their lowest machine id, so "the first cheapest machine that fits" is
  unchanged), and rounding draws only for machines with x̄ > 0 (the others
  always round to 0).

**Departures** (``pd-ors+``; each a constructor option, off in ``pd-ors``):

* ``vertex="interior"`` (above): the reading ``pd-ors+`` takes.
* ``rounding="class"`` (``"machine"`` in ``pd-ors``): Steps 9–11 of Alg. 4
  draw Eq. (27)–(28) per machine *class*, not per machine.  The paper rounds
  every coordinate w_ih, s_ih of G_δ x̄ independently; under the interior
  split the n_c machines of class c share one value x' = G_δ X_c / n_c, so
  their rounded total is n_c ⌊x'⌋ + Binomial(n_c, x' − ⌊x'⌋) — exactly the
  distribution of the sum of the n_c per-machine draws.  One binomial draw
  per class (workers and PSs independently, as (27) and (28) are) replaces
  n_c uniforms, so a rounding costs Θ(S · classes) instead of Θ(S · H)
  (:func:`~dmlsched.solvers.rounding.cheapest_round_groups`).  The paper
  has its draws decide *which* machines of a class round up; here, once the
  cheapest totals are kept, the generator draws them (:func:`spread_class`:
  ⌊W/n⌋ or ⌊W/n⌋ + 1 workers per machine, the extra ones on a uniform subset
  of the class's machines, the extra PSs on another, disjoint from it when a
  machine with both extras would break (24)) — the per-machine rounding's
  placement given its totals and (24).  A draw of totals is feasible when
  some outcome of the per-machine draws with these totals meets (24) (before
  trimming: F-trimming takes workers from the costliest class first).
  Every draw's cost and its workload and PS rows (26), Eq. (2)/(4) depend
  on the totals only, so the S draws are tested and the cheapest kept as in
  Step 12.  The draws consume the generator differently, so the
  bytes differ from ``"machine"``; it applies where the split is even
  (``vertex="interior"``, sync jobs) and async jobs, whose fill differs
  machine by machine, are drawn per machine either way.  What it changes in
  utility: ``ablation-pdors-*`` (row ``pd-ors+ no-rounding``); in time:
  ``docs/benchmarks.md``.
* ``release``: a finished job's reservations in later slots are given back
  (their slots price as free again), where Alg. 1 keeps them.
* ``safe_packing``: the LP's packing bounds are Ĉ_h^r − (α^r + β^r), so every
  rounding meets (24) (it moves each coordinate up by at most one) and only
  the cover and PS rows are left to chance; above the margin LP's largest
  workload the plain LP is used.
* ``milp_fallback``: after S failed roundings, the integer Problem (23)
  itself, per machine with plain capacities, by HiGHS's branch and bound
  capped at ``MILP_NODES`` nodes (:meth:`PdorsOracle._exact`; a node cap,
  not a time limit, so runs stay reproducible) — the thesis's Step-12
  "heuristic search".
* ``greedy_fill``: if that finds nothing, a greedy fill from ⌊G_δ x̄⌋
  (:meth:`PdorsOracle._heuristic`).
* ``reroute``: if a cell still has no solution, the DP re-plans around it
  (the cell costs ∞) instead of discarding the job.
* ``aligned_quanta``: a quantum divides the job's peak slot exactly, so a job
  that needs the whole cluster in every slot loses nothing to the
  discretization (measured on ``pdors-fig10`` jobs=6 seed 7).
* ``cost_floor`` (1e-6): the LP's normalized costs are floored, so every unit
  costs something and the LP keeps Σ w and Σ s at their minimum where prices
  differ by less than HiGHS's tolerance; without it an LP whose costs all
  look like zero stops at an arbitrary vertex that over-provisions
  (normalizing and flooring together took the fig. 12 instance at H = 50
  from 339 to 775 utility; the floor's own share: ``ablation-pdors-*``).
* ``payoff_floor`` (1e-9): a payoff below 1e-9 × the job's best utility
  counts as 0 (sigmoid utilities reach 1e-40; admitting for such a payoff
  only blocks resources).

Parameters: ``g_delta`` (float, "eq29" or "eq30"), ``delta`` (δ of Eq.
(29)/(30)), ``attempts`` (S, default 5000), ``vertex``, ``rounding``, ``quanta``,
``quanta_per_slot``, ``lp_tol``,
``external_lp`` ("pass" | "highs"),
``price_estimate`` / ``history`` (see
:class:`~dmlsched.schedulers._shared.primal_dual.PrimalDualScheduler`) and
the departures above.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dmlsched.errors import InvalidInput, SolverFailed
from dmlsched.model.cluster import ClusterDecision, ClusterJob, Placement
from dmlsched.model.speed.pdors import worker_rate
from dmlsched.model.views import ClusterView
from dmlsched.numerics import dot, matvec
from dmlsched.schedulers._shared.cover_lp import sorted_pass
from dmlsched.schedulers._shared.machine_classes import MachineClasses, fill_classes
from dmlsched.schedulers._shared.pricing import PriceBounds
from dmlsched.schedulers._shared.primal_dual import PrimalDualScheduler, Quanta
from dmlsched.schedulers.protocols import register
from dmlsched.solvers.rounding import (
    RoundingResult,
    cheapest_round,
    cheapest_round_groups,
    g_delta_cover,
    g_delta_packing,
)

if TYPE_CHECKING:
    from dmlsched.solvers.highs import LinearModel

__all__ = [
    "ATTEMPTS",
    "PLUS",
    "PRINTED",
    "ROUNDINGS",
    "VERTICES",
    "Pdors",
    "PdorsOracle",
    "PdorsPlus",
    "conditioned_costs",
    "internal_ps",
    "per_machine_lp",
    "ps_ratio",
    "spread_class",
]

# HiGHS's infinite bound (highspy.kHighsInf is math.inf).  dmlsched.solvers.highs (highspy
# and scipy.sparse, slow to import) is imported where a model is built: importing
# the cluster registry, as every `compare` does, loads this module.
INF = math.inf

_TOL = 1e-9
ATTEMPTS = 5000  # S: Sec. V's "preset threshold (e.g., 5000)" of rounding rounds
VERTICES = ("fill", "interior")  # which LP optimum is rounded (module docstring)
ROUNDINGS = ("machine", "class")  # what Eq. (27)-(28) draws per (module docstring)
_COST_FLOOR = 1e-6  # relative LP cost floor, 10 × HiGHS's dual feasibility tolerance
MILP_NODES = 2000  # branch-and-bound cap of the failed-rounding fallback (deterministic)


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


@dataclass(frozen=True)
class _SlotClasses:
    """A slot state's machine classes for one set of used resources, with one
    machine's residual capacity and prices per class (shared across jobs)."""

    classes: MachineClasses
    free: np.ndarray  # C × R: Ĉ of each class's machines
    price: np.ndarray  # C × R
    room: np.ndarray  # C × R: free plus the fit tolerance (internal case)
    count: np.ndarray  # C: machines per class, as floats
    free_res: np.ndarray  # C × used resources: ``free`` there (the LP's room)


@dataclass
class _SlotData:
    price: np.ndarray
    free: np.ndarray
    classes: MachineClasses
    shared: _SlotClasses
    int_cost: np.ndarray
    int_machine: np.ndarray
    ext_est: np.ndarray
    gain_caps: float | None = None
    lp: dict[int, tuple[float, np.ndarray]] = field(default_factory=dict)
    lp_margin: set[int] = field(default_factory=set)
    lp_room: dict[bool, np.ndarray] = field(default_factory=dict)  # by margin
    lp_costs: tuple[np.ndarray, np.ndarray, float] | None = None
    # the LP objective of ``lp`` by the bound's position in the oracle's ``ext_ms``
    # (∞ where not solved): the DP's estimates in one array operation
    lp_val: np.ndarray | None = None
    theta: np.ndarray | None = None  # θ(t, ·): the cheaper case per quantum count


def _lp_structure(job: ClusterJob, res: list[int], C: int) -> tuple[np.ndarray, ...]:
    """CSC (start, index, value), row lower bounds and the non-packing row upper bounds
    of the class LP with C classes (only the packing bounds and costs vary by slot).

    Column-wise: W_c has α^r in packing rows r·C + c, 1 in the cover row and
    −ratio in the PS row; S_c has β^r in its packing rows and 1 in the PS row.
    """
    a = np.asarray(job.worker_demand, dtype=float)[res]
    b = np.asarray(job.ps_demand, dtype=float)[res]
    n_pack = len(res) * C
    cover_row, ps_row, n_row = n_pack, n_pack + 1, n_pack + 2
    lower: list[np.ndarray | list[float]] = [np.full(n_pack, -INF), [1.0, 0.0]]
    upper = [float(job.max_workers), INF]
    w_rows, w_vals = [cover_row, ps_row], [1.0, -ps_ratio(job)]
    s_rows, s_vals = [ps_row], [1.0]
    if job.mode == "async":  # 1 ≤ Σ s ≤ Σ w  ((3.5) and at least one PS)
        w_rows, w_vals = [*w_rows, n_row], [*w_vals, -1.0]
        s_rows, s_vals = [*s_rows, n_row, n_row + 1], [*s_vals, 1.0, 1.0]
        lower += [[-INF, 1.0]]
        upper += [0.0, INF]
    c_idx = np.arange(C)[:, None]
    index, value = [], []
    for dem, rows, vals in ((a, w_rows, w_vals), (b, s_rows, s_vals)):
        nz = np.flatnonzero(dem)
        index.append(np.hstack([nz[None, :] * C + c_idx, np.broadcast_to(rows, (C, len(rows)))]))
        value.append(np.broadcast_to(np.concatenate([dem[nz], vals]), index[-1].shape))
    nw, ns = index[0].shape[1], index[1].shape[1]
    start = np.concatenate([np.arange(C + 1) * nw, C * nw + np.arange(1, C + 1) * ns])
    return (
        start.astype(np.int32),
        np.concatenate([i.ravel() for i in index]).astype(np.int32),
        np.concatenate([v.ravel() for v in value]),
        np.concatenate(lower),
        np.asarray(upper),
    )


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
    top = float(cost.max(initial=0.0))
    scale = top if top > 0 and math.isfinite(top) else 1.0
    return scale, np.maximum(cost / scale, floor)


class _ExternalLp:
    """Problem (23) + PS row over machine classes, for one slot state and margin.

    Columns W_c, S_c (workers and PSs on class c's machines in all) for the
    classes ``keep`` of ``n_classes`` (solutions come back for all of them);
    packing rows α^r W_c + β^r S_c ≤ n_c · room_c^r for every resource r the
    job uses.
    """

    def __init__(
        self,
        model: LinearModel,
        job: ClusterJob,
        structure: tuple[np.ndarray, ...],
        count: np.ndarray,
        room: np.ndarray,
        cost: np.ndarray,
        lp_cost: np.ndarray,
        scale: float,
        keep: np.ndarray,
        n_classes: int,
    ) -> None:
        # ``cost``: true prices; ``lp_cost``: as HiGHS sees them (conditioned_costs)
        self.cost, self.lp_cost, self.scale = cost, lp_cost, scale
        self.keep = keep
        self.n_classes = n_classes
        C = int(count.size)
        self.C = C
        self.cover_row = room.shape[1] * C
        self.wmax = float(job.max_workers)
        self.model = model
        start, index, value, lower, upper_tail = structure
        pack_ub = (count[:, None] * np.maximum(room, 0.0)).T.reshape(-1)  # r-major, then c
        from dmlsched.solvers.highs import pass_columns  # see INF

        pass_columns(
            model,
            lp_cost,
            start,
            index,
            value,
            lower,
            np.concatenate([pack_ub, upper_tail]),
            np.zeros(2 * C),
            np.full(2 * C, INF),
        )

    def max_workers(self) -> float:
        """Largest Σ w the slot's packing and PS rows allow (0 if none); restores the costs."""
        C = self.C
        self.model.set_costs(np.concatenate([-np.ones(C), np.zeros(C)]))
        self.model.set_row_bounds(
            np.array([self.cover_row]), np.array([0.0]), np.array([self.wmax])
        )
        try:
            sol = self.model.solve()
            best = float(np.floor(sol.x[:C].sum() + 1e-7))
        except SolverFailed:
            best = 0.0
        self.model.set_costs(self.lp_cost)
        return best

    def solve(self, m: float) -> tuple[float, np.ndarray, float, float] | None:
        """(objective at the true prices, class x, |dual of the workload row|, LP
        objective), both of the latter in the true prices' scale; None if infeasible."""
        self.model.set_row_bounds(np.array([self.cover_row]), np.array([m]), np.array([self.wmax]))
        try:
            sol = self.model.solve()
        except SolverFailed:
            return None
        x = np.maximum(sol.x, 0.0)
        dual = abs(float(sol.row_duals[self.cover_row])) if sol.row_duals is not None else 0.0
        full = np.zeros(2 * self.n_classes)
        full[self.keep] = x[: self.C]
        full[self.n_classes + self.keep] = x[self.C :]
        return dot(self.cost, x), full, dual * self.scale, sol.objective * self.scale


def per_machine_lp(
    job: ClusterJob, free: np.ndarray, cost: np.ndarray, floor: float = _COST_FLOOR
) -> _ExternalLp:
    """The external LP with every machine its own class (no margin), on its own HiGHS
    instance: the per-machine Problem (23) of the paper, for tests and probes.

    ``free`` is H × R, ``cost`` the 2H prices of a worker and a PS per machine.
    """
    a, b = np.asarray(job.worker_demand, float), np.asarray(job.ps_demand, float)
    res = [r for r in range(a.size) if a[r] > 0 or b[r] > 0]
    H = free.shape[0]
    from dmlsched.solvers.highs import LinearModel  # see INF

    z = np.zeros(1)
    model = LinearModel(z, np.zeros((1, 1)), z, z, z, z, name=f"pdors-ext-job{job.id}")
    scale, lp_cost = conditioned_costs(np.asarray(cost, dtype=float), floor)
    keep = np.arange(H)
    structure = _lp_structure(job, res, H)
    return _ExternalLp(
        model, job, structure, np.ones(H), free[:, res], cost, lp_cost, scale, keep, H
    )


def spread_class(
    n: int, workers: int, ps: int, together: bool, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Per-machine (workers, PSs) of a class's totals W, S on its ``n`` machines, as the
    per-machine draws of Eq. (27)–(28) would place them given these totals: each
    machine ⌊W/n⌋ or ⌊W/n⌋ + 1 workers, the W mod n extra ones on machines drawn
    uniformly by ``rng``, and likewise the S mod n extra PSs — independently of the
    workers' if ``together`` (a machine with both extras fits), else among the
    machines without an extra worker (a machine with both would break (24)).

    That is the per-machine rounding's distribution conditioned on the totals and on
    meeting (24): given the totals its draws put the extras on uniform subsets,
    independent for workers and PSs, and when a machine with both extras does not
    fit, the feasible outcomes are exactly the disjoint pairs of subsets
    (:func:`~dmlsched.schedulers._shared.kernels.class_fits` decides ``together``)."""
    qw, rw = divmod(int(workers), n)
    qs, rs = divmod(int(ps), n)
    w = np.full(n, qw, dtype=np.int64)
    s = np.full(n, qs, dtype=np.int64)
    extra_w = rng.choice(n, rw, replace=False)
    w[extra_w] += 1
    if together:
        s[rng.choice(n, rs, replace=False)] += 1
    else:  # n − rw ≥ rs whenever the class passed class_fits
        free = np.ones(n, dtype=bool)
        free[extra_w] = False
        left = np.flatnonzero(free)
        s[left[rng.choice(left.size, rs, replace=False)]] += 1
    return w, s


def _priced(x: np.ndarray, cost: np.ndarray, attempts: int) -> tuple[float, Placement, int]:
    """(cost, placement, attempts) of integer counts x = (w_1..w_H, s_1..s_H)."""
    xi = np.rint(x).astype(np.int64)
    H = xi.size // 2
    p = Placement.from_counts(
        {int(h): int(xi[h]) for h in np.flatnonzero(xi[:H])},
        {int(h): int(xi[H + h]) for h in np.flatnonzero(xi[H:])},
    )
    return dot(cost, xi), p, attempts


class PdorsOracle:
    """Alg. 4 for one job: θ(t, k) for all k per slot, cached by slot state."""

    def __init__(self, sched: Pdors, job: ClusterJob, quanta: Quanta, bounds: PriceBounds) -> None:
        self.sched = sched
        self.job = job
        self.q = q = quanta.count
        H = sched.capacity_.shape[0]
        self.H = H
        self.alpha = np.asarray(job.worker_demand, dtype=float)
        self.beta = np.asarray(job.ps_demand, dtype=float)
        used = (self.alpha > 0) | (self.beta > 0)
        self.res = [int(r) for r in np.flatnonzero(used)]
        self.other = [int(r) for r in np.flatnonzero(~used)]
        self.res_idx = np.asarray(self.res, dtype=np.int64)
        self.other_idx = np.asarray(self.other, dtype=np.int64)
        self.a_res, self.b_res = self.alpha[self.res], self.beta[self.res]
        self.demand2 = np.vstack([self.a_res, self.b_res])  # a worker's and a PS's demand
        self.res_key = tuple(self.res)
        self.margin = (self.alpha + self.beta)[self.res]  # the safe packing's margin
        self.ratio = ps_ratio(job)
        work = np.arange(q + 1) * quanta.size
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
        self.ext_k = np.flatnonzero(self.ext_ok)
        self.ext_ms = sorted({int(m) for m in self.m_ext[self.ext_ok]})
        # position of each external quantum count's bound in ext_ms
        self.ext_pos = np.searchsorted(np.asarray(self.ext_ms), self.m_ext[self.ext_k])
        self.ext_ms_arr = np.asarray(self.ext_ms, dtype=np.int64)
        self.ext_ms_float = self.ext_ms_arr.astype(float)
        self._eq30: np.ndarray | None = None
        self.bounds = bounds
        self.cache: dict[bytes, _SlotData] = {}
        self.slot_key: dict[int, bytes] = {}
        self._cover_gain: dict[float, float] = {}
        self._structures: dict[int, tuple[np.ndarray, ...]] = {}

    # -- gains ---------------------------------------------------------------
    def gain(self, m: float, d: _SlotData) -> float:
        g = self.sched.g_delta
        if g == "eq30":
            w1 = max(m, 1e-9)
            if w1 not in self._cover_gain:
                self._cover_gain[w1] = g_delta_cover(w1, self.sched.delta)
            return self._cover_gain[w1]
        if g == "eq29":
            free = d.free
            if d.gain_caps is None:
                caps: list[float] = [self.job.max_workers]
                for dem in (self.alpha, self.beta):
                    pos = dem > 0
                    if pos.any():
                        f = free[:, pos] / dem[pos]
                        f = f[f > 0]
                        if f.size:
                            caps.append(float(f.min()))
                d.gain_caps = float(min(caps))
            rows = free.shape[0] * free.shape[1] + 1
            return g_delta_packing(max(d.gain_caps, 1e-9), rows, self.sched.delta)
        return float(g)

    def unit_costs(self, price: np.ndarray) -> np.ndarray:
        """Per row of ``price`` (machines or classes): a worker's cost α·p, then a PS's β·p
        (:mod:`dmlsched.numerics`: the same bits on every CPU, so ties fall alike)."""
        return np.concatenate([matvec(price, self.alpha), matvec(price, self.beta)])

    # -- θ(t, ·) -------------------------------------------------------------
    def _lp_room(self, d: _SlotData, margin: bool) -> np.ndarray:
        """One machine's room per class (C × used resources) in the margin or plain LP."""
        room = d.lp_room.get(margin)
        if room is None:
            room = d.shared.free_res
            if margin and self.sched.safe_packing:
                room = room - self.margin
            d.lp_room[margin] = room
        return room

    def _lp_costs(self, d: _SlotData) -> tuple[np.ndarray, np.ndarray, float]:
        """(true costs, LP costs, scale) per class, workers then PSs, conditioned over
        all classes (as the per-machine LP over all machines)."""
        if d.lp_costs is None:
            price = d.shared.price
            cost = self.unit_costs(price)
            scale, lp_cost = conditioned_costs(cost, self.sched.cost_floor)
            d.lp_costs = (cost, lp_cost, scale)
        return d.lp_costs

    def _lp_for(self, d: _SlotData, margin: bool) -> _ExternalLp:
        """The class LP on HiGHS.  A class without room for a worker's or a PS's every
        resource has W_c = S_c = 0 in every feasible solution: it is left out (exact;
        most busy machines in a loaded cluster)."""
        room = self._lp_room(d, margin)
        cost, lp_cost, scale = self._lp_costs(d)
        a, b = self.a_res, self.b_res
        useful = np.all(room[:, a > 0] > 0, axis=1) | np.all(room[:, b > 0] > 0, axis=1)
        keep = np.flatnonzero(useful)
        cols = np.concatenate([keep, d.classes.n + keep])
        C = keep.size
        if C not in self._structures:
            self._structures[C] = _lp_structure(self.job, self.res, C)
        return _ExternalLp(
            self.sched.lp_model(),
            self.job,
            self._structures[C],
            d.classes.count[keep],
            room[keep],
            cost[cols],
            lp_cost[cols],
            float(scale),
            keep,
            d.classes.n,
        )

    def _pass(self, d: _SlotData, ms: list[int], margin: bool, tail: bool = False) -> list[int]:
        """The class LP at ``ms`` by the certified sorted pass
        (:func:`~dmlsched.schedulers._shared.cover_lp.sorted_pass`); returns the
        bounds it could not certify (left to HiGHS).  ``tail``: ``ms`` is a tail of
        ``ext_ms``."""
        # every class goes in (a class without room gets W_c = S_c = 0 from the pass)
        room = self._lp_room(d, margin)
        cost, lp_cost, _ = self._lp_costs(d)
        n = d.classes.n
        res = sorted_pass(
            d.shared.count,
            room,
            self.a_res,
            self.b_res,
            lp_cost[:n],
            lp_cost[n:],
            self.ext_ms_float[len(self.ext_ms) - len(ms) :] if tail else np.asarray(ms, float),
            self.ratio,
            self.job.mode,
            tie_w=cost[:n],
            tie_s=cost[n:],
        )
        ok = res.ok
        full = res.x[ok]
        obj = matvec(full, cost)
        if ok.all():  # the usual case: every bound certified
            start = len(self.ext_ms) - len(ms) if tail else None
            self._store(d, ms, obj, list(full), margin, start)
            return []
        at = np.asarray(ms)
        self._store(d, at[ok].tolist(), obj, list(full), margin)
        return at[~ok].tolist()

    def _store(
        self,
        d: _SlotData,
        ms: list[int],
        obj: np.ndarray,
        xs: list[np.ndarray],
        margin: bool,
        start: int | None = None,
    ) -> None:
        """Record the LP's objective ``obj`` and class solutions ``xs`` at the bounds ``ms``
        (``start``: ``ms`` is ``ext_ms[start:]``, whose positions need no search)."""
        d.lp.update(zip(ms, zip(obj.tolist(), xs, strict=True), strict=True))
        if margin:
            d.lp_margin.update(ms)
        if d.lp_val is not None and ms:
            if start is not None:
                d.lp_val[start:] = obj
            else:
                d.lp_val[np.searchsorted(self.ext_ms_arr, ms)] = obj

    def _trace_lp(self, d: _SlotData) -> None:
        """LP values at every needed workload bound: margin LP, then the plain LP above it."""
        ms = self.ext_ms
        self._trace(d, ms, margin=True, tail=True)
        if self.sched.safe_packing:
            top = max(d.lp, default=0)
            rest = ms[bisect.bisect_right(ms, top) :]  # ms ascending
            if rest:
                self._trace(d, rest, margin=False, tail=True)

    def _trace(self, d: _SlotData, ms: list[int], margin: bool, tail: bool = False) -> None:
        """LP value (and class solution) at every bound in ``ms``: the sorted pass
        where it is certified, HiGHS with few solves for the rest."""
        if not ms:
            return
        if self.sched.external_lp == "pass":
            ms = self._pass(d, ms, margin, tail)
            if not ms:
                return
        lp = self._lp_for(d, margin)
        sols: dict[int, tuple[float, np.ndarray, float, float]] = {}
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
            oi, xi, gi, li = sols[ms[i]]
            oj, xj, _, lj = sols[ms[j]]
            # the dual is the slope of the LP's own (conditioned) objective: test that
            if abs(li + gi * (ms[j] - ms[i]) - lj) <= self.sched.lp_tol * abs(lj) + 1e-300:
                for k in range(i + 1, j):
                    f = (ms[k] - ms[i]) / (ms[j] - ms[i])
                    sols[ms[k]] = (oi + f * (oj - oi), xi + f * (xj - xi), gi, li + f * (lj - li))
                continue
            mid = (i + j) // 2
            r = lp.solve(ms[mid])
            if r is None:
                return
            sols[ms[mid]] = r
            stack += [(i, mid), (mid, j)]
        at = list(sols)
        self._store(d, at, np.array([sols[m][0] for m in at]), [sols[m][1] for m in at], margin)

    def costs(self, t: int, price: np.ndarray, free: np.ndarray, key: bytes) -> np.ndarray:
        self.slot_key[t] = key
        d = self.cache.get(key)
        if d is not None and d.theta is not None:
            return d.theta
        d = self._slot(key, price, free, t)
        theta = np.minimum(d.int_cost, d.ext_est)
        theta.flags.writeable = False  # shared by every slot of this state
        d.theta = theta
        self.cache[key] = d
        return theta

    def _classes(
        self, key: bytes, price: np.ndarray, free: np.ndarray, t: int | None = None
    ) -> _SlotClasses:
        """Machines equal in everything the job's two cases see (shared across jobs).

        Computed by :func:`~dmlsched.schedulers._shared.kernels.regroup`: for slot
        ``t`` from the state its classes were last computed for on this job's
        resources, re-hashing only the machines whose rows changed since."""
        tag = (key, self.bounds, self.res_key)
        cache = self.sched.classes_
        hit = cache.get(tag)
        if hit is None:
            from dmlsched.schedulers._shared.kernels import regroup

            # machines equal bit for bit in Ĉ and p on the job's resources and in the
            # internal case's fit on the others, and each class's rows (one compiled
            # pass, no key matrix)
            state = self.sched.regroup_.get((t, self.res_key)) if t is not None else None
            if state is None:
                H = free.shape[0]
                size = 1
                while size < 4 * H:  # labels ≤ 2H: the table at most half full
                    size *= 2
                lab = np.zeros(H, dtype=np.int64)
                table = np.full(size, -1, dtype=np.int64)
                reps = np.zeros((2 * H, 1 + 2 * len(self.res)), dtype=np.uint64)
                state = [free, price, lab, table, reps, 0, True]
                if t is not None:
                    self.sched.regroup_[(t, self.res_key)] = state
            old_free, old_price, lab, table, reps, used, fresh = state
            args = (free, price, self.res_idx, self.other_idx, _TOL)
            out = regroup(*args, old_free, old_price, lab, table, reps, used, fresh)
            if out[-1] < 0:  # every label taken: label this state from scratch
                out = regroup(*args, old_free, old_price, lab, table, reps, 0, True)
            *groups, free_c, price_c, room_c, count_f, used = out
            state[:] = [free, price, lab, table, reps, used, False]
            free_res = free_c[:, self.res_idx]
            free_res.flags.writeable = False  # shared by every job with these resources
            hit = _SlotClasses(MachineClasses(*groups), free_c, price_c, room_c, count_f, free_res)
            if len(cache) >= 1024:  # slot states seen by recent jobs matter most
                cache.clear()
            cache[tag] = hit
        return hit

    def _slot(
        self, key: bytes, price: np.ndarray, free: np.ndarray, t: int | None = None
    ) -> _SlotData:
        from dmlsched.schedulers._shared.kernels import internal_fit

        shared = self._classes(key, price, free, t)
        classes = shared.classes
        # the cheapest class whose one machine holds all k quanta's workers and PSs;
        # classes are numbered by lowest machine id, so the first cheapest class's
        # first machine is the lowest-id cheapest machine, as over all machines
        int_cost, h = internal_fit(
            self.int_demand, self.int_ok, shared.room, shared.price, classes.first
        )
        int_cost[0] = 0.0
        d = _SlotData(price, free, classes, shared, int_cost, h, np.full(self.q + 1, np.inf))
        d.ext_est[0] = 0.0
        d.lp_val = np.full(len(self.ext_ms), np.inf)
        self._trace_lp(d)
        if d.lp:
            # G_δ × the LP value at each bound, for every quantum count that needs it
            d.ext_est[self.ext_k] = (self._gains(d) * d.lp_val)[self.ext_pos]
        return d

    def _gains(self, d: _SlotData) -> float | np.ndarray:
        """G_δ at every bound of ``ext_ms`` (one number unless it depends on the bound)."""
        if self.sched.g_delta != "eq30":
            return self.gain(0.0, d)  # a number or Eq. (29): the same at every bound
        if self._eq30 is None:
            self._eq30 = np.array([self.gain(float(m), d) for m in self.ext_ms])
        return self._eq30

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
            ext = self._round(d, m)
            if ext is not None and (best is None or ext[0] < best[0]):
                best = ext
            elif ext is not None and best is not None:
                best = (best[0], best[1], ext[2])
        return best

    def disaggregate(self, d: _SlotData, m: int) -> np.ndarray:
        """Per-machine x̄ (w_1..w_H, s_1..s_H) of the class LP solution at bound m."""
        x = d.lp[m][1]
        C = d.classes.n
        if self.sched.vertex == "interior" and self.job.mode == "sync":
            # the optimum with every class's total split evenly over its machines
            n_c = d.classes.count
            return np.concatenate([(x[:C] / n_c)[d.classes.of], (x[C:] / n_c)[d.classes.of]])
        from dmlsched.schedulers._shared.kernels import fill_pair

        room = self._lp_room(d, m in d.lp_margin)
        # async: a PS sharing a machine with workers loads (3.4) with b^(i) per
        # worker, so PSs go to machines without workers first
        apart = self.job.mode == "async"
        cl = d.classes
        flat, failed = fill_pair(
            x, self.demand2, np.maximum(room, 0.0), cl.count, cl.members, cl.starts, cl.first,
            apart, 1e-9,
        )  # fmt: skip
        if not failed:
            return flat
        # a class whose items do not all fit one after another: fill_classes's fallback
        amount = np.column_stack([x[:C], x[C:]])
        per = fill_classes(d.classes, amount, self.demand2, room, apart=apart)
        return np.concatenate([per[:, 0], per[:, 1]])

    def _round(self, d: _SlotData, m: int) -> tuple[float, Placement, int] | None:
        """Steps 9–12 at workload bound m: the cheapest of S roundings, per machine
        (:meth:`_draw_machines`) or, with ``rounding="class"`` on an even split, per
        class (:meth:`_draw_classes`); after S failures the fallbacks that are on."""
        if self.sched.rounding == "class" and self._even_split():
            res, placement = self._draw_classes(d, m)
        else:
            res, placement = self._draw_machines(d, m)
        if not res.success:
            self.sched.failed_ += 1
            full_cost = self.unit_costs(d.price)
            if self.sched.milp_fallback:
                exact = self._exact(d, m, full_cost, res.attempts)
                if exact is not None:
                    return exact
            if self.sched.greedy_fill:
                x_full = self.disaggregate(d, m)
                return self._heuristic(d, m, x_full, full_cost, res.attempts)
            return None  # no external solution: the DP reroutes or the job is discarded
        lp_cost = d.lp[m][0]
        if lp_cost > 0:
            self.sched.ratios_.append(res.cost / lp_cost)
        assert res.x is not None
        return res.cost, placement(res.x), res.attempts

    def _even_split(self) -> bool:
        """Whether :meth:`disaggregate` gives every machine of a class the same x̄."""
        return self.sched.vertex == "interior" and self.job.mode == "sync"

    def _draw_machines(
        self, d: _SlotData, m: int
    ) -> tuple[RoundingResult, Callable[[np.ndarray], Placement]]:
        """Eq. (27)–(28) on the machines with x̄ > 0 (the others always round to 0)."""
        H = self.H
        x_full = self.disaggregate(d, m)
        sup = np.flatnonzero((x_full[:H] > 0) | (x_full[H:] > 0))
        n = sup.size
        x_bar = np.concatenate([x_full[sup], x_full[H + sup]])
        price = d.price[sup]
        cost = self.unit_costs(price)
        a, b = self.a_res, self.b_res
        ub = np.maximum(d.free[sup][:, self.res_idx], 0.0)
        ub_tol = ub + _TOL * np.maximum(1.0, ub)

        from dmlsched.schedulers._shared.kernels import rounding_ok, trim_workers_in_place

        job = self.job
        wmax = float(job.max_workers)
        costly_first = np.argsort(-cost[:n], kind="stable")
        # Steps 10–12: S draws of Eq. (27)–(28), each trimmed to F workers (as
        # :meth:`_trim`) and tested on the workload row (26), the packing rows (24) of
        # the support machines and the engine's PS rules; the cheapest feasible is kept
        res = cheapest_round(
            x_bar,
            float(self.gain(m, d)),
            self.sched.rng_,
            cost=cost,
            attempts=int(self.sched.attempts),
            repair=lambda cand: trim_workers_in_place(cand, costly_first, wmax),  # a fresh batch
            accept=lambda cand: rounding_ok(
                cand,
                float(m),
                a,
                b,
                ub_tol,
                wmax,
                job.mode == "sync",
                float(job.gamma),
                float(job.b_ext),
                float(job.b_int),
                float(job.ps_bandwidth),
                _TOL,
            ),
        )

        def placement(x: np.ndarray) -> Placement:
            return Placement.from_counts(
                {int(sup[i]): int(x[i]) for i in range(n) if x[i]},
                {int(sup[i]): int(x[n + i]) for i in range(n) if x[n + i]},
            )

        return res, placement

    def _draw_classes(
        self, d: _SlotData, m: int
    ) -> tuple[RoundingResult, Callable[[np.ndarray], Placement]]:
        """Eq. (27)–(28) drawn per machine class (``rounding="class"``, module docstring).

        The even split gives each of class c's n_c machines x̄ = X_c / n_c; the
        class's rounded total is n_c ⌊x'⌋ + Binomial(n_c, x' − ⌊x'⌋), the
        distribution of the sum of its machines' independent roundings
        (:func:`~dmlsched.solvers.rounding.cheapest_round_groups`).  Each draw of
        totals is trimmed to F workers, costliest class first (ties: lowest
        machine id), tested on (26), Eq. (2)/(4) and every machine's (24)
        (:func:`~dmlsched.schedulers._shared.kernels.class_fits`), and the cheapest
        feasible one is spread onto the class's machines by :func:`spread_class`."""
        x = d.lp[m][1]
        cl = d.classes
        C = cl.n
        sup = np.flatnonzero((x[:C] > 0) | (x[C:] > 0))
        n_c = cl.count[sup].astype(np.int64)
        x_bar = np.concatenate([x[:C][sup] / n_c, x[C:][sup] / n_c])
        price = d.shared.price[sup]
        cost = self.unit_costs(price)
        ub = np.maximum(d.shared.free_res[sup], 0.0)
        ub_tol = ub + _TOL * np.maximum(1.0, ub)

        from dmlsched.schedulers._shared.kernels import (
            class_fits,
            class_rounding_ok,
            trim_workers_in_place,
        )

        job = self.job
        wmax = float(job.max_workers)
        g = sup.size
        costly_first = np.argsort(-cost[:g], kind="stable")
        res = cheapest_round_groups(
            x_bar,
            np.concatenate([n_c, n_c]),
            float(self.gain(m, d)),
            self.sched.rng_,
            cost=cost,
            attempts=int(self.sched.attempts),
            repair=lambda cand: trim_workers_in_place(cand, costly_first, wmax),  # a fresh batch
            accept=lambda cand: class_rounding_ok(
                cand, n_c, float(m), self.a_res, self.b_res, ub_tol, wmax, float(job.gamma), _TOL
            ),
        )

        rng = self.sched.rng_

        def placement(tot: np.ndarray) -> Placement:
            workers: dict[int, int] = {}
            ps: dict[int, int] = {}
            for i, c in enumerate(sup):
                members = cl.members[cl.starts[c] : cl.starts[c + 1]]
                n = members.size
                qw, rw = divmod(int(tot[i]), n)
                qs, rs = divmod(int(tot[g + i]), n)
                fit = class_fits(qw, rw, qs, rs, n, self.a_res, self.b_res, ub_tol[i])
                w, s = spread_class(n, int(tot[i]), int(tot[g + i]), fit == 1, rng)
                on = np.flatnonzero(w)
                workers.update(zip(members[on].tolist(), w[on].tolist(), strict=True))
                on = np.flatnonzero(s)
                ps.update(zip(members[on].tolist(), s[on].tolist(), strict=True))
            return Placement.from_counts(workers, ps)

        return res, placement

    def _exact(
        self, d: _SlotData, m: int, cost: np.ndarray, attempts: int
    ) -> tuple[float, Placement, int] | None:
        """The thesis's Step-12 "heuristic search" after S failed roundings, first part:
        the integer Problem (23) itself, per machine with plain capacities, by
        HiGHS's branch and bound capped at ``MILP_NODES`` nodes (None if it finds
        no integer point there or the point breaks the engine's exact PS rules).

        Randomized rounding cannot find a packing that fills the cluster to
        within a fraction of a worker (measured on ``pdors-fig10`` jobs=6 seed 7:
        a job OPT finishes using 163 of the 163.6 workers that fit, in every
        slot, failed S = 100 roundings and the greedy fill in every slot).
        """
        H = self.H
        room = np.flatnonzero(
            np.all(d.free[:, self.res] >= self.alpha[self.res] - _TOL, axis=1)
            | np.all(d.free[:, self.res] >= self.beta[self.res] - _TOL, axis=1)
        )
        if room.size == 0:
            return None
        lp = per_machine_lp(
            self.job,
            d.free[room],
            np.concatenate([cost[room], cost[H + room]]),
            self.sched.cost_floor,
        )
        from dmlsched.solvers.highs import make_integer  # see INF

        make_integer(lp.model, MILP_NODES)
        lp.model.set_row_bounds(np.array([lp.cover_row]), np.array([float(m)]), np.array([lp.wmax]))
        try:
            sol = lp.model.solve(accept_feasible=True)
        except SolverFailed:
            return None
        n = room.size
        x = np.zeros(2 * H)
        x[room] = np.round(sol.x[:n])
        x[H + room] = np.round(sol.x[n:])
        if x[:H].sum() < m - _TOL or not self._engine_rules(x[None, :])[0]:
            return None
        return _priced(x, cost, attempts)

    def _heuristic(
        self, d: _SlotData, m: int, x_bar: np.ndarray, cost: np.ndarray, attempts: int
    ) -> tuple[float, Placement, int] | None:
        """Step 12's "heuristic search", second part (when :meth:`_exact` finds nothing).

        Start from ⌊G_δ x̄⌋ (never more than the LP, so within capacity when
        G_δ ≤ 1 or after dropping overflow), then add workers, then PSs, one at
        a time on the cheapest machine with room, until the workload row and
        the engine's PS rules hold.
        """
        H, job = self.H, self.job
        x = np.floor(np.minimum(self.gain(m, d), 1.0) * x_bar + 1e-9)
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
        return _priced(x, cost, attempts)

    def _trim(self, cand: np.ndarray, cost: np.ndarray) -> np.ndarray:
        """Drop workers above max_workers (Eq. (25)/(4)), most expensive machines first.

        The paper takes (25) as never binding ("samples far exceed workers")
        and checks only (24) and (26) after rounding; our engine enforces
        Eq. (4), so a rounding with W > F loses its costliest surplus
        workers.  That keeps (24) and, as the workload bound is ≤ F, (26).
        """
        from dmlsched.schedulers._shared.kernels import trim_workers

        order = np.argsort(-cost[: cand.shape[1] // 2], kind="stable")  # costliest first
        return trim_workers(cand, order, float(self.job.max_workers))

    def _engine_rules(self, cand: np.ndarray) -> np.ndarray:
        """Eq. (2)/(4) (sync) or (3.2), (3.4), (3.5) (async) on a batch of roundings."""
        job, H = self.job, cand.shape[1] // 2
        w, s = cand[:, :H], cand[:, H:]
        W, S = w.sum(axis=1), s.sum(axis=1)
        ok = (W >= 1) & (job.max_workers >= W)
        if job.mode == "sync":
            return ok & (np.ceil(W / job.gamma - _TOL) <= S)
        n_ps = (s > 0).sum(axis=1)
        per = n_ps[:, None] * job.b_ext + (s > 0) * (job.b_int - job.b_ext)
        load = (w * per).sum(axis=1)
        return ok & (S >= 1) & (S <= W) & (load <= S * job.ps_bandwidth * (1 + 1e-9))


#: pd-ors as printed: every departure below off (module docstring, "Two entries")
PRINTED: dict[str, Any] = {
    "vertex": "fill",
    "rounding": "machine",
    "release": False,
    "safe_packing": False,
    "milp_fallback": False,
    "greedy_fill": False,
    "reroute": False,
    "aligned_quanta": False,
    "cost_floor": 0.0,
    "payoff_floor": 0.0,
}
#: pd-ors+: our best version, every departure on (each a named option)
PLUS: dict[str, Any] = {
    "vertex": "interior",
    "rounding": "class",
    "release": True,
    "safe_packing": True,
    "milp_fallback": True,
    "greedy_fill": True,
    "reroute": True,
    "aligned_quanta": True,
    "cost_floor": _COST_FLOOR,
    "payoff_floor": 1e-9,
}


@register
class Pdors(PrimalDualScheduler):
    """PD-ORS as printed (journal Alg. 1–4; thesis variant for async jobs).

    The options of :data:`PLUS` (all off here) are our departures; ``pd-ors+``
    (:class:`PdorsPlus`) turns them all on.
    """

    name: ClassVar[str] = "pd-ors"

    def __init__(
        self,
        g_delta: float | str = 1.0,
        delta: float = 0.5,
        attempts: int = ATTEMPTS,
        quanta: int = 32,
        price_estimate: str = "online",
        history: tuple[ClusterJob, ...] | None = None,
        max_repairs: int = 200,
        quanta_per_slot: int = 8,
        lp_tol: float = 1e-6,
        external_lp: str = "pass",
        *,
        vertex: str = PRINTED["vertex"],
        rounding: str = PRINTED["rounding"],
        release: bool = PRINTED["release"],
        safe_packing: bool = PRINTED["safe_packing"],
        milp_fallback: bool = PRINTED["milp_fallback"],
        greedy_fill: bool = PRINTED["greedy_fill"],
        reroute: bool = PRINTED["reroute"],
        aligned_quanta: bool = PRINTED["aligned_quanta"],
        cost_floor: float = PRINTED["cost_floor"],
        payoff_floor: float = PRINTED["payoff_floor"],
        shortfall: str = "replan",
    ) -> None:
        self.lp_tol = lp_tol
        self.external_lp = external_lp
        super().__init__(
            quanta,
            price_estimate,
            history,
            max_repairs,
            quanta_per_slot,
            payoff_floor,
            aligned_quanta=aligned_quanta,
            reroute=reroute,
            release=release,
            shortfall=shortfall,
        )
        self.vertex = vertex
        self.rounding = rounding
        self.safe_packing = safe_packing
        self.milp_fallback = milp_fallback
        self.greedy_fill = greedy_fill
        self.cost_floor = cost_floor
        self.g_delta = g_delta
        self.delta = delta
        self.attempts = attempts

    def _setup(self) -> None:
        self.classes_: dict[tuple[bytes, PriceBounds, tuple[int, ...]], _SlotClasses] = {}
        # per (slot, used resources): the state its machine classes were last computed
        # for and regroup's labels, table and row contents (PdorsOracle._classes)
        self.regroup_: dict[tuple[int, tuple[int, ...]], list[Any]] = {}
        self._lp_model: LinearModel | None = None
        g = self.g_delta
        if isinstance(g, str):
            if g not in ("eq29", "eq30"):
                raise InvalidInput("g_delta", g, "a number > 0 | eq29 | eq30")
        elif not (float(g) > 0):
            raise InvalidInput("g_delta", g, "> 0")
        if self.vertex not in VERTICES:
            raise InvalidInput("vertex", self.vertex, " | ".join(VERTICES))
        if self.rounding not in ROUNDINGS:
            raise InvalidInput("rounding", self.rounding, " | ".join(ROUNDINGS))
        if self.external_lp not in ("pass", "highs"):
            raise InvalidInput("external_lp", self.external_lp, "pass | highs")
        if not (0 <= self.cost_floor < 1):
            raise InvalidInput("cost_floor", self.cost_floor, "in [0, 1)")
        if not (self.payoff_floor >= 0):
            raise InvalidInput("payoff_floor", self.payoff_floor, ">= 0")
        if not (0 < self.delta <= 1):
            raise InvalidInput("delta", self.delta, "in (0, 1]")
        if int(self.attempts) != self.attempts or self.attempts < 1:
            raise InvalidInput("attempts", self.attempts, "integer >= 1")
        self.failed_ = 0  # roundings with no feasible draw in S attempts

    def decide(self, view: ClusterView) -> ClusterDecision:
        # slots before now are never priced again: their regrouping state can go
        stale = [k for k in self.regroup_ if k[0] < view.slot]
        for k in stale:
            del self.regroup_[k]
        return super().decide(view)

    @property
    def stats(self) -> dict[str, Any]:
        """Adds ``rounding_failures``: roundings whose S attempts all failed."""
        out = dict(super().stats)
        out["rounding_failures"] = float(getattr(self, "failed_", 0))
        return out

    def lp_model(self) -> LinearModel:
        """The one HiGHS instance every external LP of the run is loaded into."""
        if self._lp_model is None:
            from dmlsched.solvers.highs import LinearModel  # see INF

            z = np.zeros(1)
            self._lp_model = LinearModel(z, np.zeros((1, 1)), z, z, z, z, name="pdors-ext")
            # a handful of warm-started re-solves of a small LP: presolve only costs time
            self._lp_model._h.setOptionValue("presolve", "off")
        return self._lp_model

    def _oracle(self, job: ClusterJob, quanta: Quanta, bounds: PriceBounds) -> PdorsOracle:
        return PdorsOracle(self, job, quanta, bounds)

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (the service's snapshots): without the HiGHS instance, a cache that
        :meth:`lp_model` builds again (its warm start is lost, not its answers' validity)."""
        return {**self.__dict__, "_lp_model": None}


@register
class PdorsPlus(Pdors):
    """PD-ORS with every departure of :data:`PLUS` on (each can be turned off by name)."""

    name: ClassVar[str] = "pd-ors+"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**{**PLUS, **kw})
