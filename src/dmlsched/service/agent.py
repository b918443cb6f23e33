"""``dmlsched agent``: one per machine; runs its part of the service's allocation for real.

It acts with its own identity (``--token-file``: an ``agent`` of this machine
in the service's auth file) and only for its machine.  Loop (every ``poll``
seconds), never blocking on another machine or a slow process:

1. ``POST /v1/agents/<machine>/heartbeat`` — proves the machine alive (a
   separate thread also beats every ``poll`` seconds, so a long stop or
   checkpoint wait never looks like a dead machine) and returns its part of
   the current slot's allocation: per job, the workers and PSs on this
   machine, the job's whole placement (machine names → [workers, PSs]), the
   machine indices, the job's *incarnation* (the slot its current placement
   began: a generation number) and whether to wait for the previous
   incarnation's checkpoint;
2. if the service says the machine is down (its heartbeats stopped for the
   agent timeout — a hung or cut-off machine), every incarnation here is
   *fenced*: the agent SIGKILLs its processes before it joins again;
3. stops what is no longer wanted — a job gone from the allocation or in a
   new incarnation (moved, resized, preempted): its PSs here get SIGTERM
   (they finish the step and checkpoint, as in the testbed's executor), and
   what still runs ``_STOP_TIMEOUT_S`` later gets SIGKILL — checked on later
   steps, never waited for;
4. starts what is new, through the testbed's own runtime
   (:class:`dmlsched.testbed.runtime.Testbed` — this machine's agent process
   that forks PSs and workers — and :class:`~dmlsched.testbed.training.TaskConfig`):
   the job's PSs and workers are numbered over the whole placement in the
   service's machine order, so processes started by different agents form
   one job; PSs resume from the newest complete checkpoint of an earlier
   incarnation (all agents of a ``local`` emulation share one ``--workdir``),
   once the previous incarnation's PSs wrote their final one (up to
   ``_RESUME_WAIT_S``; at once if the service says it is fenced);
5. the agent holding PS 0 reports the job's absolute work counter, the
   counter it resumed from, and the loss (``POST …/progress``) whenever the
   counter moved; the service credits what is new of it at the end of the
   slot (``--progress measured``) and refuses (409) what it cannot believe.

Joining (``POST /v1/machines`` with ``agent: true``) happens at start and
whenever the service says the machine is down or unknown.

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
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from dmlsched.errors import InvalidInput
from dmlsched.service.schemas import MACHINE_NAME

__all__ = ["MAX_POLL_S", "MachineAgent", "run_agent"]

# seconds between heartbeats at most (a service times an agent out long before)
MAX_POLL_S = 3600.0

_STOP_TIMEOUT_S = 20.0  # a stopping incarnation's processes get SIGKILL after this
_RESUME_WAIT_S = 20.0  # the most a new incarnation waits for its predecessor's checkpoint
_FENCE_WAIT_S = 5.0  # SIGKILLed processes are gone within this (the kernel reaps them)


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
    resumed: float = 0.0  # the work counter of the checkpoint it started from
    sent: float = -1.0  # the last counter the service took (or refused for good)
    stop_by: float = 0.0  # while stopping: when its processes get SIGKILL

    @property
    def has_ps0(self) -> bool:
        return 0 in self.ps

    def pids(self) -> list[int]:
        return [*self.ps.values(), *self.workers.values()]


def _predecessor_final(job_dir: Path, inc: int) -> bool:
    """Whether the incarnation before ``inc`` has none, or every PS of it wrote its final
    status (its checkpoint is complete)."""
    prev = [int(d.name[4:]) for d in job_dir.glob("inc-*") if d.name[4:].isdigit()]
    prev = [n for n in prev if n < inc]
    if not prev:
        return True
    last = job_dir / f"inc-{max(prev)}"
    n_ps = len(list(last.glob("ps-*.addr")))
    return all(_json(last / f"ps-{k}.json").get("final") for k in range(n_ps))


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
    """The agent's state: its testbed machine and the incarnations it runs.

    One :meth:`step` never waits on anything but its own HTTP calls: a stop
    (SIGTERM, then SIGKILL at a deadline) and a start that waits for the
    previous incarnation's checkpoint are carried over to later steps, so a
    hung process — or a hung agent elsewhere — delays only its own job.
    """

    def __init__(
        self,
        http: httpx.Client,
        machine: str,
        capacity: tuple[float, ...] | None,
        testbed: Any,
        workdir: Path,
        clock: Any = time.monotonic,
    ) -> None:
        self.http = http
        self.machine = machine
        self.capacity = capacity
        self.tb = testbed
        self.workdir = workdir
        self.clock = clock
        self.running: dict[int, _Local] = {}
        self.stopping: list[_Local] = []  # SIGTERMed, not yet gone
        self.waiting: dict[tuple[int, int], float] = {}  # (job, inc) -> when first asked
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
            # declared down (we were gone too long): every incarnation here is fenced —
            # the service ignores its work and has placed it elsewhere.  Kill it before
            # joining again, so no stale process trains (or checkpoints) beside its successor
            self.fence()
            self.register()
            return a
        want = {t["job"]: t for t in a["tasks"]}
        for j, loc in list(self.running.items()):
            if j not in want or want[j]["incarnation"] != loc.inc:
                self._begin_stop(loc)
        for t in want.values():
            key = (t["job"], t["incarnation"])
            if t["job"] not in self.running and key not in self.ended and self._may_start(t):
                self._start(t, a["machines"])
        self._reap()
        for loc in list(self.running.values()):
            self._report(loc)
            if not any(_alive(p) for p in loc.pids()):
                # ended on its own (the job is done, or its PS elsewhere stopped it):
                # never start this incarnation again
                self.ended.add((loc.job, loc.inc))
                del self.running[loc.job]
        return a

    def _may_start(self, t: dict[str, Any]) -> bool:
        """Whether a new incarnation starts now: at once if it resumes from nothing or its
        predecessor is fenced (a machine of it is down: no final checkpoint will come),
        else once the predecessor's PSs wrote their final checkpoint — or after
        ``_RESUME_WAIT_S`` (then from the newest complete one)."""
        job, inc = int(t["job"]), int(t["incarnation"])
        if not t.get("checkpoint_wait", True):
            return True
        since = self.waiting.setdefault((job, inc), self.clock())
        if self.clock() - since >= _RESUME_WAIT_S or _predecessor_final(
            self.workdir / f"job-{job}", inc
        ):
            self.waiting.pop((job, inc), None)
            return True
        return False

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
        resume = _latest_checkpoint(job_dir, inc) if me in ps_m else ""
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
        resumed = float(_json(Path(resume) / "shard-0.json").get("work", 0.0)) if resume else 0.0
        loc = _Local(job, inc, inc_dir, resumed=resumed)
        for k, m in enumerate(ps_m):
            if m == me:
                loc.ps[k] = self.tb.spawn(0, TaskConfig(role="ps", index=k, **common))
        for k, m in enumerate(w_m):
            if m == me:
                loc.workers[k] = self.tb.spawn(0, TaskConfig(role="worker", index=k, **common))
        self.running[job] = loc

    def _begin_stop(self, loc: _Local) -> None:
        """SIGTERM the incarnation's PSs here (they finish the step and checkpoint); its
        workers end with their PSs.  :meth:`_reap` finishes the stop."""
        for pid in loc.ps.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        loc.stop_by = self.clock() + _STOP_TIMEOUT_S
        self.running.pop(loc.job, None)
        self.stopping.append(loc)

    def _reap(self) -> None:
        """Stops that are over: gone, or past their deadline (then SIGKILL — workers whose
        PS lives elsewhere, stuck processes)."""
        left = []
        for loc in self.stopping:
            alive = [p for p in loc.pids() if _alive(p)]
            if alive and self.clock() < loc.stop_by:
                left.append(loc)
                continue
            for p in alive:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)
            self._report(loc)  # its last counter (refused if the service moved on: kept in
            # the checkpoint, the next incarnation reports it)
        self.stopping = left

    def fence(self) -> None:
        """SIGKILL every process this agent started and wait (briefly) until they are gone."""
        locs = [*self.running.values(), *self.stopping]
        for loc in locs:
            for p in loc.pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)
        deadline = self.clock() + _FENCE_WAIT_S
        while any(_alive(p) for loc in locs for p in loc.pids()) and self.clock() < deadline:
            time.sleep(0.02)
        self.ended |= {(loc.job, loc.inc) for loc in locs}
        self.running, self.stopping, self.waiting = {}, [], {}

    def _report(self, loc: _Local) -> None:
        """PS 0's agent reports the job's work counter when it moved (a monotonic counter;
        the service refuses replays, other machines' and stale incarnations' reports)."""
        if not loc.has_ps0:
            return
        st = _json(loc.inc_dir / "ps-0.json")
        if "work" not in st or float(st["work"]) <= loc.sent:
            return
        loss = st["loss_sum"] / st["loss_n"] if st.get("loss_n") else None
        body = {
            "job": loc.job,
            "incarnation": loc.inc,
            "work": float(st["work"]),
            "loss": loss,
            "resumed": loc.resumed,
        }
        try:
            r = self.http.post(f"/v1/agents/{self.machine}/progress", json=body)
        except httpx.HTTPError:
            return  # the service is restarting: the counter is sent again next time
        if r.status_code in (200, 409):  # 409: refused for good (e.g. a stale incarnation)
            loc.sent = float(st["work"])

    def close(self) -> None:
        for loc in list(self.running.values()):
            self._begin_stop(loc)
        while self.stopping:
            self._reap()
            if self.stopping:
                time.sleep(0.05)


class _Unavailable(Exception):
    """The service answered 5xx: it is there but cannot serve now (ask again)."""


def _answered(call: Callable[[], object], machine: str, server: str) -> None:
    """``call()``; the service's refusal (4xx: unknown machine, bad token, capacity above
    the declared) ends the agent with its detail, a 5xx is :class:`_Unavailable`."""
    try:
        call()
    except httpx.HTTPStatusError as e:
        r = e.response
        if r.status_code >= 500:
            raise _Unavailable(r.status_code) from None
        try:
            detail = r.json().get("detail", r.text)
        except ValueError:
            detail = r.text
        why = f"one the service at {server} accepts ({r.status_code}: {detail})"
        if r.status_code == 401:
            raise InvalidInput("token-file", "(its token)", why) from None
        raise InvalidInput("machine", machine, why) from None


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
    if not 0 < poll <= MAX_POLL_S:
        raise InvalidInput("poll", poll, f"> 0 and ≤ {MAX_POLL_S:g} seconds")
    if not re.fullmatch(MACHINE_NAME, machine):
        raise InvalidInput("machine", machine, "a name of letters, digits, '.', '_', '-'")
    url = httpx.URL(server)
    if url.scheme not in ("http", "https") or not url.host:
        raise InvalidInput("server", server, "an http(s) URL, e.g. http://127.0.0.1:8080")
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
            waiting = False
            while True:
                try:
                    _answered(agent.register, machine, server)
                    break
                except (httpx.TransportError, _Unavailable):
                    if not waiting:  # said once: an agent may start before its service
                        print(f"dmlsched agent: waiting for {server}", file=sys.stderr)
                        waiting = True
                    time.sleep(poll)
            print(f"dmlsched agent: {machine} registered with {server}", file=sys.stderr)
            beater.start()
            while True:
                # the service may be restarting: keep running what runs, ask again
                with contextlib.suppress(httpx.TransportError, _Unavailable):
                    _answered(agent.step, machine, server)
                time.sleep(poll)
        except KeyboardInterrupt:
            pass
        finally:
            stop.set()
            agent.close()
