"""DRF's progressive filling as one compiled call (numba): the loop of ``Drf._fill``.

A decision of :class:`~dmlsched.schedulers.cluster.drf.Drf` gives one worker
(and a PS when ⌈W/γ⌉ grows) at a time to the job with the smallest dominant
share, placing each bundle round-robin; on thousands of machines that is
hundreds of thousands of small steps a run, each a handful of Python and
NumPy calls.  :func:`drf_fill` runs the same steps in one call for sync
jobs: the same heap order (dominant share, then the job's position), the
same bundle (W ≤ F, S = ⌈W/γ − 10⁻⁹⌉), the same placement
(``placement_kernels.round_robin_fit``), the same updates of the free
capacity (``take_rows``'s operations) and the same dominant shares (the same
float operations in the same order), so the same placements and pointer, bit
for bit (``tests/schedulers/test_drf_kernel.py``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from dmlsched.schedulers._shared.placement_kernels import round_robin_fit

__all__ = ["drf_fill"]


@njit(cache=True)
def _less(share, key, a, b):
    return share[a] < share[b] or (share[a] == share[b] and key[a] < key[b])


@njit(cache=True)
def _push(heap, n, share, key, k):
    heap[n] = k
    i = n
    while i > 0:
        parent = (i - 1) // 2
        if _less(share, key, heap[i], heap[parent]):
            heap[i], heap[parent] = heap[parent], heap[i]
            i = parent
        else:
            break
    return n + 1


@njit(cache=True)
def _pop(heap, n, share, key):
    top = heap[0]
    n -= 1
    heap[0] = heap[n]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= n:
            break
        best = left
        if left + 1 < n and _less(share, key, heap[left + 1], heap[left]):
            best = left + 1
        if _less(share, key, heap[best], heap[i]):
            heap[i], heap[best] = heap[best], heap[i]
            i = best
        else:
            break
    return top, n


@njit(cache=True)
def drf_fill(free, wd, pd, max_workers, gamma, total, pointer, eps):
    """Progressive filling of the jobs (rows of ``wd``/``pd``, in the decision's order)
    on ``free`` (modified in place).

    Returns (job row, machine, workers, PSs) of every bundle placed, in order (as
    four arrays of the same length), each job's final (W, S), and the pointer.
    """
    J, R = wd.shape
    w = np.zeros(J, dtype=np.int64)
    s = np.zeros(J, dtype=np.int64)
    share = np.zeros(J)
    key = np.arange(J)
    heap = np.empty(J, dtype=np.int64)
    n = 0
    for k in range(J):
        n = _push(heap, n, share, key, k)
    cap = 16
    rec_k = np.empty(cap, dtype=np.int64)
    rec_m = np.empty(cap, dtype=np.int64)
    rec_w = np.empty(cap, dtype=np.int64)
    rec_s = np.empty(cap, dtype=np.int64)
    n_rec = 0
    while n > 0:
        k, n = _pop(heap, n, share, key)
        w0 = w[k]
        w1 = min(w0 + 1, max_workers[k])
        if w1 <= w0:
            continue  # at its limit
        s1 = max(1, math.ceil(w1 / gamma[k] - 1e-9))
        ok, machines, wc, sc, h = round_robin_fit(
            free, wd[k], pd[k], w1 - w0, s1 - s[k], pointer, eps
        )
        if not ok:
            continue  # cannot grow any more this decision
        pointer = h
        for i in range(machines.shape[0]):
            m = machines[i]
            for r in range(R):
                free[m, r] -= 1.0 * (wc[i] * wd[k, r] + sc[i] * pd[k, r])
            if n_rec == cap:
                cap *= 2
                rec_k = _grow(rec_k, cap)
                rec_m = _grow(rec_m, cap)
                rec_w = _grow(rec_w, cap)
                rec_s = _grow(rec_s, cap)
            rec_k[n_rec] = k
            rec_m[n_rec] = m
            rec_w[n_rec] = wc[i]
            rec_s[n_rec] = sc[i]
            n_rec += 1
        w[k] = w1
        s[k] = s1
        top = -np.inf
        for r in range(R):
            v = (w1 * wd[k, r] + s1 * pd[k, r]) / total[r]
            if v > top:
                top = v
        share[k] = top
        n = _push(heap, n, share, key, k)
    return rec_k[:n_rec], rec_m[:n_rec], rec_w[:n_rec], rec_s[:n_rec], w, s, pointer


@njit(cache=True)
def _grow(a, cap):
    out = np.empty(cap, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out
