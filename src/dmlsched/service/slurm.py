"""Slurm's client commands, run and read: ``sbatch``, ``squeue``, ``sacct``, ``scancel``, ``sinfo``.

One :class:`SlurmClient` talks to one cluster: it runs the commands with
``SLURM_CONF`` set to the cluster's configuration and, for a cluster whose
controller lives in a network namespace (:mod:`dmlsched.service.slurm_cluster`),
inside that namespace (``ip netns exec``).  Output is always requested in a
fixed machine-readable form (``--parsable``, ``-h -o`` with ``|``-separated
fields, ``sacct -P``) and read into named records; a command that fails
raises :class:`SlurmError` with its exit status and last line of stderr.

Heterogeneous jobs: component ``k`` of job ``J`` is shown as ``J+k`` by
``squeue`` and ``sacct`` (its steps ``J+k.s``); :class:`QueuedJob` and
:class:`AcctRow` keep the job id, the component and the step apart.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dmlsched.errors import DmlschedError

__all__ = [
    "AcctRow",
    "NodeInfo",
    "QueuedJob",
    "SlurmClient",
    "SlurmError",
    "parse_job_id",
]

# node states in which the node runs nothing new (sinfo/scontrol base states and flags)
_UNUSABLE = ("down", "drain", "fail", "inval", "future", "unknown", "not_responding")


class SlurmError(DmlschedError):
    """A Slurm command failed (status, the command, its last line of stderr)."""

    def __init__(self, cmd: Sequence[str], status: int, stderr: str) -> None:
        self.cmd = list(cmd)
        self.status = status
        self.stderr = stderr
        last = stderr.strip().splitlines()[-1] if stderr.strip() else "(no output)"
        super().__init__(f"{' '.join(self.cmd[:2])} exited {status}: {last}")


@dataclass(frozen=True)
class NodeInfo:
    """One node as ``sinfo -N`` shows it; capacity in the service's units (GPU, vCPU, GB, GB)."""

    name: str
    addr: str
    state: str  # lowercase, with sinfo's flag suffixes (*, ~, #, ...) removed
    responding: bool
    cpus: int
    gpus: int
    mem_mb: int
    tmp_mb: int

    @property
    def usable(self) -> bool:
        return self.responding and not any(s in self.state for s in _UNUSABLE)

    @property
    def capacity(self) -> tuple[float, float, float, float]:
        return (float(self.gpus), float(self.cpus), self.mem_mb / 1024.0, self.tmp_mb / 1024.0)


@dataclass(frozen=True)
class QueuedJob:
    """One line of ``squeue``: a job or a heterogeneous job's component."""

    job_id: int
    component: int | None
    name: str
    state: str  # PENDING, RUNNING, COMPLETING, ...
    nodes: str
    reason: str


@dataclass(frozen=True)
class AcctRow:
    """One line of ``sacct``: a job, a component or a step, with its nodes and task count."""

    job_id: int
    component: int | None
    step: str | None  # "batch", "0", "1", ... (None: the job or component itself)
    name: str
    nodes: str
    ntasks: int | None
    state: str
    exit_code: str
    start: str
    end: str

    @property
    def label(self) -> str:
        comp = f"+{self.component}" if self.component is not None else ""
        step = f".{self.step}" if self.step is not None else ""
        return f"{self.job_id}{comp}{step}"


_ID = re.compile(r"^(\d+)(?:\+(\d+))?(?:\.(\w+))?$")


def parse_job_id(text: str) -> tuple[int, int | None, str | None]:
    """``"12+1.0"`` → ``(12, 1, "0")``; ``"12"`` → ``(12, None, None)``."""
    m = _ID.match(text.strip())
    if m is None:
        raise ValueError(f"not a Slurm job id: {text!r}")
    return int(m[1]), (int(m[2]) if m[2] is not None else None), m[3]


def _int(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def _gpus(gres: str) -> int:
    """``gpu:2`` / ``gpu:a100:2(S:0)`` / ``(null)`` → 2 / 2 / 0."""
    total = 0
    for part in gres.split(","):
        fields = part.split("(")[0].split(":")
        if fields[0] == "gpu" and len(fields) >= 2 and fields[-1].isdigit():
            total += int(fields[-1])
    return total


class SlurmClient:
    """Slurm's commands against one cluster (module docstring)."""

    def __init__(
        self, conf: Path | str, *, namespace: str | None = None, timeout: float = 30.0
    ) -> None:
        self.conf = Path(conf)
        self.namespace = namespace
        self.timeout = timeout

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def argv(self, *args: str) -> list[str]:
        """The command line that runs ``args`` against this cluster."""
        pre = ["ip", "netns", "exec", self.namespace] if self.namespace else []
        return [*pre, *args]

    def run(self, *args: str, input: str | None = None, check: bool = True) -> str:
        cmd = self.argv(*args)
        try:
            r = subprocess.run(
                cmd,
                input=input,
                capture_output=True,
                text=True,
                env=self.env,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise SlurmError(args, -1, f"no answer within {self.timeout:g} s") from None
        except FileNotFoundError as e:
            raise SlurmError(args, 127, str(e)) from None
        if check and r.returncode != 0:
            raise SlurmError(args, r.returncode, r.stderr)
        return r.stdout

    # ---- reading -------------------------------------------------------------------
    def ping(self) -> bool:
        """True when the controller answers."""
        try:
            return "UP" in self.run("scontrol", "ping")
        except SlurmError:
            return False

    def nodes(self) -> list[NodeInfo]:
        out = self.run("sinfo", "-N", "-h", "-o", "%N|%o|%T|%c|%G|%m|%d")
        seen: dict[str, NodeInfo] = {}
        for line in out.splitlines():
            f = line.split("|")
            if len(f) != 7 or f[0] in seen:
                continue  # a node in two partitions is listed twice
            raw = f[2].strip().lower()
            state = raw.rstrip("*~#!%$@^-")
            seen[f[0]] = NodeInfo(
                name=f[0],
                addr=f[1],
                state=state,
                responding=not raw.endswith("*"),
                cpus=_int(f[3]) or 0,
                gpus=_gpus(f[4]),
                mem_mb=_int(f[5]) or 0,
                tmp_mb=_int(f[6]) or 0,
            )
        return [seen[k] for k in sorted(seen)]

    def queue(self, name_prefix: str = "") -> list[QueuedJob]:
        """Every job (component) the controller still knows of, optionally by name prefix."""
        out = self.run("squeue", "-h", "-o", "%i|%j|%T|%N|%r")
        jobs = []
        for line in out.splitlines():
            f = line.split("|")
            if len(f) != 5 or not f[1].startswith(name_prefix):
                continue
            jid, comp, _ = parse_job_id(f[0])
            jobs.append(QueuedJob(jid, comp, f[1], f[2], f[3], f[4]))
        return jobs

    def accounting(
        self, job_ids: Sequence[int] = (), *, name_prefix: str = "", since: str = ""
    ) -> list[AcctRow]:
        """``sacct`` rows (jobs, components, steps) of ``job_ids`` or of every job."""
        args = ["sacct", "-P", "-n", "-o", "JobID,JobName,NodeList,NTasks,State,ExitCode,Start,End"]
        if job_ids:
            args += ["-j", ",".join(str(j) for j in job_ids)]
        else:
            args += ["-a", "-S", since or "now-1days"]
        rows = []
        for line in self.run(*args).splitlines():
            f = line.split("|")
            if len(f) != 8:
                continue
            try:
                jid, comp, step = parse_job_id(f[0])
            except ValueError:
                continue
            rows.append(AcctRow(jid, comp, step, f[1], f[2], _int(f[3]), f[4], f[5], f[6], f[7]))
        if name_prefix:
            keep = {r.job_id for r in rows if r.step is None and r.name.startswith(name_prefix)}
            rows = [r for r in rows if r.job_id in keep]
        return rows

    # ---- acting --------------------------------------------------------------------
    def submit(self, script: str, *, args: Sequence[str] = ()) -> int:
        """``sbatch --parsable`` a batch script given as text; returns the job id."""
        out = self.run("sbatch", "--parsable", *args, input=script)
        return parse_job_id(out.strip().split(";")[0])[0]

    def signal(self, job_id: int, sig: str = "TERM", *, steps_only: bool = True) -> None:
        """Send ``sig`` to the job's steps (not its batch shell) — ``scancel -s SIG``."""
        args = ["scancel", "-s", sig]
        if not steps_only:
            args.append("--full")
        self.run(*args, str(job_id), check=False)

    def cancel(self, job_id: int) -> None:
        self.run("scancel", str(job_id), check=False)
