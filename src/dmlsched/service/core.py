"""The live ``cluster`` engine: the service's state, a pure function of its log.

The service runs the simulator's time-slotted loop on a real clock.  Its
state (machines, jobs, the scheduler) is rebuilt from the durable log
(:mod:`dmlsched.service.store`) by applying the records in order, so a
restart after SIGKILL at any moment ends in the state the last committed
record left — nothing acknowledged is lost.

Records:

* ``config`` — scheduler name and parameters, seed, window, progress mode,
  the plugins it was loaded with (the first record; a restart with other
  values is refused);
* ``submit`` / ``cancel`` — a job request (the service assigns ids 0, 1, …
  in log order) / its cancellation;
* ``machine`` — a machine declared by an admin (or re-declared: back up, new
  capacity), or joined by its agent (``join``: at most the declared
  capacity); ``progress`` — work an agent measured;
* ``tick`` — one slot: the engine's bookkeeping and the scheduler's
  validated decision.

Every record names who did it (``by``: an identity of
:mod:`dmlsched.service.auth`, ``clock`` for the slot clock): the log is the
audit trail.  A job belongs to the identity that submitted it; its
Idempotency-Key is that identity's (two users' equal keys are two jobs).

A request is applied in memory, queued, and answered once its group of
records is committed (:meth:`Core.flush`; one fsync for every request that
arrived meanwhile — group commit).  A tick commits everything queued before
its own record, so no decision ever rests on an uncommitted request.

**One slot (``tick``)** drives the simulator's own engine state
(:class:`dmlsched.sim.cluster.ClusterState`, one per epoch) as
:func:`dmlsched.sim.cluster.simulate_cluster` does, one slot at a time — the
view, the referee and the bound on measured work are the engine's:

1. close slot t−1: the engine credits progress — its speed model
   (:func:`dmlsched.model.speed.pdors.job_rate`, ``progress="model"``) or
   the work agents measured (``progress="measured"``; each report checked
   by :meth:`Core.report` when it arrives — fencing, incarnation, and the
   engine's :meth:`~dmlsched.sim.cluster.ClusterState.check_work` — and
   credited by the engine at the slot's end); a job whose work reaches E·K
   (E·K·M async) completes in slot t−1;
2. machines whose agent missed its heartbeat for ``agent_timeout`` seconds
   go down (capacity 0) — their jobs are requeued below;
3. cancelled jobs leave; jobs submitted since the last slot arrive (a_i = t);
4. **epochs.**  A scheduler sees one fixed cluster for a run
   (``reset(cluster, horizon, rng)``), so when the cluster changes (a
   machine declared, down or back), after an invalid decision, or when the
   epoch's window of slots ends, the service starts a new *epoch*: a fresh
   engine state on the new cluster from slot t to t + window, a fresh
   scheduler reset with it and the generator ``spawn(make_rng(seed), e + 1)[e]``;
   every unfinished job — pending or admitted — is presented to it as an
   arrival again (event ``requeue``), keeping the work it has done (a real
   job resumes from its checkpoint).  Within an epoch, arrivals join the
   state (``add_job``) and cancellations leave it (``cancel``);
5. the scheduler decides through the ``cluster`` protocol on the engine's
   view (``reveal``: private copies); the engine accepts or refuses the
   decision (``accept``: the simulator's referee).  An invalid decision is
   never clipped: the slot runs nothing, the error is logged, and the next
   slot starts a new epoch;
6. the tick record is committed, then applied: only then do agents see it.
   Only decisions the engine accepted are committed.

On restart the records are applied again; every logged decision goes
through the engine's referee again (a log it refuses is refused).  From the
start of the last epoch on, the scheduler — fresh, same seed — decides every
slot again and its decisions are judged and compared with the logged ones
(``replay_mismatches`` counts differences; a deterministic scheduler has
none).  The logged decision is authoritative.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NoReturn

import numpy as np

from dmlsched.errors import InvalidDecision, InvalidInput, InvalidReport
from dmlsched.model.cluster import (
    RESOURCES,
    Cluster,
    ClusterDecision,
    ClusterJob,
    ClusterWorkload,
    Placement,
)
from dmlsched.model.reasons import Reason
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import ClusterScheduler, make_scheduler
from dmlsched.service.reasons import explain_slot, reason_body
from dmlsched.service.schemas import JobRequest, MachineRequest, job_from_request
from dmlsched.service.snapshot import dump, restore
from dmlsched.service.states import FINISHED, LIVE, JobStatus
from dmlsched.service.store import Record, Store
from dmlsched.sim.cluster import ClusterState, Ruling
from dmlsched.sim.drive import MEASURED_SLACK

__all__ = [
    "LOCAL_NAME",
    "MEASURED_SLACK",
    "REFUSALS",
    "Core",
    "JobState",
    "Machine",
    "ServiceConfig",
    "credit_bound",
]

LOCAL_NAME = "local"  # who did what a record does not name (--insecure-local; old logs)

HISTORY = 50  # slots of allocation kept for the dashboard

JOB_STATES = tuple(JobStatus)


@dataclass(frozen=True)
class ServiceConfig:
    scheduler: str
    seed: int = 0
    window: int = 100
    progress: str = "model"  # "model" | "measured"
    params: Mapping[str, Any] = field(default_factory=dict)
    plugins: tuple[str, ...] = ()  # --plugin modules and files (absolute paths) it needs

    def __post_init__(self) -> None:
        if self.progress not in ("model", "measured"):
            raise InvalidInput("progress", self.progress, "model | measured")
        if self.window < 1:
            raise InvalidInput("window", self.window, ">= 1")
        if self.seed < 0:
            raise InvalidInput("seed", self.seed, ">= 0")

    def to_body(self) -> dict[str, Any]:
        return {
            "scheduler": self.scheduler,
            "seed": self.seed,
            "window": self.window,
            "progress": self.progress,
            "params": dict(self.params),
            # only when given: the config records of logs made without plugins stay as they were
            **({"plugins": list(self.plugins)} if self.plugins else {}),
        }


@dataclass
class Machine:
    name: str
    index: int
    capacity: tuple[float, ...]  # what the scheduler sees: declared, or less if the agent says so
    agent: bool
    up: bool = True
    last_seen: float = 0.0  # wall time of the last heartbeat; not part of the logged state
    declared: tuple[float, ...] = ()  # an admin's declaration: the most the machine offers
    offered: tuple[float, ...] | None = None  # what its agent offered when it joined


@dataclass
class JobState:
    id: int
    name: str | None
    key: str | None
    seq: int
    request: dict[str, Any]
    job: ClusterJob  # arrival = the slot it was revealed (0 while queued)
    owner: str = LOCAL_NAME  # the identity that submitted it
    state: JobStatus = JobStatus.queued
    arrival: int | None = None
    done: float = 0.0
    completed: int | None = None
    placement: Placement | None = None  # this slot's
    rate: float = 0.0  # the engine's speed model on this slot's placement
    requeued: int = 0
    loss: float | None = None
    last: Placement | None = None  # the previous slot's placement
    placed_since: int | None = None  # first slot of the current run of this placement
    # measured progress of the current incarnation (placed_since): the agent's counter,
    # the work credited in it, where it resumed; work done before and redone after
    ran: int = 0  # slots it held a placement (its runtime, for max_runtime)
    reason: dict[str, str] | None = None  # why it is not running (service.reasons)
    # wall-clock times (Unix seconds): submitted, first placed, completed/cancelled/rejected
    submitted_at: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    inc_placement: Placement | None = None  # the current incarnation's, and the one before
    prev_placement: Placement | None = None
    counter_inc: int | None = None
    counter: float = 0.0
    inc_credited: float = 0.0
    restored: float | None = None
    lost: float = 0.0

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (a snapshot): a finished job without its ClusterJob — most of a long
        log's jobs, and most of the time to load them — rebuilt from its request when
        asked for (:meth:`__getattr__`)."""
        if self.state in FINISHED:
            return {k: v for k, v in self.__dict__.items() if k != "job"}
        return self.__dict__

    def __getattr__(self, name: str) -> Any:
        if name != "job":  # only called for attributes not set: ``job`` after a snapshot
            raise AttributeError(name)
        job = job_from_request(JobRequest.model_validate(self.request), self.id, self.arrival or 0)
        self.__dict__["job"] = job
        return job

    def summary(self, machines: list[Machine]) -> dict[str, Any]:
        total = self.job.total_work
        p = self.placement
        return {
            "id": self.id,
            "name": self.name,
            "owner": self.owner,
            "key": self.key,
            "state": self.state,
            "arrival": self.arrival,
            "completed": self.completed,
            "work": total,
            "done": min(self.done, total),
            "progress": min(1.0, self.done / total) if total else 1.0,
            "reason": self.reason,
            "submitted_at": self.submitted_at,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "runtime_slots": self.ran,
            "requeued": self.requeued,
            "incarnation": self.placed_since,
            "restored": self.restored,  # where the current incarnation resumed (checkpoint)
            "lost": self.lost,  # work done, then lost with an incarnation (redone since)
            "loss": self.loss,
            "request": self.request,
            "placement": None
            if p is None
            else {
                machines[m].name: {"workers": w, "ps": s}
                for m, w, s in zip(p.machines, p.workers, p.ps, strict=True)
            },
        }


# why a progress report is refused (the reasons of InvalidReport and of the metric)
REFUSALS = ("fenced", "no-placement", "not-holder", "stale-incarnation", "replay", "over-bound")


def credit_bound(rate: float, elapsed: float) -> float:
    """The most work a placement of model ``rate`` (per slot) can physically do in
    ``elapsed`` slots — the engine's bound (:func:`dmlsched.sim.drive.within_bound`,
    :data:`~dmlsched.sim.drive.MEASURED_SLACK`): what reports may add up to in one
    incarnation."""
    return MEASURED_SLACK * rate * max(0.0, elapsed)


def _ps0_machine(p: Placement) -> int:
    """The machine of PS 0 as the agents number PSs (machines in index order): its agent
    reports the job's work counter."""
    return min(m for m, s in zip(p.machines, p.ps, strict=True) if s > 0)


def _placement_body(p: Placement) -> list[list[int]]:
    return [list(map(int, p.machines)), list(map(int, p.workers)), list(map(int, p.ps))]


def _placement(body: list[list[int]]) -> Placement:
    return Placement(tuple(body[0]), tuple(body[1]), tuple(body[2]))


def _logged(b: dict[str, Any]) -> ClusterDecision:
    """A tick record's decision as the scheduler's protocol states it."""
    alloc = {int(j): _placement(pb) for j, pb in b["alloc"].items()}
    return ClusterDecision(alloc, tuple(b["admit"]), tuple(b["reject"]))


def _accepted(eng: ClusterState, acc: Any) -> dict[str, Any]:
    """A tick record's decision from what the engine accepted: admissions (the
    simulator's order of activation), placements with workers and their rates."""
    alloc: dict[str, list[list[int]]] = {}
    rates: dict[str, float] = {}
    for j, p in eng.placements().items():
        if p.workers:
            alloc[str(j)] = _placement_body(p.placement)
            rates[str(j)] = p.rate
    admit = [int(j) for j in (*acc.admitted, *acc.by_allocation)]
    return {
        "admit": admit,
        "reject": [int(j) for j in acc.rejected],
        "alloc": alloc,
        "rates": rates,
    }


def _ruled(r: Ruling) -> dict[str, Any]:
    """The same from the referee's ruling (for comparing; without rates)."""
    alloc = {
        str(j): _placement_body(Placement(*c)) for j, c in r.placements.items() if sum(c.workers)
    }
    admit = [int(j) for j in (*r.admitted, *r.by_allocation)]
    return {"admit": admit, "reject": [int(j) for j in r.rejected], "alloc": alloc}


class Core:
    """Machines, jobs, the scheduler and the slot; mutated only by applying records.

    Not thread-safe: the service calls it under one lock.
    """

    def __init__(
        self,
        config: ServiceConfig,
        store: Store,
        *,
        clock: Callable[[], float] = time.monotonic,
        agent_timeout: float = 30.0,
        wall: Callable[[], float] = time.time,
        scheduler_factory: Callable[[], ClusterScheduler] | None = None,
    ) -> None:
        """``scheduler_factory``: a fresh scheduler per epoch (default: the registered
        ``config.scheduler`` with ``config.params``)."""
        self.config = config
        self.store = store
        self.clock = clock
        self.wall = wall  # wall-clock times shown with jobs (not part of any decision)
        self.agent_timeout = agent_timeout
        self.machines: list[Machine] = []
        self.by_name: dict[str, Machine] = {}
        self.jobs: dict[int, JobState] = {}
        self.keys: dict[tuple[str, str], int] = {}  # (owner, Idempotency-Key) -> job
        self.by_owner: dict[str, list[int]] = {}  # owner -> its job ids, ascending
        self.queued: dict[int, None] = {}  # submitted, not yet revealed (ordered set)
        self.pending: dict[int, None] = {}
        self.active: dict[int, None] = {}
        self._placed: dict[int, None] = {}  # jobs with a placement this slot or the last
        self.cancel_requests: dict[int, None] = {}
        self.uncredited: dict[int, float] = {}
        self.refused: dict[str, int] = {}  # refused progress reports by reason (since start)
        self.slot = 0
        self.seq = 0  # last record applied (in memory)
        self.durable = 0  # last record committed to the store
        self.batch: list[Record] = []  # applied, not yet committed: nobody was answered yet
        self.group_commit = False  # True: the caller flushes (the service, see app.py)
        self.epoch = -1
        self.epoch_end = 0
        self.epoch_cluster: tuple[tuple[float, ...], ...] | None = None
        self.needs_reset = False
        self.scheduler: Any = None
        self.scheduler_factory = scheduler_factory or partial(
            make_scheduler, "cluster", config.scheduler, **config.params
        )
        self.engine: ClusterState | None = None  # the epoch's engine state
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY)
        self.usage = np.zeros((0, len(RESOURCES)))
        self.last_decide_seconds = 0.0
        self.invalid_decisions = 0
        self.replay_mismatches = 0
        self.replaying = False
        self._replay_decide = True
        self.snapshot_seq = 0  # the record the latest snapshot was taken after

    # ---- startup -------------------------------------------------------------------
    def open(self) -> Core:
        """Rebuild the state: the latest usable snapshot (:mod:`~dmlsched.service.snapshot`)
        and the records after it — or the whole log — replaying the decisions from the
        last epoch start among them (from the snapshot on if none starts one)."""
        head = list(self.store.records(since=0, limit=1))
        if not head:
            self._commit("config", self.config.to_body())
            self.flush()
            return self
        first = head[0]
        if first.kind != "config":
            raise InvalidInput("db", self.store.url, "a dmlsched service log")
        mine = self.config.to_body()
        for k, v in first.body.items():
            if mine.get(k) != v:
                raise InvalidInput(
                    k, mine.get(k), f"{v!r}, as the log in {self.store.url} was made"
                )
        snap = self.store.latest_snapshot()
        restored = snap is not None and restore(self, *snap)
        records = list(self.store.records(since=self.seq if restored else 1))
        last_reset = max(
            (i for i, r in enumerate(records) if r.kind == "tick" and r.body.get("reset")),
            default=0 if restored else len(records),
        )
        self.replaying = True
        try:
            for i, rec in enumerate(records):
                self._replay_decide = i >= last_reset
                self.apply(rec)
        finally:
            self.replaying = False
        self.snapshot_seq = snap[0] if restored and snap is not None else 0
        now = self.clock()
        for m in self.machines:  # agents get a full timeout to reconnect after a restart
            m.last_seen = now
        return self

    def snapshot(self) -> int:
        """Store a snapshot of the state after the last record (all committed); its seq."""
        assert self.durable == self.seq and not self.batch, "a snapshot of uncommitted state"
        self.store.save_snapshot(self.seq, dump(self))
        self.snapshot_seq = self.seq
        return self.seq

    def reloaded(self) -> Core:
        """A core rebuilt from the log alone: what is left after a failed commit."""
        core = Core(
            self.config,
            self.store,
            clock=self.clock,
            agent_timeout=self.agent_timeout,
            wall=self.wall,
            scheduler_factory=self.scheduler_factory,
        )
        core.group_commit = self.group_commit
        return core.open()

    # ---- records -------------------------------------------------------------------
    def apply(self, rec: Record) -> None:
        self.seq = self.durable = rec.seq
        b = rec.body
        if rec.kind == "submit":
            self._apply_submit(rec.seq, b)
        elif rec.kind == "cancel":
            self._apply_cancel(int(b["job"]), b)
        elif rec.kind == "machine":
            self._apply_machine(b)
        elif rec.kind == "progress":
            self._apply_progress(b)
        elif rec.kind == "tick":
            self._replay_tick(b)
        else:
            raise InvalidInput(
                "record kind", rec.kind, "submit | cancel | machine | progress | tick"
            )

    def _commit(self, kind: str, body: dict[str, Any]) -> int:
        """Number a record and queue it for the next group commit (see :meth:`flush`)."""
        self.seq += 1
        self.batch.append(Record(self.seq, kind, body))
        if not self.group_commit:
            self.flush()
        return self.seq

    def _now(self) -> float:
        return round(self.wall(), 3)

    def take_batch(self) -> list[Record]:
        batch, self.batch = self.batch, []
        return batch

    def flush(self) -> None:
        """Commit every queued record now (the caller holds the service's commit lock)."""
        batch = self.take_batch()
        if batch:
            self.store.append_many(batch)
            self.durable = batch[-1].seq

    # ---- requests (each: validate, commit, apply) ----------------------------------
    def submit(
        self, req: JobRequest, key: str | None, by: str = LOCAL_NAME
    ) -> tuple[JobState, bool]:
        """Log and apply ``by``'s job request; ``(job, created)`` — a key ``by`` used
        before returns its job.

        The caller answers only once the record is durable (``durable >= job.seq``).
        """
        if key is not None and (by, key) in self.keys:
            return self.jobs[self.keys[(by, key)]], False
        job_id = len(self.jobs)
        job = job_from_request(req, job_id, 0)
        self._check_fits(job)
        body = {
            "job": job_id,
            "key": key,
            "by": by,
            "request": req.model_dump(mode="json", exclude_unset=True),
        }
        body["at"] = self._now()
        seq = self._commit("submit", body)
        return self._apply_submit(seq, body), True

    def _check_fits(self, job: ClusterJob) -> None:
        up = [m.capacity for m in self.machines if m.up]
        if not up:
            return  # no machine yet: the scheduler decides once there are some
        cap_max = np.max(np.asarray(up), axis=0)
        for name, demand in (("worker_demand", job.worker_demand), ("ps_demand", job.ps_demand)):
            fits = [all(d <= c for d, c in zip(demand, cap, strict=True)) for cap in up]
            if not any(fits):
                r = int(np.argmax(np.asarray(demand) - cap_max))
                raise InvalidInput(
                    f"{name}[{RESOURCES[r]}]",
                    demand[r],
                    f"<= largest machine capacity {cap_max[r]:g}",
                )

    def _apply_submit(self, seq: int, b: dict[str, Any]) -> JobState:
        req = JobRequest.model_validate(b["request"])
        job_id = int(b["job"])
        js = JobState(
            id=job_id,
            name=req.name,
            key=b.get("key"),
            seq=seq,
            request=b["request"],
            job=job_from_request(req, job_id, 0),
            owner=b.get("by", LOCAL_NAME),
            submitted_at=b.get("at"),
        )
        self.jobs[job_id] = js
        if js.key is not None:
            self.keys[(js.owner, js.key)] = job_id
        self.by_owner.setdefault(js.owner, []).append(job_id)
        self.queued[job_id] = None
        return js

    def cancel(self, job_id: int, by: str = LOCAL_NAME) -> JobState:
        js = self.jobs.get(job_id)
        if js is None:
            raise KeyError(job_id)
        if js.state in FINISHED or job_id in self.cancel_requests:
            return js
        body = {"job": job_id, "by": by}
        self._commit("cancel", body)
        self._apply_cancel(job_id, body)
        return js

    def _stop_overruns(self) -> None:
        """Cancel (as the service) each running job that ran its ``max_runtime`` slots:
        logged before the slot, as any cancellation."""
        for j in list(self.active):
            js = self.jobs[j]
            limit = js.request.get("max_runtime")
            if limit is not None and js.ran >= limit and j not in self.cancel_requests:
                why = f"max runtime: ran {js.ran} slots, its limit is {limit}"
                body = {"job": j, "by": "service", "reason": why}
                self._commit("cancel", body)
                self._apply_cancel(j, body)

    def _apply_cancel(self, job_id: int, b: dict[str, Any]) -> None:
        js = self.jobs[job_id]
        if b.get("reason"):
            js.reason = reason_body(Reason("max-runtime", b["reason"]), "service")
        else:
            by = b.get("by", LOCAL_NAME)
            js.reason = reason_body(Reason("cancelled", f"cancelled by {by}"), "service")
        if job_id in self.queued:  # never shown to the scheduler: gone at once
            del self.queued[job_id]
            js.state = JobStatus.cancelled
        elif js.state not in FINISHED:
            self.cancel_requests[job_id] = None

    def register(self, req: MachineRequest, by: str = LOCAL_NAME) -> Machine:
        """An admin declares a machine and its capacity (or re-declares it: back up)."""
        if req.capacity is None:
            raise InvalidInput("capacity", None, "gpu, cpu, mem, storage: the machine's capacity")
        m = self.by_name.get(req.name)
        caps = tuple(float(c) for c in req.capacity)
        for r, c in enumerate(caps):
            if not (c >= 0 and np.isfinite(c)):
                raise InvalidInput(f"capacity[{RESOURCES[r]}]", c, "finite and >= 0")
        if m is not None and m.declared == caps and m.agent == req.agent and (m.up or m.agent):
            m.last_seen = self.clock()
            return m  # nothing changes: no record
        body = {"name": req.name, "capacity": list(caps), "agent": req.agent, "by": by}
        self._commit("machine", body)
        return self._apply_machine(body)

    def join(self, name: str, capacity: tuple[float, ...] | None, by: str) -> Machine:
        """A machine's agent joins (again): the machine is up with what the agent offers,
        at most what an admin declared (checked by the caller: an agent never raises it)."""
        m = self.by_name[name]
        caps = m.declared if capacity is None else tuple(float(c) for c in capacity)
        if m.up and m.agent and m.offered == caps:
            m.last_seen = self.clock()
            return m
        body = {"name": name, "capacity": list(caps), "agent": True, "by": by, "join": True}
        self._commit("machine", body)
        return self._apply_machine(body)

    def _apply_machine(self, b: dict[str, Any]) -> Machine:
        name = b["name"]
        m = self.by_name.get(name)
        caps = tuple(float(c) for c in b["capacity"])
        agent = bool(b["agent"])
        if b.get("join"):  # its agent (an agent joins only a declared machine)
            m = self.by_name[name]
            m.offered, m.agent, m.up = caps, True, True
        elif m is None:  # a declaration; an agent's machine is up once its agent joined
            m = Machine(name, len(self.machines), caps, agent, up=not agent, declared=caps)
            self.machines.append(m)
            self.by_name[name] = m
        else:  # a re-declaration: back up, unless it waits for its agent
            m.declared, m.agent = caps, agent
            m.up = m.up or not agent
        if m.offered is None:
            m.capacity = m.declared
        else:
            m.capacity = tuple(min(d, o) for d, o in zip(m.declared, m.offered, strict=True))
        m.last_seen = self.clock()
        return m

    def heartbeat(self, name: str) -> Machine:
        m = self.by_name[name]
        m.last_seen = self.clock()
        return m

    def report(self, machine: str, rep: dict[str, Any], by: str = LOCAL_NAME) -> float:
        """Check and log work an agent measured; returns the new work it carries.

        ``rep``: ``job``, ``incarnation`` (the one its placement was handed out
        with), ``work`` (the job's absolute work counter), ``loss``, ``resumed``
        (the counter the incarnation restarted from: its checkpoint's).  Refused
        (:class:`InvalidReport`, counted in :attr:`refused`) unless ``machine`` is
        up and holds the PS 0 of the job's current placement, the incarnation is
        the current one, the counter moved forward, and the work credited in this
        incarnation stays within what the placement can physically do in the slots
        it has run (the engine's :meth:`~dmlsched.sim.cluster.ClusterState.check_work`).  A report
        without new work is not logged — except an incarnation's first, which records
        where it resumed.
        """
        j = int(rep["job"])
        js = self.jobs.get(j)
        if js is None:
            raise InvalidInput("job", j, "a submitted job id")
        m = self.by_name[machine]
        p = js.placement
        inc = int(rep["incarnation"])
        if not m.up:
            self._refuse("fenced", machine, j, f"machine {machine} is down: its work is fenced")
        if p is None or not p.machines:
            self._refuse("no-placement", machine, j, "the job has no placement this slot")
        holder = _ps0_machine(p)
        if holder != m.index:
            self._refuse(
                "not-holder",
                machine,
                j,
                f"machine {machine} does not hold the job's PS 0 "
                f"({self.machines[holder].name} does)",
            )
        if inc != js.placed_since:
            self._refuse(
                "stale-incarnation",
                machine,
                j,
                f"incarnation {inc} is over (the current one is {js.placed_since})",
            )
        work = float(rep["work"])
        first = js.counter_inc != inc
        if not first and work <= js.counter:
            self._refuse(
                "replay", machine, j, f"work={work:g} is not beyond {js.counter:g} (a replay)"
            )
        known = js.done + self.uncredited.get(j, 0.0)
        new = max(0.0, work - known)
        credited = (0.0 if first else js.inc_credited) + new
        elapsed = self.slot - inc  # slots this incarnation has run, the current one included
        assert self.engine is not None  # a placement stands: the engine accepted it
        try:  # the engine's own bound on measured work, on its standing placement
            self.engine.check_work({j: credited}, elapsed=elapsed, source=f"agent of {machine}")
        except InvalidReport as e:
            self._refuse("over-bound", machine, j, f"in incarnation {inc}, {e.detail}")
        body = {
            "job": j,
            "incarnation": inc,
            "work": work,
            "samples": new,
            "loss": rep.get("loss"),
            "machine": machine,
            "by": by,
        }
        if first:
            body["resumed"] = min(work, float(rep.get("resumed") or 0.0))
        if new > 0 or first:
            self._commit("progress", body)
        self._apply_progress(body)
        return new

    def _refuse(self, reason: str, machine: str, job: int, detail: str) -> NoReturn:
        assert reason in REFUSALS
        self.refused[reason] = self.refused.get(reason, 0) + 1
        raise InvalidReport(f"agent of {machine}", job, self.slot, f"{reason}: {detail}")

    def _apply_progress(self, b: dict[str, Any]) -> None:
        j = int(b["job"])
        js = self.jobs[j]
        new = float(b["samples"])
        if "incarnation" in b:  # an older log's records carry no incarnation
            if js.counter_inc != b["incarnation"]:
                js.counter_inc, js.inc_credited = int(b["incarnation"]), 0.0
                resumed = float(b.get("resumed", b["work"]))
                known = js.done + self.uncredited.get(j, 0.0)
                js.restored = resumed
                js.lost += max(0.0, known - resumed)
            js.counter = float(b["work"])
            js.inc_credited += new
        if self.config.progress == "measured" and new > 0:
            self.uncredited[j] = self.uncredited.get(j, 0.0) + new
        if b.get("loss") is not None:
            js.loss = float(b["loss"])

    # ---- the slot ------------------------------------------------------------------
    def timed_out(self) -> list[str]:
        """Machines whose agent has not been heard of for ``agent_timeout`` seconds."""
        if self.agent_timeout <= 0:
            return []
        now = self.clock()
        return [
            m.name
            for m in self.machines
            if m.agent and m.up and now - m.last_seen > self.agent_timeout
        ]

    def tick(self, by: str = "clock") -> dict[str, Any]:
        """Run one slot: close the last, decide this one, commit, apply.  Returns the record."""
        self._stop_overruns()
        body = self._open_slot(self.timed_out())
        body.update(self._decide())
        body["by"] = by
        body["at"] = self._now()
        self._commit("tick", body)
        self.flush()  # with every request before it: the decision is durable before it acts
        self._apply_decision(body)
        return body

    def _replay_tick(self, logged: dict[str, Any]) -> None:
        body = self._open_slot(logged["down"])
        for k in ("slot", "credits", "complete", "cancel", "arrive", "reset", "epoch"):
            if body[k] != logged[k]:
                self._inconsistent(
                    body["slot"], f"{k}: replayed {body[k]!r:.200}, logged {logged[k]!r:.200}"
                )
        if self._replay_decide:
            dec = self._decide()
            keys = ("admit", "reject", "alloc", "error")
            if any(dec[k] != logged[k] for k in keys):
                self.replay_mismatches += 1
                self.needs_reset = True  # the scheduler's state diverged from the log's
        self._apply_decision(logged)

    def _inconsistent(self, slot: int, what: str) -> NoReturn:
        raise InvalidInput("db", self.store.url, f"a log consistent at slot {slot} ({what})")

    def _open_slot(self, down: list[str]) -> dict[str, Any]:
        """Steps 1–4 of the module docstring; mutates the state (under the service lock)."""
        t = self.slot
        credits, complete = self._close_slot(t)  # 1. close slot t-1
        # only jobs placed in the last slot or the one before have a placement to move on
        for j in self._placed:
            js = self.jobs[j]
            js.last, js.placement, js.rate = js.placement, None, 0.0
            if js.state == JobStatus.running:
                js.state = JobStatus.admitted
        self._placed = {j: None for j in self._placed if self.jobs[j].last is not None}
        # 2. machines down
        for name in down:
            self.by_name[name].up = False
        # 3. cancellations, then arrivals
        cancel = []
        for j in self.cancel_requests:
            js = self.jobs[j]
            if js.state in (JobStatus.pending, JobStatus.admitted):
                cancel.append(j)
                js.state = JobStatus.cancelled
                self.pending.pop(j, None)
                self.active.pop(j, None)
                if self.engine is not None and self.engine.job_state(j) in ("pending", "active"):
                    self.engine.cancel(j)
        self.cancel_requests.clear()
        arrive = list(self.queued)
        self.queued.clear()
        for j in arrive:
            js = self.jobs[j]
            js.arrival, js.state = t, JobStatus.pending
            js.job = job_from_request(JobRequest.model_validate(js.request), j, t)
            self.pending[j] = None
        reset, requeue = self._epoch(t, arrive)  # 4. epochs
        return {
            "slot": t,
            "epoch": self.epoch,
            "reset": reset,
            "down": list(down),
            "credits": credits,
            "complete": complete,
            "cancel": cancel,
            "arrive": arrive,
            "requeue": requeue,
        }

    def _close_slot(self, t: int) -> tuple[dict[str, float], list[int]]:
        """Step 1: the engine credits slot t − 1 (if a decision stood in it) with its speed
        model or with the work agents reported (each checked when it came, :meth:`report`,
        and by the engine again over the slots of the job's incarnation); returns (credits
        by job, jobs completed), in the log's order: the active jobs' (model) or the
        reports' (measured)."""
        eng = self.engine
        work = {j: v for j, v in self.uncredited.items() if v > 0 and self.jobs[j].state in LIVE}
        self.uncredited.clear()
        if eng is None or eng.phase != "accepted":
            return {}, []
        if self.config.progress == "model":
            got = eng.credit()
            order: Any = self.active
        else:
            elapsed = max((t - (self.jobs[j].placed_since or 0) for j in work), default=1)
            try:
                got = eng.credit(work, elapsed=max(1, elapsed), source="agents")
            except InvalidReport as e:  # report() admits none of this: a log made otherwise
                self._inconsistent(t, f"the engine refuses the reported work: {e}")
            order = work
        per_slot = got.per_slot
        credits = {str(j): per_slot[j] for j in order if per_slot.get(j, 0.0) > 0}
        ended = set(got.completed)
        complete = []
        for key in credits:
            js = self.jobs[int(key)]
            js.done = eng.done(js.id)
            if js.id in ended:
                complete.append(js.id)
                js.state, js.completed = JobStatus.completed, t - 1
                self.active.pop(js.id, None)
                self.pending.pop(js.id, None)
        return credits, complete

    def _epoch(self, t: int, arrive: list[int]) -> tuple[bool, list[int]]:
        """Step 4: a new epoch (engine state and scheduler) when the cluster changed, after
        an invalid decision or an outage, or when the window ended; else the arrivals join
        the epoch's state.  Returns (reset, jobs requeued)."""
        caps = tuple(m.capacity if m.up else (0.0,) * len(RESOURCES) for m in self.machines)
        # no machine up: no decision (a scheduler would reject what fits nowhere)
        any_up = any(m.up for m in self.machines)
        if not any_up and self.scheduler is not None:
            self.needs_reset = True  # an outage of the whole cluster ends the epoch
        reset = any_up and (
            self.scheduler is None
            or self.engine is None
            or caps != self.epoch_cluster
            or self.needs_reset
            or t >= self.epoch_end
        )
        if not reset:
            if self.engine is not None:
                for j in arrive:
                    self.engine.add_job(self.jobs[j].job)
            return False, []
        self.epoch += 1
        self.epoch_end = t + self.config.window
        self.epoch_cluster = caps
        self.needs_reset = False
        requeue = [j for j in (*self.pending, *self.active) if j not in arrive]
        for j in requeue:
            js = self.jobs[j]
            js.requeued += 1 if js.state == JobStatus.admitted else 0
            js.state = JobStatus.pending
        self.pending = dict.fromkeys(requeue + arrive)
        self.active = {}
        cluster = Cluster(np.asarray(caps, dtype=float))
        self.engine = ClusterState(
            ClusterWorkload((), cluster, self.epoch_end),
            self.config.scheduler,
            record_events=False,
            start=t,
        )
        for j in self.pending:
            self.engine.add_job(self.jobs[j].job, done=self.jobs[j].done)
        self.scheduler = self.scheduler_factory()
        rng = spawn(make_rng(self.config.seed), self.epoch + 1)[self.epoch]
        self.scheduler.reset(self.engine.shown_cluster, self.epoch_end, rng)
        return True, requeue

    def _decide(self) -> dict[str, Any]:
        """Step 5: the scheduler's decision on the engine's view, accepted by the engine
        (replaying: only judged, the logged one stands), and the reasons of the jobs it
        leaves waiting; nothing else is mutated."""
        out: dict[str, Any] = {
            "admit": [],
            "reject": [],
            "alloc": {},
            "rates": {},
            "error": None,
            "decide_ms": 0.0,
        }
        eng = self.engine
        if not self._can_decide() or eng is None:
            out["reasons"] = explain_slot(self, None, out)
            return out
        view = eng.reveal()
        t0 = time.perf_counter()
        try:
            decision = self.scheduler.decide(view)
            self.last_decide_seconds = time.perf_counter() - t0
            if self.replaying:
                out.update(_ruled(eng.judge(decision)))
            else:
                out.update(_accepted(eng, eng.accept(decision)))
        except InvalidDecision as e:
            out["error"] = str(e)
        except Exception as e:  # a scheduler bug must not take the service down
            out["error"] = f"scheduler {self.config.scheduler} raised {type(e).__name__}: {e}"
        out["decide_ms"] = round(1000 * (time.perf_counter() - t0), 3)
        # replayed: the logged reasons stand (and cost nothing to recompute)
        out["reasons"] = {} if self.replaying else explain_slot(self, view, out)
        return out

    def _can_decide(self) -> bool:
        return self.scheduler is not None and any(m.up for m in self.machines)

    def _apply_decision(self, b: dict[str, Any]) -> None:
        """Step 6 (after the commit): admissions, this slot's placements, the clock."""
        t = b["slot"]
        if b.get("error"):
            self.invalid_decisions += 1
            self.needs_reset = True
        eng = self.engine
        if eng is None or b.get("error") or not self._can_decide():
            self.engine = None  # the slot runs nothing; the next starts an epoch
            usage = np.zeros((len(self.machines), len(RESOURCES)))
        else:
            if eng.phase != "accepted":  # replaying: the logged decision, refereed again
                if eng.phase == "open":
                    eng.reveal()
                try:
                    eng.accept(_logged(b))
                except InvalidDecision as e:
                    self._inconsistent(t, f"the engine refuses the logged decision: {e}")
            usage = eng.usage()
        for j in b["reject"]:
            self.pending.pop(j, None)
            self.jobs[j].state = JobStatus.rejected
        for j in b["admit"]:
            if j in self.pending:
                del self.pending[j]
                self.active[j] = None
                self.jobs[j].state = JobStatus.admitted
        snapshot: dict[str, dict[str, list[int]]] = {}
        for key, pb in b["alloc"].items():
            js = self.jobs[int(key)]
            p = _placement(pb)
            if js.last is None or js.last != p:
                js.placed_since = t  # a new incarnation of the job's processes
                js.prev_placement, js.inc_placement = js.inc_placement, p
            js.placement, js.rate, js.state = p, float(b["rates"][key]), JobStatus.running
            js.ran += 1
            self._placed[js.id] = None
            snapshot[key] = {
                self.machines[m].name: [w, s]
                for m, w, s in zip(p.machines, p.workers, p.ps, strict=True)
            }
        self.usage = usage
        at = b.get("at")
        for key in b["alloc"]:  # running: no reason; what changed for the others
            js = self.jobs[int(key)]
            js.reason = None
            js.started_at = js.started_at or at
        for j in (*b["complete"], *b["cancel"], *b["reject"]):
            self.jobs[j].ended_at = at
        for key, r in b.get("reasons", {}).items():
            self.jobs[int(key)].reason = r
        self.history.append({"slot": t, "alloc": snapshot, "error": b.get("error")})
        self.slot = t + 1

    # ---- reading -------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = dict.fromkeys(JOB_STATES, 0)
        for js in self.jobs.values():
            out[js.state] += 1
        return out

    def utilization(self) -> dict[str, float]:
        caps = np.asarray(
            [m.capacity for m in self.machines if m.up] or [(0.0,) * len(RESOURCES)], dtype=float
        ).sum(axis=0)
        used = self.usage.sum(axis=0) if self.usage.size else np.zeros(len(RESOURCES))
        return {
            r: float(used[i] / caps[i]) if caps[i] > 0 else 0.0 for i, r in enumerate(RESOURCES)
        }

    def machine_summary(self, m: Machine) -> dict[str, Any]:
        used = self.usage[m.index] if m.index < len(self.usage) else np.zeros(len(RESOURCES))
        return {
            "name": m.name,
            "index": m.index,
            "up": m.up,
            "agent": m.agent,
            "capacity": dict(zip(RESOURCES, m.capacity, strict=True)),
            "declared": dict(zip(RESOURCES, m.declared, strict=True)),
            "used": dict(zip(RESOURCES, map(float, used), strict=True)),
        }

    def allocation(self) -> dict[str, Any]:
        """The current slot's placements, by job id and machine name."""
        last = self.history[-1] if self.history else {"slot": None, "alloc": {}}
        return {"slot": last["slot"], "epoch": self.epoch, "jobs": last["alloc"]}

    def assignment(self, machine: str) -> dict[str, Any]:
        """One machine's part of the current allocation, with each job's whole placement."""
        m = self.by_name[machine]
        last = self.history[-1] if self.history else {"slot": None, "alloc": {}}
        tasks = []
        for key, per in last["alloc"].items():
            if machine in per:
                js = self.jobs[int(key)]
                w, s = per[machine]
                tasks.append(
                    {
                        "job": js.id,
                        "workers": w,
                        "ps": s,
                        "incarnation": js.placed_since,
                        # the previous incarnation checkpoints unless a machine of it is
                        # down (fenced): then resume at once from the newest checkpoint
                        "checkpoint_wait": js.prev_placement is not None
                        and all(self.machines[x].up for x in js.prev_placement.machines),
                        "placement": per,
                        "request": js.request,
                        "done": js.done,
                        "work": js.job.total_work,
                    }
                )
        return {
            "slot": last["slot"],
            "machine": m.name,
            "up": m.up,
            "machines": {x.name: x.index for x in self.machines},
            "tasks": tasks,
        }
