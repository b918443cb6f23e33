"""The measured speed model: placement keys, accumulation, interpolation, engine hook."""

from __future__ import annotations

import numpy as np
import pytest

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import Cluster, ClusterDecision, ClusterWorkload, Placement
from dmlsched.model.speed.measured import (
    AppProfile,
    MeasuredSpeed,
    accumulation,
    normalise_placement,
    step_time,
)
from dmlsched.sim.cluster import simulate_cluster
from tests.conftest import make_job


def toy_profile() -> AppProfile:
    """Placement 1: step 1 s at local batch 10, 2 s at 20 (sync 0.1 / 0.2); 4 GPUs on 1 node:
    step 3 s flat; grid: nodes 1 (r=1: 1 s) and nodes 3 (r=3: 3 s), both flat in batch."""
    pl = {
        (1,): (np.array([10.0, 20.0]), np.array([1.0, 2.0]), np.array([0.1, 0.2])),
        (4,): (np.array([10.0, 20.0]), np.array([3.0, 3.0]), np.array([0.5, 0.5])),
    }
    grid = np.array(
        [
            [1, 1, 10, 1.0, 0.0],
            [1, 1, 20, 1.0, 0.0],
            [3, 3, 10, 3.0, 1.0],
            [3, 3, 20, 3.0, 1.0],
        ]
    )
    return AppProfile("toy", pl, grid, max_local_bsz=20)


def test_placement_is_normalised_to_its_smallest_rotation_without_zeros() -> None:
    assert normalise_placement((2, 0, 1, 1)) == (1, 1, 2)
    assert normalise_placement((1, 2, 1)) == (1, 1, 2)
    assert normalise_placement((0, 0)) == ()


def test_accumulation_splits_a_large_local_batch_as_pollux_does() -> None:
    assert accumulation(2048, 6, 1024) == (342, 0)  # ⌈2048/6⌉ = 342 fits one GPU
    # ⌈6400/24⌉ = 267 > 200: one extra micro-step of ⌈267/2⌉ = 134
    assert accumulation(6400, 24, 200) == (134, 1)


def test_measured_placement_interpolates_linearly_in_local_batch_and_clamps() -> None:
    prof = toy_profile()
    assert step_time(prof, (1,), 15) == pytest.approx((1.5, 0.15))
    assert step_time(prof, (1,), 5) == pytest.approx((1.0, 0.1))  # clamped to 10
    assert step_time(prof, (1,), 99) == pytest.approx((2.0, 0.2))  # clamped to 20


def test_unmeasured_placement_interpolates_over_nodes_and_replicas() -> None:
    prof = toy_profile()
    # (1, 1): 2 nodes, 2 replicas: halfway between the (1, 1) and (3, 3) grid points
    assert step_time(prof, (1, 1), 10) == pytest.approx((2.0, 0.5))


def test_rate_is_samples_per_step_over_step_time_in_slots() -> None:
    prof = toy_profile()
    job = make_job(0, batch=20)
    speed = MeasuredSpeed({"toy": prof}, {0: "toy"}, slot_seconds=60.0)
    # one GPU, local batch 20: 2 s per step of 20 samples -> 600 samples per 60-s slot
    assert speed.rate(job, (0,), (1,), (1,)) == pytest.approx(600.0)
    # four GPUs on one machine, local batch 5 (clamped to 10): 3 s per 20 samples
    assert speed.rate(job, (0,), (4,), (1,)) == pytest.approx(20 / 3.0 * 60)
    assert speed.rate(job, (0,), (1,), (0,)) == 0.0  # no PS, as Eq. (1)


def test_rate_ignores_where_the_ps_sits_because_jobs_all_reduce() -> None:
    speed = MeasuredSpeed({"toy": toy_profile()}, {0: "toy"}, slot_seconds=60.0)
    job = make_job(0, batch=20)
    assert speed.rate(job, (0, 1), (1, 0), (0, 1)) == speed.rate(job, (0,), (1,), (1,))


def test_unknown_application_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="application"):
        MeasuredSpeed({"toy": toy_profile()}, {0: "bert"}, slot_seconds=60.0)


class _Fixed:
    """A speed model of 250 samples per slot, whatever the placement."""

    def rate(self, job, machines, workers, ps) -> float:  # type: ignore[no-untyped-def]
        return 250.0 if sum(workers) and sum(ps) else 0.0


class _One:
    name = "one"
    setting = "cluster"

    def reset(self, cluster, horizon, rng) -> None:  # type: ignore[no-untyped-def]
        pass

    def decide(self, view):  # type: ignore[no-untyped-def]
        return ClusterDecision(
            allocations={j: Placement((0,), (1,), (1,)) for j in (*view.pending, *view.active)}
        )


def test_engine_uses_the_workloads_speed_model_when_set() -> None:
    jobs = (make_job(0, samples=1000, epochs=1),)
    cl = Cluster.uniform(1, (4.0, 8.0, 64.0, 64.0))
    base = ClusterWorkload(jobs, cl, horizon=10)
    fixed = ClusterWorkload(jobs, cl, horizon=10, speed=_Fixed())
    rng = np.random.default_rng(0)
    m = simulate_cluster(fixed, _One(), rng).metrics
    assert m["mean_jct"] == pytest.approx(4.0)  # 1000 / 250 per slot
    assert simulate_cluster(base, _One(), rng).metrics["mean_jct"] != m["mean_jct"]


def test_engine_stopping_early_leaves_every_metric_but_utilisation_unchanged() -> None:
    jobs = (make_job(0, samples=1000, epochs=1), make_job(1, arrival=2, samples=500))
    cl = Cluster.uniform(1, (4.0, 8.0, 64.0, 64.0))
    short = simulate_cluster(ClusterWorkload(jobs, cl, 12, speed=_Fixed()), _One(), None).metrics  # type: ignore[arg-type]
    long = simulate_cluster(ClusterWorkload(jobs, cl, 5000, speed=_Fixed()), _One(), None).metrics  # type: ignore[arg-type]
    for k in ("mean_jct", "completed_jobs", "total_utility"):
        assert short[k] == long[k]
