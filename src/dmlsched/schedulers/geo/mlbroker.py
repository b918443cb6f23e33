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
+ C_4) for the performance ratios of Fig. 5–7.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.geo import GeoDecision, GeoPlacement, GeoSites
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

__all__ = ["MlBroker", "a_round", "fractional_slot"]

ROUNDINGS = ("dependent", "ir", "gr")


def fractional_slot(
    sites: GeoSites, data: SlotData, prev_v: np.ndarray, eps: float, big_m: str = "valid"
) -> tuple[dict[str, np.ndarray], float]:
    """A_fractional for one slot: solve P̃_ft (10); return its variables and P_f cost."""
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
    pf_cost = float(prob.c @ z + data.c @ z_dep.sum(axis=1))
    return parts, pf_cost


def a_round(
    y_frac: np.ndarray,
    s_frac: np.ndarray,
    data: SlotData,
    d: np.ndarray,
    rng: np.random.Generator,
    rounding: str = "dependent",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Alg. 2 (A_round) or a Sec. 6.2 variant: integer y, PS sites, transfers q."""
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
    else:
        raise InvalidInput("rounding", rounding, " | ".join(ROUNDINGS))
    # Repair (module docstring): enough workers for (8a)/(8j).
    W = data.W
    for i in range(N):
        while y[i].sum() < W[i]:
            y[i, int(np.argmax(y_frac[i] - y[i]))] += 1.0
    ps = np.empty(N, dtype=int)
    for i in range(N):  # lines 6–9
        p = np.maximum(s_frac[i], 0.0)
        p = p / p.sum() if p.sum() > 0 else np.full(R, 1.0 / R)
        ps[i] = int(np.argmax(p)) if rounding == "gr" else int(rng.choice(R, p=p))
    q = min_cost_transfers(data.D, data.P, y, d)  # line 10, Step 3
    return y.astype(int), ps, q


@register
class MlBroker:
    """mlBroker (Sec. 4–5); options ``epsilon`` (ε of Sec. 4.1), ``rounding``, ``big_m``."""

    name: ClassVar[str] = "mlbroker"
    setting: ClassVar[str] = "geo"

    def __init__(
        self, epsilon: float = 0.1, rounding: str = "dependent", big_m: str = "valid"
    ) -> None:
        self.epsilon = epsilon
        self.rounding = rounding
        self.big_m = big_m

    def reset(self, sites: GeoSites, horizon: int, rng: np.random.Generator) -> None:
        if not (isinstance(self.epsilon, (int, float)) and self.epsilon > 0):
            raise InvalidInput("epsilon", self.epsilon, "> 0", "mlbroker")
        if self.rounding not in ROUNDINGS:
            raise InvalidInput("rounding", self.rounding, " | ".join(ROUNDINGS), "mlbroker")
        if self.big_m not in ("valid", "threshold"):
            raise InvalidInput("big_m", self.big_m, "valid | threshold", "mlbroker")
        self.sites_ = sites
        self.rng_ = rng
        self.v_frac_: dict[int, np.ndarray] = {}
        self.fractional_costs_: list[float] = []

    def decide(self, view: GeoView) -> GeoDecision:
        ids = list(view.active)
        if not ids:
            self.fractional_costs_.append(0.0)
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
        parts, pf_cost = fractional_slot(sites, data, prev, float(self.epsilon), self.big_m)
        self.fractional_costs_.append(pf_cost)
        self.v_frac_ = {j: parts["v"][k].copy() for k, j in enumerate(ids)}
        y, ps, q = a_round(parts["y"], parts["s"], data, sites.d, self.rng_, self.rounding)
        return GeoDecision(
            {
                j: GeoPlacement(tuple(int(x) for x in y[k]), int(ps[k]), q[k])
                for k, j in enumerate(ids)
            }
        )
