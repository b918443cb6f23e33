"""Scaled randomized rounding for mixed cover/packing integer programs (PD-ORS Sec. IV-C).

For ``min {c·x : A x ≥ a, B x ≤ b, x ∈ Z_+^n}`` with a fractional optimum x̄,
Eq. (27)–(28): scale x' = G_δ x̄, then round each coordinate up with
probability x'_j − ⌊x'_j⌋ and down otherwise.  Two readings of repeating it:

* :func:`cheapest_round` — Alg. 4 as printed: Step 11 draws S roundings
  ("if … infeasible *or iter < S* … go to Step 10"), "the randomized rounding
  will find at most S integer feasible solutions" and Step 12 picks "the one
  with the lowest cost"; ties go to the earliest draw.  Only the fractional
  coordinates are drawn (the others round to themselves), and each distinct
  outcome is tested once.
* :func:`cheapest_round_groups` — the same on *groups* of identical
  coordinates (n_j coordinates sharing one value x'_j), drawing only each
  group's sum: the n_j independent roundings of Eq. (27)–(28) sum to
  n_j ⌊x'_j⌋ + Binomial(n_j, x'_j − ⌊x'_j⌋), so one binomial draw per group
  gives the sum's exact distribution at a cost independent of n_j (a
  departure: which members round up is left to the caller).
* :func:`scaled_round` — stop at the first feasible rounding (SMD's Alg. 2,
  and the thesis's "times of rounding" probe, Fig. 3.13).  All S candidates
  are drawn as one (S × n) array, so the attempts are vectorized.

Both report ``attempts``: the draws up to the first feasible one.

G_δ either fixed or from the paper:

* Eq. (29) (Theorem 3, packing favoured, 0 < G_δ ≤ 1)::

      G = 1 + 3 ln(3(RH+1)/δ)/(2 W2) − sqrt((3 ln(3(RH+1)/δ)/(2 W2))² + 3 ln(3(RH+1)/δ)/W2)

* Eq. (30) (Theorem 4, cover favoured, G_δ > 1)::

      G = 1 + ln(3/δ)/W1 + sqrt((ln(3/δ)/W1)² + 2 ln(3/δ)/W1)

This module knows nothing of jobs: callers pass matrices and an optional
extra feasibility predicate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.numerics import dot, matvec

__all__ = [
    "RoundingResult",
    "cheapest_round",
    "cheapest_round_groups",
    "g_delta_cover",
    "g_delta_packing",
    "scaled_round",
]

_DRAW_ROWS = 256  # rows of uniforms drawn at a time (one small reused buffer)
_TOL = 1e-9


def g_delta_packing(w2: float, n_packing_rows: int, delta: float) -> float:
    """Eq. (29): G_δ ∈ (0, 1] from W2 and the number of packing rows RH + 1."""
    if not (0 < delta <= 1):
        raise InvalidInput("delta", delta, "in (0, 1]")
    if w2 <= 0:
        raise InvalidInput("W2", w2, "> 0")
    c = 3.0 * math.log(3.0 * n_packing_rows / delta)
    return 1.0 + c / (2.0 * w2) - math.sqrt((c / (2.0 * w2)) ** 2 + c / w2)


def g_delta_cover(w1: float, delta: float) -> float:
    """Eq. (30): G_δ > 1 from W1 (the cover right-hand side)."""
    if not (0 < delta <= 1):
        raise InvalidInput("delta", delta, "in (0, 1]")
    if w1 <= 0:
        raise InvalidInput("W1", w1, "> 0")
    c = math.log(3.0 / delta)
    return 1.0 + c / w1 + math.sqrt((c / w1) ** 2 + 2.0 * c / w1)


@dataclass(frozen=True)
class RoundingResult:
    """``x`` is the rounding kept (None if all ``attempts`` failed); ``attempts``: the
    draws up to the first feasible one."""

    x: np.ndarray | None
    cost: float
    attempts: int

    @property
    def success(self) -> bool:
        return self.x is not None


def _times(mat: object, cand: np.ndarray) -> np.ndarray:
    """(k × rows) products of a dense or scipy-sparse matrix with each candidate (a dense
    one without BLAS: :mod:`dmlsched.numerics`; scipy's sparse product is one loop)."""
    if isinstance(mat, np.ndarray):
        return np.array([matvec(mat, c) for c in cand]).reshape(len(cand), mat.shape[0])
    return np.asarray(mat @ cand.T).T


def _scaled(x_bar: np.ndarray, gain: float, attempts: int) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (27): x' = G_δ x̄ as (⌊x'⌋, x' − ⌊x'⌋), the latter each coordinate's chance of
    rounding up (Eq. (28)); a part within 10⁻⁹ of an integer is that integer."""
    if attempts < 1:
        raise InvalidInput("attempts", attempts, ">= 1")
    if gain <= 0:
        raise InvalidInput("G_delta", gain, "> 0")
    xs = gain * np.maximum(np.asarray(x_bar, dtype=float), 0.0)
    lo = np.floor(xs + _TOL)
    frac = np.clip(xs - lo, 0.0, 1.0)
    frac[frac < _TOL] = 0.0
    return lo, frac


def scaled_round(
    x_bar: np.ndarray,
    gain: float,
    rng: np.random.Generator,
    *,
    cost: np.ndarray,
    cover: tuple[np.ndarray, np.ndarray] | None = None,
    packing: tuple[np.ndarray, np.ndarray] | None = None,
    extra: Callable[[np.ndarray], np.ndarray] | None = None,
    attempts: int = 100,
    repair: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> RoundingResult:
    """Round ``gain · x_bar`` by Eq. (27)–(28) until ``A x ≥ a``, ``B x ≤ b`` and ``extra``.

    ``cover`` = (A, a), ``packing`` = (B, b) as dense or scipy-sparse matrices; ``extra`` maps a
    (k × n) batch of candidates to a boolean vector of length k.
    """
    lo, frac = _scaled(x_bar, gain, attempts)
    draws = rng.random((attempts, lo.size))
    cand = lo[None, :] + (draws < frac[None, :])
    if repair is not None:
        cand = repair(cand, np.asarray(cost, dtype=float))
    ok = np.ones(attempts, dtype=bool)
    if cover is not None:
        a_mat, a_vec = cover
        ok &= np.all(_times(a_mat, cand) >= np.asarray(a_vec) - _TOL, axis=1)
    if packing is not None:
        b_mat, b_vec = packing
        b_vec = np.asarray(b_vec)
        ok &= np.all(_times(b_mat, cand) <= b_vec + _TOL * np.maximum(1.0, np.abs(b_vec)), axis=1)
    if extra is not None and ok.any():
        idx = np.flatnonzero(ok)
        ok[idx] = np.asarray(extra(cand[idx]), dtype=bool)
    hit = np.flatnonzero(ok)
    if hit.size == 0:
        return RoundingResult(None, math.inf, attempts)
    k = int(hit[0])
    x = cand[k].astype(np.int64)
    return RoundingResult(x, dot(cost, x), k + 1)


def _draw_up(rng: np.random.Generator, attempts: int, frac: np.ndarray) -> np.ndarray:
    """``rng.random((attempts, frac.size)) < frac``, drawn in blocks of rows into one small
    buffer: the same numbers in the same order (the generator fills row-major), without
    a fresh attempts × f array of floats per call."""
    up = np.empty((attempts, frac.size), dtype=bool)
    buf = np.empty((min(attempts, _DRAW_ROWS), frac.size))
    for i in range(0, attempts, _DRAW_ROWS):
        block = buf[: min(_DRAW_ROWS, attempts - i)]
        rng.random(out=block)
        np.less(block, frac, out=up[i : i + block.shape[0]])
    return up


def cheapest_round(
    x_bar: np.ndarray,
    gain: float,
    rng: np.random.Generator,
    *,
    cost: np.ndarray,
    attempts: int,
    accept: Callable[[np.ndarray], np.ndarray],
    repair: Callable[[np.ndarray], np.ndarray] | None = None,
) -> RoundingResult:
    """The cheapest of ``attempts`` roundings of ``gain · x_bar`` that ``accept`` passes.

    ``rng`` draws an (``attempts`` × f) array of uniforms, f the fractional
    coordinates; ``repair`` and ``accept`` take a (k × n) batch of candidates
    (``repair`` returns the batch changed — it may write into the batch it is given,
    which is this call's own — ``accept`` a boolean vector).
    """
    lo, frac = _scaled(x_bar, gain, attempts)
    var = np.flatnonzero(frac > 0)
    up = _draw_up(rng, attempts, frac[var])
    first = _first_of_rows(np.packbits(up, axis=1))  # the distinct outcomes, in draw order
    from dmlsched.solvers.rounding_kernels import outcomes  # numba: imported when used

    cand = outcomes(lo, var, up, first)
    return _cheapest(cand, first, cost, attempts, accept, repair)


def _first_distinct(rows: np.ndarray, top: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of each distinct row of ``rows``, ascending;
    ``top[j]`` bounds column j (0 ≤ rows[:, j] ≤ top[j])."""
    radix = np.asarray(top, dtype=np.int64) + 1
    if rows.shape[1] == 0 or not float(np.prod(radix.astype(float))) < 2.0**62:
        return _first_of_rows(rows)
    # each row as one mixed-radix integer: equal rows, equal keys (and a sort of
    # integers, not of byte strings)
    weight = np.cumprod(np.concatenate([[1], radix[:-1]]))
    _, first = np.unique(rows @ weight, return_index=True)
    return np.sort(first)


def _first_of_rows(rows: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of each distinct row of ``rows``, ascending.

    Each row is one opaque item, which the sort compares with memcmp (a row-wise
    ``np.unique(axis=0)`` compares one field per byte, Θ(width) slower).  Rows of no
    columns are all one outcome: the first."""
    if rows.shape[1] == 0:
        return np.zeros(1, dtype=np.int64)
    flat = np.ascontiguousarray(rows)
    items = flat.view(np.dtype((np.void, flat.dtype.itemsize * flat.shape[1]))).ravel()
    _, first = np.unique(items, return_index=True)
    return np.sort(first)


def cheapest_round_groups(
    x_bar: np.ndarray,
    count: np.ndarray,
    gain: float,
    rng: np.random.Generator,
    *,
    cost: np.ndarray,
    attempts: int,
    accept: Callable[[np.ndarray], np.ndarray],
    repair: Callable[[np.ndarray], np.ndarray] | None = None,
) -> RoundingResult:
    """:func:`cheapest_round` on groups of identical coordinates, drawn per group.

    Group j stands for ``count[j]`` coordinates that all have the value
    ``x_bar[j]`` and the cost ``cost[j]`` each.  Eq. (27)–(28) rounds each of
    them up with probability f_j = x'_j − ⌊x'_j⌋, independently, so their sum is
    n_j ⌊x'_j⌋ + Binomial(n_j, f_j); this draws that sum (one binomial per
    fractional group per attempt, ``rng.binomial`` on an ``attempts`` × f array)
    and returns *group sums*: ``x[j]`` is the total of group j, ``cost`` · x the
    rounding's cost.  ``repair`` and ``accept`` take a (k × groups) batch of sums;
    which members carry the sum is the caller's to decide (``accept`` must say
    whether some assignment of each sum to its members is feasible).  The sums
    have the distribution of the sums of the per-coordinate rounding; the numbers
    drawn, and hence the bytes, differ from :func:`cheapest_round`'s.
    """
    count = np.asarray(count, dtype=np.int64)
    lo, frac = _scaled(x_bar, gain, attempts)
    var = np.flatnonzero((frac > 0) & (count > 0))
    ups = rng.binomial(count[var], frac[var], size=(attempts, var.size))
    first = _first_distinct(ups, count[var])  # the distinct outcomes, each at its first draw
    cand = np.repeat((lo * count)[None, :], first.size, axis=0)
    cand[:, var] += ups[first]
    return _cheapest(cand, first, cost, attempts, accept, repair)


def _cheapest(
    cand: np.ndarray,
    first: np.ndarray,
    cost: np.ndarray,
    attempts: int,
    accept: Callable[[np.ndarray], np.ndarray],
    repair: Callable[[np.ndarray], np.ndarray] | None,
) -> RoundingResult:
    """Step 12 on the distinct outcomes ``cand`` (row k first drawn at ``first[k]``):
    repaired, the cheapest that ``accept`` passes (the first of equal costs)."""
    if repair is not None:
        cand = repair(cand)
    feasible = np.flatnonzero(np.asarray(accept(cand), dtype=bool))
    if feasible.size == 0:
        return RoundingResult(None, math.inf, attempts)
    costs = matvec(cand[feasible], np.asarray(cost, dtype=float))
    x = cand[int(feasible[int(np.argmin(costs))])].astype(np.int64)  # first minimum
    return RoundingResult(x, dot(cost, x), int(first[feasible[0]]) + 1)
