"""The process runtime: a testbed of H emulated machines, and jobs on it.

:class:`Testbed` owns a run: its state file, its :class:`~.emulation.Emulation`
and one agent per machine (:mod:`.agent`).  Use it as a context manager —
leaving it (normally, by an exception or by Ctrl-C) stops every process and
removes every namespace, qdisc, cgroup and file of the run.

:class:`Job` is one training job's processes over its lifetime: ``start``
with a :class:`~dmlsched.model.cluster.Placement` (workers and PSs per
machine) launches an *incarnation* (resuming from the previous one's
checkpoint), ``stop`` checkpoints and ends it, ``status`` reads what its
processes report (work done, bytes, loss, done time).  Resizing or moving a
job is ``stop`` then ``start`` with the new placement.  Stops and starts of
many jobs should be batched (:meth:`Job.request_stop` on all, then
:meth:`Job.wait_stopped`) — the executor does.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import Placement
from dmlsched.testbed.emulation import Emulation
from dmlsched.testbed.state import DEFAULT_STATE_DIR, RunState, cleanup
from dmlsched.testbed.training import TaskConfig

__all__ = ["Job", "JobStatus", "Testbed", "TrainSpec"]

_STOP_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class TrainSpec:
    """What to train: the job's model, SGD, mode and total work (E·K or E·K·M)."""

    job: int
    target: float
    mode: str = "sync"
    batch: int = 64  # F (sync) / mini-batch (async)
    hidden: int = 256
    lr: float = 0.1
    seed: int = 0


@dataclass
class JobStatus:
    """A job's measurements summed over its incarnations so far."""

    work: float = 0.0
    bytes: int = 0
    loss_sum: float = 0.0
    loss_n: int = 0
    comm_s: float = 0.0
    compute_s: float = 0.0
    done: bool = False
    done_time: float | None = None
    accuracy: float | None = None


class Testbed:
    __test__ = False  # not a pytest test class
    """H emulated machines with one agent each (module docstring)."""

    def __init__(
        self,
        machines: int,
        run_dir: Path,
        *,
        emulation: str = "local",
        ext_mbit: float | Sequence[float | None] | None = None,
        int_mbit: float | None = None,
        delay_ms: Sequence[float] | None = None,
        cpu_share: float | None = None,
        state_dir: Path = DEFAULT_STATE_DIR,
        data_seed: int = 0,
    ) -> None:
        caps = ext_mbit if isinstance(ext_mbit, Sequence) else [ext_mbit] * machines
        if delay_ms is not None and len(delay_ms) != machines:
            raise InvalidInput("delay_ms", len(delay_ms), f"{machines} values")
        self.machines = machines
        self.run_dir = Path(run_dir)
        self.state_dir = Path(state_dir)
        self.mode = emulation
        self.ext_mbit = tuple(caps)
        self.int_mbit = int_mbit
        self.delay_ms = tuple(delay_ms) if delay_ms is not None else ()
        self.cpu_share = cpu_share
        self.data_seed = data_seed
        self.state: RunState | None = None
        self.emu: Emulation | None = None
        self._agents: list[subprocess.Popen] = []
        self.notes: list[str] = []

    # ---- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> Testbed:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        # SIGTERM unwinds through close() like Ctrl-C (a caller's own handler is kept)
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        ):
            signal.signal(signal.SIGTERM, _raise_exit)
            self._restore_term = True
        cleanup(self.state_dir)  # what earlier, killed runs left behind
        self.state = RunState.new(self.state_dir, self.mode)
        try:
            self.emu = Emulation(
                self.mode, self.machines, self.ext_mbit, self.state, self.cpu_share, self.int_mbit
            )
            self.emu.start()
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self.job_root.mkdir()
            env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
            for h in range(self.machines):
                log = (self.job_root / f"agent-{h}.log").open("w")
                p = subprocess.Popen(
                    self.emu.agent_argv(h, self.data_seed),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    text=True,
                    env=env,
                    start_new_session=True,  # Ctrl-C reaches the controller only
                )
                self.state.add_process(p.pid)
                self.emu.attach(h, p.pid)
                self._agents.append(p)
            for h, p in enumerate(self._agents):
                line = p.stdout.readline() if p.stdout else ""
                if not line or not json.loads(line).get("ready"):
                    err = (self.job_root / f"agent-{h}.log").read_text().strip()
                    raise RuntimeError(f"agent of machine {h} did not start: {err[-500:]}")
            self.notes = list(self.emu.notes)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for p in self._agents:
            try:
                if p.stdin:
                    p.stdin.close()  # EOF: the agent kills its children and exits
            except OSError:
                pass
        for p in self._agents:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self._agents = []
        if self.state is not None:
            cleanup(self.state_dir, run_id=self.state.run_id, force=True)
            self.state = None
        if getattr(self, "_restore_term", False):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            self._restore_term = False

    # ---- API used by jobs --------------------------------------------------------------
    @property
    def job_root(self) -> Path:
        """This run's folder for job files (``run_dir/<run id>``: never a stale file)."""
        return self.run_dir / self.run_id

    @property
    def run_id(self) -> str:
        assert self.state is not None, "testbed not started"
        return self.state.run_id

    def spawn(self, machine: int, cfg: TaskConfig) -> int:
        """Fork a PS or worker on ``machine``; returns its pid."""
        p = self._agents[machine]
        assert p.stdin and p.stdout
        p.stdin.write(json.dumps({"op": "spawn", "cfg": cfg.to_json()}) + "\n")
        p.stdin.flush()
        reply = json.loads(p.stdout.readline() or "{}")
        if not reply.get("ok"):
            raise RuntimeError(f"machine {machine}: spawn failed: {reply.get('error')}")
        return int(reply["pid"])

    def task_base(self) -> dict:
        assert self.emu is not None
        return {
            "hosts": self.emu.hosts(),
            "buckets": self.emu.buckets_path,
            "delay_ms": self.delay_ms,
            "bind": self.emu.bind,
        }


def _raise_exit(*_: object) -> None:
    raise SystemExit(143)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive (the agent reaps it soon)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


@dataclass
class _Incarnation:
    n: int
    placement: Placement
    ps: list[int] = field(default_factory=list)  # pids
    workers: list[int] = field(default_factory=list)
    dir: Path = Path()
    started: float = 0.0
    ended: float | None = None  # wall time its processes were gone (None: running)


class Job:
    """One job's processes over its lifetime (module docstring)."""

    def __init__(self, testbed: Testbed, spec: TrainSpec) -> None:
        self.tb = testbed
        self.spec = spec
        self.dir = testbed.job_root / f"job-{spec.job}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.incs: list[_Incarnation] = []
        self.current: _Incarnation | None = None
        self._closed = JobStatus()  # sums over finished incarnations

    @property
    def running(self) -> bool:
        return self.current is not None

    @property
    def placement(self) -> Placement | None:
        return self.current.placement if self.current else None

    def start(self, placement: Placement) -> None:
        """Launch an incarnation on ``placement`` (resuming from the last checkpoint)."""
        if self.current is not None:
            raise RuntimeError(f"job {self.spec.job} is already running")
        ps_m = [m for m, s in zip(placement.machines, placement.ps, strict=True) for _ in range(s)]
        w_m = [
            m for m, w in zip(placement.machines, placement.workers, strict=True) for _ in range(w)
        ]
        if not ps_m or not w_m:
            raise InvalidInput("placement", placement, "at least one worker and one PS")
        n = len(self.incs)
        resume = ""
        for prev in reversed(self.incs):  # the newest complete checkpoint
            ck = prev.dir / "ckpt"
            if len(list(ck.glob("shard-*.json"))) == len(prev.ps) and prev.ps:
                resume = str(ck)
                break
        inc = _Incarnation(n, placement, dir=self.dir / f"inc-{n}", started=time.time())
        inc.dir.mkdir(parents=True, exist_ok=True)
        s = self.spec
        base = dict(
            job_dir=str(self.dir),
            job=s.job,
            inc=n,
            mode=s.mode,
            hidden=s.hidden,
            lr=s.lr,
            batch=s.batch,
            seed=s.seed,
            target=s.target,
            ps_machines=tuple(ps_m),
            worker_machines=tuple(w_m),
            resume=resume,
            **self.tb.task_base(),
        )
        for k, m in enumerate(ps_m):
            inc.ps.append(self.tb.spawn(m, TaskConfig(role="ps", index=k, **base)))
        for k, m in enumerate(w_m):
            inc.workers.append(self.tb.spawn(m, TaskConfig(role="worker", index=k, **base)))
        self.incs.append(inc)
        self.current = inc

    def request_stop(self) -> None:
        """SIGTERM the PSs: they finish the step, checkpoint and tell the workers."""
        if self.current is None:
            return
        for pid in self.current.ps:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def wait_stopped(self, timeout_s: float = _STOP_TIMEOUT_S) -> None:
        """Wait for the incarnation's processes to exit (SIGKILL after ``timeout_s``)."""
        inc = self.current
        if inc is None:
            return
        pids = inc.ps + inc.workers
        deadline = time.monotonic() + timeout_s
        while any(_alive(p) for p in pids):
            if time.monotonic() > deadline:
                for p in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(p, signal.SIGKILL)
                break
            time.sleep(0.02)
        inc.ended = time.time()
        self._closed = self._sum(self._closed, self._inc_status(inc))
        self.current = None

    def stop(self) -> None:
        self.request_stop()
        self.wait_stopped()

    def poll_exited(self) -> bool:
        """True (and the incarnation closed) when its processes ended on their own."""
        inc = self.current
        if inc is None or any(_alive(p) for p in inc.ps):
            return False
        self.wait_stopped(timeout_s=5.0)
        return True

    def _inc_status(self, inc: _Incarnation) -> JobStatus:
        st = JobStatus()
        ps0 = _read(inc.dir / "ps-0.json")
        st.work = float(ps0.get("work", 0.0))
        st.loss_sum = float(ps0.get("loss_sum", 0.0))
        st.loss_n = int(ps0.get("loss_n", 0))
        st.done = bool(ps0.get("done", False))
        st.done_time = ps0.get("done_time")
        for k in range(len(inc.ps)):
            d = _read(inc.dir / f"ps-{k}.json")
            st.bytes += int(d.get("bytes_in", 0)) + int(d.get("bytes_out", 0))
        for k in range(len(inc.workers)):
            d = _read(inc.dir / f"worker-{k}.json")
            st.comm_s += float(d.get("comm_s", 0.0))
            st.compute_s += float(d.get("compute_s", 0.0))
            if d.get("accuracy") is not None:
                st.accuracy = float(d["accuracy"])
        return st

    @staticmethod
    def _sum(closed: JobStatus, cur: JobStatus) -> JobStatus:
        # work is absolute (carried in checkpoints); the rest adds up over incarnations
        return JobStatus(
            work=max(closed.work, cur.work),
            bytes=closed.bytes + cur.bytes,
            loss_sum=closed.loss_sum + cur.loss_sum,
            loss_n=closed.loss_n + cur.loss_n,
            comm_s=closed.comm_s + cur.comm_s,
            compute_s=closed.compute_s + cur.compute_s,
            done=closed.done or cur.done,
            done_time=closed.done_time or cur.done_time,
            accuracy=cur.accuracy if cur.accuracy is not None else closed.accuracy,
        )

    def status(self) -> JobStatus:
        """Measurements so far (the running incarnation's last status files included)."""
        if self.current is None:
            return self._closed
        return self._sum(self._closed, self._inc_status(self.current))

    def process_seconds(self, t0: float, t1: float) -> dict[int, tuple[float, float]]:
        """Machine → (worker-seconds, PS-seconds) its incarnations ran within [t0, t1)."""
        out: dict[int, tuple[float, float]] = {}
        now = time.time()
        for inc in self.incs:
            lo, hi = max(t0, inc.started), min(t1, inc.ended if inc.ended is not None else now)
            if hi <= lo:
                continue
            p = inc.placement
            for m, w, s in zip(p.machines, p.workers, p.ps, strict=True):
                a, b = out.get(m, (0.0, 0.0))
                out[m] = (a + w * (hi - lo), b + s * (hi - lo))
        return out

    def loss_curve(self) -> list[tuple[float, float, float]]:
        """(wall time, work, mean loss) rows PS 0 logged, over all incarnations."""
        path = self.dir / "loss.csv"
        if not path.exists():
            return []
        rows = []
        for ln in path.read_text().splitlines():
            parts = ln.split(",")
            if len(parts) == 3:
                rows.append((float(parts[0]), float(parts[1]), float(parts[2])))
        return rows
