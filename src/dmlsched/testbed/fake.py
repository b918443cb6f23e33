"""A testbed without processes: a clock that jumps and an executor that computes.

The closed loops (:func:`.run.run_cluster`, :mod:`.edge_geo`) take their executor
and clock as arguments (:mod:`.protocols`); these stand-ins let them run in
milliseconds, so that contract checks and tests can drive the testbed's loops
with any scheduler (``dmlsched.checks.drivers``):

* :class:`FakeClock` — wall time that advances only when the loop sleeps;
* :class:`FakeExecutor` — "trains" each placed job at a given rate per slot it
  is placed (a job is done when its work reaches its total, at the moment it
  did), and records what it was asked to keep, start, stop, resize or move as
  :class:`.executor.ClusterExecutor` does.  :meth:`FakeExecutor.at_model_speed`
  is the cluster setting's: the engine's speed model's rate (Eq. (1)) ×
  ``speedup``; ``speedup`` > the engine's slack makes it report more work than
  a placement can do: the engine must refuse it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from dmlsched.model.cluster import ClusterJob, Placement
from dmlsched.model.speed.pdors import job_rate
from dmlsched.testbed.executor import SlotActions, canonical
from dmlsched.testbed.runtime import JobStatus

__all__ = ["FakeClock", "FakeExecutor", "FakeTestbed", "Rate"]

Rate = Callable[[int, Placement], float]
"""Work per slot job ``j`` does under a placement."""


@dataclass
class FakeClock:
    """Seconds that pass only when someone sleeps."""

    now: float = 0.0

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


@dataclass(frozen=True)
class FakeTestbed:
    """What :func:`.run.run_cluster` reads of a testbed besides its executor."""

    notes: tuple[str, ...] = ("fake testbed: no processes",)


class Span(NamedTuple):
    """One placement of a job, from ``start`` to ``end`` (None while it stands)."""

    start: float
    end: float | None
    placement: Placement


@dataclass
class FakeExecutor:
    """Each placed job's work grows by ``rate(j, placement)`` per slot of clock until it
    reaches ``total[j]`` (``math.inf``: never); its processes' running time is its workers
    and PSs × the time placed.  ``apply`` takes ``apply_seconds`` of clock (stops and
    starts, in which no job works) before the new placements run."""

    total: Mapping[int, float]
    rate: Rate
    clock: FakeClock
    slot_seconds: float
    apply_seconds: float = 0.0
    preemptions: dict[int, int] = field(default_factory=dict)
    moves: dict[int, int] = field(default_factory=dict)
    resizes: dict[int, int] = field(default_factory=dict)
    placed: dict[int, Placement] = field(default_factory=dict)
    status: dict[int, JobStatus] = field(default_factory=dict)
    applied: list[dict[int, Placement]] = field(default_factory=list)
    spans: dict[int, list[Span]] = field(default_factory=dict)
    _last: float = 0.0

    @classmethod
    def at_model_speed(
        cls,
        jobs: Mapping[int, ClusterJob],
        clock: FakeClock,
        slot_seconds: float,
        speedup: float = 1.0,
    ) -> FakeExecutor:
        """Cluster jobs that work at their placement's Eq. (1) rate × ``speedup`` until
        their work is E·K."""

        def rate(j: int, p: Placement) -> float:
            return job_rate(jobs[j], p.machines, p.workers, p.ps) * speedup

        return cls({j: job.total_work for j, job in jobs.items()}, rate, clock, slot_seconds)

    def __post_init__(self) -> None:
        self.status = {j: JobStatus() for j in self.total}
        for counter in (self.preemptions, self.moves, self.resizes):
            counter.update(dict.fromkeys(self.total, 0))
        self._last = self.clock.time()

    def _run(self) -> None:
        """Work done since the last look, by the placements that stood."""
        now = self.clock.time()
        slots = (now - self._last) / self.slot_seconds
        self._last = now
        for j, p in self.placed.items():
            st, total = self.status[j], self.total[j]
            if st.done or slots <= 0:
                continue
            rate = self.rate(j, p)
            need = total - st.work
            if rate * slots >= need > 0:
                st.done_time = now - (slots - need / rate) * self.slot_seconds
                st.work, st.done = total, True
            else:
                st.work += rate * slots

    def apply(self, allocations: Mapping[int, Placement]) -> SlotActions:
        self._run()
        self.applied.append(dict(allocations))
        out = SlotActions()
        want = {j: p for j, p in allocations.items() if canonical(p)}
        for j, cur in self.placed.items():
            new = want.get(j)
            if new is not None and canonical(new) == canonical(cur):
                out.actions[j] = "keep"
            elif new is None:
                out.actions[j] = "stop"
                self.preemptions[j] += 1
            elif set(new.machines) == set(cur.machines):
                out.actions[j] = "resize"
                self.resizes[j] += 1
            else:
                out.actions[j] = "move"
                self.moves[j] += 1
        for j in want:
            out.actions.setdefault(j, "start")
        placed = {j: p for j, p in want.items() if not self.status[j].done}
        self._end_spans(placed)
        self.clock.sleep(self.apply_seconds)
        self._last = self.clock.time()
        self._start_spans(placed)
        self.placed = placed
        return out

    def _end_spans(self, placed: Mapping[int, Placement]) -> None:
        """End the spans of the placements that ``placed`` changes."""
        now = self.clock.time()
        for j, p in self.placed.items():
            if canonical(placed.get(j)) != canonical(p):
                self.spans[j][-1] = self.spans[j][-1]._replace(end=now)

    def _start_spans(self, placed: Mapping[int, Placement]) -> None:
        """Start the spans of the placements ``placed`` adds or changes."""
        now = self.clock.time()
        for j, p in placed.items():
            cur = self.placed.get(j)
            if cur is None or canonical(cur) != canonical(p):
                self.spans.setdefault(j, []).append(Span(now, None, p))

    def measure(self) -> dict[int, JobStatus]:
        self._run()
        return {
            j: JobStatus(work=s.work, done=s.done, done_time=s.done_time)
            for j, s in self.status.items()
        }

    def process_seconds(self, job: int, t0: float, t1: float) -> dict[int, tuple[float, float]]:
        """Machine → (worker-seconds, PS-seconds) of ``job``'s placements within [t0, t1)."""
        now = self.clock.time()
        out: dict[int, tuple[float, float]] = {}
        for span in self.spans.get(job, ()):
            lo, hi = max(t0, span.start), min(t1, now if span.end is None else span.end)
            if hi <= lo:
                continue
            p = span.placement
            for m, w, s in zip(p.machines, p.workers, p.ps, strict=True):
                x, y = out.get(m, (0.0, 0.0))
                out[m] = (x + w * (hi - lo), y + s * (hi - lo))
        return out

    def loss_curves(self) -> dict[int, list[tuple[float, float, float]]]:
        return {j: [] for j in self.total}

    def close(self) -> None:
        self._run()
        self._end_spans({})
        self.placed = {}
