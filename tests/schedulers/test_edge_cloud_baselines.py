"""SRTF, Tiresias-L and BatchSche on hand-made edge-cloud instances, plus end-to-end runs."""

from __future__ import annotations

import numpy as np
import pytest

from dmlsched.model.edge_cloud import EdgeCloud
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler, scheduler_names
from dmlsched.sim.engine import simulate
from dmlsched.workloads.edge_cloud import edge_cloud_workload
from tests.edge_cloud_helpers import ec_job, workload

NAMES = ("a-online", "a-online-edge", "srtf", "tiresias-l", "batchsche")


def _run(name, wl, **kw):
    return simulate(
        "edge-cloud", wl, make_scheduler("edge-cloud", name, **kw), np.random.default_rng(0)
    )


def test_every_edge_cloud_scheduler_is_registered() -> None:
    assert set(NAMES) <= set(scheduler_names("edge-cloud"))


@pytest.mark.parametrize("name", NAMES)
def test_every_scheduler_completes_a_small_sec_v_workload(name) -> None:
    wl_rng, rng = spawn(make_rng(11), 2)
    wl = edge_cloud_workload(6, 8, 10, wl_rng)
    m = simulate("edge-cloud", wl, make_scheduler("edge-cloud", name), rng).metrics
    assert m["completed_jobs"] == 6.0
    # nobody beats each job's own best case: min Δ + ⌈E B / n(ζ=1)⌉ − 1 slots
    from dmlsched.model.speed.aonline import chunk_slots

    floor = sum(min(j.delay) + chunk_slots(j, 1) - 1 for j in wl.jobs)
    assert m["total_jct"] >= floor
    assert 0.0 <= m["utilization"] <= 1.0


def test_srtf_preempts_a_long_job_for_a_shorter_one_whole_job_at_a_time() -> None:
    long = ec_job(0, chunks=2, minibatches=6)
    short = ec_job(1, arrival=2, chunks=2, minibatches=1, delay=(0, 100))
    wl = workload((long, short), EdgeCloud(((0, 0),), ((0, 0),), 2))
    m = _run("srtf", wl).metrics
    # long trains at 1, is suspended at 2 (short lands at once, 1 slot left < 5), resumes
    # 3–7: JCTs 7 and 0
    assert m["total_jct"] == 7.0 and m["preemptions"] == 1.0


def test_job_level_gangs_overflow_to_the_cloud_when_the_edge_cannot_host_d_j() -> None:
    job = ec_job(0, chunks=3, minibatches=2, delay=(1, 5))  # 2 workers < D_j = 3
    wl = workload((job,), EdgeCloud(((0, 0),), ((0,),), 2))
    for name in ("srtf", "tiresias-l"):
        m = _run(name, wl).metrics
        assert m["cloud_chunk_share"] == 1.0 and m["total_jct"] == 5 + 2 - 1


def test_job_level_gangs_skip_workers_whose_server_has_no_room_for_a_chunk_7b() -> None:
    # server 0 (Δ = 1) holds 0.5 GB, less than the 1-GB chunk; server 1 (Δ = 3) has room:
    # the gang is the worker with room, not the nearer one (which storage would refuse,
    # sending the job to the cloud or, edge-only, never placing it): c = 3 + 4 − 1
    job = ec_job(0, chunks=1, minibatches=4, chunk_gb=1.0, delay=(1, 3, 100))
    wl = workload((job,), EdgeCloud(((0,), (0,)), ((0,), (0,)), 2, storage=(0.5, 5.0)))
    for name in ("srtf", "tiresias-l"):
        for overflow in (True, False):
            m = _run(name, wl, cloud_overflow=overflow).metrics
            assert m["cloud_chunk_share"] == 0.0 and m["total_jct"] == 6.0, (name, overflow)


def test_tiresias_serves_the_least_attained_queue_first() -> None:
    # thresholds (2,): after 2 worker-slots job 0 drops to queue 1; job 1 (queue 0) preempts it
    big = ec_job(0, minibatches=5)
    small = ec_job(1, arrival=3, minibatches=2, delay=(0, 100))
    m = _run("tiresias-l", workload((big, small)), thresholds=(2.0,), promote_knob=None).metrics
    assert m["preemptions"] == 1.0 and m["total_jct"] == (7 - 0) + (4 - 3)


def test_batchsche_waits_for_the_batch_boundary_and_prefers_an_idle_cheap_edge() -> None:
    job = ec_job(0, arrival=1, minibatches=3, delay=(1, 1))
    m = _run("batchsche", workload((job,)), interval=4).metrics
    # batch at slot 4, edge price 0.5·3 < cloud 1·3: trains 5–7
    assert m["total_jct"] == 7 - 1 and m["cloud_chunk_share"] == 0.0
    m = _run("batchsche", workload((job,)), interval=4, edge_price=(2.0, 4.0)).metrics
    assert m["cloud_chunk_share"] == 1.0


def test_edge_only_gangs_are_capped_by_the_workers_of_the_type_and_never_use_the_cloud() -> None:
    # D_j = 3 chunks, 2 qualified workers: a gang of 2, chunk 2 on the first worker after
    # chunk 0; data lands at slot 1; chunks 0/1 train 1–2, chunk 2 trains 3–4: c = 4
    job = ec_job(0, chunks=3, minibatches=2, delay=(1, 5))
    wl = workload((job,), EdgeCloud(((0, 0),), ((0,),), 2))
    for name in ("srtf", "tiresias-l"):
        m = _run(name, wl, cloud_overflow=False).metrics
        assert m["cloud_chunk_share"] == 0.0 and m["total_jct"] == 4.0, name


def test_edge_only_job_waits_for_its_whole_gang() -> None:
    # one worker: A (4 slots) holds it; B (1 slot, arrives at 1) preempts A whole-job under
    # SRTF at slot 2 (its data lands then), A resumes: with the cloud B would not wait for A
    a = ec_job(0, chunks=1, minibatches=4, delay=(1, 100))
    b = ec_job(1, arrival=1, chunks=1, minibatches=1, delay=(1, 2))
    wl = workload((a, b))
    edge = _run("srtf", wl, cloud_overflow=False).metrics
    assert edge["cloud_chunk_share"] == 0.0 and edge["completed_jobs"] == 2.0
    # A: slot 1, then B's data at 2: B trains 2 (JCT 1), A 3–5 (JCT 5)
    assert edge["total_jct"] == 6.0


def test_edge_only_reading_is_a_named_parameter_checked_when_made_and_at_reset() -> None:
    from dmlsched.errors import InvalidInput

    with pytest.raises(InvalidInput, match=r"srtf parameter cloud_overflow='no'.*bool"):
        make_scheduler("edge-cloud", "srtf", cloud_overflow="no")
    sched = make_scheduler("edge-cloud", "srtf")
    sched.cloud_overflow = "no"  # set after the constructor: reset still refuses it
    with pytest.raises(InvalidInput, match="cloud_overflow"):
        sched.reset(EdgeCloud(((0,),), ((0,),), 1), 10, np.random.default_rng(0))


def _two_servers(storage: tuple[float, float] | None) -> EdgeCloud:
    return EdgeCloud(((0,), (0,)), ((0,), (0,)), 2, storage=storage)


def test_a_dispatch_in_the_slot_changes_the_next_pending_jobs_available_workers() -> None:
    # Tiresias-L ranks server 0's worker first for both jobs of one (type, chunk size).
    # Storage-bound (1 GB each, data lands at slot 1): A's chunk fills server 0, so B must
    # see server 1's worker only (a stale list would pick server 0, fail 7b and send B to a
    # cloud 100 slots away): both train 1–4 on the edge
    a = ec_job(0, chunk_gb=1.0, delay=(1, 1, 100))
    b = ec_job(1, chunk_gb=1.0, delay=(1, 1, 100))
    m = _run("tiresias-l", workload((a, b), _two_servers((1.0, 1.0)))).metrics
    assert m["cloud_chunk_share"] == 0.0 and m["total_jct"] == 4.0 + 4.0
    # worker-bound (data at once): A claims worker 0 this slot, so B trains on worker 1
    # (a stale list would put both on worker 0 in one slot, which the engine refuses, 2d)
    a = ec_job(0, delay=(0, 0, 100))
    b = ec_job(1, delay=(0, 0, 100))
    m = _run("tiresias-l", workload((a, b), _two_servers(None))).metrics
    assert m["cloud_chunk_share"] == 0.0 and m["total_jct"] == 3.0 + 3.0


def test_a_running_jobs_claim_changes_a_later_pending_jobs_available_workers() -> None:
    # edge-only, one queue (FIFO): X (4 chunks, a gang of 2) cannot fit 2 GB on server 1,
    # so it waits, having looked up the workers of its (type, chunk size) before A. A runs
    # on worker 0 and claims it each slot; C (same type and size, arrives at 1) must then
    # see worker 1 only, and trains 1–4 beside A (a stale list would put it on worker 0
    # with A, 2d). X never fits: its JCT counts as the horizon, 60
    x = ec_job(0, chunks=4, minibatches=1, chunk_gb=1.0, delay=(0, 0, 100))
    a = ec_job(1, minibatches=20, chunk_gb=1.0, delay=(0, 0, 100))
    c = ec_job(2, arrival=1, chunk_gb=1.0, delay=(0, 0, 100))
    wl = workload((x, a, c), _two_servers((2.5, 1.5)))
    kw = dict(cloud_overflow=False, thresholds=(100.0,), promote_knob=None)
    m = _run("tiresias-l", wl, **kw).metrics
    assert m["completed_jobs"] == 2.0 and m["total_jct"] == 60 + 19 + 3
