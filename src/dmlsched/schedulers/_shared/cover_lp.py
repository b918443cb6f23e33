"""PD-ORS's external LP over machine classes without a solver: a sorted pass and its proof.

The LP (journal Problem (23) relaxed, with the PS row; classes of identical
machines as in :mod:`dmlsched.schedulers.cluster.pdors`)::

    min  Σ_c cw_c W_c + cs_c S_c
    s.t. α^r W_c + β^r S_c ≤ K_c^r         (24) per class c and resource r, K = n_c · room
         Σ_c W_c ≥ m                      (26), with m ≤ F so (25) holds at ΣW = m
         Σ_c S_c ≥ need(m)                the PS row: m/γ (sync, Eq. (2));
                                          max(1, m·b^(e)/B) with ΣS ≤ ΣW (async, (3.4)–(3.5))

**Sorted pass** (:func:`sorted_pass`): workers fill the classes cheapest
first, each up to the most its packing rows allow, until Σ W = m; then PSs
fill the room the workers left, cheapest first, until Σ S = need(m).  For
every bound m at once: the solution is piecewise linear in m, so all the
bounds cost a few array operations.

**Proof of optimality.**  The pass is a heuristic for a two-row coupled LP
(workers and PSs compete for each class's room), so each solution is
*certified* by weak duality before it is used: with λ the marginal
worker's price plus its PS share and μ the marginal PS's price, the
Lagrangian bound ::

    D(λ, μ) = λ m + μ₁ − Σ_c max over the vertices (W, S) of class c's polygon
                        {α W + β S ≤ K_c, W, S ≥ 0}  of (λ − κμ₂ − cw_c) W + (μ − cs_c) S

(μ₁ = μ on the "at least one PS" row and μ₂ = μ on the ratio row κ, whichever
binds) is a lower bound on the LP optimum for any λ, μ ≥ 0; where the pass's
cost is within a relative 1e-9 of it, the pass's solution is optimal.
Every class polygon has at most R + 2 edges, so its vertices are found by
intersecting pairs of edges.  The pass and its proof are one compiled loop
(numba): with C in the tens and a handful of bounds per slot, array
operations cost more in call overhead than in arithmetic (docs/benchmarks.md).
A bound whose pass is infeasible or not certified is left to the caller
(HiGHS); tests check the certified values against HiGHS on random
instances and on slot states of real runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PassResult", "sorted_pass"]


@dataclass(frozen=True)
class PassResult:
    """Per bound m: ``ok`` (feasible and certified), LP objective, W and S per class."""

    ok: np.ndarray  # (M,) bool
    objective: np.ndarray  # (M,) in the costs given
    x: np.ndarray  # (M, 2C): W_1..W_C, then S_1..S_C

    @property
    def w(self) -> np.ndarray:  # (M, C)
        return self.x[:, : self.x.shape[1] // 2]

    @property
    def s(self) -> np.ndarray:  # (M, C)
        return self.x[:, self.x.shape[1] // 2 :]


def sorted_pass(
    count: np.ndarray,
    room: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    cost_w: np.ndarray,
    cost_s: np.ndarray,
    ms: np.ndarray,
    ratio: float,
    mode: str,
    tie_w: np.ndarray | None = None,
    tie_s: np.ndarray | None = None,
) -> PassResult:
    """The class LP at every workload bound in ``ms`` by the sorted pass, certified.

    ``room`` (C × R) is one machine's room per class in the resources the job
    uses, ``a``/``b`` a worker's and a PS's demand there, ``cost_w``/``cost_s``
    the LP's costs of a worker/PS per class, ``ratio`` the PS row's PSs per
    worker (1/γ or b^(e)/B), ``mode`` "sync" or "async".  ``tie_w``/``tie_s``
    order classes of equal LP cost (PD-ORS passes the true prices: of the LP's
    optima, the pass then takes one that is cheapest at the true prices among
    those it can build); ties left are broken by class number.  A bound whose
    pass is infeasible or whose certificate fails has ``ok`` False.
    """
    M, C = len(ms), len(count)
    if C == 0 or M == 0 or max(a) <= 0 or max(b) <= 0:
        return PassResult(np.zeros(M, dtype=bool), np.zeros(M), np.zeros((M, 2 * C)))
    from dmlsched.schedulers._shared.kernels import cover_pass  # numba: imported when used

    f = np.float64
    ok, obj, x = cover_pass(
        np.asarray(count, dtype=f),
        np.ascontiguousarray(room, dtype=f),
        np.asarray(a, dtype=f),
        np.asarray(b, dtype=f),
        np.asarray(cost_w, dtype=f),
        np.asarray(cost_s, dtype=f),
        np.asarray(ms, dtype=f),
        float(ratio),
        mode == "sync",
        np.asarray(cost_w if tie_w is None else tie_w, dtype=f),
        np.asarray(cost_s if tie_s is None else tie_s, dtype=f),
    )
    return PassResult(ok, obj, x)
