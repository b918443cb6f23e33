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

A background thread reconciles every ``interval`` seconds: it reads ``squeue``,
ends runs that left the queue (``done`` when PS 0 says so, ``stopped`` when the
executor asked, else ``failed`` with ``sacct``'s state, e.g. ``NODE_FAIL``),
stops runs no longer wanted — ``scancel -s TERM`` (PSs finish the step and
checkpoint, workers follow them), then ``scancel`` after ``stop_timeout`` —
and submits the wanted runs once their predecessor is gone, resuming from the
newest complete checkpoint (:func:`dmlsched.testbed.trainer.latest_checkpoint`);
PSs also checkpoint every ``checkpoint_every`` steps (sync jobs), so a run that
fails — a node lost — costs at most that many steps.
A failed run is started again (a new run) only when every node it needs is up,
and at most ``retries`` times for one assignment.
"""

from __future__ import annotations

import contextlib
import json
import math
import shlex
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from dmlsched.errors import InvalidInput
from dmlsched.service.executors.base import Assignment, JobReport, Node, Slice
from dmlsched.service.slurm import SlurmClient, SlurmError
from dmlsched.testbed.trainer import latest_checkpoint

__all__ = [
    "SlurmExecutor",
    "batch_script",
    "checkpoint_work",
    "read_json",
    "trainer_args",
    "work_of",
]

_ALIVE = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED")


def _task_cpus(demand: tuple[float, ...]) -> int:
    return max(1, math.ceil(demand[1] - 1e-9))


def _task_gpus(demand: tuple[float, ...]) -> int:
    return max(0, math.ceil(demand[0] - 1e-9))


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


def read_json(path: Path) -> dict:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


@dataclass
class _Run:
    n: int
    assignment: Assignment
    dir: Path
    slurm_id: int | None = None
    submitted: float = 0.0
    stop_at: float | None = None
    ended: str | None = None  # done | stopped | failed
    detail: str = ""
    resume: str = ""


@dataclass
class _Job:
    id: int
    dir: Path
    runs: list[_Run] = field(default_factory=list)
    done: bool = False

    @property
    def current(self) -> _Run | None:
        return self.runs[-1] if self.runs else None


class SlurmExecutor:
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
        self.client = client
        self.workdir = Path(workdir)
        self.tag = tag
        self.python = python
        self.interval = interval
        self.stop_timeout = stop_timeout
        self.retries = retries
        self.checkpoint_every = checkpoint_every
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._want: dict[int, Assignment] = {}
        self._jobs: dict[int, _Job] = {}
        self._reports: dict[int, JobReport] = {}
        self._nodes: list[Node] = []
        self.errors: list[str] = []  # Slurm commands that failed (the loop goes on)

    # ---- the contract ----------------------------------------------------------------
    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._nodes = self._read_nodes()
        self._thread = threading.Thread(target=self._loop, name="slurm-executor", daemon=True)
        self._thread.start()

    def nodes(self) -> list[Node]:
        with self._lock:
            return list(self._nodes)

    def apply(self, want: Mapping[int, Assignment]) -> None:
        with self._lock:
            self._want = dict(want)
        self._wake.set()

    def poll(self) -> dict[int, JobReport]:
        with self._lock:
            return dict(self._reports)

    def close(self) -> None:
        """Stop every run (checkpointing), wait up to ``stop_timeout``, then cancel the rest."""
        self.apply({})
        deadline = time.monotonic() + self.stop_timeout + 5.0
        while time.monotonic() < deadline and self._alive_runs():
            time.sleep(0.1)
        self._closing.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10.0)
        for run in self._alive_runs():
            if run.slurm_id is not None:
                self.client.cancel(run.slurm_id)

    # ---- the loop --------------------------------------------------------------------
    def _alive_runs(self) -> list[_Run]:
        with self._lock:
            return [j.current for j in self._jobs.values() if j.current and j.current.ended is None]

    def _loop(self) -> None:
        last_nodes = 0.0
        while not self._closing.is_set():
            try:
                if time.monotonic() - last_nodes > 1.0:
                    nodes = self._read_nodes()
                    with self._lock:
                        self._nodes = nodes
                    last_nodes = time.monotonic()
                self.reconcile()
            except SlurmError as e:  # the controller restarting, say: try again next time
                self.errors.append(str(e))
            self._wake.wait(self.interval)
            self._wake.clear()

    def _read_nodes(self) -> list[Node]:
        return [Node(n.name, n.capacity, n.usable, n.addr) for n in self.client.nodes()]

    def reconcile(self) -> None:
        """One pass: end, stop and start runs so that Slurm says the wanted state."""
        queue: dict[int, list[str]] = {}
        for q in self.client.queue(f"{self.tag}-"):
            queue.setdefault(q.job_id, []).append(q.state)
        with self._lock:
            want = dict(self._want)
            nodes = {n.name: n for n in self._nodes}
        now = time.time()
        for job in list(self._jobs.values()):
            run = job.current
            if run is not None and run.ended is None and run.slurm_id not in queue:
                self._end(job, run)
        for j, a in want.items():
            job = self._jobs.setdefault(j, _Job(j, self.workdir / f"job-{j}"))
            if job.done:
                continue
            run = job.current
            if run is not None and run.ended is None:
                if run.assignment != a:
                    self._stop(run, queue, now)
                continue
            if any(not (nodes.get(s.machine) and nodes[s.machine].up) for s in a.placement):
                continue  # a node it needs is down: the service will move it
            failed = [r for r in job.runs if r.assignment == a and r.ended == "failed"]
            if len(failed) > self.retries:
                continue  # it fails here whatever we do: the report says why
            self._submit(job, a, nodes)
        for j, job in self._jobs.items():
            run = job.current
            if j not in want and run is not None and run.ended is None:
                self._stop(run, queue, now)
        self._report(queue)

    def _submit(self, job: _Job, a: Assignment, nodes: Mapping[str, Node]) -> None:
        n = len(job.runs)
        run_dir = job.dir / f"inc-{n}"
        run_dir.mkdir(parents=True, exist_ok=True)
        resume = latest_checkpoint(job.dir, n - 1) if n else ""
        name = f"{self.tag}-j{job.id}-r{n}"
        script = batch_script(
            a,
            n,
            name=name,
            run_dir=run_dir,
            addrs={k: v.addr for k, v in nodes.items()},
            resume=resume,
            python=self.python,
            checkpoint_every=self.checkpoint_every,
        )
        (run_dir / "job.sh").write_text(script)
        run = _Run(n, a, run_dir, submitted=time.time(), resume=resume)
        run.slurm_id = self.client.submit(script)
        job.runs.append(run)
        record = {
            "job": job.id,
            "run": n,
            "incarnation": a.incarnation,
            "slurm_job": run.slurm_id,
            "name": name,
            "placement": [[s.machine, s.workers, s.ps] for s in a.placement],
            "resume": resume,
        }
        (run_dir / "run.json").write_text(json.dumps(record))

    def _stop(self, run: _Run, queue: Mapping[int, list[str]], now: float) -> None:
        assert run.slurm_id is not None
        states = queue.get(run.slurm_id, [])
        if run.stop_at is None:
            run.stop_at = now
            if states and all(s == "PENDING" for s in states):
                self.client.cancel(run.slurm_id)  # never started: nothing to checkpoint
            else:
                self.client.signal(run.slurm_id, "TERM")  # PSs checkpoint, workers follow
        elif now - run.stop_at > self.stop_timeout:
            self.client.cancel(run.slurm_id)

    def _end(self, job: _Job, run: _Run) -> None:
        ps0 = read_json(run.dir / "ps-0.json")
        if ps0.get("done"):
            run.ended, job.done = "done", True
        elif run.stop_at is not None:
            run.ended = "stopped"
        else:
            run.ended = "failed"
            run.detail = self._slurm_state(run)

    def _slurm_state(self, run: _Run) -> str:
        assert run.slurm_id is not None
        with contextlib.suppress(SlurmError):
            rows = self.client.accounting([run.slurm_id])
            states = sorted({r.state for r in rows if r.step is None})
            if states:
                return "Slurm: " + ",".join(states)
        return "left the queue without finishing"

    def _report(self, queue: Mapping[int, list[str]]) -> None:
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
            elif "RUNNING" in queue.get(run.slurm_id or -1, []) and ps0:
                state = "running"
            else:
                state = "starting"
            running: tuple[Slice, ...] = ()
            if run.ended is None:
                running = _where(run)
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
                extra={"slurm_job": run.slurm_id},
            )
        with self._lock:
            self._reports = out

    def slurm_ids(self, job: int) -> list[int]:
        """The Slurm job ids of a job's runs, oldest first (for ``sacct``)."""
        with self._lock:
            j = self._jobs.get(job)
            return [r.slurm_id for r in j.runs if r.slurm_id is not None] if j else []


def work_of(checkpoint: str) -> float:
    """The work counter a checkpoint folder holds (0 for none)."""
    return (
        float(read_json(Path(checkpoint) / "shard-0.json").get("work", 0.0)) if checkpoint else 0.0
    )


def checkpoint_work(job_dir: Path, upto: int) -> float:
    return work_of(latest_checkpoint(job_dir, upto))


def _where(run: _Run) -> tuple[Slice, ...]:
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
