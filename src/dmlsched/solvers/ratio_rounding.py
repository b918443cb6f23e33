"""SMD Alg. 2: scaled randomized rounding with repeated attempts, and M_δ of Lemma 3.

Alg. 2: x' = M_δ x̃; round each x'_j up with probability x'_j − ⌊x'_j⌋ and
down otherwise; repeat (cnt ← cnt + 1) while the rounded point is infeasible
or fewer than F attempts were made.  Gaps in the paper, decided here:

* among the (at least F) attempts, the feasible one with the lowest
  objective is returned (the paper's loop keeps "x̂" without saying which);
* the loop is capped at ``max_attempts``; if no attempt was feasible,
  ⌊x'⌋ raised to the lower bound is returned when feasible (for packing
  constraints with non-negative coefficients ⌊x'⌋ ≤ x' ≤ x̃ stays feasible),
  else ``None``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["RoundingResult", "m_delta", "smd_round"]


@dataclass(frozen=True)
class RoundingResult:
    x: np.ndarray | None  # integer point, None if nothing feasible was found
    attempts: int
    feasible_attempts: int
    fallback: bool  # True when ⌊x'⌋ was used


def m_delta(w_b: float, rows: int, delta: float) -> float:
    """Lemma 3: M_δ = 1 + 3ln(2r/δ)/(2W_b) − sqrt((3ln(2r/δ)/(2W_b))² + 3ln(2r/δ)/W_b)."""
    if not (0 < delta <= 1) or w_b <= 0 or rows < 1:
        raise ValueError(
            f"m_delta needs delta in (0, 1], W_b > 0, r >= 1; got {delta}, {w_b}, {rows}"
        )
    c = 3.0 * math.log(2.0 * rows / delta)
    return 1.0 + c / (2.0 * w_b) - math.sqrt((c / (2.0 * w_b)) ** 2 + c / w_b)


def smd_round(
    x_frac: np.ndarray,
    feasible: Callable[[np.ndarray], bool],
    objective: Callable[[np.ndarray], float],
    rng: np.random.Generator,
    *,
    scale: float = 1.0,
    attempts: int = 10,
    max_attempts: int = 100,
    lower: np.ndarray | None = None,
) -> RoundingResult:
    """Alg. 2 on ``x_frac`` (minimisation), with M_δ = ``scale`` and F = ``attempts``."""
    if not (0 < scale <= 1):
        raise ValueError(f"scale M_delta must be in (0, 1], got {scale}")
    if attempts < 1:
        raise ValueError(f"attempts F must be >= 1, got {attempts}")
    xs = scale * np.asarray(x_frac, dtype=float)
    floor = np.floor(xs + 1e-9)
    frac = np.clip(xs - floor, 0.0, 1.0)
    best: np.ndarray | None = None
    best_val = math.inf
    cnt = 0
    n_feasible = 0
    while cnt < max(attempts, 1) or (best is None and cnt < max_attempts):
        cand = floor + (rng.random(xs.shape) < frac)
        cnt += 1
        if feasible(cand):
            n_feasible += 1
            val = objective(cand)
            if val < best_val:
                best, best_val = cand, val
    if best is not None:
        return RoundingResult(best, cnt, n_feasible, False)
    fb = floor if lower is None else np.maximum(floor, lower)
    if feasible(fb):
        return RoundingResult(fb, cnt, 0, True)
    return RoundingResult(None, cnt, 0, True)
