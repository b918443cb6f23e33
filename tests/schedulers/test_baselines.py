"""FIFO and DRF behave as PD-ORS Sec. V describes them."""

from __future__ import annotations

import numpy as np

from dmlsched.model.cluster import Cluster, ClusterWorkload
from dmlsched.rng import make_rng
from dmlsched.schedulers._shared.placement import bundle, place_round_robin, task_order
from dmlsched.schedulers.cluster.drf import Drf
from dmlsched.schedulers.cluster.fifo import Fifo
from dmlsched.sim.cluster import simulate_cluster
from tests.conftest import make_job


def test_task_order_interleaves_ps_among_workers() -> None:
    assert task_order(4, 2) == [True, False, False, True, False, False]
    assert task_order(1, 1) == [True, False]
    assert task_order(0, 0) == []


def test_round_robin_cycles_machines_from_the_pointer() -> None:
    free = np.tile([4.0, 8.0, 64.0, 64.0], (3, 1))
    job = make_job(worker_demand=(1.0, 1.0, 0.0, 0.0), ps_demand=(0.0, 1.0, 0.0, 0.0))
    placed = place_round_robin(free, job, workers=4, ps=2, start=1)
    assert placed is not None
    p, nxt = placed
    # order PS,W,W,PS,W,W on machines 1,2,0,1,2,0
    assert dict(zip(p.machines, zip(p.workers, p.ps, strict=True), strict=True)) == {
        0: (2, 0),
        1: (0, 2),
        2: (2, 0),
    }
    assert nxt == 1


def test_round_robin_is_all_or_nothing() -> None:
    free = np.tile([1.0, 8.0, 64.0, 64.0], (2, 1))
    assert place_round_robin(free, make_job(), workers=3, ps=2, start=0) is None


def test_bundle_keeps_ratio_and_limits() -> None:
    assert bundle(make_job(gamma=3.0, batch=10), 7) == (7, 3)
    assert bundle(make_job(gamma=3.0, batch=5), 7) == (5, 2)
    job = make_job(mode="async", samples=10, b_ext=2.0, ps_bandwidth=9.0, gamma=2.0)
    assert bundle(job, 8) == (4, 2)  # 4 × 2 Gbps ≤ 9 Gbps


def test_fifo_blocks_behind_a_head_job_that_does_not_fit() -> None:
    cl = Cluster.uniform(1, (4.0, 64.0, 64.0, 64.0))
    running = make_job(0, arrival=0, gamma=10.0, samples=10**7)
    head = make_job(1, arrival=1, gamma=10.0)
    small = make_job(2, arrival=1, gamma=10.0, batch=1)
    wl = ClusterWorkload(jobs=(running, head, small), cluster=cl, horizon=3)
    res = simulate_cluster(wl, Fifo(min_workers=3, max_workers=3), make_rng(0))
    # job 0 holds 3 of 4 GPUs; job 1 needs 3 and blocks job 2, which would fit
    assert res.metrics["admitted_jobs"] == 1
    assert [e.kind for e in res.events if e.job == 2] == ["arrive"]


def test_fifo_rejects_a_head_job_that_cannot_fit_an_empty_cluster() -> None:
    cl = Cluster.uniform(1, (4.0, 64.0, 64.0, 64.0))
    huge = make_job(0, arrival=0, gamma=10.0)
    small = make_job(1, arrival=0, gamma=10.0, batch=1)
    wl = ClusterWorkload(jobs=(huge, small), cluster=cl, horizon=2)
    res = simulate_cluster(wl, Fifo(min_workers=5, max_workers=5), make_rng(0))
    assert res.metrics["rejected_jobs"] == 1 and res.metrics["admitted_jobs"] == 1


def test_drf_equalizes_dominant_shares() -> None:
    cl = Cluster.uniform(1, (12.0, 12.0, 64.0, 64.0))
    gpu_heavy = make_job(
        0,
        batch=100,
        gamma=100.0,
        worker_demand=(1.0, 0.0, 0.0, 0.0),
        ps_demand=(0.0, 1.0, 0.0, 0.0),
    )
    cpu_heavy = make_job(
        1,
        batch=100,
        gamma=100.0,
        worker_demand=(0.0, 1.0, 0.0, 0.0),
        ps_demand=(0.0, 1.0, 0.0, 0.0),
    )
    wl = ClusterWorkload(jobs=(gpu_heavy, cpu_heavy), cluster=cl, horizon=1)
    res = simulate_cluster(wl, Drf(), make_rng(0))
    alloc = {e.job: e.detail for e in res.events if e.kind == "allocate"}
    # job 0: 12 GPUs (share 1.0) and 1 CPU; job 1: 10 CPUs + 1 PS CPU = 11/12 of CPUs
    assert alloc[0].startswith("workers=12 ps=1")
    assert alloc[1].startswith("workers=10 ps=1")
