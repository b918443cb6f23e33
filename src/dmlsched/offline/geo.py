"""Offline optima of mlBroker's problem: P_f (9) as one LP, the MILP (8) on HiGHS.

Both stack the per-slot blocks of
:func:`dmlsched.schedulers._shared.geo_problem.build_slot` ((8a)–(8g), (8i),
(8j) with the same M_k^r, U_i and y ≤ W_i as the online algorithm) and add,
for every active job, DC and slot, the deployment variable z_i^r(t) ≥ 0 with
cost c_i and the coupling row (8h)::

    v_i^r(t) − v_i^r(t−1) − z_i^r(t) ≤ 0      (v_i^r(t_i − 1) = 0)

:func:`relaxed_optimum` solves P_f (all variables continuous, (9k)).
:func:`integer_optimum` solves (8): y, g integer, s, u, v, z binary
((8k)); meant for small instances.  Branch and bound stops at ``max_nodes``
nodes (deterministic, never wall-clock); with ``accept_feasible`` a capped
run returns its incumbent, ``status`` says so and ``bound`` is the proved
lower bound (so OPT ∈ [bound, total_cost]; both equal when optimal).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dmlsched.model.geo import GeoWorkload
from dmlsched.numerics import dot
from dmlsched.schedulers._shared.geo_problem import SlotData, build_slot
from dmlsched.solvers.highs import INF, LinearModel

__all__ = ["OfflineResult", "integer_optimum", "relaxed_optimum"]


@dataclass(frozen=True)
class OfflineResult:
    """Optimal objective of (9) or (8) and its four parts (x stands for C_2^*)."""

    total_cost: float
    cost_transfer: float
    cost_resource: float
    cost_deploy: float
    cost_communication: float
    status: str
    bound: float = float("nan")  # proved lower bound on the optimum (MILP); = total_cost for LP

    def metrics(self) -> dict[str, float]:
        return {
            "total_cost": self.total_cost,
            "cost_transfer": self.cost_transfer,
            "cost_resource": self.cost_resource,
            "cost_deploy": self.cost_deploy,
            "cost_communication": self.cost_communication,
        }


def _solve(
    wl: GeoWorkload, integer: bool, big_m: str, max_nodes: int | None, accept_feasible: bool
) -> OfflineResult:
    sites = wl.sites
    R = sites.dcs
    blocks = []
    offsets = []
    vpos: dict[tuple[int, int], int] = {}  # (job, t) -> v start index of that job's R entries
    n_cols = 0
    for t in range(wl.horizon):
        jobs = wl.active(t)
        if not jobs:
            continue
        data = SlotData.from_jobs(jobs, t)
        prob = build_slot(sites, data, big_m)
        blocks.append((prob, data, jobs, t))
        offsets.append(n_cols)
        for k, j in enumerate(jobs):
            vpos[(j.id, t)] = n_cols + prob.layout.v.start + k * R
        n_cols += prob.layout.size
    n_z = sum(len(b[2]) * R for b in blocks)
    total_cols = n_cols + n_z
    c = np.zeros(total_cols)
    lb = np.zeros(total_cols)
    ub = np.full(total_cols, INF)
    integrality = np.zeros(total_cols, dtype=bool)
    mats, lows, ups = [], [], []
    z_off = n_cols
    z_rows_i, z_rows_c, z_rows_v = [], [], []
    n_z_rows = 0
    cost_idx: dict[str, list[np.ndarray]] = {"q": [], "x": [], "g": [], "z": []}
    for (prob, data, jobs, t), off in zip(blocks, offsets, strict=True):
        L = prob.layout
        sl = slice(off, off + L.size)
        c[sl] = prob.c
        lb[sl] = prob.lb
        ub[sl] = np.where(np.isfinite(prob.ub), prob.ub, INF)
        if integer:
            for cols in (L.g, L.y, L.s, L.v, L.u1):
                integrality[off + cols.start : off + cols.stop] = True
        pad_l = sp.csr_matrix((prob.a_eq.shape[0], off))
        pad_r = sp.csr_matrix((prob.a_eq.shape[0], total_cols - off - L.size))
        mats.append(sp.hstack([pad_l, prob.a_eq, pad_r]))
        lows.append(prob.b_eq)
        ups.append(prob.b_eq)
        pad_l = sp.csr_matrix((prob.a_ub.shape[0], off))
        pad_r = sp.csr_matrix((prob.a_ub.shape[0], total_cols - off - L.size))
        mats.append(sp.hstack([pad_l, prob.a_ub, pad_r]))
        lows.append(np.full(prob.a_ub.shape[0], -INF))
        ups.append(prob.b_ub)
        for name, part in (("q", L.q), ("x", L.x), ("g", L.g)):
            cost_idx[name].append(np.arange(off + part.start, off + part.stop))
        for k, j in enumerate(jobs):
            for r in range(R):
                zc = z_off + r
                c[zc] = data.c[k]
                ub[zc] = 1.0
                integrality[zc] = integer
                cost_idx["z"].append(np.array([zc]))
                # (8h): v(t) − v(t−1) − z(t) ≤ 0
                z_rows_i += [n_z_rows, n_z_rows]
                z_rows_c += [vpos[(j.id, t)] + r, zc]
                z_rows_v += [1.0, -1.0]
                prev = vpos.get((j.id, t - 1))
                if prev is not None:
                    z_rows_i.append(n_z_rows)
                    z_rows_c.append(prev + r)
                    z_rows_v.append(-1.0)
                n_z_rows += 1
            z_off += R
    mats.append(sp.csr_matrix((z_rows_v, (z_rows_i, z_rows_c)), shape=(n_z_rows, total_cols)))
    lows.append(np.full(n_z_rows, -INF))
    ups.append(np.zeros(n_z_rows))
    a = sp.vstack(mats).tocsc()
    model = LinearModel(
        c,
        a,
        np.concatenate(lows),
        np.concatenate(ups),
        lb,
        ub,
        integrality=integrality if integer else None,
        name="geo-offline-milp" if integer else "geo-offline-lp",
        max_nodes=max_nodes if integer else None,
    )
    sol = model.solve(accept_feasible=accept_feasible)
    x = sol.x

    def cost_of(name: str) -> float:
        idx = np.concatenate(cost_idx[name]) if cost_idx[name] else np.zeros(0, dtype=int)
        return dot(c[idx], x[idx])

    parts = {k: cost_of(k) for k in ("q", "x", "z", "g")}
    return OfflineResult(
        total_cost=dot(c, x),
        cost_transfer=parts["q"],
        cost_resource=parts["x"],
        cost_deploy=parts["z"],
        cost_communication=parts["g"],
        status=sol.status,
        bound=float(sol.dual_bound) if integer and sol.dual_bound is not None else dot(c, x),
    )


def relaxed_optimum(wl: GeoWorkload, big_m: str = "valid") -> OfflineResult:
    """Optimum of the relaxed offline problem P_f (9), one LP over all slots."""
    return _solve(wl, False, big_m, None, False)


def integer_optimum(
    wl: GeoWorkload,
    big_m: str = "valid",
    max_nodes: int | None = 20_000,
    accept_feasible: bool = True,
) -> OfflineResult:
    """Optimum of the offline MILP (8) (HiGHS branch and bound), small instances."""
    return _solve(wl, True, big_m, max_nodes, accept_feasible)
