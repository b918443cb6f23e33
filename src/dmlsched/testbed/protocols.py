"""What the testbed's closed loops (:func:`.run.run_cluster`, :mod:`.edge_geo`) ask of an
executor and a clock — :class:`.executor.ClusterExecutor` and wall time, or the fakes of
:mod:`.fake` (no process, a clock that jumps)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Protocol, cast

from dmlsched.model.cluster import Placement
from dmlsched.testbed.executor import SlotActions
from dmlsched.testbed.runtime import JobStatus

__all__ = ["WALL_CLOCK", "Clock", "Executor"]


class Clock(Protocol):
    """Wall time (seconds) and waiting."""

    def time(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


WALL_CLOCK: Clock = cast(Clock, time)  # the time module has both


class Executor(Protocol):
    """An executor of slot decisions (:class:`~.executor.ClusterExecutor`'s methods): makes
    a slot's placements so, measures the jobs, and counts what it did to them."""

    preemptions: dict[int, int]
    moves: dict[int, int]
    resizes: dict[int, int]

    def apply(self, allocations: Mapping[int, Placement]) -> SlotActions: ...

    def measure(self) -> dict[int, JobStatus]: ...

    def process_seconds(self, job: int, t0: float, t1: float) -> dict[int, tuple[float, float]]:
        """Machine → (worker-seconds, PS-seconds) job ``job``'s processes ran in [t0, t1)."""
        ...

    def loss_curves(self) -> dict[int, list[tuple[float, float, float]]]:
        """Each job's (wall time, work, mean loss) rows."""
        ...

    def close(self) -> None: ...
