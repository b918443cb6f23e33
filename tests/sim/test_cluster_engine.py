"""The cluster engine validates every decision and owns progress and metrics."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.errors import InvalidDecision
from dmlsched.model.cluster import Cluster, ClusterDecision, ClusterWorkload, Placement
from dmlsched.model.speed.pdors import job_rate
from dmlsched.model.views import ClusterView
from dmlsched.rng import make_rng
from dmlsched.sim.cluster import simulate_cluster
from tests.conftest import make_job


class Scripted:
    """Returns a fixed placement per (slot, job); the engine must judge it."""

    name: ClassVar[str] = "scripted"
    setting: ClassVar[str] = "cluster"

    def __init__(self, plan: dict[int, dict[int, Placement]], reject: tuple[int, ...] = ()) -> None:
        self.plan = plan
        self.reject = reject

    def reset(self, cluster: Cluster, horizon: int, rng: np.random.Generator) -> None:
        pass

    def decide(self, view: ClusterView) -> ClusterDecision:
        alloc = {j: p for j, p in self.plan.get(view.slot, {}).items() if j not in view.finished}
        rej = tuple(j for j in self.reject if j in view.pending)
        return ClusterDecision(allocations=alloc, reject=rej)


def _run(wl: ClusterWorkload, plan: dict, reject: tuple[int, ...] = ()):
    return simulate_cluster(wl, Scripted(plan, reject), make_rng(0))


def test_job_completes_in_the_slot_its_work_reaches_e_times_k(
    small_workload: ClusterWorkload,
) -> None:
    job = small_workload.jobs[0]
    p = Placement((0,), (2,), (1,))
    rate = job_rate(job, p.machines, p.workers, p.ps)
    slots_needed = int(np.ceil(job.total_work / rate))
    plan = {t: {0: p} for t in range(8)}
    res = _run(small_workload, plan)
    done = [e for e in res.events if e.kind == "complete"]
    assert [(e.slot, e.job) for e in done] == [(slots_needed - 1, 0)]
    # utility u(t̃ − a) with θ2 = 0: θ1 / 2
    assert res.metrics["total_utility"] == pytest.approx(5.0)
    assert res.metrics["completed_jobs"] == 1
    frac = (job.total_work - (slots_needed - 1) * rate) / rate
    assert res.metrics["mean_jct"] == pytest.approx(slots_needed - 1 + frac)
    # unfinished jobs 1 and 2 count T − a
    times = sorted([slots_needed - 1, 8 - 1, 8 - 2])
    assert res.metrics["median_training_time"] == pytest.approx(times[1])


def test_rejected_job_earns_nothing_and_cannot_run(small_workload: ClusterWorkload) -> None:
    res = _run(small_workload, {}, reject=(0,))
    assert res.metrics["rejected_jobs"] == 1 and res.metrics["total_utility"] == 0
    with pytest.raises(InvalidDecision, match="rejected"):
        _run(small_workload, {1: {0: Placement((0,), (1,), (1,))}}, reject=(0,))


def test_allocation_before_arrival_is_refused(small_workload: ClusterWorkload) -> None:
    with pytest.raises(InvalidDecision, match=r"job=2.*unknown"):
        _run(small_workload, {0: {2: Placement((0,), (1,), (1,))}})


def test_too_few_ps_for_gamma_is_refused(small_workload: ClusterWorkload) -> None:
    with pytest.raises(InvalidDecision, match=r"ceil\(4/γ=2\) = 2"):
        _run(small_workload, {0: {0: Placement((0,), (4,), (1,))}})


def test_more_workers_than_batch_is_refused(small_workload: ClusterWorkload) -> None:
    with pytest.raises(InvalidDecision, match=r"Eq\. 4"):
        _run(small_workload, {0: {0: Placement((0, 1), (6, 5), (3, 3))}})


def test_non_integer_or_negative_counts_are_refused(small_workload: ClusterWorkload) -> None:
    with pytest.raises(InvalidDecision, match="non-negative integer"):
        _run(small_workload, {0: {0: Placement((0,), (1.5,), (1,))}})  # type: ignore[arg-type]
    with pytest.raises(InvalidDecision, match="no machine"):
        _run(small_workload, {0: {0: Placement((7,), (1,), (1,))}})


def test_async_ps_bandwidth_and_ps_count_are_enforced(two_machine_cluster: Cluster) -> None:
    job = make_job(mode="async", samples=10, minibatches=5, tau=0.01, ps_bandwidth=10.0)
    wl = ClusterWorkload(jobs=(job,), cluster=two_machine_cluster, horizon=4)
    with pytest.raises(InvalidDecision, match=r"\(3.4\)"):  # internal link 40 Gbps > 10
        _run(wl, {0: {0: Placement((0,), (1,), (1,))}})
    with pytest.raises(InvalidDecision, match=r"\(3.5\)"):
        _run(wl, {0: {0: Placement((0, 1), (1, 0), (0, 2))}})
    res = _run(wl, {0: {0: Placement((0, 1), (2, 0), (0, 1))}})  # 2 external workers: 2 Gbps
    assert res.metrics["admitted_jobs"] == 1


# ---- property tests -------------------------------------------------------------------------

_counts = st.integers(min_value=0, max_value=6)


@settings(max_examples=60, deadline=None)
@given(w0=_counts, w1=_counts, s0=_counts, s1=_counts)
def test_engine_rejects_every_over_capacity_decision(w0: int, w1: int, s0: int, s1: int) -> None:
    cl = Cluster.uniform(2, (4.0, 8.0, 64.0, 64.0))
    job = make_job(batch=100, gamma=1.0)
    wl = ClusterWorkload(jobs=(job,), cluster=cl, horizon=2)
    p = Placement.from_counts({0: w0, 1: w1}, {0: s0, 1: s1})
    use = np.zeros((2, 4))
    for m, w, s in zip(p.machines, p.workers, p.ps, strict=True):
        use[m] += w * np.array(job.worker_demand) + s * np.array(job.ps_demand)
    over = bool((use > cl.capacity).any())
    ratio_ok = (w0 + w1 == 0 and s0 + s1 == 0) or (w0 + w1 > 0 and s0 + s1 >= w0 + w1)
    if over or not ratio_ok:
        with pytest.raises(InvalidDecision):
            _run(wl, {0: {0: p}})
    else:
        res = _run(wl, {0: {0: p}})
        assert res.series["utilization"].max() <= 1.0 + 1e-12


@settings(max_examples=30, deadline=None)
@given(arrival=st.integers(min_value=1, max_value=5), slot=st.integers(min_value=0, max_value=5))
def test_engine_rejects_every_pre_arrival_decision(arrival: int, slot: int) -> None:
    cl = Cluster.uniform(1, (4.0, 8.0, 64.0, 64.0))
    wl = ClusterWorkload(jobs=(make_job(arrival=arrival),), cluster=cl, horizon=6)
    plan = {slot: {0: Placement((0,), (1,), (1,))}}
    if slot < arrival:
        with pytest.raises(InvalidDecision):
            _run(wl, plan)
    else:
        _run(wl, plan)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(min_value=0, max_value=10_000), name=st.sampled_from(["fifo", "drf"]))
def test_utilization_never_exceeds_one_for_real_schedulers(seed: int, name: str) -> None:
    from dmlsched.schedulers.protocols import make_scheduler
    from dmlsched.workloads.synthetic import synthetic_cluster

    wl = synthetic_cluster(12, 3, 8, make_rng(seed), capacity_factor=4.0)
    res = simulate_cluster(wl, make_scheduler("cluster", name), make_rng(seed + 1))
    u = res.series["utilization"]
    assert (u >= 0).all() and (u <= 1.0 + 1e-9).all()


def test_a_placement_is_checked_once_per_job_while_it_stays_the_same(
    small_workload: ClusterWorkload, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dmlsched.sim.cluster.state as engine

    calls: list[int] = []
    inner = engine.check_placement

    def counting(sched, job, c, slot):  # type: ignore[no-untyped-def]
        calls.append(job.id)
        return inner(sched, job, c, slot)

    monkeypatch.setattr(engine, "check_placement", counting)
    same = Placement((0,), (1,), (1,))
    equal = [Placement((1,), (1,), (1,)) for _ in range(8)]  # new but equal objects each slot
    plan = {t: {0: same, 1: equal[t]} for t in range(1, 8)}
    _run(small_workload, plan)
    assert sorted(calls) == [0, 1]
