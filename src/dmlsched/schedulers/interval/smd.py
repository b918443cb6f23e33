"""SMD — sum-of-ratios multi-dimensional-knapsack decomposition (Sec. IV).

Step 1 (decomposition): with x_i = 1 the allocation of each job is the
inner problem (6)–(8), independent across jobs; the outer problem (11) is an
MKP over the limits (Eq. (2)).

Step 2 (inner, per job): min completion time — μ is non-increasing — in the
sum-of-ratios form (12) over x = (w, p), Ω = {O^r w + G^r p ≤ v^r, w, p ≥ 1}:

* sync (9):  θ1 w + θ2 p + θ3 + θ4 w/p + θ5/w, as the ratios
  (θ1 w + θ2 p + θ3)/1, θ4 w/p and θ5/w;
* async (10): θ1 + θ2 p/w + θ3/w + θ4/p, as the constant θ1 and the ratios
  (θ2 p + θ3)/w and θ4/p.

(Terms with one denominator are merged — the same function with fewer
summands, hence a lower-dimensional grid.)  Alg. 1 (:mod:`~dmlsched.solvers.
sum_of_ratios`, precision ``eps`` = ε1) gives x̃; Alg. 2
(:func:`~dmlsched.solvers.ratio_rounding.smd_round`, ``m_delta`` = M_δ,
``attempts`` = F) rounds it; u_i = μ_i(E/f(p, w)).

Step 3 (outer): MKP (16) with values u_i and weights v^r[i]: ``mkp="milp"``
(exact, default: I ≤ 200 is small, and it meets the paper's ε2 = 0.01) or
``mkp="ptas"`` (Frieze–Clarke, subsets up to ``mkp_k``).

Defaults follow Sec. V: ε1 = 0.01, M_δ = 1; F = 10 (not given in the paper).

``smd`` is the paper as printed.  Gaps filled (each minimal):

* Alg. 2 keeps, among its F attempts, the feasible rounding with the least
  completion time, and falls back to ⌊M_δ x̃⌋ if none is feasible
  (:mod:`~dmlsched.solvers.ratio_rounding`);
* Alg. 1 appends φ_j to each grid Q_j (the ε guarantee needs it;
  :mod:`~dmlsched.solvers.sum_of_ratios`) and keeps w, p ≥ 1 in the
  relaxation (Eq. (8));
* summands with one denominator are merged (the same function);
* Step 3 is exact (``mkp="milp"``), which meets the paper's ε2 = 0.01.

``smd+`` (:class:`SmdPlus`) departs through two options, both on there:

* ``exact_inner`` — Step 2 enumerates every integer (w, p) of (7)–(8)
  instead of Alg. 1 + Alg. 2: the inner problem has two variables and the
  limits allow at most a few hundred of each, so the exact integer optimum
  costs less than Alg. 1's LP grid, and rounding cannot lose;
* ``frugal`` = τ (1e-9; ``None`` = off) — among the allocations whose
  utility is at least (1 − τ) × the best (τ = 0: exactly the best), take the
  smallest (mean share of the limits used, as the engine's
  ``used_resource_ratio``).  Eq. (2) charges admission the limits, so this
  hands back resources the user asked for but that buy nothing (Sec. V,
  Fig. 12's point: the sigmoid saturates far from its deadline).  Needs
  ``exact_inner``.  τ = 1e-9 — floating-point ties — keeps the exact
  optimum's utility to 1e-9 (so ``smd+`` ≥ ``smd`` to that precision, the
  acceptance rule of every ``+`` entry) and cuts the share of the limits
  used from 0.67–0.80 (``smd``) to 0.29–0.52 (``ablation-smd`` over Figs.
  7–10, 12, quick, 3 seeds); bit-exact ties (τ = 0) only reach 0.46–0.72.
  Larger τ trade utility for resources: 1e-4 gives 0.24–0.35 for < 1e-4 of
  the utility, τ = 1% (the first proposal) 0.18–0.32 for 0.1–0.4% of it —
  less than ``smd`` earns; the ablation shows both.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.interval import IntervalDecision, IntervalJob
from dmlsched.model.speed.smd import completion_time, job_etas, theta_async, theta_sync
from dmlsched.model.views import IntervalView
from dmlsched.numerics import matvec
from dmlsched.schedulers._shared.interval import best_allocation
from dmlsched.schedulers.protocols import register
from dmlsched.solvers.knapsack import mkp_exact, mkp_ptas
from dmlsched.solvers.ratio_rounding import smd_round
from dmlsched.solvers.sum_of_ratios import Ratio, solve_sum_of_ratios

__all__ = ["Smd", "SmdPlus", "inner_problem", "solve_inner"]


def inner_problem(job: IntervalJob) -> tuple[list[Ratio], float, np.ndarray, np.ndarray]:
    """(ratios, constant, A, C) of (9)/(10) in the job's time unit, x = (w, p)."""
    scale = 1.0 / job.time_unit_s
    eta = job_etas(job)
    if job.mode == "sync":
        t1, t2, t3, t4, t5 = (scale * v for v in theta_sync(job, eta))
        ratios = [
            Ratio((t1, t2), t3, (0.0, 0.0), 1.0),
            Ratio((t4, 0.0), 0.0, (0.0, 1.0), 0.0),
            Ratio((0.0, 0.0), t5, (1.0, 0.0), 0.0),
        ]
        const = 0.0
    else:
        t1, t2, t3, t4 = (scale * v for v in theta_async(job, eta))
        ratios = [
            Ratio((0.0, t2), t3, (1.0, 0.0), 0.0),
            Ratio((0.0, 0.0), t4, (0.0, 1.0), 0.0),
        ]
        const = t1
    o = np.asarray(job.worker_demand, dtype=float)
    g = np.asarray(job.ps_demand, dtype=float)
    keep = (o > 0) | (g > 0)  # rows 0 ≤ v^r carry no information
    return ratios, const, np.stack([o, g], axis=1)[keep], np.asarray(job.limit, float)[keep]


def solve_inner(
    job: IntervalJob, eps: float, m_delta: float, attempts: int, rng: np.random.Generator
) -> tuple[int, int]:
    """Step 2 for one job: Alg. 1 then Alg. 2 → integer (w, p)."""
    ratios, const, a_mat, cap = inner_problem(job)
    res = solve_sum_of_ratios(ratios, a_mat, cap, np.ones(2), eps, constant=const)
    eta = job_etas(job)

    def feasible(x: np.ndarray) -> bool:
        return bool(np.all(x >= 1) and np.all(matvec(a_mat, x) <= cap * (1 + 1e-9) + 1e-9))

    def objective(x: np.ndarray) -> float:
        return float(completion_time(job, x[0], x[1], eta))

    out = smd_round(
        res.x, feasible, objective, rng, scale=m_delta, attempts=attempts, lower=np.ones(2)
    )
    if out.x is None:  # cannot happen for w, p ≥ 1 packing rows; kept explicit
        return 1, 1
    return int(out.x[0]), int(out.x[1])


@register
class Smd:
    name: ClassVar[str] = "smd"
    setting: ClassVar[str] = "interval"

    def __init__(
        self,
        eps: float = 0.01,
        m_delta: float = 1.0,
        attempts: int = 10,
        mkp: str = "milp",
        mkp_k: int = 2,
        exact_inner: bool = False,
        frugal: float | None = None,
    ) -> None:
        self.eps = eps
        self.m_delta = m_delta
        self.attempts = attempts
        self.mkp = mkp
        self.mkp_k = mkp_k
        self.exact_inner = exact_inner
        self.frugal = frugal

    def reset(
        self, capacity: np.ndarray, resources: tuple[str, ...], rng: np.random.Generator
    ) -> None:
        if not (0 < self.eps < 1):
            raise InvalidInput("eps", self.eps, "in (0, 1)")
        if not (0 < self.m_delta <= 1):
            raise InvalidInput("m_delta", self.m_delta, "in (0, 1]")
        if (
            isinstance(self.attempts, bool)
            or int(self.attempts) != self.attempts
            or self.attempts < 1
        ):
            raise InvalidInput("attempts", self.attempts, "integer >= 1")
        if self.mkp not in ("milp", "ptas"):
            raise InvalidInput("mkp", self.mkp, "milp | ptas")
        if not isinstance(self.exact_inner, bool):
            raise InvalidInput("exact_inner", self.exact_inner, "true | false", self.name)
        if self.frugal is not None:
            f = self.frugal
            if isinstance(f, bool) or not (isinstance(f, int | float) and 0 <= f < 1):
                raise InvalidInput("frugal", f, "None or in [0, 1)", self.name)
            if not self.exact_inner:
                raise InvalidInput("frugal", f, "None unless exact_inner", self.name)
        self.rng_ = rng

    def allocate(self, job: IntervalJob) -> tuple[int, int]:
        """Step 2 for one job: Alg. 1 + Alg. 2, or the exact grid (``exact_inner``)."""
        if self.exact_inner:
            w, p, _ = best_allocation(job, self.frugal)
            return w, p
        return solve_inner(job, self.eps, self.m_delta, self.attempts, self.rng_)

    def decide(self, view: IntervalView) -> IntervalDecision:
        jobs = view.jobs
        allocs = [self.allocate(j) for j in jobs]
        values = np.array(
            [
                j.utility(float(completion_time(j, w, p)))
                for j, (w, p) in zip(jobs, allocs, strict=True)
            ]
        )
        weights = np.array([j.limit for j in jobs], dtype=float).reshape(len(jobs), -1)
        if self.mkp == "milp":
            pick = mkp_exact(values, weights, view.capacity)
        else:
            pick = mkp_ptas(values, weights, view.capacity, self.mkp_k)
        return IntervalDecision(
            allocations={j.id: a for j, a, x in zip(jobs, allocs, pick, strict=True) if x}
        )


@register
class SmdPlus(Smd):
    """``smd+``: SMD with ``exact_inner`` and ``frugal`` = 1e-9 on (module docstring)."""

    name: ClassVar[str] = "smd+"

    def __init__(
        self,
        eps: float = 0.01,
        m_delta: float = 1.0,
        attempts: int = 10,
        mkp: str = "milp",
        mkp_k: int = 2,
        exact_inner: bool = True,
        frugal: float | None = 1e-9,
    ) -> None:
        super().__init__(eps, m_delta, attempts, mkp, mkp_k, exact_inner, frugal)
