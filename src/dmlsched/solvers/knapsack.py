"""Multi-dimensional 0-1 knapsack (SMD Step 3, problem (16)).

max Σ_i u_i x_i  s.t.  Σ_i W[i, r] x_i ≤ C^r  ∀r,  x ∈ {0, 1}^I.

* :func:`mkp_ptas` — the Frieze–Clarke scheme [35] the paper adopts: for
  every S ⊂ I with |S| ≤ k, LP(S) fixes x_i = 1 on S and x_i = 0 on
  T(S) = {t ∉ S : u_t > min_{i∈S} u_i}; its optimal basic solution is rounded
  down; the best feasible rounded solution wins.  The paper says "for all
  S ⊂ I" (exponential); the subset size k is the scheme's accuracy knob
  (guarantee 1 − R/(k+1) for k ≥ R, Frieze & Clarke 1984).  One HiGHS LP is
  built and only its column bounds change between subsets.
* :func:`mkp_exact` — the MILP on HiGHS (I ≤ 200 is small).
"""

from __future__ import annotations

import itertools

import numpy as np

from dmlsched.errors import SolverFailed
from dmlsched.solvers.highs import LinearModel

__all__ = ["mkp_exact", "mkp_ptas"]


def _check(values: np.ndarray, weights: np.ndarray, capacity: np.ndarray):
    u = np.asarray(values, dtype=float)
    w = np.atleast_2d(np.asarray(weights, dtype=float))
    c = np.asarray(capacity, dtype=float)
    if w.shape != (u.size, c.size):
        raise ValueError(f"weights must be {u.size} x {c.size}, got {w.shape}")
    return u, w, c


def mkp_exact(values: np.ndarray, weights: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Optimal x ∈ {0,1}^I of (16) by MILP (items with u_i ≤ 0 are never taken).

    The values are scaled to a maximum of 1 and both gaps are 0: HiGHS's
    default absolute gap (1e-6) stopped at a worse subset when every utility
    was below it (a bound test found OPT = 3e-14 beside a feasible 3e-9).
    Items worth less than the solver's tolerances (≈ 1e-8 of the largest)
    can still be left out; any such item that fits in the room left is then
    added (largest value first), so the answer is at least maximal.
    """
    u, w, c = _check(values, weights, capacity)
    n = u.size
    if n == 0:
        return np.zeros(0, dtype=bool)
    upper = (u > 0).astype(float)
    top = float(u.max())
    model = LinearModel(
        u / top if top > 0 else u,
        w.T,
        np.full(c.size, -np.inf),
        c,
        np.zeros(n),
        upper,
        integrality=np.ones(n, dtype=bool),
        maximize=True,
        name="mkp-milp",
        mip_rel_gap=0.0,
        mip_abs_gap=0.0,
    )
    pick = model.solve().x > 0.5
    left = c - w[pick].sum(axis=0)
    for i in np.argsort(-u, kind="stable"):
        if not pick[i] and u[i] > 0 and np.all(w[i] <= left + 1e-9 * np.maximum(1.0, c)):
            pick[i] = True
            left = left - w[i]
    return pick


def mkp_ptas(
    values: np.ndarray, weights: np.ndarray, capacity: np.ndarray, k: int = 2
) -> np.ndarray:
    """Frieze–Clarke PTAS with subsets of size ≤ ``k``; returns x ∈ {0,1}^I."""
    u, w, c = _check(values, weights, capacity)
    n = u.size
    if n == 0:
        return np.zeros(0, dtype=bool)
    model = LinearModel(
        u,
        w.T,
        np.full(c.size, -np.inf),
        c,
        np.zeros(n),
        np.ones(n),
        maximize=True,
        name="mkp-lp",
    )
    cols = np.arange(n)
    best = np.zeros(n, dtype=bool)
    best_val = 0.0
    eligible = [i for i in range(n) if u[i] > 0]
    for size in range(0, min(k, len(eligible)) + 1):
        for subset in itertools.combinations(eligible, size):
            lo = np.zeros(n)
            hi = (u > 0).astype(float)
            if subset:
                s = list(subset)
                if np.any(w[s].sum(axis=0) > c + 1e-9):
                    continue
                lo[s] = 1.0
                hi[u > u[s].min()] = 0.0  # T(S)
                hi[s] = 1.0
            model.set_col_bounds(cols, lo, hi)
            try:
                x = model.solve().x
            except SolverFailed:  # LP(S) infeasible: S does not fit with the fixings
                continue
            pick = x >= 1 - 1e-9  # round the basic solution down
            val = float(u[pick].sum())
            if val > best_val and np.all(w[pick].sum(axis=0) <= c + 1e-9):
                best, best_val = pick, val
    return best
