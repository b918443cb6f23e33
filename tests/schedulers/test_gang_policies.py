"""Tiresias (discretized 2D-LAS) and SRTF with gang allocation, on hand-made cases."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from dmlsched.model.cluster import Cluster, ClusterWorkload
from dmlsched.schedulers._shared.gang import gang_allocate
from dmlsched.schedulers._shared.placement import place_packed
from dmlsched.schedulers._shared.priority import (
    las_key,
    las_queue,
    srtf_key,
    starving,
    threshold_slots,
)
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.cluster import simulate_cluster
from tests.conftest import make_job

# 1 GPU + 2 CPU per worker, 1 CPU per PS; machines of 4 GPUs, 16 CPUs
CL2 = Cluster.uniform(2, (4.0, 16.0, 64.0, 64.0))


def job(i: int, gang: int, work: int, arrival: int = 0, **kw: object):  # type: ignore[no-untyped-def]
    # tau = 1e-3 slot/sample and tiny gradients: ≈ 1000 samples per worker-slot
    return make_job(
        i,
        arrival=arrival,
        samples=work,
        batch=64,
        gamma=float(gang),
        grad_mb=0.0,
        requested_workers=gang,
        **kw,
    )


def runs(wl: ClusterWorkload, sched: str, **kw: object) -> dict[int, dict[int, str]]:
    """slot -> {job: allocation detail} from the event log."""
    res = simulate_cluster(wl, make_scheduler("cluster", sched, **kw), np.random.default_rng(0))
    out: dict[int, dict[int, str]] = defaultdict(dict)
    for e in res.events:
        if e.kind == "allocate":
            out[e.slot][e.job] = e.detail
    return out


def test_las_queue_counts_thresholds_reached() -> None:
    th = threshold_slots((16.0,), 60.0)
    assert th == (960.0,)  # 16 GPU-hours in worker·minutes
    assert las_queue(959.0, th) == 0 and las_queue(960.0, th) == 1
    assert las_queue(5.0, (1.0, 4.0, 8.0)) == 2
    assert las_key(0, 9, 1) < las_key(1, 0, 0)
    assert srtf_key(1.0, 5, 9) < srtf_key(2.0, 0, 0)


def test_starvation_promotion_needs_a_positive_factor_and_enough_waiting() -> None:
    assert not starving(100.0, 1.0, 0.0)
    assert starving(10.0, 5.0, 2.0) and not starving(9.0, 5.0, 2.0)


def test_thresholds_must_increase() -> None:
    with pytest.raises(ValueError):
        threshold_slots((16.0, 8.0), 60.0)


def test_packed_placement_fills_the_freest_machine_first() -> None:
    free = np.array(CL2.capacity)
    free[0, 0] = 1.0  # machine 0 has a single free GPU
    p = place_packed(free, job(0, 4, 10), 4, 1)
    assert p is not None and p.machines == (1,) and p.workers == (4,) and p.ps == (1,)


def test_tiresias_demotes_a_job_past_the_threshold_and_lets_a_newcomer_preempt_it() -> None:
    # threshold 2 GPU-hours = 2 worker-slots with 1-h slots: A (4 workers) is demoted
    # after its first slot; B arrives at slot 2 in queue 0 and takes the 8 GPUs.
    a, b = job(0, 4, 40_000), job(1, 8, 8_000, arrival=2)
    wl = ClusterWorkload((a, b), CL2, horizon=40)
    r = runs(wl, "tiresias", thresholds_gpu_hours=(2.0,))
    assert set(r[0]) == {0} and set(r[1]) == {0}
    assert set(r[2]) == {1}  # A preempted: B's gang needs the whole cluster
    assert 0 in r[4] and 1 not in r[4]  # B done after ~1 slot, A resumes
    assert "workers=8" in r[2][1]  # whole gang, never a partial one


def test_tiresias_without_demotion_is_fifo_with_skip_ahead() -> None:
    a, b, c = job(0, 6, 60_000), job(1, 4, 4_000, arrival=1), job(2, 2, 2_000, arrival=1)
    wl = ClusterWorkload((a, b, c), CL2, horizon=40)
    r = runs(wl, "tiresias", thresholds_gpu_hours=(1e6,))
    # A holds 6 GPUs; B (4) does not fit, C (2) skips ahead of it
    assert set(r[1]) == {0, 2}


def test_srtf_runs_the_shortest_remaining_job_and_preempts_a_longer_one() -> None:
    long_, short = job(0, 8, 80_000), job(1, 4, 4_000, arrival=2)
    wl = ClusterWorkload((long_, short), CL2, horizon=40)
    r = runs(wl, "srtf")
    assert set(r[0]) == {0}
    assert set(r[2]) == {1}  # short job's remaining time is smaller: long one is preempted
    assert set(r[3]) == {0}


def test_running_jobs_keep_their_placement_between_slots() -> None:
    a, b = job(0, 2, 20_000), job(1, 2, 20_000, arrival=1)
    wl = ClusterWorkload((a, b), CL2, horizon=40)
    r = runs(wl, "tiresias", thresholds_gpu_hours=(1e6,))
    assert r[0][0] == r[3][0]


def test_gang_allocate_selects_by_aggregate_capacity_in_priority_order() -> None:
    jobs = {0: job(0, 6, 1), 1: job(1, 4, 1), 2: job(2, 2, 1)}
    gangs = {0: (6, 1), 1: (4, 1), 2: (2, 1)}
    out, _ = gang_allocate([0, 1, 2], jobs, gangs, {}, np.array(CL2.capacity))
    assert set(out) == {0, 2}
    assert sum(out[0].workers) == 6 and sum(out[2].workers) == 2


@pytest.mark.parametrize("sched", ["tiresias", "srtf"])
def test_gang_that_cannot_fit_the_empty_cluster_is_rejected(sched: str) -> None:
    wl = ClusterWorkload((job(0, 16, 10), job(1, 2, 10)), CL2, horizon=5)
    res = simulate_cluster(wl, make_scheduler("cluster", sched), np.random.default_rng(0))
    assert res.metrics["rejected_jobs"] == 1.0 and res.metrics["completed_jobs"] == 1.0


@pytest.mark.parametrize("sched", ["tiresias", "srtf"])
def test_jobs_without_a_requested_gang_draw_one_from_the_run_generator(sched: str) -> None:
    jobs = tuple(make_job(i, arrival=i, samples=500, batch=8) for i in range(4))
    wl = ClusterWorkload(jobs, CL2, horizon=30)
    m1 = simulate_cluster(wl, make_scheduler("cluster", sched), np.random.default_rng(3)).metrics
    m2 = simulate_cluster(wl, make_scheduler("cluster", sched), np.random.default_rng(3)).metrics
    assert m1 == m2 and m1["completed_jobs"] == 4.0


@pytest.mark.parametrize("lo, hi", [(1, 30), (1, 1), (3, 4), (1, 1000)])
def test_gang_sizes_draw_in_one_call_what_one_call_per_job_draws(lo: int, hi: int) -> None:
    """gang_sizes' single bulk draw is the per-job stream (numbers and the state after)."""
    from dmlsched.schedulers._shared.gang import gang_sizes
    from dmlsched.schedulers._shared.placement import bundle

    jobs = [make_job(i, gamma=4.0, requested_workers=2 if i % 3 == 0 else None) for i in range(50)]
    one, bulk = np.random.default_rng(7), np.random.default_rng(7)
    expect = [
        bundle(j, j.requested_workers if j.requested_workers else int(one.integers(lo, hi + 1)))
        for j in jobs
    ]
    got = gang_sizes(jobs[:17], bulk, lo, hi) + gang_sizes(jobs[17:], bulk, lo, hi)
    assert got == expect
    assert int(one.integers(0, 2**40)) == int(bulk.integers(0, 2**40))
    # ignoring requests draws for every job
    one, bulk = np.random.default_rng(8), np.random.default_rng(8)
    expect = [bundle(j, int(one.integers(lo, hi + 1))) for j in jobs]
    assert gang_sizes(jobs, bulk, lo, hi, use_requested=False) == expect
    assert gang_sizes([], bulk, lo, hi) == []
    assert int(one.integers(0, 2**40)) == int(bulk.integers(0, 2**40))
