"""mlBroker = A_fractional (Alg. 1) + A_round (Alg. 2, 3), once per slot.

**A_fractional** (Alg. 1, Eq. (10)): the slot's one-shot relaxation P̃_ft —
C_1 + C_2^* + C_4 plus the regularized deployment term
Σ_i Σ_r (c_i/σ)[(v + ε) ln((v + ε)/(v(t−1) + ε)) − v], σ = ln(1 + 1/ε),
subject to (8a)–(8g), (8i), (8j), (9k) — built by
:func:`dmlsched.schedulers._shared.geo_problem.build_slot` and solved by the
interior-point conic solver Clarabel (:func:`dmlsched.solvers.convex.regularized_lp`).
v(t−1) is A_fractional's own previous fractional v (0 for a new job).

**A_round** (Alg. 2): ȳ = max(Round1_y(ỹ, n_{·,k}) for every k, Round2_y(ỹ))
(Alg. 3 and its per-job variant); the PS site r_i drawn with probabilities
s̃_i^r; Step 3: q by the transfer LP (HiGHS), x/u in closed form (the engine
prices F(h) exactly), v the smallest binary meeting (8g), g = y ⊗ s.

Rounding variants (Sec. 6.2), option ``rounding``: ``"dependent"`` (A_round),
``"ir"`` (each ỹ to the nearest integer, PS sampled as in A_round) and
``"gr"`` (each ỹ up, PS at argmax_r s̃_i^r).

``mlbroker`` is the paper as printed (``rounding="dependent"``,
``ps_site="sample"``).  ``mlbroker+`` (:class:`MlBrokerPlus`) departs
through two options, both on there:

* ``rounding="job"`` — Round2_y alone (one pairwise rounding per job over
  its DCs, keeping Σ_r y_i^r within one worker of Σ_r ỹ_i^r) instead of
  line 5's entry-wise maximum of K + 1 independent roundings: the maximum of
  K + 1 draws rounds almost every fractional entry up (with K = 4, an entry
  at .5 stays down with probability 2^−5), renting workers no data needs;
  the repair below still guarantees (8a)/(8j).
* ``ps_site="workers"`` — the PS goes to the DC r' minimising the slot's
  cost of putting it there given the rounded workers: C_4's
  Σ_r d^{rr'} B_i ȳ_i^r, plus its resources Σ_k m_{i,k} a_k^{r'} at list
  price, plus c_i if job i had nothing in r' last slot and has no worker
  there now (C_3); ties go to the DC with more workers.  Lines 6–9 draw it
  from s̃_i, which (Sec. 6.3) often lands far from the workers.

Decision: if rounding leaves a job with Σ_r ȳ_i^r < ⌈Σ_r D_i^r/P_i⌉ (IR can;
A_round only through solver noise), workers are added one at a time in the
DC with the largest ỹ − ȳ until (8a)/(8j) can hold — otherwise the decision
is infeasible and the engine would reject it.

Clarabel's ``optimal_inaccurate`` status is accepted for P̃_ft (seen only
with deployment costs ~1000× Sec. 6.1's): the rounding works on any
fractional point and the engine re-validates the decision; every other
non-optimal status raises ``SolverFailed``.

After each slot the scheduler keeps ``fractional_costs_`` (the objective of
P_f (9) on A_fractional's solution: C_1 + Σx + Σ c_i max(ṽ(t) − ṽ(t−1), 0)
+ C_4) for the performance ratios of Fig. 5–7, ``solver_iterations_`` (the
interior-point iterations of the slot's P̃_ft, 0 for a slot with no active
job: how the solve grows with the instance), and ``fractional_true_costs_``:
the same fractional solution priced by Eq. (2) itself, Σ_{r,k} F_k^r(h̃_k^r)
with h̃ = Σ_i n_{i,k} ỹ_i^r + m_{i,k} s̃_i^r, in place of Σx.  P_f's big-M
relaxation of (8c)–(8e) lets x fall below F(h) (with u1 = u2 = 1/2 the two
segments are each relaxed by M/2), so the ratio of the engine's cost to the
P_f objective splits into a *relaxation gap* (true ÷ P_f objective) and a
*rounding loss* (engine ÷ true).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.geo import GeoDecision, GeoPlacement, GeoSites, resource_cost, usage
from dmlsched.numerics import dot, matmat
from dmlsched.schedulers._shared.geo_placement import min_cost_transfers
from dmlsched.schedulers._shared.geo_problem import SlotData, build_slot
from dmlsched.schedulers.protocols import register
from dmlsched.solvers.convex import regularized_lp
from dmlsched.solvers.dependent_rounding import (
    greedy_round,
    independent_round,
    round1_y,
    round2_y,
)

if TYPE_CHECKING:
    from dmlsched.model.views import GeoView

__all__ = [
    "Fractional",
    "MlBroker",
    "MlBrokerPlus",
    "a_round",
    "fractional_slot",
    "ps_near_workers",
]

ROUNDINGS = ("dependent", "ir", "gr", "job")
PS_SITES = ("sample", "workers")


@dataclass(frozen=True)
class Fractional:
    """A_fractional's answer for one slot (:func:`fractional_slot`)."""

    parts: dict[str, np.ndarray]  # P̃_ft's variables by name (``Layout.unpack``)
    pf_cost: float  # the P_f (9) objective of this solution
    true_cost: float  # the same with Σx replaced by Σ F(h̃) of Eq. (2) (module docstring)
    iterations: int  # the interior-point iterations of its solve


def fractional_slot(
    sites: GeoSites, data: SlotData, prev_v: np.ndarray, eps: float, big_m: str = "valid"
) -> Fractional:
    """A_fractional for one slot: solve P̃_ft (10)."""
    prob = build_slot(sites, data, big_m)
    L = prob.layout
    reg_idx = np.arange(L.v.start, L.v.stop)
    sol = regularized_lp(
        prob.c,
        prob.a_eq,
        prob.b_eq,
        prob.a_ub,
        prob.b_ub,
        prob.lb,
        prob.ub,
        reg_idx,
        np.repeat(data.c, sites.dcs),
        prev_v.ravel(),
        eps,
        name="mlbroker-P_ft",
        accept_inaccurate=True,
    )
    z = np.maximum(sol.x, 0.0)
    parts = L.unpack(z)
    z_dep = np.maximum(parts["v"] - prev_v, 0.0)
    pf_cost = dot(prob.c, z) + dot(data.c, z_dep.sum(axis=1))
    h = usage(parts["y"], parts["s"], data.n, data.m)
    true_cost = pf_cost - float(parts["x"].sum()) + resource_cost(h, sites)
    return Fractional(parts, pf_cost, true_cost, sol.iterations)


def ps_near_workers(
    y: np.ndarray, data: SlotData, sites: GeoSites, prev_v: np.ndarray | None = None
) -> np.ndarray:
    """``ps_site="workers"``: per job the DC with the least PS cost given y (module docstring)."""
    comm = np.einsum("ir,rs->is", y, sites.d) * data.B[:, None]  # Σ_r d^{rr'} B ȳ^r
    res = matmat(data.m, sites.a.T)  # Σ_k m_k a_k^{r'}
    cost = comm + res
    if prev_v is not None:
        new = (prev_v <= 0) & (y <= 0)
        cost = cost + data.c[:, None] * new
    out = np.empty(y.shape[0], dtype=int)
    for i in range(y.shape[0]):
        best = np.flatnonzero(np.isclose(cost[i], cost[i].min(), rtol=1e-12, atol=1e-12))
        out[i] = int(best[np.argmax(y[i, best])])
    return out


def a_round(
    y_frac: np.ndarray,
    s_frac: np.ndarray,
    data: SlotData,
    d: np.ndarray,
    rng: np.random.Generator,
    rounding: str = "dependent",
    ps_site: str = "sample",
    sites: GeoSites | None = None,
    prev_v: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Alg. 2 (A_round) or a variant: integer y, PS sites, transfers q.

    ``ps_site="workers"`` needs ``sites`` (prices) and takes the previous
    slot's deployment ``prev_v`` (N, R) when known.
    """
    y_frac = np.maximum(y_frac, 0.0)
    N, R = y_frac.shape
    if rounding == "dependent":
        y = round2_y(y_frac, rng)  # line 4
        for k in range(data.n.shape[1]):  # lines 1–3
            y = np.maximum(y, round1_y(y_frac, data.n[:, k], rng))  # line 5
    elif rounding == "ir":
        y = independent_round(y_frac)
    elif rounding == "gr":
        y = greedy_round(y_frac)
    elif rounding == "job":
        y = round2_y(y_frac, rng)
    else:
        raise InvalidInput("rounding", rounding, " | ".join(ROUNDINGS))
    # Repair (module docstring): enough workers for (8a)/(8j).
    W = data.W
    for i in range(N):
        while y[i].sum() < W[i]:
            y[i, int(np.argmax(y_frac[i] - y[i]))] += 1.0
    if ps_site == "workers":
        if sites is None:
            raise ValueError("ps_site='workers' needs the sites (prices)")
        ps = ps_near_workers(y, data, sites, prev_v)
    else:
        ps = np.empty(N, dtype=int)
        for i in range(N):  # lines 6–9
            p = np.maximum(s_frac[i], 0.0)
            p = p / p.sum() if p.sum() > 0 else np.full(R, 1.0 / R)
            ps[i] = int(np.argmax(p)) if rounding == "gr" else int(rng.choice(R, p=p))
    q = min_cost_transfers(data.D, data.P, y, d)  # line 10, Step 3
    return y.astype(int), ps, q


@register
class MlBroker:
    """mlBroker (Sec. 4–5); options ``epsilon`` (ε of Sec. 4.1), ``rounding``, ``big_m``,
    ``ps_site`` (module docstring)."""

    name: ClassVar[str] = "mlbroker"
    setting: ClassVar[str] = "geo"

    def __init__(
        self,
        epsilon: float = 0.1,
        rounding: str = "dependent",
        big_m: str = "valid",
        ps_site: str = "sample",
    ) -> None:
        self.epsilon = epsilon
        self.rounding = rounding
        self.big_m = big_m
        self.ps_site = ps_site

    def reset(self, sites: GeoSites, horizon: int, rng: np.random.Generator) -> None:
        if not (isinstance(self.epsilon, (int, float)) and self.epsilon > 0):
            raise InvalidInput("epsilon", self.epsilon, "> 0", "mlbroker")
        if self.rounding not in ROUNDINGS:
            raise InvalidInput("rounding", self.rounding, " | ".join(ROUNDINGS), "mlbroker")
        if self.big_m not in ("valid", "threshold"):
            raise InvalidInput("big_m", self.big_m, "valid | threshold", "mlbroker")
        if self.ps_site not in PS_SITES:
            raise InvalidInput("ps_site", self.ps_site, " | ".join(PS_SITES), self.name)
        self.sites_ = sites
        self.rng_ = rng
        self.v_frac_: dict[int, np.ndarray] = {}
        self.fractional_costs_: list[float] = []
        self.fractional_true_costs_: list[float] = []
        self.solver_iterations_: list[int] = []

    def decide(self, view: GeoView) -> GeoDecision:
        ids = list(view.active)
        if not ids:
            self.fractional_costs_.append(0.0)
            self.fractional_true_costs_.append(0.0)
            self.solver_iterations_.append(0)
            return GeoDecision({})
        sites = self.sites_
        R = sites.dcs
        jobs = [view.jobs[j] for j in ids]
        data = SlotData(
            D=np.array([view.data[j] for j in ids], dtype=float),
            P=np.array([j.capacity for j in jobs]),
            n=np.array([j.worker_demand for j in jobs]),
            m=np.array([j.ps_demand for j in jobs]),
            B=np.array([j.exchange_gb for j in jobs]),
            c=np.array([j.deploy_cost for j in jobs]),
        )
        prev = np.array([self.v_frac_.get(j, np.zeros(R)) for j in ids])
        frac = fractional_slot(sites, data, prev, float(self.epsilon), self.big_m)
        parts = frac.parts
        self.fractional_costs_.append(frac.pf_cost)
        self.fractional_true_costs_.append(frac.true_cost)
        self.solver_iterations_.append(frac.iterations)
        self.v_frac_ = {j: parts["v"][k].copy() for k, j in enumerate(ids)}
        prev_int = np.array([view.deployed[j] for j in ids]).reshape(len(ids), R)
        y, ps, q = a_round(
            parts["y"],
            parts["s"],
            data,
            sites.d,
            self.rng_,
            self.rounding,
            self.ps_site,
            sites,
            prev_int,
        )
        return GeoDecision(
            {
                j: GeoPlacement(tuple(int(x) for x in y[k]), int(ps[k]), q[k])
                for k, j in enumerate(ids)
            }
        )


@register
class MlBrokerPlus(MlBroker):
    """``mlbroker+``: ``rounding="job"`` and ``ps_site="workers"`` (module docstring)."""

    name: ClassVar[str] = "mlbroker+"

    def __init__(
        self,
        epsilon: float = 0.1,
        rounding: str = "job",
        big_m: str = "valid",
        ps_site: str = "workers",
    ) -> None:
        super().__init__(epsilon, rounding, big_m, ps_site)
