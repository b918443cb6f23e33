"""Helpers shared by the ``geo`` schedulers: transfer LP, candidate placements, prices."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import scipy.sparse as sp

from dmlsched.model.geo import GeoDecision, GeoPlacement, GeoSites, price
from dmlsched.model.speed.mlbroker import workers_needed
from dmlsched.numerics import dot
from dmlsched.solvers.highs import INF, LinearModel

__all__ = [
    "central_placement",
    "cheapest_per_job",
    "incremental_price",
    "local_placement",
    "min_cost_transfers",
    "placement_cost",
    "unit_prices",
]


def min_cost_transfers(D: np.ndarray, P: np.ndarray, y: np.ndarray, d: np.ndarray) -> np.ndarray:
    """A_round Step 3: q minimizing C_1 (Eq. (1)) under (8a), (8b), one LP (HiGHS).

    min Σ_i Σ_r Σ_r' d^{rr'} q[i,r,r']
    s.t. Σ_r' q[i,r,r'] = D_i^r            (8b), row (i, r)
         Σ_r  q[i,r,r'] ≤ P_i y_i^{r'}     (8a), row (i, r')
    A job with all its data already covered locally needs no LP; it is a
    transportation problem per job, solved as one block-diagonal LP.
    """
    N, R = D.shape
    q = np.zeros((N, R, R))
    if N == 0:
        return q
    ii, rr, ss = np.meshgrid(np.arange(N), np.arange(R), np.arange(R), indexing="ij")
    col = (ii * R * R + rr * R + ss).ravel()
    rows = np.concatenate([(ii * R + rr).ravel(), N * R + (ii * R + ss).ravel()])
    cols = np.concatenate([col, col])
    a = sp.csc_matrix((np.ones(rows.size), (rows, cols)), shape=(2 * N * R, N * R * R))
    cap = (P[:, None] * y).ravel()
    lower = np.concatenate([D.ravel(), np.full(N * R, -INF)])
    upper = np.concatenate([D.ravel(), cap])
    c = np.tile(d.ravel(), N)
    sol = LinearModel(
        c, a, lower, upper, np.zeros(col.size), np.full(col.size, INF), name="geo-transfer-lp"
    ).solve()
    q = np.maximum(sol.x.reshape(N, R, R), 0.0)
    # Re-balance rounding noise so that row sums match D exactly (8b).
    rs = q.sum(axis=2)
    scale = np.divide(D, rs, out=np.ones_like(D), where=rs > 0)
    return q * scale[:, :, None]


def unit_prices(h: np.ndarray, sites: GeoSites) -> np.ndarray:
    """Current per-unit price of each (r, k): a below the threshold l, b at or above it."""
    return np.where(h >= sites.l, sites.b, sites.a)


def incremental_price(h: np.ndarray, delta: np.ndarray, sites: GeoSites) -> float:
    """F(h + Δ) − F(h) summed over (r, k) (Eq. (2))."""
    return float(
        (price(h + delta, sites.a, sites.b, sites.l) - price(h, sites.a, sites.b, sites.l)).sum()
    )


def local_placement(D: np.ndarray, P: float, ps: int) -> GeoPlacement:
    """Workers ⌈D^r/P⌉ where the data are, q^{rr} = D^r, PS at ``ps``."""
    w = tuple(workers_needed(float(x), P) for x in D)
    return GeoPlacement(w, ps, np.diag(D))


def central_placement(D: np.ndarray, P: float, r: int) -> GeoPlacement:
    """All data moved to r, ⌈ΣD/P⌉ workers and the PS at r."""
    R = D.size
    w = [0] * R
    w[r] = workers_needed(float(D.sum()), P)
    q = np.zeros((R, R))
    q[:, r] = D
    return GeoPlacement(tuple(w), r, q)


def placement_cost(
    p: GeoPlacement,
    n: np.ndarray,
    m: np.ndarray,
    B: float,
    c: float,
    prev_v: np.ndarray,
    sites: GeoSites,
    h: np.ndarray,
    linear_prices: bool,
) -> tuple[float, np.ndarray]:
    """One job's payment for placement ``p`` and its usage Δh (R, K).

    Transfer (Eq. (1)) + resources at the current prices (``linear_prices``:
    unit price × demand at the current usage h; else the exact increment of
    Eq. (2)) + deployment on new DCs (Eq. (5)) + worker–PS traffic (Eq. (6)).
    """
    y = np.asarray(p.workers, dtype=float)
    s = np.zeros_like(y)
    s[p.ps] = 1.0
    delta = np.outer(y, n) + np.outer(s, m)
    if linear_prices:
        res = float((unit_prices(h, sites) * delta).sum())
    else:
        res = incremental_price(h, delta, sites)
    transfer = float((sites.d * p.transfers).sum())
    v = (y + s) > 0
    deploy = c * float(np.maximum(v - prev_v, 0).sum())
    comm = B * dot(sites.d[:, p.ps], y)
    return transfer + res + deploy + comm, delta


def cheapest_per_job(
    view: Any,
    sites: GeoSites,
    candidates: Callable[[np.ndarray, float, int], Iterable[GeoPlacement]],
    *,
    linear_prices: bool,
) -> GeoDecision:
    """Each active job, in order, takes its cheapest candidate placement.

    ``candidates(D, P_i, r)`` lists the placements tried for data center r; the
    cost (:func:`placement_cost`) sees the usage of the jobs placed before it
    this slot.  Central and OASiS-geo differ only in candidates and prices.
    """
    h = np.zeros((sites.dcs, sites.kinds))
    out = {}
    for j in view.active:
        job = view.jobs[j]
        D = np.asarray(view.data[j])
        n, m = np.asarray(job.worker_demand), np.asarray(job.ps_demand)
        best = None
        for r in range(sites.dcs):
            for p in candidates(D, job.capacity, r):
                cost, delta = placement_cost(
                    p,
                    n,
                    m,
                    job.exchange_gb,
                    job.deploy_cost,
                    view.deployed[j],
                    sites,
                    h,
                    linear_prices=linear_prices,
                )
                if best is None or cost < best[0] - 1e-12:
                    best = (cost, p, delta)
        assert best is not None
        out[j] = best[1]
        h = h + best[2]
    return GeoDecision(out)
