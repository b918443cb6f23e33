"""Linear program plus a relative-entropy regularizer (mlBroker Eq. (10)).

Solves, knowing nothing about jobs::

    min  c·x + Σ_{j∈J} w_j/σ · [ (x_j + ε) ln((x_j + ε)/(p_j + ε)) − x_j ]
    s.t. A_eq x = b_eq,   A_ub x ≤ b_ub,   lb ≤ x ≤ ub

with σ = ln(1 + 1/ε) (Sec. 4.1).  ``J`` are the regularized coordinates
(mlBroker's v_i^r(t)), ``p`` their previous values v_i^r(t−1), ``w`` the
weights c_i.  (x+ε) ln(x+ε) = −entr(x+ε) is one exponential cone per
coordinate, so the problem is a conic program; we hand it to Clarabel (an
interior-point conic solver, as Alg. 1 line 4 asks) through cvxpy, with its
QDLDL factorization rather than its default (``auto``, which takes faer's
supernodal LDL once the factor is dense enough, as at 20 DCs): on
mlBroker's P̃_ft at 20 DCs (up to 7,000 variables, 300 cones, 1,300 rows) an
interior-point iteration took ~8 ms with QDLDL and ~34 ms with faer, the
iteration counts alike (35–63 against 35–69, to the same tolerances;
``docs/benchmarks.md``).

The status is always checked.  A numerically failed attempt is retried once
without equilibration, then with a second conic solver, SCS (a first-order
splitting method: a different algorithm, so not the same numerical trouble;
capped by an iteration count, never wall-clock).  Anything but ``optimal``
from all three raises :class:`~dmlsched.errors.SolverFailed`
(``optimal_inaccurate`` counts as a failure unless ``accept_inaccurate``).
``ConvexSolution.solver`` names the attempt that was accepted.

Solves are memoised by content (:func:`dmlsched.memo.shared`: per process,
and across a run's worker processes and sweeps): the solvers are
deterministic, so a second solve of equal inputs would give the same bytes.
mlBroker's A_fractional does not depend on the rounding that follows it, so
every mlBroker series of a figure (``mlbroker``, ``-ir``, ``-gr``,
``mlbroker+`` and its ablations) solves the same sequence of P̃_ft, and
figures built on the same instance (Figs. 5, 7, 8 and the ablation) share
theirs.  The solution's ``x`` is read-only: it may be the memo's own copy.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dmlsched.errors import SolverFailed
from dmlsched.memo import shared
from dmlsched.numerics import dot, log

__all__ = ["ConvexSolution", "regularized_lp", "sigma"]

# QDLDL: see the module docstring.  Clarabel's Ruiz equilibration occasionally
# breaks down on these problems (measured: a 6-job, 3-DC slot fails with it and
# solves without it); the second attempt disables it; the third is SCS (module
# docstring).  Every attempt's status is checked.
_ATTEMPTS: tuple[tuple[str, dict[str, object]], ...] = (
    ("CLARABEL", {"direct_solve_method": "qdldl"}),
    ("CLARABEL", {"direct_solve_method": "qdldl", "equilibrate_enable": False}),
    ("SCS", {"max_iters": 200_000, "eps_abs": 1e-8, "eps_rel": 1e-8}),
)


@dataclass(frozen=True)
class ConvexSolution:
    x: np.ndarray
    objective: float
    status: str
    solver: str = "CLARABEL"  # the attempt that was accepted (module docstring)
    #: the accepted attempt's iterations (cvxpy's ``solver_stats.num_iters``; 0 when the
    #: solver does not say); a memo hit repeats the count of the solve it reuses
    iterations: int = 0


def sigma(eps: float) -> float:
    """σ = ln(1 + 1/ε) (Sec. 4.1)."""
    return math.log1p(1.0 / eps)


def regularized_lp(
    c: np.ndarray,
    a_eq: sp.spmatrix | None,
    b_eq: np.ndarray | None,
    a_ub: sp.spmatrix | None,
    b_ub: np.ndarray | None,
    lb: np.ndarray,
    ub: np.ndarray,
    reg_idx: np.ndarray,
    reg_weight: np.ndarray,
    prev: np.ndarray,
    eps: float,
    *,
    name: str = "regularized-lp",
    accept_inaccurate: bool = False,
) -> ConvexSolution:
    """Solve the regularized LP above with Clarabel; see the module docstring.

    Presolve: unregularized variables fixed by their bounds (lb = ub) are
    substituted out before the conic solve (mlBroker fixes q^{rr'} = 0 for
    every DC r without data, most of q), rows left empty are checked and dropped.
    """
    problem = _Problem(c, a_eq, b_eq, a_ub, b_ub, lb, ub, reg_idx, reg_weight, prev, float(eps))
    # the solvers and their settings are part of what is memoised
    sol = _memoised(problem, name, bool(accept_inaccurate), _ATTEMPTS)
    x = sol.x.view()
    x.flags.writeable = False
    return dataclasses.replace(sol, x=x)


@dataclass(frozen=True)
class _Problem:
    """The regularized LP of the module docstring, as :func:`regularized_lp` takes it."""

    c: np.ndarray
    a_eq: sp.spmatrix | None
    b_eq: np.ndarray | None
    a_ub: sp.spmatrix | None
    b_ub: np.ndarray | None
    lb: np.ndarray
    ub: np.ndarray
    reg_idx: np.ndarray
    reg_weight: np.ndarray
    prev: np.ndarray
    eps: float


Attempts = tuple[tuple[str, dict[str, object]], ...]


@shared(maxsize=256)  # one run's slots, and the other series' runs of the same instance
def _memoised(
    p: _Problem, name: str, accept_inaccurate: bool, attempts: Attempts
) -> ConvexSolution:
    if not p.eps > 0:
        raise ValueError(f"eps must be > 0, got {p.eps}")
    c = np.asarray(p.c, dtype=float)
    lb = np.asarray(p.lb, dtype=float)
    ub = np.asarray(p.ub, dtype=float)
    fixed = lb == ub
    fixed[np.asarray(p.reg_idx, dtype=np.intp)] = False
    if not fixed.any():
        return _solve(dataclasses.replace(p, c=c, lb=lb, ub=ub), name, accept_inaccurate, attempts)
    keep = np.flatnonzero(~fixed)
    new_pos = np.full(c.size, -1)
    new_pos[keep] = np.arange(keep.size)
    val = lb[fixed]
    mats = []
    for is_eq, a, b in ((True, p.a_eq, p.b_eq), (False, p.a_ub, p.b_ub)):
        if a is None or not a.shape[0]:
            mats.append((None, None))
            continue
        a = sp.csc_matrix(a)
        rhs = np.asarray(b, dtype=float) - a[:, np.flatnonzero(fixed)] @ val
        a_k = sp.csr_matrix(a[:, keep])
        empty = np.diff(a_k.indptr) == 0
        bad = (np.abs(rhs[empty]) > 1e-9) if is_eq else (rhs[empty] < -1e-9)
        if bad.any():
            raise SolverFailed("infeasible (presolve)", name)
        mats.append((a_k[~empty], rhs[~empty]))
    reduced = _Problem(
        c[keep],
        *mats[0],
        *mats[1],
        lb[keep],
        ub[keep],
        new_pos[p.reg_idx],
        p.reg_weight,
        p.prev,
        p.eps,
    )
    sol = _solve(reduced, name, accept_inaccurate, attempts)
    x = lb.copy()
    x[keep] = sol.x
    return dataclasses.replace(sol, x=x, objective=sol.objective + dot(c[fixed], val))


def _solve(p: _Problem, name: str, accept_inaccurate: bool, attempts: Attempts) -> ConvexSolution:
    import cvxpy as cp  # deferred: cvxpy is slow to import, and most commands never use it

    eps = p.eps
    n = int(np.asarray(p.c).size)
    x = cp.Variable(n)
    sig = sigma(eps)
    reg_idx = np.asarray(p.reg_idx, dtype=np.intp)
    w = np.asarray(p.reg_weight, dtype=float) / sig
    xr = x[reg_idx] if reg_idx.size else None
    lin = np.asarray(p.c, dtype=float).copy()
    # −x_j term and −(x_j+ε) ln(p_j+ε) are linear: fold them into c.
    np.add.at(lin, reg_idx, -w * (1.0 + log(np.asarray(p.prev, dtype=float) + eps)))
    obj = lin @ x
    if xr is not None:
        obj = obj + w @ (-cp.entr(xr + eps))
    cons = []
    if p.a_eq is not None and p.a_eq.shape[0]:
        cons.append(sp.csr_matrix(p.a_eq) @ x == np.asarray(p.b_eq, dtype=float))
    if p.a_ub is not None and p.a_ub.shape[0]:
        cons.append(sp.csr_matrix(p.a_ub) @ x <= np.asarray(p.b_ub, dtype=float))
    lb = np.asarray(p.lb, dtype=float)
    ub = np.asarray(p.ub, dtype=float)
    fin_lb = np.isfinite(lb)
    fin_ub = np.isfinite(ub)
    if fin_lb.all():
        cons.append(x >= lb)
    elif fin_lb.any():
        cons.append(x[np.flatnonzero(fin_lb)] >= lb[fin_lb])
    if fin_ub.any():
        cons.append(x[np.flatnonzero(fin_ub)] <= ub[fin_ub])
    prob = cp.Problem(cp.Minimize(obj), cons)
    statuses = []
    for solver, opts in attempts:
        try:
            with warnings.catch_warnings():  # cvxpy warns on inaccurate results; we check
                warnings.simplefilter("ignore", UserWarning)
                prob.solve(solver=solver, **opts)
        except cp.error.SolverError as e:
            statuses.append(f"{solver}: solver error: {e}")
            continue
        statuses.append(f"{solver}: {prob.status}")
        ok = prob.status == cp.OPTIMAL or (
            accept_inaccurate and prob.status == cp.OPTIMAL_INACCURATE
        )
        if ok and x.value is not None:
            break
        if prob.status in (cp.INFEASIBLE, cp.UNBOUNDED):
            raise SolverFailed(statuses[-1], name)
    else:
        raise SolverFailed("; ".join(statuses), name)
    stats = prob.solver_stats
    iterations = int(stats.num_iters) if stats is not None and stats.num_iters else 0
    return ConvexSolution(
        np.asarray(x.value, dtype=float), float(prob.value), str(prob.status), solver, iterations
    )
