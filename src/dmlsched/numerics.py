"""Arithmetic whose bits do not depend on the machine: same seed, same bytes, anywhere.

``a @ b`` and ``np.dot`` on floats call BLAS, and OpenBLAS picks its kernels
for the CPU it finds (``Haswell`` on one machine, ``SkylakeX`` on another):
the kernels add the products in different orders and fuse different
multiply-adds, so a cost vector can differ in its last bit from one machine
to the next — and a scheduler that breaks ties or rounds on that cost then
decides differently.  Where a product decides something, it is computed
here instead: the products elementwise (each correctly rounded), then NumPy's
own summation along the last axis, which is one fixed algorithm in every
build (pairwise, in blocks of eight) — the same order on every machine.

NumPy's transcendental functions are picked for the CPU too: with AVX-512,
``np.log`` (and ``exp``, ``log1p``, ``power``, …) runs NumPy's own SIMD
code, elsewhere the C library's, and the two differ in the last bits.
:func:`log` and :func:`exp` call the C library's everywhere.  (glibc in turn
runs a build of them compiled for FMA where the CPU has FMA, which may round
a rare argument differently; no test here can vary that.)

These are for the small products of a decision (a price matrix times a
job's demand over a few resources, a cost times a vector of a few hundred
entries); a large product that decides nothing may keep ``@``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["dot", "exp", "log", "matmat", "matvec"]


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


def log(x: ArrayLike) -> np.ndarray:
    """``np.log(x)`` by the C library's ``log``, element by element (module docstring)."""
    return _by_libm(math.log, x)


def exp(x: ArrayLike) -> np.ndarray:
    """``np.exp(x)`` by the C library's ``exp``, element by element (module docstring)."""
    return _by_libm(math.exp, x)


def _by_libm(f: Callable[[float], float], x: ArrayLike) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    out = np.fromiter(map(f, a.ravel().tolist()), dtype=float, count=a.size)
    return out.reshape(a.shape)
