"""The ``edge-cloud`` lower bound holds against brute force through the engine.

On 40 tiny random instances a tree scheduler walks every decision sequence
of a complete family through the real engine
(:func:`dmlsched.sim.edge_cloud.simulate_edge_cloud`): each chunk of each
job dispatched at arrival to any qualified edge worker or the cloud (so
ζ_j = 1 exactly when all of them go there); then each edge worker trains
one of its ready unfinished chunks every slot (work-conserving: idling never
helps, workers are independent and the cloud's PSs never run out) and
switches only when its chunk finishes or a chunk's data reaches it — at such
an event it may take any ready chunk.  Between two such events a worker's
set of available chunks only shrinks, so running them one after another in
order of their completions finishes none later (the exchange argument of
preemptive single-machine scheduling): the family contains an optimal
schedule.  Cloud chunks run as soon as their data is there; every PS is in
the cloud.

Checked: lp + Σ H ≤ the exact MILP of (2) = the best sequence the engine
accepted (so the MILP is exactly the engine's problem), and every registered
``edge-cloud`` scheduler's total JCT is ≥ both.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from dmlsched.model.edge_cloud import EdgeCloud, EdgeCloudDecision, EdgeCloudWorkload, EdgeJob
from dmlsched.offline.edge_cloud import exact_total_jct, lp_lower_bound
from dmlsched.schedulers.protocols import make_scheduler, scheduler_names
from dmlsched.sim.edge_cloud import simulate_edge_cloud

INSTANCES = 40


class _Tree:
    """Replays ``prefix`` choices, then option 0; records each decision's branching."""

    name: ClassVar[str] = "brute-force"
    setting: ClassVar[str] = "edge-cloud"

    def __init__(self, prefix: list[int]) -> None:
        self.prefix = prefix
        self.taken: list[int] = []
        self.branching: list[int] = []

    def _pick(self, n: int) -> int:
        k = len(self.taken)
        c = self.prefix[k] if k < len(self.prefix) else 0
        self.taken.append(c)
        self.branching.append(n)
        return c

    def reset(self, system: EdgeCloud, horizon: int, rng: np.random.Generator) -> None:
        self.system = system
        self.current: dict[int, tuple[int, int]] = {}  # worker -> chunk it trains

    def decide(self, view: Any) -> EdgeCloudDecision:
        system = self.system
        S = system.servers
        t = view.slot
        dispatch = {}
        placement = dict(view.placement)
        at = dict(view.dispatched_at)
        for j in sorted(view.pending):
            job = view.jobs[j]
            places = [*system.qualified_workers(job.worker_type), (S, 0)]
            options = list(np.ndindex(*([len(places)] * job.chunks)))
            choice = options[self._pick(len(options))] if len(options) > 1 else options[0]
            dispatch[j] = tuple(places[k] for k in choice)
            placement[j] = dispatch[j]
            at[j] = t
        run: dict[int, list[int]] = {}
        per_worker: dict[int, list[tuple[int, int]]] = {}
        arrived: set[int] = set()  # workers a chunk's data reached this slot
        for j, places in placement.items():
            if j in view.finished:
                continue
            job = view.jobs[j]
            rem = view.remaining.get(j)
            for d, (s, w) in enumerate(places):
                if (rem is not None and rem[d] <= 0) or at[j] + job.delay[s] > t:
                    continue
                if s == S:
                    run.setdefault(j, []).append(d)
                else:
                    g = system.worker_gid(s, w)
                    per_worker.setdefault(g, []).append((j, d))
                    if at[j] + job.delay[s] == t:
                        arrived.add(g)
        for g in sorted(per_worker):
            cands = sorted(per_worker[g])
            cur = self.current.get(g)
            if cur in cands and g not in arrived:
                j, d = cur  # no event: keep training the same chunk
            else:
                j, d = cands[self._pick(len(cands))] if len(cands) > 1 else cands[0]
            self.current[g] = (j, d)
            run.setdefault(j, []).append(d)
        return EdgeCloudDecision(
            dispatch=dispatch,
            run={j: tuple(sorted(c)) for j, c in run.items()},
            ps={j: (S, 0) for j in run},
        )


def _tiny(rng: np.random.Generator) -> EdgeCloudWorkload:
    types = tuple(int(k) for k in rng.integers(0, 2, size=int(rng.integers(1, 3))))
    jobs = []
    budget = 4  # chunks in all: keeps the tree small
    for i in range(int(rng.integers(2, 4))):
        chunks = int(rng.integers(1, min(2, budget - (2 - i)) + 1)) if budget > 1 else 1
        budget -= chunks
        jobs.append(
            EdgeJob(
                id=i,
                arrival=int(rng.integers(0, 3)),
                chunks=chunks,
                minibatches=int(rng.integers(1, 4)),
                epochs=1,
                m=float(rng.choice([0.5, 1.0, 1.5])),
                G=0.0,
                q_mb=float(rng.choice([0.0, 45.0, 225.0])),  # 0, 0.2 or 1 slot of 2q/b
                b_mbps=1.0,
                worker_type=int(rng.integers(0, 2)),
                ps_type=0,
                delay=(int(rng.integers(0, 3)), int(rng.integers(2, 6))),
            )
        )
        if budget <= 0:
            break
    return EdgeCloudWorkload(tuple(jobs), EdgeCloud((types,), ((0,),), 2), 60)


def _brute_force(wl: EdgeCloudWorkload, cap: int = 50_000) -> tuple[float, int]:
    """(least total JCT the engine reports over the family, sequences run)."""
    prefix: list[int] = []
    best = np.inf
    runs = 0
    while True:
        tree = _Tree(prefix)
        m = simulate_edge_cloud(wl, tree, np.random.default_rng(0), record_events=False).metrics
        runs += 1
        assert m["completed_jobs"] == len(wl.jobs)
        best = min(best, m["total_jct"])
        # odometer: the last decision with an untried option moves on
        i = len(tree.taken) - 1
        while i >= 0 and tree.taken[i] + 1 >= tree.branching[i]:
            i -= 1
        if i < 0:
            return float(best), runs
        prefix = [*tree.taken[:i], tree.taken[i] + 1]
        assert runs < cap, "tree too large for a unit test"


def test_bound_le_exact_milp_eq_engine_brute_force_le_every_scheduler() -> None:
    names = scheduler_names("edge-cloud")
    total_runs = 0
    for seed in range(INSTANCES):
        wl = _tiny(np.random.default_rng(1000 + seed))
        lb = lp_lower_bound(wl)
        exact = exact_total_jct(wl)
        assert exact.status == "Optimal"
        brute, runs = _brute_force(wl)
        total_runs += runs
        assert lb.value <= exact.value + 1e-6, seed
        assert brute == exact.value, (seed, brute, exact.value)
        for name in names:
            m = simulate_edge_cloud(
                wl, make_scheduler("edge-cloud", name), np.random.default_rng(0)
            )
            assert m.metrics["total_jct"] >= brute - 1e-9, (seed, name)
    assert total_runs > 10 * INSTANCES
