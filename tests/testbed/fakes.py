"""An executor without processes for the edge-cloud and geo loops, whose jobs work at a
given rate while placed (with the clock of :mod:`dmlsched.testbed.fake`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from dmlsched.model.cluster import Placement
from dmlsched.testbed.executor import SlotActions, canonical
from dmlsched.testbed.fake import FakeClock
from dmlsched.testbed.runtime import JobStatus


class RateExecutor:
    """Job j's work counter grows by ``rate(j, placement)`` per slot of clock while placed;
    its processes' running time is its workers and PSs × the time placed.  ``apply`` takes
    ``apply_seconds`` of clock (stops and starts) before the new placements run."""

    def __init__(
        self,
        jobs: Iterable[int],
        rate: Callable[[int, Placement], float],
        clock: FakeClock,
        slot_seconds: float,
        apply_seconds: float = 0.0,
    ) -> None:
        self.rate = rate
        self.clock = clock
        self.slot_seconds = slot_seconds
        self.apply_seconds = apply_seconds
        self.work = dict.fromkeys(jobs, 0.0)
        self.preemptions = dict.fromkeys(self.work, 0)
        self.moves = dict.fromkeys(self.work, 0)
        self.resizes = dict.fromkeys(self.work, 0)
        self.placed: dict[int, Placement] = {}
        self.spans: dict[int, list[tuple[float, float, Placement]]] = {j: [] for j in self.work}
        self.applied: list[dict[int, Placement]] = []
        self._since = clock.time()

    def _run(self) -> None:
        now = self.clock.time()
        slots = (now - self._since) / self.slot_seconds
        for j, p in self.placed.items():
            self.work[j] += self.rate(j, p) * slots
        self._since = now

    def apply(self, allocations: Mapping[int, Placement]) -> SlotActions:
        self._run()
        self.applied.append(dict(allocations))
        out = SlotActions()
        want = {j: p for j, p in allocations.items() if canonical(p)}
        for j, cur in self.placed.items():
            new = want.get(j)
            if new is not None and canonical(new) == canonical(cur):
                out.actions[j] = "keep"
                continue
            self._close(j)
            if new is None:
                out.actions[j] = "stop"
                self.preemptions[j] += 1
            elif set(new.machines) == set(cur.machines):
                out.actions[j] = "resize"
                self.resizes[j] += 1
            else:
                out.actions[j] = "move"
                self.moves[j] += 1
        self.clock.sleep(self.apply_seconds)
        self._since = self.clock.time()
        for j, p in want.items():
            if out.actions.get(j) != "keep":
                out.actions.setdefault(j, "start")
                self.spans[j].append((self.clock.time(), float("inf"), p))
        self.placed = want
        return out

    def _close(self, j: int) -> None:
        if self.spans[j] and self.spans[j][-1][1] == float("inf"):
            a, _, p = self.spans[j][-1]
            self.spans[j][-1] = (a, self.clock.time(), p)

    def measure(self) -> dict[int, JobStatus]:
        self._run()
        return {j: JobStatus(work=w) for j, w in self.work.items()}

    def process_seconds(self, job: int, t0: float, t1: float) -> dict[int, tuple[float, float]]:
        out: dict[int, tuple[float, float]] = {}
        for a, b, p in self.spans[job]:
            lo, hi = max(t0, a), min(t1, b, self.clock.time())
            if hi <= lo:
                continue
            for m, w, s in zip(p.machines, p.workers, p.ps, strict=True):
                x, y = out.get(m, (0.0, 0.0))
                out[m] = (x + w * (hi - lo), y + s * (hi - lo))
        return out

    def loss_curves(self) -> dict[int, list[tuple[float, float, float]]]:
        return {j: [] for j in self.work}

    def close(self) -> None:
        self._run()
        for j in self.placed:
            self._close(j)
        self.placed = {}
