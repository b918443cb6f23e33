"""Event-driven time: holding a decision in bulk gives the same bytes as asking every slot.

Every registered ``cluster`` scheduler runs on workloads where decisions can
hold (long horizons, few arrivals, requested gangs, Tiresias queues that
fill up), once with the engine honouring ``until`` and once asking every
slot; metrics, the event log and the utilization series must be equal bit
for bit.  Schedulers that never say ``until`` pass trivially.  The other
settings' engines step every slot (their module docstrings say why).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from dmlsched.errors import InvalidDecision
from dmlsched.model.cluster import ClusterDecision
from dmlsched.rng import make_rng
from dmlsched.schedulers.protocols import make_scheduler, scheduler_names
from dmlsched.sim.cluster import simulate_cluster
from dmlsched.workloads.synthetic import synthetic_cluster
from tests.conftest import engine_test_scheduler


def _workloads() -> list[tuple[str, object]]:
    sparse = synthetic_cluster(12, 6, 80, make_rng(3))  # few arrivals over a long horizon
    busy = synthetic_cluster(30, 4, 40, make_rng(4))
    gangs = dataclasses.replace(
        sparse,
        jobs=tuple(
            dataclasses.replace(j, requested_workers=min(j.max_workers, 1 + j.id % 4))
            for j in sparse.jobs
        ),
        slot_seconds=3600.0,
    )
    return [("sparse", sparse), ("busy", busy), ("gangs", gangs)]


def _same(a: object, b: object) -> None:
    assert a.events == b.events  # type: ignore[attr-defined]
    ma, mb = a.metrics, b.metrics  # type: ignore[attr-defined]
    assert ma.keys() == mb.keys()
    for k in ma:
        assert (math.isnan(ma[k]) and math.isnan(mb[k])) or ma[k] == mb[k], k
    for k, v in a.series.items():  # type: ignore[attr-defined]
        assert v.tobytes() == b.series[k].tobytes(), k  # type: ignore[attr-defined]


_PARAMS = {"tiresias": [{}, {"thresholds_gpu_hours": (2.0, 6.0)}]}


@pytest.mark.parametrize("name", scheduler_names("cluster"))
def test_every_cluster_scheduler_gives_the_same_bytes_with_and_without_event_driven_time(
    name: str,
) -> None:
    for label, wl in _workloads():
        for params in _PARAMS.get(name, [{}]):
            runs = [
                simulate_cluster(
                    wl,
                    engine_test_scheduler("cluster", name, **params),
                    make_rng(7),
                    event_driven=ed,
                )
                for ed in (True, False)
            ]
            try:
                _same(*runs)
            except AssertionError as e:
                raise AssertionError(f"{name} {params} on {label}: {e}") from e


def test_fifo_and_tiresias_are_asked_far_less_often_than_every_slot() -> None:
    _, wl = _workloads()[0]
    for name in ("fifo", "tiresias", "pd-ors", "oasis", "srtf", "dorm"):
        sched = engine_test_scheduler("cluster", name)
        calls = []
        inner = sched.decide

        def decide(view, inner=inner, calls=calls):  # type: ignore[no-untyped-def]
            calls.append(view.slot)
            return inner(view)

        sched.decide = decide
        simulate_cluster(wl, sched, make_rng(7))
        assert len(calls) < wl.horizon // 2, (name, calls)


def test_drf_holds_only_when_its_round_robin_pointer_comes_back() -> None:
    # DRF's placements depend on a pointer carried across slots: it holds sometimes
    _, wl = _workloads()[0]
    sched = make_scheduler("cluster", "drf")
    calls = []
    inner = sched.decide

    def decide(view):  # type: ignore[no-untyped-def]
        calls.append(view.slot)
        return inner(view)

    sched.decide = decide
    simulate_cluster(wl, sched, make_rng(7))
    assert len(calls) < wl.horizon


class _Liar:
    """Promises to hold, then would have changed its mind: the promise is its own."""

    name = "liar"
    setting = "cluster"

    def reset(self, cluster, horizon, rng):  # type: ignore[no-untyped-def]
        self.T = horizon

    def decide(self, view):  # type: ignore[no-untyped-def]
        return ClusterDecision(until=view.slot)  # not after this slot


def test_an_until_that_is_not_a_later_slot_is_refused() -> None:
    wl = synthetic_cluster(3, 2, 5, make_rng(0))
    with pytest.raises(InvalidDecision, match="until"):
        simulate_cluster(wl, _Liar(), make_rng(0))


def test_bulk_progress_is_the_slot_by_slot_sum() -> None:
    # a job whose work needs many slots: the cumulative sum credits the same floats
    rate = 0.1
    acc = 0.0
    for _ in range(1000):
        acc += rate
    assert float(np.cumsum(np.concatenate([[0.0], np.full(1000, rate)]))[-1]) == acc
