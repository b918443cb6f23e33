"""The ``local`` executor: every run's PSs and workers as processes on this host.

The machines are emulated as the service's agents emulate them (``local``
emulation, :mod:`dmlsched.service.agent`): named machines of a declared
capacity whose processes all run here, reaching each other on 127.0.0.1.  A
run of job j on a placement is, per machine, its PSs and workers —
:mod:`dmlsched.testbed.trainer` processes with the same arguments the Slurm
executor's job steps get (:func:`~dmlsched.service.executors.base.trainer_args`),
numbered over the placement in its order — in the run's folder
``<workdir>/job-<j>/inc-<run>``.  They are forked from a server process that
imported PyTorch and the trainer once (``multiprocessing``'s ``forkserver``),
so a process starts in milliseconds rather than the seconds (tens of seconds
on a loaded host) a fresh interpreter takes to import PyTorch: a move, a
resize or a preemption stays cheap, as with the agents' own fork server
(:mod:`dmlsched.testbed.agent`).

The bookkeeping is the Slurm executor's (:class:`~dmlsched.service.executors.base.Reconciler`):
a run has ended when all its processes have exited (``failed`` with their
exit codes unless it finished or was asked to stop); a run no longer wanted
gets SIGTERM (PSs finish the step and checkpoint, workers follow them),
SIGKILL after ``stop_timeout``.  PSs also checkpoint every
``checkpoint_every`` steps (sync jobs).

:meth:`LocalExecutor.kill_machine` is the failure drill: the machine dies —
every process on it SIGKILLed, the machine down until :meth:`revive_machine`.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import ClassVar

from dmlsched.errors import InvalidInput
from dmlsched.service.executors.base import (
    Assignment,
    Node,
    Reconciler,
    Run,
    Slice,
    trainer_args,
)

__all__ = ["LocalExecutor"]


# what the fork server imports once, before it forks any trainer
_PRELOAD = ["torch", "sklearn.datasets", "dmlsched.testbed.trainer", "dmlsched.testbed.training"]


def _trainer(argv: list[str], log: str) -> None:
    """A forked trainer process: ``python -m dmlsched.testbed.trainer ARGV >>log 2>&1``."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.chdir(os.path.dirname(log))
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the PS installs its own (checkpoint)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the service's, not the run's
    from dmlsched.testbed.trainer import main

    sys.exit(main(argv))


@dataclass
class _Proc:
    machine: str
    role: str  # ps | worker
    proc: BaseProcess


@dataclass
class _Run(Run):
    procs: list[_Proc] = field(default_factory=list)

    def alive(self) -> list[_Proc]:
        return [p for p in self.procs if p.proc.is_alive()]


class LocalExecutor(Reconciler[_Run, None]):
    """Runs the service's decisions as local processes (module docstring)."""

    name: ClassVar[str] = "local"

    def __init__(
        self,
        machines: Mapping[str, Sequence[float]],
        workdir: Path,
        *,
        interval: float = 0.2,
        stop_timeout: float = 20.0,
        retries: int = 2,
        checkpoint_every: int = 20,
    ) -> None:
        if not machines:
            raise InvalidInput("machines", {}, "at least one machine")
        super().__init__(
            workdir,
            interval=interval,
            stop_timeout=stop_timeout,
            retries=retries,
            checkpoint_every=checkpoint_every,
        )
        self.capacity = {m: tuple(float(x) for x in c) for m, c in machines.items()}
        self.down: set[str] = set()
        self._forks = multiprocessing.get_context("forkserver")

    def start(self) -> None:
        self._forks.set_forkserver_preload(_PRELOAD)
        for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # read once, by the fork server
            os.environ.setdefault(var, "1")
        super().start()

    def nodes(self) -> list[Node]:
        with self._lock:
            return [Node(m, c, m not in self.down, "127.0.0.1") for m, c in self.capacity.items()]

    # ---- failure drills --------------------------------------------------------------
    def kill_machine(self, name: str) -> None:
        """The machine dies: SIGKILL every process on it; it stays down until revived."""
        with self._lock:
            self.down.add(name)
            for job in self._jobs.values():
                if job.current is not None:
                    _kill([p for p in job.current.alive() if p.machine == name])

    def revive_machine(self, name: str) -> None:
        with self._lock:
            self.down.discard(name)
        self._wake.set()

    # ---- the processes ---------------------------------------------------------------
    def _observe(self) -> None:
        return None  # the processes are this process's children: asked directly

    def _gone(self, run: _Run, seen: None) -> bool:
        return not run.alive()

    def _launch(self, n: int, a: Assignment, run_dir: Path, resume: str) -> _Run:
        common = trainer_args(
            a,
            n,
            run_dir=run_dir,
            hosts=["127.0.0.1"] * len(a.placement),
            resume=resume,
            checkpoint_every=self.checkpoint_every,
        )
        run = _Run(n, a, run_dir, resume=resume)
        index = {"ps": 0, "worker": 0}
        log = str(run_dir / "processes.log")
        for s in a.placement:
            for role, count in (("ps", s.ps), ("worker", s.workers)):
                for _ in range(count):
                    argv = ["--role", role, "--index", str(index[role]), *common]
                    index[role] += 1
                    p = self._forks.Process(target=_trainer, args=(argv, log), daemon=False)
                    p.start()
                    run.procs.append(_Proc(s.machine, role, p))
        return run

    def _ask_stop(self, run: _Run, seen: None) -> None:
        for p in run.alive():  # PSs checkpoint; workers ignore it and follow their PSs
            assert p.proc.pid is not None  # started
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.proc.pid, signal.SIGTERM)

    def _force_stop(self, run: _Run) -> None:
        _kill(run.alive())

    def _failure(self, run: _Run) -> str:
        codes = sorted({p.proc.exitcode for p in run.procs if p.proc.exitcode is not None})
        down = sorted({p.machine for p in run.procs} & self.down)
        return f"processes exited with {codes}" + (
            f" (machine {', '.join(down)} down)" if down else ""
        )

    def _running(self, run: _Run) -> tuple[Slice, ...]:
        alive = run.alive()
        return tuple(
            Slice(
                s.machine,
                sum(p.machine == s.machine and p.role == "worker" for p in alive),
                sum(p.machine == s.machine and p.role == "ps" for p in alive),
            )
            for s in run.assignment.placement
            if any(p.machine == s.machine for p in alive)
        )

    def _extra(self, run: _Run) -> dict[str, object]:
        return {"pids": [p.proc.pid for p in run.procs]}


def _kill(procs: list[_Proc]) -> None:
    for p in procs:
        with contextlib.suppress(ProcessLookupError):
            p.proc.kill()
    for p in procs:
        p.proc.join()
