"""Lower bound for the ``edge-cloud`` setting: LP relaxation of ILP (4) with ζ_j = 1.

Sec. V-C: "We simplify ILP (4) by setting ζ_j = 1, whose optimal objective is
smaller than that of ILP (4)", so every qualified worker trains n_j =
1/(m_j + G_j) mini-batches per slot (Eq. (1)), and relax y ∈ {0, 1} to
y ≥ 0.  The LP drops (4c), (4d), (4f), (4g) (the PS constraints do not enter
the objective, Sec. IV-D), as the dual (6) does.

Aggregation (exact for the LP): chunks of a job are identical, and the
qualified workers of one server are identical for a job (same Δ_js and
n_j), so the variables are x_jst = Σ_{d, w} y_jdsw(t), the number of j's
chunk-trainings on server s at t::

    min  Σ_j Σ_s Σ_t  x_jst · n_j/(E_j D_j B_j) · (t − r_j)                        (3)–(4)
    s.t. Σ_s Σ_t x_jst · n_j ≥ E_j B_j D_j                  ∀j        (4a) summed over d
         Σ_{j: type_j = k} x_jst ≤ K_sk                      ∀s edge, k, t   (4b)
         Σ_s x_jst ≤ D_j                                     ∀j, t     (4e) summed over d
         x_jst = 0 for t < r_j + Δ_js                                  (4h)

(K_sk = workers of type k on server s; the cloud is unlimited.)  Splitting
x evenly over the D_j chunks gives a y satisfying every per-chunk
constraint, so the aggregation loses nothing.

Time window: the cloud alone can train all of j from r_j + Δ_{j s_c} in
p_j = ⌈E_jB_j/n_j⌉ slots at ≤ D_j workers, and every worker has the same rate
in this LP, so an optimal solution never trains j after r_j + Δ_{j s_c} +
p_j − 1 (moving such work into an unsaturated earlier cloud slot lowers the
objective).  Variables outside that window are omitted.

By Lemma 1 the optimum is ≤ the total JCT Σ_j (c_j − r_j) of any feasible
schedule of MINLP (2).  Speed augmentation (Definition 2): the online
algorithm runs at (1 + ε) speed (``EdgeCloud.speedup``), the bound at speed 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dmlsched.model.edge_cloud import EdgeCloudWorkload
from dmlsched.model.speed.aonline import chunk_slots, processing_capacity
from dmlsched.solvers.highs import INF, LinearModel

__all__ = ["LowerBound", "lp_lower_bound"]


@dataclass(frozen=True)
class LowerBound:
    value: float
    variables: int
    constraints: int
    status: str


def lp_lower_bound(workload: EdgeCloudWorkload, *, time_limit: float | None = None) -> LowerBound:
    """Optimal value of the aggregated LP above (speed 1, ζ_j = 1 everywhere)."""
    system = workload.system
    S = system.servers
    counts = np.zeros((S, system.n_types), dtype=float)  # K_sk
    for s, row in enumerate(system.worker_types):
        for k in row:
            counts[s, k] += 1

    cols_j, cols_s, cols_t, cost = [], [], [], []
    for idx, job in enumerate(workload.jobs):
        n = processing_capacity(job, 1, 1.0)
        p = chunk_slots(job, 1, 1.0)
        end = job.arrival + job.delay[S] + p  # exclusive
        per = n / (job.work_per_chunk * job.chunks)
        for s in range(S + 1):
            if s < S and counts[s, job.worker_type] == 0:
                continue
            start = job.arrival + job.delay[s]
            if start >= end:
                continue
            ts = np.arange(start, end)
            cols_j.append(np.full(len(ts), idx))
            cols_s.append(np.full(len(ts), s))
            cols_t.append(ts)
            cost.append(per * (ts - job.arrival))
    cj = np.concatenate(cols_j)
    cs = np.concatenate(cols_s)
    ct = np.concatenate(cols_t)
    c = np.concatenate(cost)
    nv = len(c)
    var = np.arange(nv)
    jobs = workload.jobs
    rate = np.array([processing_capacity(j, 1, 1.0) for j in jobs])
    need = np.array([j.work_per_chunk * j.chunks for j in jobs])
    chunks = np.array([j.chunks for j in jobs], dtype=float)
    wtype = np.array([j.worker_type for j in jobs])

    rows, cols, vals, lo, hi = [], [], [], [], []
    # (4a) summed over chunks: Σ x n_j ≥ E_j B_j D_j
    rows.append(cj)
    cols.append(var)
    vals.append(rate[cj])
    lo.append(need)
    hi.append(np.full(len(jobs), INF))
    base = len(jobs)
    # (4e) summed over chunks: Σ_s x_jst ≤ D_j per (j, t)
    t0 = int(ct.min())
    span = int(ct.max()) - t0 + 1
    jt = cj * span + (ct - t0)
    uj, inv = np.unique(jt, return_inverse=True)
    rows.append(base + inv)
    cols.append(var)
    vals.append(np.ones(nv))
    lo.append(np.full(len(uj), -INF))
    hi.append(chunks[uj // span])
    base += len(uj)
    # (4b) per (edge server, type, t): Σ x ≤ K_sk
    edge = cs < S
    skt = (cs[edge] * system.n_types + wtype[cj[edge]]) * span + (ct[edge] - t0)
    uk, inv = np.unique(skt, return_inverse=True)
    rows.append(base + inv)
    cols.append(var[edge])
    vals.append(np.ones(int(edge.sum())))
    lo.append(np.full(len(uk), -INF))
    sk = uk // span
    hi.append(counts[sk // system.n_types, sk % system.n_types])
    base += len(uk)

    a = sp.csc_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(base, nv)
    )
    col_hi = np.where(
        cs < S, np.minimum(chunks[cj], counts[np.minimum(cs, S - 1), wtype[cj]]), chunks[cj]
    )
    model = LinearModel(
        c,
        a,
        np.concatenate(lo),
        np.concatenate(hi),
        np.zeros(nv),
        col_hi,
        name="edge-cloud LP (4) with zeta=1",
        time_limit=time_limit,
    )
    sol = model.solve()
    return LowerBound(sol.objective, nv, base, sol.status)
