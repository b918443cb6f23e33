"""The engine collects cyclic garbage in batches during a run and restores the thresholds."""

from __future__ import annotations

import gc

from dmlsched.rng import make_rng
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim import engine
from dmlsched.workloads.synthetic import synthetic_cluster


class _Spy:
    """FIFO that records the collector's thresholds while it decides."""

    name = "fifo"
    setting = "cluster"

    def __init__(self) -> None:
        self.inner = make_scheduler("cluster", "fifo")
        self.seen: list[tuple[int, int, int]] = []

    def reset(self, *args: object) -> None:
        self.inner.reset(*args)

    def decide(self, view):  # type: ignore[no-untyped-def]
        self.seen.append(gc.get_threshold())
        return self.inner.decide(view)


def test_thresholds_are_raised_during_a_run_and_restored_after() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        spy = _Spy()
        engine.simulate("cluster", synthetic_cluster(5, 3, 10, make_rng(1)), spy, make_rng(2))
        assert spy.seen and set(spy.seen) == {(engine.GC_BATCH, engine.GC_OLDER, 10)}
        assert gc.get_threshold() == (700, 10, 10)
        # thresholds already above the batch sizes are kept
        gc.set_threshold(10**6, 10**3, 5)
        spy = _Spy()
        engine.simulate("cluster", synthetic_cluster(5, 3, 10, make_rng(1)), spy, make_rng(2))
        assert set(spy.seen) == {(10**6, 10**3, 5)}
        assert gc.get_threshold() == (10**6, 10**3, 5)
    finally:
        gc.set_threshold(*before)
