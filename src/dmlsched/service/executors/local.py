"""The ``local`` executor: every run's PSs and workers as processes on this host.

The machines are emulated as the service's agents emulate them (``local``
emulation, :mod:`dmlsched.service.agent`): named machines of a declared
capacity whose processes all run here, reaching each other on 127.0.0.1.  A
run of job j on a placement is, per machine, its PSs and workers —
:mod:`dmlsched.testbed.trainer` processes with the same arguments the Slurm
executor's job steps get (:func:`~dmlsched.service.executors.slurm.trainer_args`),
numbered over the placement in its order — in the run's folder
``<workdir>/job-<j>/inc-<run>``.

A background thread reconciles every ``interval`` seconds, as the Slurm
executor does: a run whose processes have all exited ended — ``done`` when PS
0 says so, ``stopped`` when the executor asked, else ``failed`` with the exit
codes; a run no longer wanted gets SIGTERM (PSs finish the step and
checkpoint, workers follow them), SIGKILL after ``stop_timeout``; a wanted run
starts once its predecessor is gone, from the newest complete checkpoint
(:func:`dmlsched.testbed.trainer.latest_checkpoint`), on machines that are up.
PSs also checkpoint every ``checkpoint_every`` steps (sync jobs).

:meth:`LocalExecutor.kill_machine` is the failure drill: the machine dies —
every process on it SIGKILLed, the machine down until :meth:`revive_machine`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from dmlsched.errors import InvalidInput
from dmlsched.service.executors.base import Assignment, JobReport, Node, Slice
from dmlsched.service.executors.slurm import (
    checkpoint_work,
    read_json,
    trainer_args,
    work_of,
)
from dmlsched.testbed.trainer import latest_checkpoint

__all__ = ["LocalExecutor"]


@dataclass
class _Proc:
    machine: str
    role: str  # ps | worker
    popen: subprocess.Popen


@dataclass
class _Run:
    n: int
    assignment: Assignment
    dir: Path
    procs: list[_Proc] = field(default_factory=list)
    resume: str = ""
    stop_at: float | None = None
    ended: str | None = None  # done | stopped | failed
    detail: str = ""

    def alive(self) -> list[_Proc]:
        return [p for p in self.procs if p.popen.poll() is None]


@dataclass
class _Job:
    id: int
    dir: Path
    runs: list[_Run] = field(default_factory=list)
    done: bool = False

    @property
    def current(self) -> _Run | None:
        return self.runs[-1] if self.runs else None


class LocalExecutor:
    """Runs the service's decisions as local processes (module docstring)."""

    name: ClassVar[str] = "local"

    def __init__(
        self,
        machines: Mapping[str, Sequence[float]],
        workdir: Path,
        *,
        python: str = sys.executable,
        interval: float = 0.2,
        stop_timeout: float = 20.0,
        retries: int = 2,
        checkpoint_every: int = 20,
    ) -> None:
        if not machines:
            raise InvalidInput("machines", {}, "at least one machine")
        self.capacity = {m: tuple(float(x) for x in c) for m, c in machines.items()}
        self.workdir = Path(workdir)
        self.python = python
        self.interval = interval
        self.stop_timeout = stop_timeout
        self.retries = retries
        self.checkpoint_every = checkpoint_every
        self.down: set[str] = set()
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._want: dict[int, Assignment] = {}
        self._jobs: dict[int, _Job] = {}
        self._reports: dict[int, JobReport] = {}

    # ---- the contract ----------------------------------------------------------------
    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._thread = threading.Thread(target=self._loop, name="local-executor", daemon=True)
        self._thread.start()

    def nodes(self) -> list[Node]:
        with self._lock:
            return [Node(m, c, m not in self.down, "127.0.0.1") for m, c in self.capacity.items()]

    def apply(self, want: Mapping[int, Assignment]) -> None:
        with self._lock:
            self._want = dict(want)
        self._wake.set()

    def poll(self) -> dict[int, JobReport]:
        with self._lock:
            return dict(self._reports)

    def close(self) -> None:
        """Stop every run (checkpointing), wait up to ``stop_timeout``, then SIGKILL the rest."""
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
                self._kill(run.alive())

    # ---- failure drills --------------------------------------------------------------
    def kill_machine(self, name: str) -> None:
        """The machine dies: SIGKILL every process on it; it stays down until revived."""
        with self._lock:
            self.down.add(name)
            for job in self._jobs.values():
                if job.current is not None:
                    self._kill([p for p in job.current.alive() if p.machine == name])

    def revive_machine(self, name: str) -> None:
        with self._lock:
            self.down.discard(name)
        self._wake.set()

    # ---- the loop --------------------------------------------------------------------
    def _alive_runs(self) -> list[_Run]:
        with self._lock:
            return [j.current for j in self._jobs.values() if j.current and j.current.ended is None]

    def _loop(self) -> None:
        while not self._closing.is_set():
            self.reconcile()
            self._wake.wait(self.interval)
            self._wake.clear()

    def reconcile(self) -> None:
        """One pass: end, stop and start runs so that the processes say the wanted state."""
        with self._lock:
            now = time.monotonic()
            for job in self._jobs.values():
                run = job.current
                if run is not None and run.ended is None and not run.alive():
                    self._end(job, run)
            for j, a in self._want.items():
                job = self._jobs.setdefault(j, _Job(j, self.workdir / f"job-{j}"))
                if job.done:
                    continue
                run = job.current
                if run is not None and run.ended is None:
                    if run.assignment != a:
                        self._stop(run, now)
                    continue
                if any(
                    s.machine not in self.capacity or s.machine in self.down for s in a.placement
                ):
                    continue  # a machine it needs is down (or unknown): the service moves it
                failed = [r for r in job.runs if r.assignment == a and r.ended == "failed"]
                if len(failed) > self.retries:
                    continue  # it fails here whatever we do: the report says why
                self._launch(job, a)
            for j, job in self._jobs.items():
                run = job.current
                if j not in self._want and run is not None and run.ended is None:
                    self._stop(run, now)
            self._report()

    def _launch(self, job: _Job, a: Assignment) -> None:
        n = len(job.runs)
        run_dir = job.dir / f"inc-{n}"
        run_dir.mkdir(parents=True, exist_ok=True)
        resume = latest_checkpoint(job.dir, n - 1) if n else ""
        common = trainer_args(
            a,
            n,
            run_dir=run_dir,
            hosts=["127.0.0.1"] * len(a.placement),
            resume=resume,
            checkpoint_every=self.checkpoint_every,
        )
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        run = _Run(n, a, run_dir, resume=resume)
        index = {"ps": 0, "worker": 0}
        log = (run_dir / "processes.log").open("ab")
        try:
            for s in a.placement:
                for role, count in (("ps", s.ps), ("worker", s.workers)):
                    for _ in range(count):
                        cmd = [self.python, "-m", "dmlsched.testbed.trainer", "--role", role]
                        cmd += ["--index", str(index[role]), *common]
                        index[role] += 1
                        p = subprocess.Popen(
                            cmd, cwd=run_dir, stdout=log, stderr=subprocess.STDOUT, env=env
                        )
                        run.procs.append(_Proc(s.machine, role, p))
        finally:
            log.close()
        job.runs.append(run)

    def _stop(self, run: _Run, now: float) -> None:
        if run.stop_at is None:
            run.stop_at = now
            for p in run.alive():  # PSs checkpoint; workers ignore it and follow their PSs
                with contextlib.suppress(ProcessLookupError):
                    p.popen.send_signal(signal.SIGTERM)
        elif now - run.stop_at > self.stop_timeout:
            self._kill(run.alive())

    @staticmethod
    def _kill(procs: list[_Proc]) -> None:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                p.popen.kill()
        for p in procs:
            p.popen.wait()

    def _end(self, job: _Job, run: _Run) -> None:
        if _read_done(run.dir):
            run.ended, job.done = "done", True
        elif run.stop_at is not None:
            run.ended = "stopped"
        else:
            run.ended = "failed"
            codes = sorted({p.popen.returncode for p in run.procs})
            down = sorted({p.machine for p in run.procs} & self.down)
            run.detail = f"processes exited with {codes}" + (
                f" (machine {', '.join(down)} down)" if down else ""
            )

    def _report(self) -> None:
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
                state = "running" if ps0 else "starting"
            running: tuple[Slice, ...] = ()
            if run.ended is None:
                alive = run.alive()
                running = tuple(
                    Slice(
                        s.machine,
                        sum(p.machine == s.machine and p.role == "worker" for p in alive),
                        sum(p.machine == s.machine and p.role == "ps" for p in alive),
                    )
                    for s in run.assignment.placement
                    if any(p.machine == s.machine for p in alive)
                )
            out[j] = JobReport(
                job=j,
                incarnation=run.assignment.incarnation,
                run=run.n,
                state=state,
                work=work,
                saved=saved,
                loss=loss,
                resumed=work_of(run.resume),
                running=running,
                detail=run.detail,
                extra={"pids": [p.popen.pid for p in run.procs]},
            )
        self._reports = out


def _read_done(run_dir: Path) -> bool:
    return bool(read_json(run_dir / "ps-0.json").get("done"))
