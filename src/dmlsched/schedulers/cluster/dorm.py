"""Dorm (Sun, Wen, Ta, Yan, SMARTCOMP 2017; PD-ORS's reference [12] and baseline 3).

Dorm partitions the cluster among the running applications and re-partitions
*whenever the set of jobs changes* (an arrival or a completion) by solving
a MILP: maximize resource utilization subject to capacity, a fairness
constraint and an adjustment-overhead constraint.  Between changes the
partition (and placement) is kept — so a decision holds until the next
arrival or completion (event-driven time).  Workers and PSs are then placed
round-robin (PD-ORS Sec. V) with the shared helper.

Our MILP (Dorm's paper gives the structure, not every constant) over the
current jobs i, on HiGHS:

* variables: workers w_i ∈ {0..max_workers}, PSs s_i (integers), and for
  every job that already ran, a binary y_i = "its size changes";
* objective: max Σ_i Σ_r (α_i^r w_i + β_i^r s_i) / C^r — utilization summed
  over resources (C^r = cluster total);
* capacity: Σ_i α_i^r w_i + β_i^r s_i ≤ ``fill`` · C^r (``fill`` = 0.9 leaves
  slack for round-robin fragmentation);
* PSs: s_i ≥ w_i/γ (sync, Eq. (2)); async s_i ≥ w_i b^(e)/B_i, s_i ≤ w_i,
  s_i ≥ 1 when w_i ≥ 1 (via s_i ≥ w_i / max_workers);
* fairness: each job's share of its dominant resource (per-worker bundle)
  ≥ ``fairness`` × min(1/n, the share at max_workers) — Dorm's bound on the
  fairness loss relative to an equal split;
* adjustment overhead: |w_i − w_i^prev| ≤ max_workers · y_i and
  Σ y_i ≤ max(1, ⌈``adjust`` · n_prev⌉).

If the MILP is infeasible the adjustment constraint and then the fairness
constraint are dropped (in that order).  Every arrived job is admitted (it
runs once it gets workers); a job the round-robin cannot place at its size
is shrunk one worker at a time.  The MILP stops on deterministic limits —
a relative gap (``mip_gap``, 1e-3) or a branch-and-bound node cap
(``max_nodes``, 10,000), never wall-clock time, so a run's partitions are
the same on every machine — and its best incumbent is used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from dmlsched.errors import SolverFailed
from dmlsched.model.cluster import Cluster, ClusterDecision, ClusterJob, Placement
from dmlsched.model.reasons import Reason
from dmlsched.model.views import ClusterView
from dmlsched.schedulers._shared.placement import bundle, place_round_robin, take
from dmlsched.schedulers._shared.reasons import shortfall
from dmlsched.schedulers.protocols import register

__all__ = ["Dorm", "dorm_partition"]

INF = math.inf  # HiGHS's infinite bound (highspy.kHighsInf is math.inf)


def dorm_partition(
    jobs: list[ClusterJob],
    total: np.ndarray,
    prev: dict[int, int],
    *,
    fairness: float,
    adjust: float,
    fill: float,
    max_nodes: int,
    mip_gap: float = 1e-3,
) -> dict[int, int]:
    """Workers per job from Dorm's MILP (see module docstring)."""
    n = len(jobs)
    if n == 0:
        return {}
    R = total.size
    old = [k for k, j in enumerate(jobs) if j.id in prev]
    nv = 2 * n + len(old)  # w_0..w_{n-1}, s_0..s_{n-1}, y_old
    c = np.zeros(nv)
    safe = np.where(total > 0, total, 1.0)
    rows: list[tuple[dict[int, float], float, float]] = []
    for k, j in enumerate(jobs):
        a = np.asarray(j.worker_demand) / safe
        b = np.asarray(j.ps_demand) / safe
        c[k] = a.sum()
        c[n + k] = b.sum()
    for r in range(R):
        coef = {}
        for k, j in enumerate(jobs):
            if j.worker_demand[r]:
                coef[k] = j.worker_demand[r]
            if j.ps_demand[r]:
                coef[n + k] = j.ps_demand[r]
        if coef:
            rows.append((coef, -INF, fill * total[r]))
    for k, j in enumerate(jobs):
        if j.mode == "sync":
            rows.append(({n + k: 1.0, k: -1.0 / j.gamma}, 0.0, INF))
        else:
            rows.append(({n + k: 1.0, k: -j.b_ext / j.ps_bandwidth}, 0.0, INF))
            rows.append(({n + k: 1.0, k: -1.0}, -INF, 0.0))
            rows.append(({n + k: 1.0, k: -1.0 / j.max_workers}, 0.0, INF))
    n_base = len(rows)
    fair_rows = []
    for k, j in enumerate(jobs):
        a = np.asarray(j.worker_demand) / safe
        b = np.asarray(j.ps_demand) / safe
        per = a + b / (j.gamma if j.mode == "sync" else 1.0)
        r = int(np.argmax(per))
        share_max = min(1.0, per[r] * j.max_workers)
        need = fairness * min(1.0 / n, share_max)
        if need > 0:
            fair_rows.append(len(rows))
            rows.append(({k: a[r], n + k: b[r]}, need, INF))
    adj_rows = []
    for y, k in enumerate(old):
        j = jobs[k]
        adj_rows += [len(rows), len(rows) + 1]
        rows.append(({k: 1.0, 2 * n + y: -float(j.max_workers)}, -INF, float(prev[j.id])))
        rows.append(({k: 1.0, 2 * n + y: float(j.max_workers)}, float(prev[j.id]), INF))
    if old:
        adj_rows.append(len(rows))
        rows.append(
            (
                {2 * n + y: 1.0 for y in range(len(old))},
                -INF,
                float(max(1, math.ceil(adjust * len(old)))),
            )
        )
    col_up = np.array(
        [float(j.max_workers) for j in jobs]
        + [float(j.max_workers) for j in jobs]
        + [1.0] * len(old)
    )

    def solve(keep: list[int]) -> dict[int, int] | None:
        # deferred: scipy.sparse and highspy are slow to import,
        # and importing the cluster registry (every `compare`) loads this module
        import scipy.sparse as sp

        from dmlsched.solvers.highs import LinearModel

        sel = [rows[i] for i in keep]
        a_rows, a_cols, a_vals = [], [], []
        for i, (coef, _, _) in enumerate(sel):
            for col, v in coef.items():
                a_rows.append(i)
                a_cols.append(col)
                a_vals.append(v)
        a_mat = sp.csc_matrix((a_vals, (a_rows, a_cols)), shape=(len(sel), nv))
        model = LinearModel(
            c,
            a_mat,
            np.array([r[1] for r in sel]),
            np.array([r[2] for r in sel]),
            np.zeros(nv),
            col_up,
            integrality=np.ones(nv, dtype=bool),
            maximize=True,
            name="dorm",
            max_nodes=max_nodes,
            mip_rel_gap=mip_gap,
        )
        try:
            sol = model.solve(accept_feasible=True)
        except SolverFailed:
            return None
        return {j.id: round(sol.x[k]) for k, j in enumerate(jobs)}

    base = list(range(n_base))
    for keep in (base + fair_rows + adj_rows, base + fair_rows, base):
        out = solve(keep)
        if out is not None:
            return out
    return dict.fromkeys((j.id for j in jobs), 0)


@register
class Dorm:
    """Dorm: MILP re-partitioning on every job-set change, round-robin placement."""

    name: ClassVar[str] = "dorm"
    setting: ClassVar[str] = "cluster"

    def __init__(
        self,
        fairness: float = 0.5,
        adjust: float = 0.5,
        fill: float = 0.9,
        max_nodes: int = 10_000,
        mip_gap: float = 1e-3,
    ) -> None:
        self.fairness = fairness
        self.adjust = adjust
        self.fill = fill
        self.max_nodes = max_nodes
        self.mip_gap = mip_gap

    def reset(self, cluster: Cluster, horizon: int, rng: np.random.Generator) -> None:
        self.cluster_ = cluster
        self.horizon_ = horizon
        self.total_ = np.asarray(cluster.capacity, dtype=float).sum(axis=0)
        self.jobset_: frozenset[int] = frozenset()
        self.sizes_: dict[int, int] = {}
        self.placed_: dict[int, Placement] = {}
        self.pointer_ = 0
        self.given_: dict[int, int] = {}
        self.free_ = np.array(cluster.capacity, dtype=float)

    def decide(self, view: ClusterView) -> ClusterDecision:
        current = [j for j in (*view.active, *view.pending)]
        if frozenset(current) != self.jobset_:
            self.jobset_ = frozenset(current)
            jobs = [view.jobs[j] for j in current]
            prev = {j: w for j, w in self.sizes_.items() if j in self.jobset_}
            self.sizes_ = dorm_partition(
                jobs,
                self.total_,
                prev,
                fairness=self.fairness,
                adjust=self.adjust,
                fill=self.fill,
                max_nodes=self.max_nodes,
                mip_gap=self.mip_gap,
            )
            self._place(view, current)
        # the partition changes only with the set of jobs (an arrival or a completion):
        # until then this decision repeats itself, so it holds (event-driven time)
        return ClusterDecision(
            allocations={j: p for j, p in self.placed_.items() if j in self.jobset_},
            until=self.horizon_,
        )

    def explain(self, view: ClusterView, jobs: Sequence[int]) -> dict[int, Reason]:
        """A job with no worker: the MILP partition gave it none, or round-robin could not
        place even one worker in what the others left."""
        out: dict[int, Reason] = {}
        active = set(view.active)
        for j in jobs:
            job = view.jobs[j]
            code = "preempted" if j in active else "fair-share"
            if self.given_.get(j, 0) == 0:
                out[j] = Reason(
                    code,
                    f"Dorm's partition gives it 0 workers (utilization with fairness ≥ "
                    f"{self.fairness:g} of an equal share, ≤ {self.adjust:.0%} of jobs resized)",
                )
            else:
                why = shortfall(job, *bundle(job, 1), self.free_)
                out[j] = Reason(
                    code, f"its {self.given_[j]} workers could not be placed: {why.text}"
                )
        return out

    def _place(self, view: ClusterView, current: list[int]) -> None:
        free = np.array(self.cluster_.capacity, dtype=float)
        self.given_ = dict(self.sizes_)  # what the MILP gave, before placement shrank it
        self.placed_ = {}
        for j in current:
            job = view.jobs[j]
            w = self.sizes_.get(j, 0)
            while w > 0:
                wb, sb = bundle(job, w)
                if wb <= 0:
                    break
                placed = place_round_robin(free, job, wb, sb, self.pointer_)
                if placed is not None:
                    p, self.pointer_ = placed
                    take(free, job, p)
                    self.placed_[j] = p
                    break
                w = wb - 1
            self.sizes_[j] = self.placed_[j].total_workers if j in self.placed_ else 0
        self.free_ = free
