"""Sum-of-linear-ratios minimisation by grid search (SMD Step 2, Alg. 1).

Problem (12)::

    min ζ(x) = Σ_j (a_j·x + q_j) / (c_j·x + d_j)   s.t.  A x ≤ C,  x ≥ lb

with every numerator and denominator positive on Ω = {A x ≤ C, x ≥ lb},
Ω non-empty and bounded.  (The paper writes x ≥ 0; its inner problems need
w, p ≥ 1 — Eq. (8) — so the relaxation keeps that lower bound, which also
keeps the denominators w and p positive.)

* **Charnes–Cooper** [33]: with t = 1/(c·x + d) > 0 and y = t x, the
  linear-fractional program min (a·x + q)/(c·x + d) over Ω is the LP
  min a·y + q t  s.t.  A y − C t ≤ 0,  y − lb t ≥ 0,  c·y + d t = 1,  t ≥ 0,
  and x = y / t (:func:`charnes_cooper`).  Max is the same LP maximised.
* **Bounds**: l_j = min_Ω ζ_j, φ_j = max_Ω ζ_j (two such LPs per term).
* **Step 2.1 grid**: J = argmax_j φ_j / l_j is kept as z; for the others
  Q_j = {l_j (1+ε)^n : n = 0..λ_j}, λ_j = max{n : l_j (1+ε)^n ≤ φ_j}, and
  T^ε = Π_j Q_j (:func:`grid`).  We append φ_j to Q_j: the ε guarantee
  needs, for the optimum x*, a grid point with ζ_j(x*) ≤ ν_j ≤ (1+ε) ζ_j(x*)
  (else x* violates ζ_j(x) ≤ ν_j), and the printed Q_j leaves
  (l_j(1+ε)^λ_j, φ_j] without one.
* **Alg. 1**: for each ν ∈ T^ε solve (15) — min ζ_J(x) s.t. ζ_j(x) ≤ ν_j,
  x ∈ Ω — as one Charnes–Cooper LP whose grid rows are
  (a_j − ν_j c_j)·y + (q_j − ν_j d_j) t ≤ 0; keep the x with the least
  Ψ(ν) = Σ_j ν_j + ζ_J(x^ν).  One HiGHS model is built and only the grid
  rows' coefficients change between points.

Exact shortcuts that return the same Ψ as the full loop: L̃ starts at an
upper bound of min Ψ (the grid point just above a feasible seed); points
with Σ_j ν_j + l_J ≥ L̃ cannot lower L̃ and are skipped (the loop over the
last grid coordinate, ascending, stops there); (15) is infeasible below
some ν_last and feasible above (its feasible set grows with ν), so the first
feasible ν_last is found by bisection; and once the ν_last row is slack at
an LP optimum, that optimum also solves (15) for every larger ν_last
(an LP optimum stays optimal when an inactive constraint is relaxed), so Ψ
only grows along the rest of the row.  Terms that are identically zero (a = 0, q = 0)
are dropped — they contribute nothing and have l_j = 0, which a
multiplicative grid cannot start from.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from dmlsched.errors import SolverFailed
from dmlsched.numerics import dot
from dmlsched.solvers.highs import INF, LinearModel, clear_basis, set_coefficients

__all__ = [
    "Ratio",
    "SumOfRatiosResult",
    "charnes_cooper",
    "grid",
    "ratio_bounds",
    "solve_sum_of_ratios",
]


@dataclass(frozen=True)
class Ratio:
    """(a·x + q) / (c·x + d)."""

    a: tuple[float, ...]
    q: float
    c: tuple[float, ...]
    d: float

    def __call__(self, x: np.ndarray) -> float:
        num = dot(self.a, x) + float(self.q)
        den = dot(self.c, x) + float(self.d)
        return num / den

    @property
    def is_zero(self) -> bool:
        return self.q == 0 and not any(self.a)


@dataclass(frozen=True)
class SumOfRatiosResult:
    x: np.ndarray  # x̃ of Alg. 1
    psi: float  # L̃ = min Ψ(ν)
    value: float  # ζ(x̃)
    lower: tuple[float, ...]  # l_j per (kept) term
    upper: tuple[float, ...]  # φ_j
    grid_points: int  # |T^ε|
    lps: int  # LPs solved in the grid loop


def _cc_matrix(ratio: Ratio, a_mat: np.ndarray, cap: np.ndarray, lb: np.ndarray):
    """Rows of the Charnes–Cooper LP over (y, t): packing, lower bounds, normalisation."""
    m, n = a_mat.shape
    rows = [np.hstack([a_mat, -cap[:, None]])]  # A y − C t ≤ 0
    rows.append(np.hstack([np.eye(n), -lb[:, None]]))  # y − lb t ≥ 0
    rows.append(np.hstack([np.asarray(ratio.c, dtype=float), [ratio.d]])[None, :])  # = 1
    mat = np.vstack(rows)
    lo = np.concatenate([np.full(m, -INF), np.zeros(n), [1.0]])
    hi = np.concatenate([np.zeros(m), np.full(n, INF), [1.0]])
    return mat, lo, hi


def charnes_cooper(
    ratio: Ratio,
    a_mat: np.ndarray,
    cap: np.ndarray,
    lb: np.ndarray,
    *,
    maximize: bool = False,
    name: str = "charnes-cooper",
) -> LinearModel:
    """The LP equivalent of min/max ``ratio`` over {A x ≤ C, x ≥ lb} (variables y, t)."""
    a_mat = np.atleast_2d(np.asarray(a_mat, dtype=float))
    n = a_mat.shape[1]
    mat, lo, hi = _cc_matrix(ratio, a_mat, np.asarray(cap, dtype=float), np.asarray(lb, float))
    cost = np.concatenate([np.asarray(ratio.a, dtype=float), [ratio.q]])
    return LinearModel(
        cost, mat, lo, hi, np.zeros(n + 1), np.full(n + 1, INF), maximize=maximize, name=name
    )


def _recover(sol_x: np.ndarray) -> np.ndarray:
    t = sol_x[-1]
    if not t > 0:
        raise SolverFailed("t = 0 in Charnes-Cooper solution (unbounded domain?)", "charnes-cooper")
    return sol_x[:-1] / t


def ratio_bounds(
    ratio: Ratio, a_mat: np.ndarray, cap: np.ndarray, lb: np.ndarray
) -> tuple[float, float]:
    """(l_j, φ_j) = (min, max) of one ratio over Ω, each by a Charnes–Cooper LP."""
    lo = charnes_cooper(ratio, a_mat, cap, lb, name="cc-min").solve().objective
    hi = charnes_cooper(ratio, a_mat, cap, lb, maximize=True, name="cc-max").solve().objective
    return float(lo), float(hi)


def grid(lower: float, upper: float, eps: float) -> np.ndarray:
    """Q^ε = {l, l(1+ε), …, l(1+ε)^λ} with λ = max{n : l(1+ε)^n ≤ φ} (Step 2.1)."""
    if not (lower > 0 and upper >= lower and eps > 0):
        raise ValueError(f"grid needs 0 < l <= phi and eps > 0, got {lower}, {upper}, {eps}")
    lam = math.floor(math.log(upper / lower) / math.log1p(eps) + 1e-12)
    pts = lower * (1.0 + eps) ** np.arange(lam + 1)
    pts = pts[pts <= upper * (1 + 1e-12)]
    if pts[-1] < upper * (1 - 1e-12):
        pts = np.append(pts, upper)  # cover (l(1+ε)^λ, φ]: see the module docstring
    return pts


def solve_sum_of_ratios(
    ratios: list[Ratio],
    a_mat: np.ndarray,
    cap: np.ndarray,
    lb: np.ndarray,
    eps: float,
    *,
    constant: float = 0.0,
) -> SumOfRatiosResult:
    """Alg. 1: an ε-approximate minimiser of ``constant + Σ ratios`` over Ω."""
    a_mat = np.atleast_2d(np.asarray(a_mat, dtype=float))
    cap = np.asarray(cap, dtype=float)
    lb = np.asarray(lb, dtype=float)
    n = a_mat.shape[1]
    terms = [r for r in ratios if not r.is_zero]
    if not terms:  # ζ is constant: any point of Ω, take the lower corner
        x = lb.copy()
        return SumOfRatiosResult(x, constant, constant, (), (), 1, 0)
    bounds = [ratio_bounds(r, a_mat, cap, lb) for r in terms]
    lows = tuple(b[0] for b in bounds)
    ups = tuple(b[1] for b in bounds)
    if min(lows) <= 0:
        raise ValueError("every ratio must be positive on the domain (l_j > 0)")
    big = int(np.argmax([u / lo for lo, u in bounds]))  # J, kept as z
    others = [k for k in range(len(terms)) if k != big]
    z_term = terms[big]

    seeds = [_recover(charnes_cooper(r, a_mat, cap, lb, name="cc-seed").solve().x) for r in terms]
    mat, lo, hi = _cc_matrix(z_term, a_mat, cap, lb)
    base_rows = mat.shape[0]
    # grid rows (a_j − ν_j c_j)·y + (q_j − ν_j d_j) t ≤ 0, first at ν_j = φ_j; a row is
    # rewritten only when its ν_j changes (along the grid's last coordinate: the last row)
    num = [np.append(np.asarray(terms[k].a, dtype=float), terms[k].q) for k in others]
    den = [np.append(np.asarray(terms[k].c, dtype=float), terms[k].d) for k in others]
    held = [ups[k] for k in others]  # the ν_j each grid row's coefficients hold
    extra = [num[i] - v * den[i] for i, v in enumerate(held)]
    model = LinearModel(
        np.concatenate([np.asarray(z_term.a, dtype=float), [z_term.q]]),
        np.vstack([mat, *extra]) if extra else mat,
        np.concatenate([lo, np.full(len(extra), -INF)]),
        np.concatenate([hi, np.zeros(len(extra))]),
        np.zeros(n + 1),
        np.full(n + 1, INF),
        name="alg1-grid",
    )
    grids = [grid(lows[k], ups[k], eps) for k in others]
    n_points = int(np.prod([len(g) for g in grids])) if grids else 1

    # L̃ starts at an upper bound of min Ψ from the bound LPs' optima: for a feasible x,
    # the grid point just above (ζ_j(x))_j has Ψ ≤ Σ_j ⌈ζ_j(x)⌉_grid + ζ_J(x).
    best_psi = math.inf
    for x0 in seeds:
        u = z_term(x0)
        for g, k in zip(grids, others, strict=True):
            above = g[g >= terms[k](x0) * (1 - 1e-12)]
            u += above[0] if above.size else math.inf
        best_psi = min(best_psi, u * (1 + 1e-9))
    best_x: np.ndarray | None = None
    lps = 0
    l_z = lows[big]
    cols = np.arange(n + 1)

    def solve_at(nu: tuple[float, ...]) -> tuple[float, bool] | None:
        """Ψ(ν) and whether the last grid row binds; None if (15) is infeasible."""
        nonlocal lps, best_x, best_psi
        for i, v in enumerate(nu):
            if v != held[i]:  # along a row of the grid only ν_last changes
                row = np.full(n + 1, base_rows + i)
                set_coefficients(model, row, cols, num[i] - v * den[i])
                held[i] = v
        lps += 1
        try:
            sol = model.solve()
        except SolverFailed as e:
            if e.status == "Unknown":  # HiGHS gave up from the previous basis: cold start
                try:
                    clear_basis(model)
                    sol = model.solve()
                except SolverFailed as e2:
                    if "nfeasible" in e2.status:
                        return None
                    raise
            elif "nfeasible" in e.status:
                return None
            else:
                raise
        psi = sum(nu) + sol.objective
        if psi < best_psi:
            best_psi = psi
            best_x = _recover(sol.x)
        binds = bool(others) and sol.row_activity[-1] >= -1e-9 * max(1.0, abs(sol.objective))
        return psi, binds

    if not others:
        solve_at(())
    else:
        head, last = grids[:-1], grids[-1]
        for prefix in itertools.product(*head):
            base = sum(prefix)
            if base + last[0] + l_z >= best_psi:
                continue
            # (15) is feasible for all ν_last from some index on (the set only grows):
            # find that index by bisection, then walk up.
            lo_i, hi_i = 0, len(last)
            while lo_i < hi_i:
                mid = (lo_i + hi_i) // 2
                if base + last[mid] + l_z >= best_psi:
                    hi_i = mid
                    continue
                if solve_at((*prefix, last[mid])) is None:
                    lo_i = mid + 1
                else:
                    hi_i = mid
            for v in last[lo_i:]:
                if base + v + l_z >= best_psi:
                    break  # ascending: no later point of this row can help
                out = solve_at((*prefix, v))
                if out is not None and not out[1]:
                    # the ν_last row is slack at the LP optimum, so that optimum solves
                    # (15) for every larger ν_last too: Ψ only grows from here
                    break
    if best_x is None:
        raise SolverFailed("no grid point feasible", "alg1-grid")
    value = constant + sum(r(best_x) for r in terms)
    return SumOfRatiosResult(best_x, constant + best_psi, value, lows, ups, n_points, lps)
