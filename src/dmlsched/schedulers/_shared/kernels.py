"""Compiled small-array kernels of PD-ORS (numba), imported only where used.

PD-ORS prices tens of thousands of (job, slot) cells, each a handful of
loops over tens of machine classes and a few workload bounds; as NumPy
array operations they cost more in call overhead than in arithmetic.  Each
kernel here is the plain loop its caller's docstring describes (run
without compiling under ``NUMBA_DISABLE_JIT=1``); ``cache=True`` keeps the
compiled code beside the module, so only the first run on a machine pays
for compiling (3–8 s on the shared 2-core machine).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["cover_pass"]

_REL = 1e-9  # certificate: pass cost ≤ bound · (1 + _REL)
_FEAS = 1e-9


@njit(cache=True)
def _vertices(cap, a, b):  # type: ignore[no-untyped-def]
    """(W, S, valid) of the candidate vertices of {aW + bS ≤ cap_c, W, S ≥ 0} per class:
    the intersections of pairs of its R + 2 edges (two axes, one edge per resource)."""
    C, R = cap.shape
    E = R + 2
    V = E * (E - 1) // 2
    vw = np.zeros((C, V))
    vs = np.zeros((C, V))
    valid = np.zeros((C, V), dtype=np.bool_)
    p = np.zeros(E)
    q = np.zeros(E)
    p[0] = 1.0
    q[1] = 1.0
    p[2:] = a
    q[2:] = b
    for c in range(C):
        v = 0
        for i in range(E):
            ki = cap[c, i - 2] if i >= 2 else 0.0
            for j in range(i + 1, E):
                kj = cap[c, j - 2] if j >= 2 else 0.0
                det = p[i] * q[j] - p[j] * q[i]
                if abs(det) > 1e-12:
                    w = (ki * q[j] - kj * q[i]) / det
                    s = (p[i] * kj - p[j] * ki) / det
                    good = w >= -_FEAS and s >= -_FEAS
                    for r in range(R):
                        if good and w * a[r] + s * b[r] > cap[c, r] + _FEAS * max(1.0, cap[c, r]):
                            good = False
                    if good:
                        vw[c, v] = max(w, 0.0)
                        vs[c, v] = max(s, 0.0)
                        valid[c, v] = True
                v += 1
    return vw, vs, valid


@njit(cache=True)
def cover_pass(cap, a, b, cost_w, cost_s, ms, ratio, sync, order_w, order_s):  # type: ignore[no-untyped-def]
    """:func:`~dmlsched.schedulers._shared.cover_lp.sorted_pass` on capacities ``cap`` (C × R)."""
    C, R = cap.shape
    M = ms.size
    ok = np.zeros(M, dtype=np.bool_)
    obj = np.zeros(M)
    W = np.zeros((M, C))
    S = np.zeros((M, C))
    w_max = np.full(C, np.inf)
    for c in range(C):
        for r in range(R):
            if a[r] > 0:
                w_max[c] = min(w_max[c], cap[c, r] / a[r])
    vw, vs, valid = _vertices(cap, a, b)
    for k in range(M):
        m = ms[k]
        # workers, cheapest classes first; λ_w = the marginal worker's cost
        left = m
        lam_w = 0.0
        for t in range(C):
            c = order_w[t]
            take = min(max(left, 0.0), w_max[c])
            if take > 0:
                W[k, c] = take
                left -= take
                lam_w = cost_w[c]
        if left > _FEAS * max(1.0, m):
            continue
        need = ratio * m
        one = False  # async: the "at least one PS" row binds instead of the ratio row
        if not sync:
            if need < 1.0:
                need = 1.0
                one = True
            if need > m + _FEAS * max(1.0, m):  # (3.5): ΣS ≤ ΣW
                continue
        # PSs in the room the workers left, cheapest first; μ = the marginal PS's cost
        left = need
        mu = 0.0
        for t in range(C):
            c = order_s[t]
            s_max = np.inf
            for r in range(R):
                if b[r] > 0:
                    s_max = min(s_max, (cap[c, r] - W[k, c] * a[r]) / b[r])
            take = min(max(left, 0.0), max(s_max, 0.0))
            if take > 0:
                S[k, c] = take
                left -= take
                mu = cost_s[c]
        if left > _FEAS * max(1.0, need):
            continue
        o = 0.0
        for c in range(C):
            o += cost_w[c] * W[k, c] + cost_s[c] * S[k, c]
        obj[k] = o
        # the Lagrangian bound D(λ, μ) (module docstring)
        mu2 = 0.0 if one else mu
        mu1 = mu - mu2
        lam = lam_w + ratio * mu2
        total = 0.0
        for c in range(C):
            u = lam_w - cost_w[c]  # λ − κμ₂ − cw_c
            v = mu - cost_s[c]  # μ₁ + μ₂ − cs_c
            best = -np.inf
            for j in range(vw.shape[1]):
                if valid[c, j]:
                    best = max(best, u * vw[c, j] + v * vs[c, j])
            total += best
        bound = lam * m + mu1 - total
        ok[k] = o <= bound + _REL * max(abs(bound), 1e-300)
    return ok, obj, W, S
