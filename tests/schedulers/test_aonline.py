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


# A job of two chunks, one edge worker at Δ = 0, the cloud at Δ = 1; 2q/b = 1 slot per
# mini-batch, so p = 2 at ζ = 0 (edge, or cloud when mixed) and p = 1 at ζ = 1.
MIXED = ec_job(0, chunks=2, minibatches=1, q_mb=225.0, b_mbps=1.0, delay=(0, 1))


def test_paper_a_online_splits_the_job_and_pays_the_slower_mixed_rate() -> None:
    # Eq. (5): chunk 0 edge Q = p/D = 1 ties the cloud's (Δ + p¹)/D = 1 (edge first);
    # chunk 1 edge Q = (wait 2 + p 2)/2 = 2 > cloud at ζ = 0 (1 + 2)/2 = 1.5: mixed,
    # both chunks at ζ = 0: edge 0–1, cloud 1–2 -> JCT 2
    m = simulate("edge-cloud", workload((MIXED,)), AOnline(), np.random.default_rng(0)).metrics
    assert m["cloud_chunk_share"] == 0.5 and m["total_jct"] == 2.0


def test_last_chunk_pricing_alone_still_splits_but_the_cloud_check_sends_the_whole_job() -> None:
    # job-level prices: chunk 0 edge end 2 vs cloud (ζ=1) end 2 -> edge; chunk 1 edge end 4
    # (+2) vs cloud (ζ=0) end 3 (+1) -> cloud: plan price 3 ≥ all-cloud 1 + 1 = 2 -> all cloud
    lc = AOnline(last_chunk=True)
    m = simulate("edge-cloud", workload((MIXED,)), lc, np.random.default_rng(0)).metrics
    assert m["cloud_chunk_share"] == 0.5 and m["total_jct"] == 2.0
    plus = make_scheduler("edge-cloud", "a-online+")
    m = simulate("edge-cloud", workload((MIXED,)), plus, np.random.default_rng(0)).metrics
    assert m["cloud_chunk_share"] == 1.0 and m["total_jct"] == 1.0
    # the trial placement was undone: no queue, no stray β or α on the edge
    assert plus.queues_ == {} and plus.alpha_ == {(0, 0): 2.0, (0, 1): 2.0}


def test_postponing_a_chunk_that_is_not_its_jobs_last_costs_nothing() -> None:
    from dmlsched.schedulers.edge_cloud.aonline import QResult

    sched = AOnline(last_chunk=True)
    sched.beta_ = {(7, 0): [0.0, 5.0, 0.5], (7, 1): [0.0, 9.0, 0.5], (8, 0): [0.0, 6.0, 1.0]}
    sched.job_end_ = {7: 9.0, 8: 6.0}
    e70 = Queued(haprf_key(1.0, 8.0, 0), 7, 0, 0, 1.0, 0.5, 4.0)
    e80 = Queued(haprf_key(1.0, 4.0, 1), 8, 0, 0, 1.0, 1.0, 4.0)
    # job 7's chunk 0 ends at 5 + 3 = 8 < its last chunk's 9: free; job 8's only chunk: +3
    assert sched._others_cost(QResult(0.0, 0, (e70,), 0), 3) == 0.0
    assert sched._others_cost(QResult(0.0, 0, (e70, e80), 0), 3) == 3.0
    # postponed past the job's end: only the excess counts (5 + 6 = 11 > 9)
    assert sched._others_cost(QResult(0.0, 0, (e70,), 0), 6) == 2.0


def test_the_cloud_check_also_overrules_the_papers_eq_5_plan() -> None:
    sched = AOnline(cloud_check=True)
    m = simulate("edge-cloud", workload((MIXED,)), sched, np.random.default_rng(0)).metrics
    assert m["cloud_chunk_share"] == 1.0 and m["total_jct"] == 1.0
    assert sched.queues_ == {}


def test_options_are_booleans_checked_at_reset() -> None:
    from dmlsched.errors import InvalidInput

    for kw, field in (({"cloud_check": 1}, "cloud_check"), ({"last_chunk": 1}, "last_chunk")):
        with pytest.raises(InvalidInput, match=field):
            AOnline(**kw).reset(EdgeCloud(((0,),), ((0,),), 1), 10, np.random.default_rng(0))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_workloads())
def test_a_online_plus_completes_every_job_with_fixed_placements(params) -> None:
    jobs, servers, span, seed = params
    wl_rng, rng = spawn(make_rng(seed), 2)
    wl = edge_cloud_workload(jobs, servers, span, wl_rng)
    res = simulate("edge-cloud", wl, make_scheduler("edge-cloud", "a-online+"), rng)
    assert res.metrics["completed_jobs"] == jobs
