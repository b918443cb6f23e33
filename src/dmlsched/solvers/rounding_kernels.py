"""Compiled loops of :mod:`dmlsched.solvers.rounding` (numba; imported when used)."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["outcomes"]


@njit(cache=True)
def outcomes(lo, var, up, first):
    """The candidates of :func:`~dmlsched.solvers.rounding.cheapest_round`: row i is
    ``lo`` with 1 added at ``var[j]`` wherever draw ``first[i]`` rounds coordinate j up
    (``up[first[i], j]``), written in one pass (no index arrays)."""
    k = first.size
    out = np.empty((k, lo.size))
    for i in range(k):
        out[i, :] = lo
        d = first[i]
        for j in range(var.size):
            if up[d, j]:
                out[i, var[j]] += 1.0
    return out
