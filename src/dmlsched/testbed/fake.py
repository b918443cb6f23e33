"""A testbed without processes: a clock that jumps and an executor that computes.

:func:`.run.run_cluster` takes its executor and clock as arguments; these
stand-ins let it run in milliseconds, so that contract checks can drive the
testbed's loop with any scheduler (``dmlsched.checks.drivers``):

* :class:`FakeClock` — wall time that advances only when the loop sleeps;
* :class:`FakeExecutor` — "trains" each placed job at the engine's speed
  model's rate × ``speedup`` per slot it is placed (a job is done when its
  work reaches E·K, at the moment it did), and records what it was asked to
  keep, start, stop, resize or move as :class:`.executor.ClusterExecutor`
  does.  ``speedup`` > the engine's slack makes it report more work than a
  placement can do: the engine must refuse it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dmlsched.model.cluster import ClusterJob, Placement
from dmlsched.model.speed.pdors import job_rate
from dmlsched.testbed.executor import SlotActions, canonical
from dmlsched.testbed.runtime import JobStatus

__all__ = ["FakeClock", "FakeExecutor", "FakeTestbed"]


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


@dataclass
class FakeExecutor:
    """Each placed job's work grows at its Eq. (1) rate × ``speedup`` per slot of clock."""

    jobs: Mapping[int, ClusterJob]
    clock: FakeClock
    slot_seconds: float
    speedup: float = 1.0
    preemptions: dict[int, int] = field(default_factory=dict)
    moves: dict[int, int] = field(default_factory=dict)
    resizes: dict[int, int] = field(default_factory=dict)
    placed: dict[int, Placement] = field(default_factory=dict)
    status: dict[int, JobStatus] = field(default_factory=dict)
    applied: list[dict[int, Placement]] = field(default_factory=list)
    # job -> (from, to or None while it runs, placement) of each of its placements
    spans: dict[int, list[tuple[float, float | None, Placement]]] = field(default_factory=dict)
    _last: float = 0.0

    def __post_init__(self) -> None:
        self.status = {j: JobStatus() for j in self.jobs}
        for counter in (self.preemptions, self.moves, self.resizes):
            counter.update(dict.fromkeys(self.jobs, 0))
        self._last = self.clock.time()

    def _run(self) -> None:
        """Work done since the last look, by the placements that stood."""
        now = self.clock.time()
        slots = (now - self._last) / self.slot_seconds
        self._last = now
        for j, p in self.placed.items():
            st, job = self.status[j], self.jobs[j]
            if st.done or slots <= 0:
                continue
            rate = job_rate(job, p.machines, p.workers, p.ps) * self.speedup
            need = job.total_work - st.work
            if rate * slots >= need > 0:
                st.done_time = now - (slots - need / rate) * self.slot_seconds
                st.work, st.done = job.total_work, True
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
        self._span(placed)
        self.placed = placed
        return out

    def _span(self, placed: Mapping[int, Placement]) -> None:
        """End the spans of placements that change, start those of new ones."""
        now = self.clock.time()
        for j, p in self.placed.items():
            if canonical(placed.get(j)) != canonical(p):
                a, _, q = self.spans[j][-1]
                self.spans[j][-1] = (a, now, q)
        for j, p in placed.items():
            cur = self.placed.get(j)
            if cur is None or canonical(cur) != canonical(p):
                self.spans.setdefault(j, []).append((now, None, p))

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
        for a, b, p in self.spans.get(job, ()):
            lo, hi = max(t0, a), min(t1, now if b is None else b)
            if hi <= lo:
                continue
            for m, w, s in zip(p.machines, p.workers, p.ps, strict=True):
                x, y = out.get(m, (0.0, 0.0))
                out[m] = (x + w * (hi - lo), y + s * (hi - lo))
        return out

    def loss_curves(self) -> dict[int, list[tuple[float, float, float]]]:
        return {j: [] for j in self.jobs}

    def close(self) -> None:
        self._run()
        self._span({})
        self.placed = {}
