"""Pairwise dependent rounding of mlBroker (Alg. 3, Round1_y, and its Round2_y).

:func:`pairwise_round` is Alg. 3's inner loop (lines 2–25) on one vector
ỹ with weights ω: the fractional parts p_j = ỹ_j − ⌊ỹ_j⌋ are paired at random;
with Ψ1 = min{1 − p_1, (ω_2/ω_1) p_2} and Ψ2 = min{p_1, (ω_2/ω_1)(1 − p_2)},
with probability Ψ2/(Ψ1+Ψ2) p_1 += Ψ1, p_2 −= (ω_1/ω_2) Ψ1, otherwise
p_1 −= Ψ2, p_2 += (ω_1/ω_2) Ψ2.  Each step keeps ω_1 p_1 + ω_2 p_2 (Lemma 1,
weight preservation P2) and E[p] (marginals P1) and makes at least one of the
two integral, so the loop ends after < n steps.  A single leftover element is
rounded up (lines 23–25), which is the only change of Σ ω ỹ.

* :func:`round1_y` — Alg. 3: per column r (data center) over the rows (jobs)
  with ω = n_{·,k} (A_round calls it once per resource k).
* :func:`round2_y` — the Round2_y variant: per row i over the columns with
  equal weights (P_i is the same in every DC), keeping Σ_r P_i y_i^r.
* :func:`independent_round` / :func:`greedy_round` — Sec. 6.2's IR and GR.

Decisions (gaps in Alg. 3): entries within ``tol`` of an integer are treated
as integral (solver noise); entries with zero weight do not enter Σ ω ỹ, so
they are rounded independently with Pr[up] = p (keeps P1, cannot break P2);
p is set to exactly 0 or 1 on the side the min in Ψ picks, so no element is
left "almost integral".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "RoundResult",
    "greedy_round",
    "independent_round",
    "pairwise_round",
    "round1_y",
    "round2_y",
]

TOL = 1e-7


@dataclass(frozen=True)
class RoundResult:
    """Rounded vector and the leftover element (index, its p before rounding up)."""

    values: np.ndarray
    leftover: int | None
    leftover_p: float


def pairwise_round(
    values: np.ndarray, weights: np.ndarray, rng: np.random.Generator, tol: float = TOL
) -> RoundResult:
    """Alg. 3 lines 2–25 on one vector; returns integers as floats."""
    y = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    base = np.floor(y + tol)
    p = y - base
    p[p < tol] = 0.0
    out = base.copy()
    frac = [j for j in range(y.size) if p[j] > 0.0]
    # Zero weight: no weighted sum to preserve; independent Bernoulli(p).
    live = []
    for j in frac:
        if w[j] <= 0.0:
            out[j] += float(rng.random() < p[j])
        else:
            live.append(j)
    pos = {j: k for k, j in enumerate(live)}

    def drop(j: int) -> None:
        k = pos.pop(j)
        last = live.pop()
        if last != j:
            live[k] = last
            pos[last] = k

    while len(live) > 1:
        a, b = rng.choice(len(live), size=2, replace=False)
        i1, i2 = live[int(a)], live[int(b)]
        r = w[i2] / w[i1]
        psi1 = min(1.0 - p[i1], r * p[i2])
        psi2 = min(p[i1], r * (1.0 - p[i2]))
        if rng.random() * (psi1 + psi2) < psi2:  # line 13
            if 1.0 - p[i1] <= r * p[i2]:
                p[i2] -= psi1 / r
                p[i1] = 1.0
            else:
                p[i1] += psi1
                p[i2] = 0.0
        else:  # line 15
            if p[i1] <= r * (1.0 - p[i2]):
                p[i2] += psi2 / r
                p[i1] = 0.0
            else:
                p[i1] -= psi2
                p[i2] = 1.0
        for j in (i1, i2):
            if p[j] <= tol or p[j] >= 1.0 - tol:
                p[j] = round(p[j])
                out[j] = base[j] + p[j]
                drop(j)
    if live:  # lines 23–25: the last one is rounded up
        j = live[0]
        out[j] = base[j] + 1.0
        return RoundResult(out, j, float(p[j]))
    return RoundResult(out, None, 0.0)


def round1_y(y: np.ndarray, omega: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Alg. 3 (Round1_y): column-wise over rows with weights ``omega`` (per row)."""
    y = np.asarray(y, dtype=float)
    out = np.empty_like(y)
    for r in range(y.shape[1]):
        out[:, r] = pairwise_round(y[:, r], omega, rng).values
    return out


def round2_y(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Round2_y: row-wise over columns with equal weights (keeps Σ_r P_i y_i^r)."""
    y = np.asarray(y, dtype=float)
    out = np.empty_like(y)
    ones = np.ones(y.shape[1])
    for i in range(y.shape[0]):
        out[i] = pairwise_round(y[i], ones, rng).values
    return out


def independent_round(y: np.ndarray, tol: float = TOL) -> np.ndarray:
    """IR (Sec. 6.2): each entry to its nearest integer (2.6 → 3, 2.1 → 2)."""
    return np.floor(np.asarray(y, dtype=float) + 0.5 - tol)


def greedy_round(y: np.ndarray, tol: float = TOL) -> np.ndarray:
    """GR (Sec. 6.2): every entry up (2.2 → 3)."""
    return np.ceil(np.asarray(y, dtype=float) - tol)
