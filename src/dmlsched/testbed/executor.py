"""The executor: make one slot's validated ``cluster`` decision so on the testbed.

:meth:`ClusterExecutor.apply` takes the slot's allocations (job id →
:class:`~dmlsched.model.cluster.Placement`, already validated by the
engine's checks) and, per job, compared with what runs now:

* ``keep``   — same placement: the processes go on untouched;
* ``start``  — not running, allocated: start (from its checkpoint if it ran
  before — a *resume*);
* ``stop``   — running, not allocated: preempt (checkpoint, end);
* ``resize`` — same machines, other counts: checkpoint, restart;
* ``move``   — other machines: checkpoint, restart there.

All stops are requested at once and awaited together, then all starts are
issued — so a slot's reconfiguration costs one checkpoint round, not one per
job.  A job whose processes reported completion is never restarted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from dmlsched.model.cluster import Placement
from dmlsched.testbed.runtime import Job, JobStatus, Testbed, TrainSpec

__all__ = ["ClusterExecutor", "SlotActions", "canonical"]


def canonical(p: Placement | None) -> tuple[tuple[int, int, int], ...]:
    """Placement as sorted (machine, workers, ps) triples without empty machines."""
    if p is None:
        return ()
    return tuple(
        sorted(
            (int(m), int(w), int(s))
            for m, w, s in zip(p.machines, p.workers, p.ps, strict=True)
            if w or s
        )
    )


@dataclass
class SlotActions:
    """What :meth:`ClusterExecutor.apply` did, by job id."""

    actions: dict[int, str] = field(default_factory=dict)
    seconds: float = 0.0


class ClusterExecutor:
    """Jobs by id on one :class:`Testbed` (module docstring)."""

    def __init__(self, testbed: Testbed, specs: Mapping[int, TrainSpec]) -> None:
        self.tb = testbed
        self.jobs = {j: Job(testbed, s) for j, s in specs.items()}
        self.preemptions = dict.fromkeys(specs, 0)
        self.moves = dict.fromkeys(specs, 0)
        self.resizes = dict.fromkeys(specs, 0)

    def apply(self, allocations: Mapping[int, Placement]) -> SlotActions:
        import time

        t0 = time.monotonic()
        out = SlotActions()
        want = {j: canonical(p) for j, p in allocations.items() if canonical(p)}
        # jobs that finished on their own since the last slot: close their incarnation
        for job in self.jobs.values():
            if job.running:
                job.poll_exited()
        stopping: list[int] = []
        for j, job in self.jobs.items():
            if not job.running:
                continue
            cur = canonical(job.placement)
            new = want.get(j, ())
            if new == cur:
                out.actions[j] = "keep"
                continue
            if not new:
                out.actions[j] = "stop"
                self.preemptions[j] += 1
            elif {m for m, _, _ in new} == {m for m, _, _ in cur}:
                out.actions[j] = "resize"
                self.resizes[j] += 1
            else:
                out.actions[j] = "move"
                self.moves[j] += 1
            stopping.append(j)
        for j in stopping:
            self.jobs[j].request_stop()
        for j in stopping:
            self.jobs[j].wait_stopped()
        for j, trip in want.items():
            job = self.jobs[j]
            if job.running or job.status().done:
                continue
            p = Placement(
                tuple(m for m, _, _ in trip),
                tuple(w for _, w, _ in trip),
                tuple(s for *_, s in trip),
            )
            job.start(p)
            out.actions.setdefault(j, "resume" if job.incs[:-1] else "start")
        out.seconds = time.monotonic() - t0
        return out

    def measure(self) -> dict[int, JobStatus]:
        """Every job's measurements so far."""
        for job in self.jobs.values():
            if job.running:
                job.poll_exited()
        return {j: job.status() for j, job in self.jobs.items()}

    def loss_curves(self) -> dict[int, list[tuple[float, float, float]]]:
        """Each job's (wall time, work, mean loss) rows (:meth:`Job.loss_curve`)."""
        return {j: job.loss_curve() for j, job in self.jobs.items()}

    def process_seconds(self, job: int, t0: float, t1: float) -> dict[int, tuple[float, float]]:
        """Machine → (worker-seconds, PS-seconds) job ``job``'s processes ran within [t0, t1)."""
        return self.jobs[job].process_seconds(t0, t1)

    def close(self) -> None:
        """Stop everything still running (checkpointing it)."""
        running = [job for job in self.jobs.values() if job.running]
        for job in running:
            job.request_stop()
        for job in running:
            job.wait_stopped()
