"""The engine's incremental machine usage against usage summed afresh every decision.

With whole-number demands (as in the Philly workload) the engine keeps
usage across decisions, re-adding only changed placements
(:func:`dmlsched.sim.cluster.usage.integral_usage`); the run must give the same
bytes (metrics, events, series) as the full recompute, for random workloads
and the cluster schedulers that hold placements across decisions.
"""

from __future__ import annotations

import dataclasses
import math
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.model.cluster import Cluster
from dmlsched.rng import make_rng
from dmlsched.sim import cluster as engine
from dmlsched.sim.cluster import state
from dmlsched.workloads.synthetic import synthetic_cluster
from tests.conftest import engine_test_scheduler


def _whole(wl, scale: int, gangs: bool):  # type: ignore[no-untyped-def]
    """``wl`` with demands and capacities rounded up to whole numbers (× ``scale``)."""
    jobs = tuple(
        dataclasses.replace(
            j,
            worker_demand=tuple(float(math.ceil(d * scale)) for d in j.worker_demand),
            ps_demand=tuple(float(math.ceil(d * scale)) for d in j.ps_demand),
            requested_workers=min(j.max_workers, 1 + j.id % 4) if gangs else j.requested_workers,
        )
        for j in wl.jobs
    )
    c = wl.cluster
    cluster = Cluster(np.ceil(np.asarray(c.capacity) * scale), c.resources)
    return dataclasses.replace(wl, jobs=jobs, cluster=cluster)


def _same(a, b) -> None:  # type: ignore[no-untyped-def]
    assert a.events == b.events
    assert a.metrics.keys() == b.metrics.keys()
    for k, v in a.metrics.items():
        assert (math.isnan(v) and math.isnan(b.metrics[k])) or v == b.metrics[k], k
    for k, v in a.series.items():
        assert v.tobytes() == b.series[k].tobytes(), k


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    jobs=st.integers(1, 25),
    machines=st.integers(1, 6),
    scale=st.sampled_from([1, 3, 10]),
    gangs=st.booleans(),
    name=st.sampled_from(["fifo", "tiresias", "srtf", "drf", "dorm"]),
)
def test_incremental_usage_gives_the_same_bytes_as_recomputing_it(
    seed: int, jobs: int, machines: int, scale: int, gangs: bool, name: str
) -> None:
    wl = _whole(synthetic_cluster(jobs, machines, 40, make_rng(seed)), scale, gangs)
    assert engine.integral_usage(wl.jobs, wl.cluster)
    with mock.patch.object(state, "SUMMED_MACHINES", 0):  # kept on these few machines too
        fast = engine.simulate_cluster(
            wl, engine_test_scheduler("cluster", name), make_rng(seed + 1)
        )
    with mock.patch.object(state, "integral_usage", return_value=False):
        slow = engine.simulate_cluster(
            wl, engine_test_scheduler("cluster", name), make_rng(seed + 1)
        )
    _same(fast, slow)


def test_fractional_or_huge_demands_fall_back_to_the_full_recompute() -> None:
    wl = synthetic_cluster(5, 3, 10, make_rng(0))
    whole = _whole(wl, 1, False)
    assert engine.integral_usage(whole.jobs, whole.cluster)
    half = dataclasses.replace(whole.jobs[0], worker_demand=(0.5, *whole.jobs[0].worker_demand[1:]))
    assert not engine.integral_usage((half, *whole.jobs[1:]), whole.cluster)
    huge = dataclasses.replace(
        whole.jobs[0], worker_demand=(2.0**21, *whole.jobs[0].worker_demand[1:])
    )
    assert not engine.integral_usage((huge, *whole.jobs[1:]), whole.cluster)
    big = Cluster(np.full_like(whole.cluster.capacity, 2.0**51), whole.cluster.resources)
    assert not engine.integral_usage(whole.jobs, big)


def test_machines_within_the_bound_but_totals_beyond_it_give_the_same_bytes() -> None:
    """Usage is kept per machine, but its column sums are summed afresh (totals ≥ 2^50)."""
    wl = _whole(synthetic_cluster(12, 6, 30, make_rng(5)), 1, True)
    big = Cluster(np.full_like(wl.cluster.capacity, 2.0**49), wl.cluster.resources)
    wl = dataclasses.replace(wl, cluster=big)
    assert engine.integral_usage(wl.jobs, wl.cluster)
    assert big.capacity.sum(axis=0).min() >= 2.0**50
    for name in ("fifo", "tiresias"):
        with mock.patch.object(state, "SUMMED_MACHINES", 0):
            fast = engine.simulate_cluster(wl, engine_test_scheduler("cluster", name), make_rng(6))
        with mock.patch.object(state, "integral_usage", return_value=False):
            slow = engine.simulate_cluster(wl, engine_test_scheduler("cluster", name), make_rng(6))
        _same(fast, slow)
        assert fast.series["utilization"].max() > 0
