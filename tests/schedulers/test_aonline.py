"""A_online: Eq. (5) on a hand-worked two-job example, HAPRF, duals, no migration."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dmlsched.model.edge_cloud import EdgeCloud
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers._shared.priority import haprf_key
from dmlsched.schedulers.edge_cloud.aonline import AOnline, Queued, calculate_q
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.edge_cloud import edge_cloud_workload
from tests.edge_cloud_helpers import ec_job, workload

# Job A: r=0, D=1, p=4 (γ = 1/4).  Job B: r=1, D=2, p=1 per chunk (γ = 1/2).  One
# worker, Δ = 1 everywhere on the edge, the cloud 100 slots away.
A = ec_job(0, arrival=0, chunks=1, minibatches=4)
B = ec_job(1, arrival=1, chunks=2, minibatches=1)


def test_q_of_eq_5_by_hand_for_the_first_chunk_of_the_second_job() -> None:
    # At slot 1 A (ready at 1, 4 slots left) runs one slot before B's chunk lands at t0 = 2:
    # A(t0) = {A: p̂ = 3}, γ_A < γ_B so A is in A_2 (postponed).
    # Q = Δ/D + 0 + p/D + p·(1/D_A) = 1/2 + 1/2 + 1·1 = 2.
    qa = Queued(haprf_key(1.0, 4.0, 0), 0, 0, ready=1, rate=1.0, inv_d=1.0, work=4.0)
    res = calculate_q(
        [qa], {(0, 0): 4}, now=1, delay=1, new_key=haprf_key(1.0, 2.0, 1), p=1, inv_d=0.5
    )
    assert res.q == pytest.approx(2.0)
    assert res.start == 2 and res.wait == 0 and res.postponed == (qa,)
    # the second chunk of B waits behind the first (same γ, earlier seq): A_1 = {B1: 1}
    qb1 = Queued(haprf_key(1.0, 2.0, 1), 1, 0, ready=2, rate=1.0, inv_d=0.5, work=1.0)
    res2 = calculate_q(
        [qb1, qa],
        {(0, 0): 4, (1, 0): 1},
        now=1,
        delay=1,
        new_key=haprf_key(1.0, 2.0, 2),
        p=1,
        inv_d=0.5,
    )
    assert res2.q == pytest.approx(0.5 + 0.5 * 1 + 0.5 + 1.0)  # 2.5
    assert res2.start == 3


def test_a_greedy_dispatch_alphas_betas_and_the_haprf_schedule_by_hand() -> None:
    wl = workload((A, B))
    sched = AOnline()
    res = simulate("edge-cloud", wl, sched, np.random.default_rng(0))
    # α_A = Δ + p = 5 (cloud: 104); α_B1 = 2; α_B2 = 2.5
    assert sched.alpha_ == pytest.approx({(0, 0): 5.0, (1, 0): 2.0, (1, 1): 2.5})
    # Lemma 4: Σα = Σ_t β (A's interval [0, 5) is postponed twice by 1 -> 7)
    assert sched.beta_sum() == pytest.approx(sched.alpha_sum()) == pytest.approx(9.5)
    assert sched.dual_bound(0.5) == pytest.approx(9.5 / 3)
    # HAPRF: A at 1, B1 at 2 (preempts A), B2 at 3, A at 4–6 -> JCTs 6 and 2
    assert res.metrics["total_jct"] == 8.0
    assert res.metrics["preemptions"] == 1.0
    assert res.metrics["cloud_chunk_share"] == 0.0


def test_first_chunk_in_the_cloud_sends_the_whole_job_there_with_zeta_one() -> None:
    job = ec_job(0, chunks=3, minibatches=4, delay=(20, 2))  # cloud Q = (2+4)/3 < (20+4)/3
    res = simulate("edge-cloud", workload((job,)), AOnline(), np.random.default_rng(0))
    assert res.metrics["cloud_chunk_share"] == 1.0 and res.metrics["total_jct"] == 5.0


def test_edge_only_variant_never_uses_the_cloud_and_is_the_same_class() -> None:
    job = ec_job(0, chunks=3, minibatches=4, delay=(20, 2))
    sched = make_scheduler("edge-cloud", "a-online-edge")
    assert isinstance(sched, AOnline) and sched.edge_only
    res = simulate("edge-cloud", workload((job,)), sched, np.random.default_rng(0))
    # one worker: three chunks back to back from slot 20 -> c = 31
    assert res.metrics["cloud_chunk_share"] == 0.0 and res.metrics["total_jct"] == 31.0


def test_chunks_spread_over_idle_workers_before_queueing() -> None:
    job = ec_job(0, chunks=2, minibatches=4)
    wl = workload((job,), EdgeCloud(((0, 0),), ((0,),), 2))
    res = simulate("edge-cloud", wl, AOnline(), np.random.default_rng(0))
    assert res.metrics["total_jct"] == 4.0  # both chunks in parallel on slots 1–4


def test_storage_limits_a_greedy_to_servers_with_room_sec_vi() -> None:
    job = ec_job(0, chunks=2, minibatches=4, chunk_gb=1.0)
    system = EdgeCloud(((0, 0), (0,)), ((0,), (0,)), 2, storage=(1.0, 5.0))
    wl = workload((ec_job(0, chunks=2, minibatches=4, chunk_gb=1.0, delay=(1, 3, 100)),), system)
    assert job.chunk_gb == 1.0
    sched = AOnline()
    res = simulate("edge-cloud", wl, sched, np.random.default_rng(0))
    # one chunk on server 0 (room for one), the other on server 1 at Δ = 3
    assert res.metrics["total_jct"] == 3 + 4 - 1


def _workloads():
    return st.tuples(
        st.integers(1, 4), st.integers(1, 3), st.integers(1, 6), st.integers(0, 10_000)
    )


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _workloads(), st.sampled_from(["a-online", "a-online-edge", "srtf", "tiresias-l", "batchsche"])
)
def test_no_chunk_ever_changes_worker(params, name) -> None:
    jobs, servers, span, seed = params
    wl_rng, rng = spawn(make_rng(seed), 2)
    wl = edge_cloud_workload(jobs, servers, span, wl_rng)
    sched = make_scheduler("edge-cloud", name)
    inner = sched.decide
    seen: dict[int, tuple] = {}

    def decide(view):
        for j, places in view.placement.items():
            assert seen.setdefault(j, places) == places  # fixed forever
        out = inner(view)
        for j in out.dispatch:
            assert j not in seen
        for j, chunks in out.run.items():
            places = view.placement.get(j) or out.dispatch[j]
            edge = [places[d] for d in chunks if places[d][0] < view.system.cloud]
            assert len(set(edge)) == len(edge)
        return out

    sched.decide = decide
    res = simulate("edge-cloud", wl, sched, rng)
    assert res.metrics["completed_jobs"] == jobs
