"""The executor contract: the service decides, an executor makes the decision so and says what runs.

An executor owns the processes of the jobs the service places.  The service
tells it, every slot, the whole desired state — which jobs run, where, in
which incarnation (:class:`Assignment`) — and reads back what really runs
(:class:`JobReport`) and which machines are there (:class:`Node`).  Nothing
it reports is trusted as it stands: the service checks it (the engine state's
``credit`` refuses work the placement cannot have done) and attributes it to
the executor's identity.

Obligations of :meth:`Executor.apply` (idempotent; it never blocks on the
processes — they are started and stopped in the background):

* a job in the assignment runs exactly there: per machine, the named numbers
  of workers and PSs (the PSs numbered over the placement in its order);
* a job whose assignment names a new incarnation is stopped — its PSs finish
  their step and checkpoint — and started again on the new placement from
  that checkpoint (a move or a resize);
* a job not in the assignment is stopped the same way (preempted) and keeps
  its checkpoint for a later start;
* a job whose processes reached the target work is never started again.

:meth:`Executor.poll` reports per job its newest run: its state, the absolute
work its PS 0 counts (samples, or mini-batches in async mode — checkpoints
carry it across runs), the work of the newest complete checkpoint (what a
restart resumes from: work beyond it is lost if a run fails) and where its
processes run, and the work of the checkpoint the run resumed from (the
service counts nothing twice: work between that and what it credited is
lost, redone and credited once).  A run that ends without reaching the target and without
being asked to stop is ``failed`` (a machine lost, a process killed); the
service reschedules the job and the next run resumes from ``saved``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from dmlsched.errors import InvalidInput
from dmlsched.testbed.runtime import TrainSpec

__all__ = [
    "RUN_STATES",
    "Assignment",
    "Executor",
    "JobReport",
    "Node",
    "Slice",
]

RUN_STATES = ("starting", "running", "stopping", "stopped", "done", "failed")


@dataclass(frozen=True)
class Slice:
    """One machine's part of a placement: its workers and PSs."""

    machine: str
    workers: int
    ps: int


@dataclass(frozen=True)
class Assignment:
    """One job's part of a decision: what to train, in which incarnation, where.

    ``placement`` lists the machines in the service's order; PS k and worker k
    are numbered over it in that order.  Demands are per process (GPU, vCPU,
    GB, GB), for executors that reserve resources (Slurm).
    """

    train: TrainSpec
    incarnation: int
    placement: tuple[Slice, ...]
    worker_demand: tuple[float, ...] = (0.0, 1.0, 0.0, 0.0)
    ps_demand: tuple[float, ...] = (0.0, 1.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        if not any(s.workers for s in self.placement) or not any(s.ps for s in self.placement):
            raise InvalidInput(
                f"job {self.train.job} placement", self.placement, "a worker and a PS"
            )
        names = [s.machine for s in self.placement]
        if len(set(names)) != len(names):
            raise InvalidInput(f"job {self.train.job} placement", names, "each machine once")

    @property
    def workers(self) -> int:
        return sum(s.workers for s in self.placement)

    @property
    def ps(self) -> int:
        return sum(s.ps for s in self.placement)

    @staticmethod
    def from_counts(
        train: TrainSpec, incarnation: int, counts: Sequence[tuple[str, int, int]], **kw: object
    ) -> Assignment:
        """From ``(machine, workers, ps)`` triples; machines with nothing are dropped."""
        cut = tuple(Slice(m, int(w), int(s)) for m, w, s in counts if w or s)
        return Assignment(train, incarnation, cut, **kw)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Node:
    """A machine as the executor sees it: capacity (GPU, vCPU, GB, GB) and whether it is up."""

    name: str
    capacity: tuple[float, ...]
    up: bool
    addr: str = ""


@dataclass(frozen=True)
class JobReport:
    """What a job's newest run is doing (see the module docstring)."""

    job: int
    incarnation: int  # the service's incarnation the run was started for
    run: int  # the executor's run number for the job (a new one per start)
    state: str
    work: float
    saved: float
    loss: float | None = None
    resumed: float = 0.0  # the work of the checkpoint the run started from
    running: tuple[Slice, ...] = ()
    detail: str = ""
    extra: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.state not in RUN_STATES:
            raise InvalidInput("state", self.state, " | ".join(RUN_STATES))


class Executor(Protocol):
    """Makes decisions so (module docstring).  ``start`` before use, ``close`` after."""

    name: ClassVar[str]

    def start(self) -> None: ...

    def nodes(self) -> list[Node]:
        """The machines there are (an executor that discovers them: Slurm), up or not."""
        ...

    def apply(self, want: Mapping[int, Assignment]) -> None:
        """The whole desired state: these jobs, there, in these incarnations; no others."""
        ...

    def poll(self) -> dict[int, JobReport]:
        """The newest run of every job the executor has run."""
        ...

    def close(self) -> None:
        """Stop every job (checkpointing it) and release what the executor holds."""
        ...
