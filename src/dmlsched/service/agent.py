"""``dmlsched agent``: one per machine; runs its part of the service's allocation for real.

Loop (every ``poll`` seconds):

1. ``POST /v1/agents/<machine>/heartbeat`` — proves the machine alive (a
   separate thread also beats every ``poll`` seconds, so a long stop or
   checkpoint wait never looks like a dead machine) and returns its part of
   the current slot's allocation: per job, the workers
   and PSs on this machine, the job's whole placement (machine names →
   [workers, PSs]), the machine indices and the job's *incarnation* (the
   slot its current placement began);
2. stops what is no longer wanted — a job gone from the allocation or in a
   new incarnation (moved, resized, preempted): its PSs here get SIGTERM
   (they finish the step and checkpoint, as in the testbed's executor) and
   its processes here are awaited;
3. starts what is new, through the testbed's own runtime
   (:class:`dmlsched.testbed.runtime.Testbed` — this machine's agent process
   that forks PSs and workers — and :class:`~dmlsched.testbed.training.TaskConfig`):
   the job's PSs and workers are numbered over the whole placement in the
   service's machine order, so processes started by different agents form
   one job; PSs resume from the newest complete checkpoint of an earlier
   incarnation (all agents of a ``local`` emulation share one ``--workdir``);
4. the agent holding PS 0 reports the job's absolute work counter and loss
   (``POST …/progress``); the service credits what is new of it at the end
   of the slot (``--progress measured``).

Registration (``POST /v1/machines`` with ``agent: true``) happens at start and
whenever the service says the machine is down or unknown (after a timeout,
or a service restarted on an empty log).

Emulation: ``local`` only — every process on this host.  The testbed's
token buckets belong to one run of the testbed's controller; processes of
one job started by different agents belong to different runs, so their
bandwidth is not capped here (the testbed's own ``dmlsched testbed run``
emulates the caps).  SIGTERM or Ctrl-C: the agent stops its processes
(checkpointing them) and the testbed removes everything it created.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from dmlsched.errors import InvalidInput

__all__ = ["MachineAgent", "run_agent"]

_STOP_TIMEOUT_S = 20.0
_RESUME_WAIT_S = 20.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie has exited (the testbed's machine agent reaps it)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _json(path: Path) -> dict[str, Any]:
    import json

    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


@dataclass
class _Local:
    """One incarnation of a job, as far as this machine runs it."""

    job: int
    inc: int
    inc_dir: Path
    ps: dict[int, int] = field(default_factory=dict)  # PS index -> pid
    workers: dict[int, int] = field(default_factory=dict)
    reports: int = 0

    @property
    def has_ps0(self) -> bool:
        return 0 in self.ps

    def pids(self) -> list[int]:
        return [*self.ps.values(), *self.workers.values()]


def _latest_checkpoint(job_dir: Path, before: int) -> str:
    """The newest complete checkpoint of an incarnation before ``before`` ('' if none).

    Complete = one ``shard-K.json`` per PS the incarnation started (its ``ps-K.addr``
    files), the testbed's own rule (:meth:`dmlsched.testbed.runtime.Job.start`).
    """
    incs = []
    for d in job_dir.glob("inc-*"):
        try:
            n = int(d.name[4:])
        except ValueError:
            continue
        if n < before:
            incs.append((n, d))
    for _, d in sorted(incs, reverse=True):
        n_ps = len(list(d.glob("ps-*.addr")))
        if n_ps and len(list((d / "ckpt").glob("shard-*.json"))) == n_ps:
            return str(d / "ckpt")
    return ""


class MachineAgent:
    """The agent's state: its testbed machine and the incarnations it runs."""

    def __init__(
        self,
        http: httpx.Client,
        machine: str,
        capacity: tuple[float, ...] | None,
        testbed: Any,
        workdir: Path,
    ) -> None:
        self.http = http
        self.machine = machine
        self.capacity = capacity
        self.tb = testbed
        self.workdir = workdir
        self.running: dict[int, _Local] = {}
        self.ended: set[tuple[int, int]] = set()

    def register(self) -> None:
        """Join this machine (an admin declared it), offering ``capacity`` or the declared."""
        body: dict[str, Any] = {"name": self.machine, "agent": True}
        if self.capacity is not None:
            body["capacity"] = list(self.capacity)
        self.http.post("/v1/machines", json=body).raise_for_status()

    def step(self) -> dict[str, Any]:
        r = self.http.post(f"/v1/agents/{self.machine}/heartbeat")
        if r.status_code == 404:
            self.register()
            r = self.http.post(f"/v1/agents/{self.machine}/heartbeat")
        r.raise_for_status()
        a = r.json()
        if not a["up"]:
            self.register()
        want = {t["job"]: t for t in a["tasks"]}
        stopping = [
            loc
            for j, loc in self.running.items()
            if j not in want or want[j]["incarnation"] != loc.inc
        ]
        self._stop(stopping)
        for t in want.values():
            key = (t["job"], t["incarnation"])
            if t["job"] not in self.running and key not in self.ended:
                self._start(t, a["machines"])
        for loc in list(self.running.values()):
            self._report(loc)
            if not any(_alive(p) for p in loc.pids()):
                # ended on its own (the job is done, or its PS elsewhere stopped it):
                # never start this incarnation again
                self.ended.add((loc.job, loc.inc))
                del self.running[loc.job]
        return a

    def _start(self, t: dict[str, Any], index: dict[str, int]) -> None:
        from dmlsched.testbed.training import TaskConfig

        job, inc = int(t["job"]), int(t["incarnation"])
        req = t["request"]
        order = sorted(t["placement"], key=lambda name: index[name])
        ps_m = tuple(index[m] for m in order for _ in range(t["placement"][m][1]))
        w_m = tuple(index[m] for m in order for _ in range(t["placement"][m][0]))
        if not ps_m or not w_m:
            return  # the engine allows PS-less placements only without workers
        me = index[self.machine]
        job_dir = self.workdir / f"job-{job}"
        inc_dir = job_dir / f"inc-{inc}"
        inc_dir.mkdir(parents=True, exist_ok=True)
        resume = self._resume(job_dir, inc) if me in ps_m else ""
        base = self.tb.task_base()
        common = dict(
            job_dir=str(job_dir),
            job=job,
            inc=inc,
            mode=req.get("mode", "sync"),
            hidden=256,
            lr=0.1,
            batch=int(req.get("batch", 1)),
            seed=1000 + job,
            target=float(t["work"]),
            ps_machines=ps_m,
            worker_machines=w_m,
            hosts=("127.0.0.1",) * (max(index.values()) + 1),
            resume=resume,
            buckets="",  # see the module docstring
            bind=base["bind"],
        )
        loc = _Local(job, inc, inc_dir)
        for k, m in enumerate(ps_m):
            if m == me:
                loc.ps[k] = self.tb.spawn(0, TaskConfig(role="ps", index=k, **common))  # type: ignore[arg-type]
        for k, m in enumerate(w_m):
            if m == me:
                loc.workers[k] = self.tb.spawn(0, TaskConfig(role="worker", index=k, **common))  # type: ignore[arg-type]
        self.running[job] = loc

    def _resume(self, job_dir: Path, inc: int) -> str:
        """Wait (bounded) for the previous incarnation's PSs to checkpoint, then pick it."""
        prev = sorted(
            (int(d.name[4:]) for d in job_dir.glob("inc-*") if d.name[4:].isdigit()),
        )
        prev = [n for n in prev if n < inc]
        if not prev:
            return ""
        last = job_dir / f"inc-{prev[-1]}"
        deadline = time.monotonic() + _RESUME_WAIT_S
        while time.monotonic() < deadline:
            n_ps = len(list(last.glob("ps-*.addr")))
            done = sum(1 for k in range(n_ps) if _json(last / f"ps-{k}.json").get("final"))
            if n_ps and done == n_ps:
                break
            time.sleep(0.1)
        return _latest_checkpoint(job_dir, inc)

    def _stop(self, locs: list[_Local]) -> None:
        for loc in locs:
            for pid in loc.ps.values():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_TIMEOUT_S
        for loc in locs:
            while any(_alive(p) for p in loc.pids()) and time.monotonic() < deadline:
                time.sleep(0.05)
            for p in loc.pids():  # workers whose PS lives elsewhere, or stuck processes
                if _alive(p):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(p, signal.SIGKILL)
            self._report(loc)
            self.running.pop(loc.job, None)

    def _report(self, loc: _Local) -> None:
        if not loc.has_ps0:
            return
        st = _json(loc.inc_dir / "ps-0.json")
        if "work" not in st:
            return
        loss = st["loss_sum"] / st["loss_n"] if st.get("loss_n") else None
        loc.reports += 1
        body = {
            "job": loc.job,
            "work": float(st["work"]),
            "loss": loss,
            "report": f"{loc.job}-{loc.inc}-{loc.reports}",
        }
        try:
            self.http.post(f"/v1/agents/{self.machine}/progress", json=body).raise_for_status()
        except httpx.HTTPError:
            loc.reports -= 1  # the absolute counter is sent again next time

    def close(self) -> None:
        self._stop(list(self.running.values()))


def run_agent(
    *,
    server: str,
    machine: str,
    capacity: tuple[float, ...] | None,
    token: str | None,
    workdir: Path,
    poll: float,
    emulation: str,
) -> None:
    """The ``dmlsched agent`` command (module docstring); returns on SIGTERM/Ctrl-C."""
    from dmlsched.testbed.runtime import Testbed

    if emulation != "local":
        raise InvalidInput("emulation", emulation, "local (per-machine agents share one host)")
    if not poll > 0:
        raise InvalidInput("poll", poll, "> 0")
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)

    def _term(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _term)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    stop = threading.Event()

    def beat() -> None:
        # its own thread and client: stopping a job (up to a checkpoint round) or waiting
        # for a checkpoint must not look like a dead machine to the service
        with httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=10.0) as hb:
            while not stop.wait(poll):
                with contextlib.suppress(httpx.HTTPError):
                    hb.post(f"/v1/agents/{machine}/heartbeat")

    with (
        httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=30.0) as http,
        Testbed(1, workdir / f"agent-{machine}", emulation="local") as tb,
    ):
        agent = MachineAgent(http, machine, capacity, tb, workdir)
        beater = threading.Thread(target=beat, name="heartbeat", daemon=True)
        try:
            while True:
                try:
                    agent.register()
                    break
                except httpx.TransportError:
                    time.sleep(poll)  # the service is not up yet
            print(f"dmlsched agent: {machine} registered with {server}", file=sys.stderr)
            beater.start()
            while True:
                # the service may be restarting: keep running what runs, ask again
                with contextlib.suppress(httpx.TransportError):
                    agent.step()
                time.sleep(poll)
        except KeyboardInterrupt:
            pass
        finally:
            stop.set()
            agent.close()
