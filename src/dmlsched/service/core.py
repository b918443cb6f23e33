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
* ``machine`` — a machine registered (or re-registered: back up, new
  capacity); ``progress`` — work an agent measured;
* ``tick`` — one slot: the engine's bookkeeping and the scheduler's
  validated decision.

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
   the work agents measured (``progress="measured"``): what a placed job's
   agents reported since, checked against what its placement can do
   (:meth:`~dmlsched.sim.cluster.ClusterState.check_work`; a refused report
   is dropped and named in the tick's ``refused``; work reported for a job
   without a placement waits until it has one); a job whose work reaches
   E·K (E·K·M async) completes in slot t−1;
2. machines whose agent missed its heartbeat for ``agent_timeout`` seconds
   go down (capacity 0) — their jobs are requeued below;
3. cancelled jobs leave; jobs submitted since the last slot arrive (a_i = t);
4. **epochs.**  A scheduler sees one fixed cluster for a run
   (``reset(cluster, horizon, rng)``), so when the cluster changes (a
   machine registered, down or back), after an invalid decision, or when the
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
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import ClusterScheduler, make_scheduler
from dmlsched.service.schemas import JobRequest, MachineRequest, job_from_request
from dmlsched.service.store import Record, Store
from dmlsched.sim.cluster import ClusterState, Ruling

__all__ = ["Core", "JobState", "Machine", "ServiceConfig"]

HISTORY = 50  # slots of allocation kept for the dashboard

JOB_STATES = ("queued", "pending", "running", "admitted", "completed", "rejected", "cancelled")


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
    capacity: tuple[float, ...]
    agent: bool
    up: bool = True
    last_seen: float = 0.0  # wall time of the last heartbeat; not part of the logged state


@dataclass
class JobState:
    id: int
    name: str | None
    key: str | None
    seq: int
    request: dict[str, Any]
    job: ClusterJob  # arrival = the slot it was revealed (0 while queued)
    state: str = "queued"
    arrival: int | None = None
    done: float = 0.0
    completed: int | None = None
    placement: Placement | None = None  # this slot's
    rate: float = 0.0  # the engine's speed model on this slot's placement
    requeued: int = 0
    loss: float | None = None
    last: Placement | None = None  # the previous slot's placement
    placed_since: int | None = None  # first slot of the current run of this placement

    def summary(self, machines: list[Machine]) -> dict[str, Any]:
        total = self.job.total_work
        p = self.placement
        return {
            "id": self.id,
            "name": self.name,
            "key": self.key,
            "state": self.state,
            "arrival": self.arrival,
            "completed": self.completed,
            "work": total,
            "done": min(self.done, total),
            "progress": min(1.0, self.done / total) if total else 1.0,
            "requeued": self.requeued,
            "loss": self.loss,
            "request": self.request,
            "placement": None
            if p is None
            else {
                machines[m].name: {"workers": w, "ps": s}
                for m, w, s in zip(p.machines, p.workers, p.ps, strict=True)
            },
        }


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
        scheduler_factory: Callable[[], ClusterScheduler] | None = None,
    ) -> None:
        """``scheduler_factory``: a fresh scheduler per epoch (default: the registered
        ``config.scheduler`` with ``config.params``)."""
        self.config = config
        self.store = store
        self.clock = clock
        self.agent_timeout = agent_timeout
        self.machines: list[Machine] = []
        self.by_name: dict[str, Machine] = {}
        self.jobs: dict[int, JobState] = {}
        self.keys: dict[str, int] = {}
        self.queued: dict[int, None] = {}  # submitted, not yet revealed (ordered set)
        self.pending: dict[int, None] = {}
        self.active: dict[int, None] = {}
        self.cancel_requests: dict[int, None] = {}
        self.uncredited: dict[int, float] = {}
        self.reports: set[str] = set()
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
        self.scheduler_factory = scheduler_factory or (
            lambda: make_scheduler("cluster", config.scheduler, **config.params)
        )
        self.engine: ClusterState | None = None  # the epoch's engine state
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY)
        self.usage = np.zeros((0, len(RESOURCES)))
        self.last_decide_seconds = 0.0
        self.invalid_decisions = 0
        self.replay_mismatches = 0
        self.replaying = False
        self._replay_decide = True

    # ---- startup -------------------------------------------------------------------
    def open(self) -> Core:
        """Apply the whole log (replaying the last epoch's decisions), or start one."""
        records = list(self.store.records())
        if not records:
            self._commit("config", self.config.to_body())
            self.flush()
            return self
        first = records[0]
        if first.kind != "config":
            raise InvalidInput("db", self.store.url, "a dmlsched service log")
        mine = self.config.to_body()
        for k, v in first.body.items():
            if mine.get(k) != v:
                raise InvalidInput(
                    k, mine.get(k), f"{v!r}, as the log in {self.store.url} was made"
                )
        last_reset = max(
            (i for i, r in enumerate(records) if r.kind == "tick" and r.body.get("reset")),
            default=len(records),
        )
        self.replaying = True
        try:
            for i, rec in enumerate(records[1:], start=1):
                self._replay_decide = i >= last_reset
                self.apply(rec)
        finally:
            self.replaying = False
        now = self.clock()
        for m in self.machines:  # agents get a full timeout to reconnect after a restart
            m.last_seen = now
        return self

    # ---- records -------------------------------------------------------------------
    def apply(self, rec: Record) -> None:
        self.seq = self.durable = rec.seq
        b = rec.body
        if rec.kind == "submit":
            self._apply_submit(rec.seq, b)
        elif rec.kind == "cancel":
            self._apply_cancel(int(b["job"]))
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
    def submit(self, req: JobRequest, key: str | None) -> tuple[JobState, bool]:
        """Log and apply a job request; ``(job, created)`` — a known key returns its job.

        The caller answers only once the record is durable (``durable >= job.seq``).
        """
        if key is not None and key in self.keys:
            return self.jobs[self.keys[key]], False
        job_id = len(self.jobs)
        job = job_from_request(req, job_id, 0)
        self._check_fits(job)
        body = {
            "job": job_id,
            "key": key,
            "request": req.model_dump(mode="json", exclude_unset=True),
        }
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
        )
        self.jobs[job_id] = js
        if js.key is not None:
            self.keys[js.key] = job_id
        self.queued[job_id] = None
        return js

    def cancel(self, job_id: int) -> JobState:
        js = self.jobs.get(job_id)
        if js is None:
            raise KeyError(job_id)
        if js.state in ("completed", "rejected", "cancelled") or job_id in self.cancel_requests:
            return js
        self._commit("cancel", {"job": job_id})
        self._apply_cancel(job_id)
        return js

    def _apply_cancel(self, job_id: int) -> None:
        js = self.jobs[job_id]
        if job_id in self.queued:  # never shown to the scheduler: gone at once
            del self.queued[job_id]
            js.state = "cancelled"
        elif js.state not in ("completed", "rejected", "cancelled"):
            self.cancel_requests[job_id] = None

    def register(self, req: MachineRequest) -> Machine:
        m = self.by_name.get(req.name)
        caps = tuple(float(c) for c in req.capacity)
        for r, c in enumerate(caps):
            if not (c >= 0 and np.isfinite(c)):
                raise InvalidInput(f"capacity[{RESOURCES[r]}]", c, "finite and >= 0")
        if m is not None and m.up and m.capacity == caps and m.agent == req.agent:
            m.last_seen = self.clock()
            return m  # nothing changes: no record
        self._commit("machine", {"name": req.name, "capacity": list(caps), "agent": req.agent})
        return self._apply_machine({"name": req.name, "capacity": list(caps), "agent": req.agent})

    def _apply_machine(self, b: dict[str, Any]) -> Machine:
        name = b["name"]
        m = self.by_name.get(name)
        caps = tuple(float(c) for c in b["capacity"])
        if m is None:
            m = Machine(name, len(self.machines), caps, bool(b["agent"]))
            self.machines.append(m)
            self.by_name[name] = m
        else:
            m.capacity, m.agent, m.up = caps, bool(b["agent"]), True
        m.last_seen = self.clock()
        return m

    def heartbeat(self, name: str) -> Machine:
        m = self.by_name[name]
        m.last_seen = self.clock()
        return m

    def report(self, machine: str, rep: dict[str, Any]) -> bool:
        """Log measured work of a job; a report id seen before is ignored (idempotent)."""
        if rep["job"] not in self.jobs:
            raise InvalidInput("job", rep["job"], "a submitted job id")
        rid = f"{machine}/{rep['report']}" if rep.get("report") else ""
        if rid and rid in self.reports:
            return False
        j = int(rep["job"])
        if rep.get("work") is not None:  # absolute work (a PS's counter): what is new of it
            known = self.jobs[j].done + self.uncredited.get(j, 0.0)
            rep = {**rep, "samples": max(0.0, float(rep["work"]) - known)}
        body = {**rep, "machine": machine, "report": rid}
        self._commit("progress", body)
        self._apply_progress(body)
        return True

    def _apply_progress(self, b: dict[str, Any]) -> None:
        if b.get("report"):
            self.reports.add(b["report"])
        j = int(b["job"])
        if self.config.progress == "measured":
            self.uncredited[j] = self.uncredited.get(j, 0.0) + float(b["samples"])
        if b.get("loss") is not None:
            self.jobs[j].loss = float(b["loss"])

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

    def tick(self) -> dict[str, Any]:
        """Run one slot: close the last, decide this one, commit, apply.  Returns the record."""
        body = self._open_slot(self.timed_out())
        body.update(self._decide())
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
        credits, complete, refused = self._close_slot(t)  # 1. close slot t-1
        for js in self.jobs.values():
            js.last, js.placement, js.rate = js.placement, None, 0.0
            if js.state == "running":
                js.state = "admitted"
        # 2. machines down
        for name in down:
            self.by_name[name].up = False
        # 3. cancellations, then arrivals
        cancel = []
        for j in self.cancel_requests:
            js = self.jobs[j]
            if js.state in ("pending", "admitted"):
                cancel.append(j)
                js.state = "cancelled"
                self.pending.pop(j, None)
                self.active.pop(j, None)
                if self.engine is not None and self.engine.job_state(j) in ("pending", "active"):
                    self.engine.cancel(j)
        self.cancel_requests.clear()
        arrive = list(self.queued)
        self.queued.clear()
        for j in arrive:
            js = self.jobs[j]
            js.arrival, js.state = t, "pending"
            js.job = job_from_request(JobRequest.model_validate(js.request), j, t)
            self.pending[j] = None
        reset, requeue = self._epoch(t, arrive)  # 4. epochs
        body = {
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
        if refused:
            body["refused"] = refused
        return body

    def _close_slot(self, t: int) -> tuple[dict[str, float], list[int], dict[str, str]]:
        """Step 1: the engine credits slot t − 1 (if a decision stood in it); returns
        (credits by job, jobs completed, refused reports by job)."""
        eng = self.engine
        if eng is None or eng.phase != "accepted":
            return {}, [], {}
        refused: dict[str, str] = {}
        if self.config.progress == "model":
            got = eng.credit()
        else:
            placed = eng.placements()
            work: dict[int, float] = {}
            for j, v in list(self.uncredited.items()):
                if self.jobs[j].state not in ("pending", "running", "admitted") or v <= 0:
                    del self.uncredited[j]
                elif j in placed and placed[j].workers:  # else: waits for a placement
                    del self.uncredited[j]
                    try:
                        work.update(eng.check_work({j: v}, source="agents"))
                    except InvalidReport as e:
                        refused[str(j)] = str(e)
            got = eng.credit(work, source="agents")
        credits = {str(j): v for j, v in got.per_slot.items() if v > 0}
        for j in got.per_slot:
            self.jobs[j].done = eng.done(j)
        ended = set(got.completed)
        complete = [j for j in (*self.active, *self.pending) if j in ended]  # the log's order
        for j in complete:
            js = self.jobs[j]
            js.state, js.completed = "completed", t - 1
            self.active.pop(j, None)
            self.pending.pop(j, None)
        return credits, complete, refused

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
            js.requeued += 1 if js.state == "admitted" else 0
            js.state = "pending"
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
        (replaying: only judged, the logged one stands); nothing else is mutated."""
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
            self.jobs[j].state = "rejected"
        for j in b["admit"]:
            if j in self.pending:
                del self.pending[j]
                self.active[j] = None
                self.jobs[j].state = "admitted"
        snapshot: dict[str, dict[str, list[int]]] = {}
        for key, pb in b["alloc"].items():
            js = self.jobs[int(key)]
            p = _placement(pb)
            if js.last is None or js.last != p:
                js.placed_since = t  # a new incarnation of the job's processes
            js.placement, js.rate, js.state = p, float(b["rates"][key]), "running"
            snapshot[key] = {
                self.machines[m].name: [w, s]
                for m, w, s in zip(p.machines, p.workers, p.ps, strict=True)
            }
        self.usage = usage
        self.history.append({"slot": t, "alloc": snapshot, "error": b.get("error")})
        self.slot = t + 1

    # ---- reading -------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(JOB_STATES, 0)
        for js in self.jobs.values():
            out[js.state] += 1
        return out

    def utilization(self) -> dict[str, float]:
        caps = np.asarray(
            [m.capacity for m in self.machines if m.up] or [[0.0] * len(RESOURCES)], dtype=float
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
