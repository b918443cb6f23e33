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

Edge variables from r_j + Δ_{j s_c} on are omitted too: from then on the
cloud column x_{j s_c t} has the same cost and rate as any edge column of j
at t, no capacity row, and a bound D_j that (4e) imposes on their sum anyway,
so moving an edge x_jst onto it keeps every constraint and the cost.  The
optimum is the same; the LP of ``aonline-fig7``'s 300-job instance shrinks
from 916,727 to 140,700 variables.

By Lemma 1 the optimum is ≤ the total JCT Σ_j (c_j − r_j) of any feasible
schedule of MINLP (2).  Speed augmentation (Definition 2): the online
algorithm runs at (1 + ε) speed (``EdgeCloud.speedup``), the bound at speed 1.

Half-processing correction (the step Lemma 1's proof drops).  The proof of
Lemma 1 shows f_jd(y) ≤ (c_jd − p_j/2 − r_j)/D_j and then discards the
p_j/2.  Keeping it (in whole slots) gives the bound returned as ``value``::

    Σ_j (c_j − r_j)  ≥  LP*  +  Σ_j H(q_j),   q_j = E_jB_j / n_j(ζ=1),
    H(q) = k (k − 1 + 2φ) / (2q),   k = ⌊q⌋, φ = q − k       (H(q) = (q − 1)/2 for integer q)

Proof.  Take any feasible schedule of (2) at speed 1.  Every chunk d of j
trains at a rate n ≤ n_j(ζ=1) (Eq. (1)), one worker per slot, in distinct
slots ≤ c_jd (c_jd = its last training slot, (2j)).  Keep only its latest ⌊q⌋
training slots in full and a fraction φ of the one before them, now at rate
n_j(ζ=1): that is exactly E_jB_j mini-batches (4a), on slots and workers the
schedule already used, so (4b), (4e), (4h) still hold — a feasible LP
solution.  Its cost for chunk d is (1/(D_j q)) Σ weight·(t − r_j) with the
weights on slots c_jd, c_jd − 1, …, so it is ≤ (c_jd − r_j − H(q_j))/D_j.
Summing over d and using c_j ≥ c_jd: Σ_j (c_j − r_j) ≥ LP cost + Σ_j H(q_j)
≥ LP* + Σ_j H(q_j).  (A job that trains alone from r_j + Δ for p slots has
c_j − r_j = Δ + p − 1: the LP gives Δ + (p − 1)/2 and H the other (p − 1)/2.)
``tests/offline`` checks the bound against the exact optimum of (2)
(:func:`exact_total_jct`) on small instances.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dmlsched.model.edge_cloud import EdgeCloudWorkload
from dmlsched.model.speed.aonline import chunk_slots, processing_capacity
from dmlsched.solvers.highs import INF, LinearModel

__all__ = ["ExactOptimum", "LowerBound", "exact_total_jct", "half_processing", "lp_lower_bound"]


@dataclass(frozen=True)
class LowerBound:
    """``value`` = ``lp`` + ``correction``: the LP optimum plus Σ_j H(q_j)."""

    value: float
    variables: int
    constraints: int
    status: str
    lp: float = 0.0  # LP (4) optimum with ζ_j = 1 (the ILP (4) relaxation alone)
    correction: float = 0.0  # Σ_j H(q_j), the half-processing term


def half_processing(q: float) -> float:
    """H(q): the slots of c_jd − r_j the fractional objective misses (module docstring)."""
    if q <= 0:
        return 0.0
    k = math.floor(q + 1e-12)
    phi = max(0.0, q - k)
    return k * (k - 1 + 2 * phi) / (2 * q)


def lp_lower_bound(
    workload: EdgeCloudWorkload, *, speed: float = 1.0, time_limit: float | None = None
) -> LowerBound:
    """The aggregated LP above (ζ_j = 1 everywhere) plus Σ_j H(q_j).

    ``speed`` scales every n_j: 1 bounds OPT at the nominal speed; 1/(1 + ε)
    is Appendix D's slowed-down offline side of Definition 1.
    """
    system = workload.system
    S = system.servers
    counts = np.zeros((S, system.n_types), dtype=float)  # K_sk
    for s, row in enumerate(system.worker_types):
        for k in row:
            counts[s, k] += 1

    cols_j, cols_s, cols_t, cost = [], [], [], []
    for idx, job in enumerate(workload.jobs):
        n = processing_capacity(job, 1, speed)
        p = chunk_slots(job, 1, speed)
        cloud = job.arrival + job.delay[S]
        end = cloud + p  # exclusive
        per = n / (job.work_per_chunk * job.chunks)
        for s in range(S + 1):
            if s < S and counts[s, job.worker_type] == 0:
                continue
            start = job.arrival + job.delay[s]
            stop = end if s == S else min(end, cloud)  # from `cloud` on the cloud dominates
            if start >= stop:
                continue
            ts = np.arange(start, stop)
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
    rate = np.array([processing_capacity(j, 1, speed) for j in jobs])
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
    corr = float(
        sum(half_processing(j.work_per_chunk / processing_capacity(j, 1, speed)) for j in jobs)
    )
    return LowerBound(sol.objective + corr, nv, base, sol.status, sol.objective, corr)


@dataclass(frozen=True)
class ExactOptimum:
    value: float  # min Σ_j (c_j − r_j) over feasible schedules of (2)
    variables: int
    status: str


def exact_total_jct(workload: EdgeCloudWorkload, *, max_nodes: int = 200_000) -> ExactOptimum:
    """Optimum of MINLP (2) by a time-indexed MILP — for *small* instances (tests).

    Linearised exactly: a_jdπ ∈ {0, 1} places chunk d of j on one place π (a
    qualified edge worker (s, w) (2a), or its own cloud worker), fixed for the
    whole run (no data migration); y_jdπ(t) ≤ a_jdπ, zero before r_j + Δ_jπ
    (2i); each edge worker trains one chunk per slot (2d); ζ_j ≤ a_jd,cloud for
    every d ((2g)–(2h)), and chunk d needs Σ_{π,t} y ≥ P⁰_j − (P⁰_j − P¹_j)ζ_j
    slots, P^ζ = ⌈E_jB_j/n_j(ζ)⌉ (Eq. (1), (2b) per chunk); c_j ≥ t·y_jdπ(t)
    (2j).  The PS constraints (2e)–(2f) never bind (the cloud has unlimited
    PSs of every type), and cloud non-preemption costs nothing (an unlimited
    cloud can always train a chunk contiguously from its data's arrival).
    Slots after r_j + Δ_{j s_c} + P¹_j − 1 are omitted: a job finishing later
    could move wholly to the cloud, finish earlier and free edge workers.
    Storage (Sec. VI) is not modelled.  Speed: ``workload.system.speedup``.
    Branch and bound stops at ``max_nodes`` nodes (deterministic); only an
    optimal status is accepted (``SolverFailed`` otherwise).
    """
    system = workload.system
    S = system.servers
    sp_ = system.speedup
    cols_kind: list[tuple] = []  # ("a", j, d, π) / ("y", j, d, π, t) / ("z", j) / ("c", j)
    index: dict[tuple, int] = {}

    def col(key: tuple) -> int:
        if key not in index:
            index[key] = len(cols_kind)
            cols_kind.append(key)
        return index[key]

    rows: list[tuple[dict[int, float], float, float]] = []
    per_worker: dict[tuple[int, int, int], dict[int, float]] = {}
    for j, job in enumerate(workload.jobs):
        p0 = chunk_slots(job, 0, sp_)
        p1 = chunk_slots(job, 1, sp_)
        end = job.arrival + job.delay[S] + p1  # exclusive
        places = [(s, w) for s, w in system.qualified_workers(job.worker_type)]
        places.append((S, 0))
        z = col(("z", j))
        c = col(("c", j))
        for d in range(job.chunks):
            one: dict[int, float] = {}
            work: dict[int, float] = {z: float(p0 - p1)}
            for s, w in places:
                a = col(("a", j, d, s, w))
                one[a] = 1.0
                for t in range(job.arrival + job.delay[s], end):
                    y = col(("y", j, d, s, w, t))
                    rows.append(({y: 1.0, a: -1.0}, -INF, 0.0))  # y ≤ a
                    rows.append(({c: 1.0, y: -float(t)}, 0.0, INF))  # c ≥ t·y
                    work[y] = 1.0
                    if s < S:
                        per_worker.setdefault((s, w, t), {})[y] = 1.0
                if s == S:
                    rows.append(({z: 1.0, a: -1.0}, -INF, 0.0))  # ζ_j ≤ a_jd,cloud
            rows.append((one, 1.0, 1.0))
            rows.append((work, float(p0), INF))
    for coef in per_worker.values():
        rows.append((coef, -INF, 1.0))
    n = len(cols_kind)
    r_idx: list[int] = []
    c_idx: list[int] = []
    vals: list[float] = []
    lo, hi = np.empty(len(rows)), np.empty(len(rows))
    for i, (coef, a_lo, a_hi) in enumerate(rows):
        r_idx.extend([i] * len(coef))
        c_idx.extend(coef)
        vals.extend(coef.values())
        lo[i], hi[i] = a_lo, a_hi
    cost = np.zeros(n)
    offset = 0.0
    for j, job in enumerate(workload.jobs):
        cost[index[("c", j)]] = 1.0
        offset += job.arrival
    integ = np.array([k[0] != "c" for k in cols_kind])
    model = LinearModel(
        cost,
        sp.csc_matrix((vals, (r_idx, c_idx)), shape=(len(rows), n)),
        lo,
        hi,
        np.zeros(n),
        np.where(integ, 1.0, INF),
        integrality=integ,
        name="edge-cloud MINLP (2), exact",
        mip_rel_gap=0.0,
        max_nodes=max_nodes,
    )
    sol = model.solve()
    return ExactOptimum(sol.objective - offset, n, sol.status)
