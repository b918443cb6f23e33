from __future__ import annotations

import numpy as np
import pytest

from dmlsched.model.edge_cloud import EdgeCloud
from dmlsched.offline.edge_cloud import lp_lower_bound
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.edge_cloud import edge_cloud_workload
from tests.edge_cloud_helpers import ec_job, workload


def test_lp_bound_of_one_job_by_hand() -> None:
    # D = 1, p = 2 at n = 1: best is the edge worker at slots 1 and 2 (Δ = 1):
    # Σ_t x n/(EDB)(t − r) = 1·1/2 + 2·1/2 = 1.5 (the cloud at Δ = 5 is worse)
    lb = lp_lower_bound(workload((ec_job(minibatches=2, delay=(1, 5)),)))
    assert lb.value == pytest.approx(1.5)
    assert lb.status == "Optimal"


def test_lp_spreads_a_chunk_fractionally_and_uses_the_cloud_in_parallel() -> None:
    # two chunks, one edge worker: one chunk-slot per slot on the edge, the rest in the cloud
    job = ec_job(chunks=2, minibatches=2, delay=(1, 1))
    lb = lp_lower_bound(workload((job,), EdgeCloud(((0,),), ((0,),), 2)))
    # both chunks can train in slots 1–2 (edge + cloud): 2 chunks × (1·1/4 + 2·1/4) = 1.5
    assert lb.value == pytest.approx(1.5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lp_is_below_every_scheduler_total_jct(seed) -> None:
    wl_rng, rng = spawn(make_rng(seed), 2)
    wl = edge_cloud_workload(6, 4, 8, wl_rng)
    lb = lp_lower_bound(wl).value
    for name in ("a-online", "srtf", "batchsche"):
        jct = simulate("edge-cloud", wl, make_scheduler("edge-cloud", name), rng).metrics
        assert lb <= jct["total_jct"] + 1e-6
        assert lb <= jct["fractional_flow"] + 1e-6


def test_speed_augmentation_lowers_the_online_jct() -> None:
    wl_rng, _ = spawn(make_rng(4), 2)
    wl = edge_cloud_workload(5, 4, 6, wl_rng)
    jct = [
        simulate(
            "edge-cloud",
            wl.with_speedup(s),
            make_scheduler("edge-cloud", "a-online"),
            np.random.default_rng(0),
        ).metrics["total_jct"]
        for s in (1.0, 1.5)
    ]
    assert jct[1] < jct[0]
