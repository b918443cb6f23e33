"""The ``slurm`` executor: each run of a job is a heterogeneous Slurm job, each (role, node) a step.

A run of job j on placement {m0: (w0, s0), m1: (w1, s1)} is one batch job
``<tag>-j<j>-r<run>`` (``--no-requeue``: the service, not Slurm, decides where a
job goes again) with one heterogeneous component per machine — exactly that
node (``-w``), the CPUs and GPUs of its processes — and, in it, one job step per
(role, machine): ``srun --het-group=k --exact -n s_k -J ps`` and ``-n w_k -J
worker``, each task running :mod:`dmlsched.testbed.trainer`.  So ``sacct``
shows every step on its node with its task count, and the processes number
themselves: PS ``base + $SLURM_PROCID``, PSs and workers numbered over the
placement in its order (the agents' rule).  The run's folder
``<workdir>/job-<j>/inc-<run>`` (a file system every node shares; here, the
host's) carries the batch script, ``run.json`` (the run's incarnation,
placement and Slurm job id), the PSs' addresses, their status and their
checkpoints.

Resources: Slurm allocates whole CPUs (at least one per task) and whole GPUs,
so a task takes ⌈vCPU demand⌉ CPUs and ⌈GPU demand⌉ GPUs; with whole demands
a decision the service's capacity check accepts is one Slurm can place, and
memory and disk stay the service's to check (``CR_CPU``).  Heterogeneous jobs
are started by Slurm's backfill scheduler (:mod:`..slurm_cluster` runs it
every second).

The bookkeeping is the local executor's (:class:`~dmlsched.service.executors.base.Reconciler`):
every ``interval`` seconds the loop reads ``squeue`` (and the nodes, every
second); a run has ended when it left the queue (``failed`` with ``sacct``'s
state, e.g. ``NODE_FAIL``, unless it finished or was asked to stop); a run
no longer wanted gets ``scancel -s TERM`` (PSs finish the step and
checkpoint, workers follow them), then ``scancel`` after ``stop_timeout`` (a
run still pending is cancelled at once).  PSs also checkpoint every
``checkpoint_every`` steps (sync jobs), so a run that fails — a node lost —
costs at most that many steps.  A failed run is started again (a new run)
only when every node it needs is up, and at most ``retries`` times for one
assignment.
"""

from __future__ import annotations

import contextlib
import json
import math
import shlex
import sys
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
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
from dmlsched.service.slurm import SlurmClient, SlurmError

__all__ = ["SlurmExecutor", "batch_script"]


def _task_cpus(demand: tuple[float, ...]) -> int:
    return max(1, math.ceil(demand[1] - 1e-9))


def _task_gpus(demand: tuple[float, ...]) -> int:
    return max(0, math.ceil(demand[0] - 1e-9))


def batch_script(
    a: Assignment,
    run: int,
    *,
    name: str,
    run_dir: Path,
    addrs: Mapping[str, str],
    resume: str,
    python: str = sys.executable,
    checkpoint_every: int = 0,
) -> str:
    """The batch script of one run (module docstring); pure."""
    machines = [s.machine for s in a.placement]
    missing = [m for m in machines if m not in addrs]
    if missing:
        raise InvalidInput("placement machine", missing[0], "a Slurm node")
    common = trainer_args(
        a,
        run,
        run_dir=run_dir,
        hosts=[addrs[m] for m in machines],
        resume=resume,
        checkpoint_every=checkpoint_every,
    )
    head = [
        "#!/bin/bash",
        f"#SBATCH --job-name={name}",
        "#SBATCH --no-requeue",
        f"#SBATCH --output={run_dir}/slurm-%j.out",
        f"#SBATCH --chdir={run_dir}",
    ]
    steps = []
    base = {"ps": 0, "worker": 0}
    for k, s in enumerate(a.placement):
        cpus = s.ps * _task_cpus(a.ps_demand) + s.workers * _task_cpus(a.worker_demand)
        gpus = s.ps * _task_gpus(a.ps_demand) + s.workers * _task_gpus(a.worker_demand)
        if k:
            head.append("#SBATCH hetjob")
        gres = f" --gres=gpu:{gpus}" if gpus else ""
        head.append(f"#SBATCH -w {s.machine} -N1 -n1 -c{cpus}{gres}")
        for role, n, demand in (("ps", s.ps, a.ps_demand), ("worker", s.workers, a.worker_demand)):
            if not n:
                continue
            g = _task_gpus(demand) * n
            srun = ["srun", *([f"--het-group={k}"] if len(a.placement) > 1 else [])]
            srun += ["--exact", "-n", str(n)]
            srun += ["-c", str(_task_cpus(demand)), "-J", role]
            srun += [f"--gres=gpu:{g}"] if g else []
            cmd = [python, "-m", "dmlsched.testbed.trainer", "--role", role]
            cmd += ["--index-base", str(base[role]), *common]
            base[role] += n
            steps.append(" ".join(shlex.quote(x) for x in (*srun, *cmd)) + " &")
            steps.append("pids+=($!)")
    body = [
        "export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1",
        "pids=()",
        *steps,
        "rc=0",
        'for p in "${pids[@]}"; do wait "$p" || rc=$?; done',
        "exit $rc",
    ]
    return "\n".join([*head, *body]) + "\n"


@dataclass
class _Run(Run):
    slurm_id: int | None = None
    submitted: float = 0.0  # Unix seconds


_Queue = Mapping[int, list[str]]  # Slurm job id -> its components' states (squeue)


class SlurmExecutor(Reconciler[_Run, _Queue]):
    """Runs the service's decisions as Slurm jobs (module docstring)."""

    name: ClassVar[str] = "slurm"

    def __init__(
        self,
        client: SlurmClient,
        workdir: Path,
        *,
        tag: str = "dmls",
        python: str = sys.executable,
        interval: float = 0.3,
        stop_timeout: float = 30.0,
        retries: int = 2,
        checkpoint_every: int = 20,
    ) -> None:
        if not tag.replace("-", "").isalnum():
            raise InvalidInput("tag", tag, "letters, digits and -")
        super().__init__(
            workdir,
            interval=interval,
            stop_timeout=stop_timeout,
            retries=retries,
            checkpoint_every=checkpoint_every,
        )
        self.client = client
        self.tag = tag
        self.python = python
        self._nodes: list[Node] = []
        self._nodes_read = 0.0
        self.errors: list[str] = []  # Slurm commands that failed (the loop goes on)

    def start(self) -> None:
        self._nodes = self._read_nodes()
        self._nodes_read = time.monotonic()
        super().start()

    def nodes(self) -> list[Node]:
        return list(self._nodes)

    def slurm_ids(self, job: int) -> list[int]:
        """The Slurm job ids of a job's runs, oldest first (for ``sacct``)."""
        with self._lock:
            j = self._jobs.get(job)
            return [r.slurm_id for r in j.runs if r.slurm_id is not None] if j else []

    # ---- the loop --------------------------------------------------------------------
    def _tick(self) -> None:
        try:
            if time.monotonic() - self._nodes_read > 1.0:
                self._nodes = self._read_nodes()
                self._nodes_read = time.monotonic()
            self.reconcile()
        except SlurmError as e:  # the controller restarting, say: try again next time
            self.errors.append(str(e))

    def _read_nodes(self) -> list[Node]:
        return [Node(n.name, n.capacity, n.usable, n.addr) for n in self.client.nodes()]

    def _observe(self) -> _Queue:
        queue: dict[int, list[str]] = {}
        for q in self.client.queue(f"{self.tag}-"):
            queue.setdefault(q.job_id, []).append(q.state)
        return queue

    # ---- the runs --------------------------------------------------------------------
    def _gone(self, run: _Run, seen: _Queue) -> bool:
        return run.slurm_id not in seen

    def _launch(self, n: int, a: Assignment, run_dir: Path, resume: str) -> _Run:
        job = a.train.job
        name = f"{self.tag}-j{job}-r{n}"
        script = batch_script(
            a,
            n,
            name=name,
            run_dir=run_dir,
            addrs={node.name: node.addr for node in self._nodes},
            resume=resume,
            python=self.python,
            checkpoint_every=self.checkpoint_every,
        )
        (run_dir / "job.sh").write_text(script)
        run = _Run(n, a, run_dir, resume=resume, submitted=time.time())
        run.slurm_id = self.client.submit(script)
        record = {
            "job": job,
            "run": n,
            "incarnation": a.incarnation,
            "slurm_job": run.slurm_id,
            "name": name,
            "placement": [[s.machine, s.workers, s.ps] for s in a.placement],
            "resume": resume,
        }
        (run_dir / "run.json").write_text(json.dumps(record))
        return run

    def _ask_stop(self, run: _Run, seen: _Queue) -> None:
        assert run.slurm_id is not None
        states = seen.get(run.slurm_id, [])
        if states and all(s == "PENDING" for s in states):
            self.client.cancel(run.slurm_id)  # never started: nothing to checkpoint
        else:
            self.client.signal(run.slurm_id, "TERM")  # PSs checkpoint, workers follow

    def _force_stop(self, run: _Run) -> None:
        if run.slurm_id is not None:
            self.client.cancel(run.slurm_id)

    def _failure(self, run: _Run) -> str:
        assert run.slurm_id is not None
        with contextlib.suppress(SlurmError):
            rows = self.client.accounting([run.slurm_id])
            states = sorted({r.state for r in rows if r.step is None})
            if states:
                return "Slurm: " + ",".join(states)
        return "left the queue without finishing"

    def _started(self, run: _Run, seen: _Queue, ps0: Mapping[str, object]) -> bool:
        return "RUNNING" in seen.get(run.slurm_id or -1, []) and bool(ps0)

    def _running(self, run: _Run) -> tuple[Slice, ...]:
        """Per node, the processes of a run that have started (their ``.host`` files)."""
        seen: dict[str, Counter[str]] = {}
        for f in run.dir.glob("*.host"):
            role = f.name.split("-", 1)[0]
            with contextlib.suppress(OSError):
                host = f.read_text().strip()
                seen.setdefault(host, Counter())[role] += 1
        order = [s.machine for s in run.assignment.placement]
        names = sorted(seen, key=lambda h: (order.index(h) if h in order else len(order), h))
        return tuple(Slice(h, seen[h]["worker"], seen[h]["ps"]) for h in names)

    def _extra(self, run: _Run) -> dict[str, object]:
        return {"slurm_job": run.slurm_id}
