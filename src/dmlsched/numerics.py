"""Products whose bits do not depend on the machine: same seed, same bytes, anywhere.

``a @ b`` and ``np.dot`` on floats call BLAS, and OpenBLAS picks its kernels
for the CPU it finds (``Haswell`` on one machine, ``SkylakeX`` on another):
the kernels add the products in different orders and fuse different
multiply-adds, so a cost vector can differ in its last bit from one machine
to the next — and a scheduler that breaks ties or rounds on that cost then
decides differently.  Where a product decides something, it is computed
here instead: the products elementwise (each correctly rounded), then NumPy's
own summation along the last axis, which is one fixed algorithm in every
build (pairwise, in blocks of eight) — the same order on every machine.

These are for the small products of a decision (a price matrix times a
job's demand over a few resources, a cost times a vector of a few hundred
entries); a large product that decides nothing may keep ``@``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["dot", "matmat", "matvec"]


def matvec(m: ArrayLike, v: ArrayLike) -> np.ndarray:
    """``m @ v`` for a 2-D ``m`` and 1-D ``v``, in the same order on every machine."""
    return np.multiply(m, v).sum(axis=-1)


def matmat(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """``a @ b`` for two 2-D arrays, in the same order on every machine."""
    a, b = np.asarray(a), np.asarray(b)
    return np.multiply(a[:, :, None], b[None, :, :]).sum(axis=1)


def dot(a: ArrayLike, b: ArrayLike) -> float:
    """``float(a @ b)`` for two 1-D arrays, in the same order on every machine."""
    return float(np.multiply(a, b).sum())
