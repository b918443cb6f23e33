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

:class:`Reconciler` is what every executor here shares: the runs of each job
in ``<workdir>/job-<j>/inc-<run>`` (the trainer's checkpoints and status files
in them), and a background thread that every ``interval`` seconds ends runs
whose processes are gone (``done`` when PS 0 says so, ``stopped`` when the
executor asked, else ``failed``), stops runs no longer wanted (a polite stop —
PSs finish the step and checkpoint, workers follow them — then a forced one
after ``stop_timeout``), starts wanted runs once their predecessor is gone,
from the newest complete checkpoint, on machines that are up (a failed
assignment at most ``retries`` more times), and reports every job's newest
run.  An executor says how its processes are started, stopped, seen and
placed (the ``_``-methods it overrides).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Generic, Protocol, TypeVar

from dmlsched.errors import InvalidInput
from dmlsched.testbed.runtime import TrainSpec
from dmlsched.testbed.trainer import latest_checkpoint

__all__ = [
    "RUN_STATES",
    "Assignment",
    "Executor",
    "JobReport",
    "Node",
    "Reconciler",
    "Run",
    "Slice",
    "checkpoint_work",
    "read_json",
    "trainer_args",
    "work_of",
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


def trainer_args(
    a: Assignment,
    run: int,
    *,
    run_dir: Path,
    hosts: list[str],
    resume: str,
    checkpoint_every: int = 0,
) -> list[str]:
    """The arguments every process of a run gives :mod:`dmlsched.testbed.trainer` (its
    role and index come after): the run's PSs and workers numbered over the placement in
    its order, each machine's address in ``hosts``; pure."""
    ps_m = [k for k, s in enumerate(a.placement) for _ in range(s.ps)]
    w_m = [k for k, s in enumerate(a.placement) for _ in range(s.workers)]
    t = a.train
    return [
        "--job",
        str(t.job),
        "--inc",
        str(run),
        "--job-dir",
        str(run_dir.parent),
        "--ps",
        str(len(ps_m)),
        "--workers",
        str(len(w_m)),
        "--ps-machines",
        ",".join(map(str, ps_m)),
        "--worker-machines",
        ",".join(map(str, w_m)),
        "--hosts",
        ",".join(hosts),
        "--bind",
        "0.0.0.0",
        "--target",
        f"{t.target:.17g}",
        "--mode",
        t.mode,
        "--batch",
        str(t.batch),
        "--hidden",
        str(t.hidden),
        "--lr",
        f"{t.lr:.17g}",
        "--seed",
        str(t.seed),
        "--resume",
        resume or "none",
        "--checkpoint-every",
        str(checkpoint_every),
    ]


def read_json(path: Path) -> dict:
    """A status file's fields; ``{}`` while it is missing or half written."""
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def work_of(checkpoint: str) -> float:
    """The work counter a checkpoint folder holds (0 for none)."""
    return (
        float(read_json(Path(checkpoint) / "shard-0.json").get("work", 0.0)) if checkpoint else 0.0
    )


def checkpoint_work(job_dir: Path, upto: int) -> float:
    """The work of the newest complete checkpoint of runs ``0..upto`` of a job."""
    return work_of(latest_checkpoint(job_dir, upto))


@dataclass
class Run:
    """One run of a job: started for ``assignment`` in folder ``dir``, resuming ``resume``."""

    n: int
    assignment: Assignment
    dir: Path
    resume: str = ""
    stop_at: float | None = None  # when the executor asked it to stop (monotonic)
    ended: str | None = None  # done | stopped | failed
    detail: str = ""


R = TypeVar("R", bound=Run)
S = TypeVar("S")  # what a pass reads of the processes first (Slurm: its queue)


@dataclass
class JobRuns(Generic[R]):
    """Every run of one job, oldest first; ``done`` once one reached the target."""

    id: int
    dir: Path
    runs: list[R] = field(default_factory=list)
    done: bool = False

    @property
    def current(self) -> R | None:
        return self.runs[-1] if self.runs else None


class Reconciler(Generic[R, S]):
    """The bookkeeping every executor here shares (module docstring).

    ``_lock`` guards the runs (a pass, a failure drill, ``close``); the desired
    state and the reports are replaced whole, so ``apply`` and ``poll`` never
    wait for a pass (which may be waiting on Slurm's commands).
    """

    name: ClassVar[str]

    def __init__(
        self,
        workdir: Path,
        *,
        interval: float,
        stop_timeout: float,
        retries: int,
        checkpoint_every: int,
    ) -> None:
        self.workdir = Path(workdir)
        self.interval = interval
        self.stop_timeout = stop_timeout
        self.retries = retries
        self.checkpoint_every = checkpoint_every
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._want: dict[int, Assignment] = {}
        self._jobs: dict[int, JobRuns[R]] = {}
        self._reports: dict[int, JobReport] = {}

    # ---- what an executor says ---------------------------------------------------------
    def nodes(self) -> list[Node]:
        raise NotImplementedError

    def _observe(self) -> S:
        """What the pass needs to know of the processes, read before it takes the lock."""
        raise NotImplementedError

    def _gone(self, run: R, seen: S) -> bool:
        """Whether every process of a live run has ended."""
        raise NotImplementedError

    def _launch(self, n: int, a: Assignment, run_dir: Path, resume: str) -> R:
        """Start run ``n`` of ``a`` in ``run_dir`` (it exists), resuming ``resume``."""
        raise NotImplementedError

    def _ask_stop(self, run: R, seen: S) -> None:
        """Ask a run to stop: its PSs finish the step and checkpoint, workers follow."""
        raise NotImplementedError

    def _force_stop(self, run: R) -> None:
        """End a run now (after ``stop_timeout``, or at ``close``)."""
        raise NotImplementedError

    def _failure(self, run: R) -> str:
        """Why a run ended that neither finished nor was asked to stop."""
        raise NotImplementedError

    def _started(self, run: R, seen: S, ps0: Mapping[str, object]) -> bool:
        """Whether a live run trains (``ps0``: PS 0's status, ``{}`` before its first)."""
        return bool(ps0)

    def _running(self, run: R) -> tuple[Slice, ...]:
        """Per machine, the processes of a live run that run there."""
        raise NotImplementedError

    def _extra(self, run: R) -> dict[str, object]:
        return {}

    # ---- the contract ----------------------------------------------------------------
    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(
            target=self._loop, name=f"{self.name}-executor", daemon=True
        )
        self._thread.start()

    def apply(self, want: Mapping[int, Assignment]) -> None:
        self._want = dict(want)
        self._wake.set()

    def poll(self) -> dict[int, JobReport]:
        return dict(self._reports)

    def close(self) -> None:
        """Stop every run (checkpointing), wait up to ``stop_timeout``, then force the rest."""
        self.apply({})
        deadline = time.monotonic() + self.stop_timeout + 5.0
        while time.monotonic() < deadline and self._alive_runs():
            time.sleep(0.1)
        self._closing.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10.0)
        with self._lock:
            for run in self._alive_runs():
                self._force_stop(run)

    # ---- the loop --------------------------------------------------------------------
    def _alive_runs(self) -> list[R]:
        with self._lock:
            return [j.current for j in self._jobs.values() if j.current and j.current.ended is None]

    def _loop(self) -> None:
        while not self._closing.is_set():
            self._tick()
            self._wake.wait(self.interval)
            self._wake.clear()

    def _tick(self) -> None:
        self.reconcile()

    def reconcile(self) -> None:
        """One pass: end, stop and start runs so that the processes say the wanted state."""
        seen = self._observe()
        want = self._want
        with self._lock:
            up = {n.name for n in self.nodes() if n.up}
            now = time.monotonic()
            for job in self._jobs.values():
                run = job.current
                if run is not None and run.ended is None and self._gone(run, seen):
                    self._end(job, run)
            for j, a in want.items():
                job = self._jobs.setdefault(j, JobRuns(j, self.workdir / f"job-{j}"))
                if job.done:
                    continue
                run = job.current
                if run is not None and run.ended is None:
                    if run.assignment != a:
                        self._stop(run, seen, now)
                    continue
                if any(s.machine not in up for s in a.placement):
                    continue  # a machine it needs is down (or unknown): the service moves it
                failed = [r for r in job.runs if r.assignment == a and r.ended == "failed"]
                if len(failed) > self.retries:
                    continue  # it fails here whatever we do: the report says why
                n = len(job.runs)
                run_dir = job.dir / f"inc-{n}"
                run_dir.mkdir(parents=True, exist_ok=True)
                resume = latest_checkpoint(job.dir, n - 1) if n else ""
                job.runs.append(self._launch(n, a, run_dir, resume))
            for j, job in self._jobs.items():
                run = job.current
                if j not in want and run is not None and run.ended is None:
                    self._stop(run, seen, now)
            self._reports = self._report(seen)

    def _stop(self, run: R, seen: S, now: float) -> None:
        if run.stop_at is None:
            run.stop_at = now
            self._ask_stop(run, seen)
        elif now - run.stop_at > self.stop_timeout:
            self._force_stop(run)

    def _end(self, job: JobRuns[R], run: R) -> None:
        if read_json(run.dir / "ps-0.json").get("done"):
            run.ended, job.done = "done", True
        elif run.stop_at is not None:
            run.ended = "stopped"
        else:
            run.ended = "failed"
            run.detail = self._failure(run)

    def _report(self, seen: S) -> dict[int, JobReport]:
        out: dict[int, JobReport] = {}
        for j, job in self._jobs.items():
            run = job.current
            if run is None:
                continue
            ps0 = read_json(run.dir / "ps-0.json")
            saved = checkpoint_work(job.dir, run.n)
            work = float(ps0.get("work", saved))
            loss = ps0["loss_sum"] / ps0["loss_n"] if ps0.get("loss_n") else None
            if run.ended is not None:
                state = run.ended
            elif run.stop_at is not None:
                state = "stopping"
            else:
                state = "running" if self._started(run, seen, ps0) else "starting"
            out[j] = JobReport(
                job=j,
                incarnation=run.assignment.incarnation,
                run=run.n,
                state=state,
                work=work,
                saved=saved,
                loss=loss,
                resumed=work_of(run.resume),
                running=self._running(run) if run.ended is None else (),
                detail=run.detail,
                extra=self._extra(run),
            )
        return out
