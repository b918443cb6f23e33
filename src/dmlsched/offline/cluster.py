"""Exact offline optimum of DMLRS (PD-ORS Sec. III) for tiny sync instances, as a MILP.

Variables per job i, machine h, slot t ≥ a_i: integer workers w and PSs s,
a binary z ("all of job i's workers and PSs are on machine h in slot t",
Fact 1) and a continuous v ≤ w, v ≤ F·z (the workers that train at the
internal rate); per job and slot a binary y (job i completes in slot t).

    max  Σ_i Σ_t u_i(t − a_i) y_it
    s.t. Σ_i α^r w_iht + β^r s_iht ≤ C_h^r                       (5)
         Σ_h w_iht ≤ F_i Σ_{t' ≥ t} y_it'                         (4), nothing after t̃
         γ Σ_h s_iht ≥ Σ_h w_iht                                  (2) (integers: ⌈W/γ⌉)
         Σ_{h' ≠ h} (w + s)_ih't ≤ M (1 − z_iht),  Σ_h z_iht ≤ 1   Fact 1
         Σ_t Σ_h r^(e) w_iht + (r^(i) − r^(e)) v_iht ≥ V_i Σ_t y_it (3)
         Σ_t y_it ≤ 1

with r = :func:`~dmlsched.model.speed.pdors.worker_rate` (Eq. (1) in the γ
form) and t̃ − a_i the training time (0 when done in the arrival slot).

**A true bound on the engine.**  The engine credits every allocation it
accepts exactly this γ-form rate (PSs beyond W/γ do nothing,
:mod:`dmlsched.model.speed.pdors`), accepts exactly (2) as ⌈W/γ⌉ ≤ S, (4),
(5) and Fact 1, and pays u(t̃ − a) for the first slot the work is done — so
every schedule the engine can run is a feasible point of this MILP (its
work row only loosens by the solver's feasibility tolerance, which can only
raise the optimum), and the optimum bounds the total utility of *any*
scheduler (checked by brute force over the engine on random tiny instances
in ``tests/offline/test_cluster_bounds.py``).  Replaying the MILP's schedule
in the engine earns the MILP value (a job may finish earlier, never later).

Limits are deterministic: a branch-and-bound node cap (``max_nodes``) and a
relative gap, never wall-clock time.  ``utility`` is the incumbent (= OPT
when ``status`` is Optimal), ``bound`` HiGHS's dual bound (≥ OPT ≥ utility).
Only ``sync`` jobs (the journal model; PD-ORS Fig. 10): async locality
enters (3.4) per PS machine, which this linearization does not cover.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import Cluster, ClusterDecision, ClusterWorkload, Placement
from dmlsched.model.speed.pdors import worker_rate
from dmlsched.solvers.highs import INF, LinearModel

__all__ = ["OfflineSolution", "Replay", "solve_offline"]


@dataclass(frozen=True)
class OfflineSolution:
    """Incumbent value, dual bound, status, completion slot per job and the schedule."""

    utility: float
    status: str
    completion: dict[int, int]
    schedule: dict[int, dict[int, Placement]]  # job → slot → placement
    bound: float  # upper bound on OPT (HiGHS's dual bound; = utility when solved)

    @property
    def optimal(self) -> bool:
        return self.status == "Optimal"


MAX_NODES = 20_000  # default branch-and-bound cap (deterministic; Fig. 10 sizes solve below it)


def solve_offline(
    workload: ClusterWorkload, max_nodes: int = MAX_NODES, mip_rel_gap: float = 1e-7
) -> OfflineSolution:
    """Solve DMLRS exactly (or to ``max_nodes`` nodes, then the best incumbent and bound)."""
    jobs = list(workload.jobs)
    for j in jobs:
        if j.mode != "sync":
            raise InvalidInput("mode", j.mode, "sync (offline DMLRS)", f"job {j.id}")
    cap = np.asarray(workload.cluster.capacity, dtype=float)
    H, R = cap.shape
    T = workload.horizon
    cols: dict[tuple[str, int, int, int], int] = {}
    lo: list[float] = []
    hi: list[float] = []
    integ: list[bool] = []
    cost: list[float] = []

    def col(key: tuple[str, int, int, int], ub: float, is_int: bool, c: float = 0.0) -> int:
        cols[key] = len(lo)
        lo.append(0.0)
        hi.append(ub)
        integ.append(is_int)
        cost.append(c)
        return cols[key]

    for i, j in enumerate(jobs):
        wmax = float(j.max_workers)
        smax = float(math.ceil(wmax / j.gamma))
        for t in range(j.arrival, T):
            col(("y", i, 0, t), 1.0, True, j.utility(t - j.arrival))
            for h in range(H):
                col(("w", i, h, t), wmax, True)
                col(("s", i, h, t), smax, True)
                col(("z", i, h, t), 1.0, True)
                col(("v", i, h, t), wmax, False)
    rows_i: list[int] = []
    rows_j: list[int] = []
    vals: list[float] = []
    rlo: list[float] = []
    rhi: list[float] = []

    def row(coef: dict[int, float], lower: float, upper: float) -> None:
        r = len(rlo)
        for c_, v in coef.items():
            rows_i.append(r)
            rows_j.append(c_)
            vals.append(v)
        rlo.append(lower)
        rhi.append(upper)

    for t in range(T):  # (5)
        for h in range(H):
            for r in range(R):
                coef: dict[int, float] = {}
                for i, j in enumerate(jobs):
                    if t < j.arrival:
                        continue
                    if j.worker_demand[r]:
                        coef[cols[("w", i, h, t)]] = j.worker_demand[r]
                    if j.ps_demand[r]:
                        coef[cols[("s", i, h, t)]] = j.ps_demand[r]
                if coef:
                    row(coef, -INF, cap[h, r])
    for i, j in enumerate(jobs):
        wmax = float(j.max_workers)
        big = wmax + math.ceil(wmax / j.gamma)
        slots = range(j.arrival, T)
        row({cols[("y", i, 0, t)]: 1.0 for t in slots}, -INF, 1.0)
        work: dict[int, float] = {cols[("y", i, 0, t)]: -j.total_work for t in slots}
        r_e, r_i = worker_rate(j, False), worker_rate(j, True)
        for t in slots:
            c4 = {cols[("w", i, h, t)]: 1.0 for h in range(H)}
            for t2 in range(t, T):
                c4[cols[("y", i, 0, t2)]] = -wmax
            row(c4, -INF, 0.0)
            c2 = {cols[("w", i, h, t)]: 1.0 for h in range(H)}
            c2.update({cols[("s", i, h, t)]: -j.gamma for h in range(H)})
            row(c2, -INF, 0.0)
            row({cols[("z", i, h, t)]: 1.0 for h in range(H)}, -INF, 1.0)
            for h in range(H):
                cz = {cols[("z", i, h, t)]: big}
                for h2 in range(H):
                    if h2 != h:
                        cz[cols[("w", i, h2, t)]] = 1.0
                        cz[cols[("s", i, h2, t)]] = 1.0
                row(cz, -INF, big)
                v = cols[("v", i, h, t)]
                row({v: 1.0, cols[("w", i, h, t)]: -1.0}, -INF, 0.0)
                row({v: 1.0, cols[("z", i, h, t)]: -wmax}, -INF, 0.0)
                work[cols[("w", i, h, t)]] = r_e
                work[v] = r_i - r_e
        # scale the work row to O(1) coefficients for numerical stability
        scale = 1.0 / j.total_work
        row({k: v * scale for k, v in work.items()}, 0.0, INF)
    n = len(lo)
    a_mat = sp.csc_matrix((vals, (rows_i, rows_j)), shape=(len(rlo), n))
    model = LinearModel(
        np.asarray(cost),
        a_mat,
        np.asarray(rlo),
        np.asarray(rhi),
        np.asarray(lo),
        np.asarray(hi),
        integrality=np.asarray(integ),
        maximize=True,
        name="dmlrs-offline",
        mip_rel_gap=mip_rel_gap,
        max_nodes=max_nodes,
    )
    sol = model.solve(accept_feasible=True)
    x = sol.x
    completion: dict[int, int] = {}
    schedule: dict[int, dict[int, Placement]] = {}
    for i, j in enumerate(jobs):
        done = [t for t in range(j.arrival, T) if x[cols[("y", i, 0, t)]] > 0.5]
        if not done:
            continue
        completion[j.id] = done[0]
        plan: dict[int, Placement] = {}
        for t in range(j.arrival, done[0] + 1):
            w = {h: round(x[cols[("w", i, h, t)]]) for h in range(H)}
            s = {h: round(x[cols[("s", i, h, t)]]) for h in range(H)}
            if sum(w.values()) > 0:
                plan[t] = Placement.from_counts(w, s)
        schedule[j.id] = plan
    utility = sum(j.utility(completion[j.id] - j.arrival) for j in jobs if j.id in completion)
    dual = sol.dual_bound if sol.dual_bound is not None else math.inf
    bound = max(float(utility), dual if math.isfinite(dual) else math.inf)
    return OfflineSolution(float(utility), sol.status, completion, schedule, float(bound))


class Replay:
    """A fixed schedule (job → slot → placement) as a cluster scheduler for the engine.

    It allocates each slot's placements to jobs the engine has not reported
    finished (the engine refuses allocations to finished jobs) and decides
    nothing else; the engine judges validity, progress and utility.
    """

    name = "offline-replay"
    setting = "cluster"

    def __init__(self, schedule: dict[int, dict[int, Placement]]) -> None:
        self.schedule = schedule

    def reset(self, cluster: Cluster, horizon: int, rng: np.random.Generator) -> None:
        pass

    def decide(self, view: object) -> ClusterDecision:
        t = view.slot  # type: ignore[attr-defined]  # the engine's ClusterView (duck-typed replay)
        fin = view.finished  # type: ignore[attr-defined]  # the engine's ClusterView (duck-typed replay)
        alloc = {j: p[t] for j, p in self.schedule.items() if t in p and j not in fin}
        return ClusterDecision(allocations=alloc)
