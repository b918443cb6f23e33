"""``ClusterState``: one run of the ``cluster`` engine, driven by ``simulate``, the testbed
and the service alike (the protocol of :mod:`dmlsched.sim.state`).

One slot::

    view = state.reveal()              # arrivals of state.slot; a view of private copies
    accepted = state.accept(decision)  # the referee (fast paths behind it): InvalidDecision
    state.credit()                     # the speed model, or state.credit(measured_work)

The state computes from its own copy of the cluster and from the jobs as
registered — a workload's as given, a job added online copied (the boundary
rule of :mod:`dmlsched.sim.boundary`); views show other copies, so whatever a
scheduler does to what it was shown changes nothing here.

``accept`` gives the answer of :func:`.referee.judge` — the same accepted
placements, the same floats, or the same refusal and message — by faster
means (:mod:`.fast`): placements it has checked before are not read again,
many changed placements are read together, and machine usage is kept across
decisions when that is exact (:mod:`.usage`) on clusters of more than
:data:`SUMMED_MACHINES` machines; on smaller ones it is summed afresh when
the running placements change, and the last decision's sums (checked then)
stand again when the same records run in the same order.  ``fast=False`` runs the
referee alone (the reference those paths are tested against).  A refused
decision leaves the state as it was before ``accept``.

``credit()`` advances the standing placements by the engine's speed model —
over every slot the decision holds when given ``until`` (event-driven time:
the same allocations stand until ``until``, the next arrival or the first
completion, whichever comes first) — or by ``work`` measured on real
machines, checked first (:meth:`ClusterState.check_work`, :mod:`.work`).

Online use (the service): :meth:`ClusterState.add_job` registers a job
submitted while the state runs (revealed at the next ``reveal``, with the
work it already did), :meth:`ClusterState.cancel` withdraws one (the
scheduler sees it among ``finished``); a cluster that changes is a new
state.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Iterator, Mapping
from functools import partial
from operator import attrgetter
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from dmlsched.errors import InvalidDecision, InvalidReport
from dmlsched.model.cluster import ClusterDecision, ClusterJob, ClusterWorkload, Placement
from dmlsched.model.speed.pdors import job_rate
from dmlsched.model.views import ClusterView, Finished
from dmlsched.sim.boundary import expect_type, private_copy, read_ints
from dmlsched.sim.cluster import fast
from dmlsched.sim.cluster.fast import (
    NO_IDS,
    NO_SOURCE,
    EntryPool,
    JobColumns,
    TablePlacements,
    indices,
    job_columns,
    read_batch,
    read_table_batch,
    sources,
    table_unchanged,
)
from dmlsched.sim.cluster.metrics import Outcome, metrics
from dmlsched.sim.cluster.referee import (
    Counts,
    Ruling,
    Table,
    capacity_limit,
    check_admissions,
    check_capacity,
    check_placement,
    judge,
    read_decision,
    read_placement,
    read_table,
    read_until,
)
from dmlsched.sim.cluster.usage import KeptUsage, UsageChange, integral_usage, recomputed_usage
from dmlsched.sim.cluster.work import advance, restart_shares, shared_slot
from dmlsched.sim.drive import measured_items, within_bound
from dmlsched.sim.events import Event
from dmlsched.sim.run import RunResult

__all__ = ["Accepted", "Checked", "ClusterState", "Credited", "Placed"]

_DONE_TOL = 1e-9  # done at or above (1 − this) · E·K: complete
#: On at most this many machines usage is summed afresh when the running placements
#: change (a few NumPy calls), not kept (:class:`.usage.KeptUsage`: its bookkeeping
#: costs more than summing a small cluster's usage).
SUMMED_MACHINES = 64


class Accepted(NamedTuple):
    """What :meth:`ClusterState.accept` took: the decision's admissions and how long it holds."""

    slot: int
    until: int  # the first slot to ask again (slot + 1 unless the decision holds)
    rejected: tuple[int, ...]
    admitted: tuple[int, ...]  # by ``admit``
    by_allocation: tuple[int, ...]  # pending jobs admitted by their allocation


class Credited:
    """What :meth:`ClusterState.credit` credited: ``slots`` (> 1: a held decision),
    ``completed`` (jobs that completed in the last of them) and ``per_slot`` (work per
    slot, by running job; built when read — a run credits thousands of times)."""

    __slots__ = ("_amounts", "_running", "completed", "slots")

    def __init__(
        self, slots: int, completed: tuple[int, ...], running: list[int], amounts: np.ndarray
    ) -> None:
        self.slots, self.completed = slots, completed
        self._running, self._amounts = running, amounts

    @property
    def per_slot(self) -> dict[int, float]:
        return dict(zip(self._running, self._amounts.tolist(), strict=True))

    def __repr__(self) -> str:
        return f"Credited(slots={self.slots}, completed={self.completed})"


class Placed(NamedTuple):
    """One job's standing placement (:meth:`ClusterState.placements`)."""

    placement: Placement
    rate: float  # the speed model's work per slot on it
    workers: int
    ps: int


class Checked(NamedTuple):
    """What the engine read and checked of one job's placement (reused while it stands)."""

    counts: Counts | None  # None: read from a table, made when asked for (_counts)
    machines: np.ndarray  # the machines' rows
    demand: np.ndarray  # w_h·α + s_h·β per row
    rate: float
    workers: int  # Σ_h w_h
    ps: int  # Σ_h s_h


# Checked(*fields) without NamedTuple's Python-level __new__ (a record per placement read)
_new_checked = partial(tuple.__new__, Checked)


class _Standing(NamedTuple):
    """The accepted decision, until it is credited."""

    accepted: Accepted
    run: np.ndarray  # indices of the jobs it runs (placed on at least one machine)
    running: list[int]  # their ids, in the decision's order
    rates: np.ndarray  # their rates
    workers: int  # Σ of their workers
    details: list[tuple[int, str]]  # (job, allocate event detail), when events are recorded
    usage: np.ndarray


class _Summed(NamedTuple):
    """Machine usage and the rates of the last decision that stood, by its running jobs."""

    running: list[int]  # ids of the jobs it runs, in its order
    usage: np.ndarray  # Eq. (5)'s left-hand side (H × R), checked
    total: np.ndarray  # its per-resource sums
    rates: np.ndarray  # the running jobs' rates
    workers: int  # Σ of their workers


class _Patch(NamedTuple):
    """New values of the per-job arrays at some positions of a decision (the batch's)."""

    pos: np.ndarray  # positions in the decision
    rate: np.ndarray
    workers: np.ndarray
    placed: np.ndarray
    ids: np.ndarray  # ids of the placements' source tuples (0 for a table)


class _Read:
    """Placements read again for one decision (staged: written once the decision stands).

    The batch's new per-job values come as arrays (``batch``); the few read one by one
    as lists by position (``one_*``), written one by one as well.
    """

    __slots__ = (
        "batch",
        "changed",
        "entries",
        "ids",
        "ids_pos",
        "one_placed",
        "one_pos",
        "one_rate",
        "one_workers",
        "records",
        "srcs",
    )

    def __init__(self, changed: list[int]) -> None:
        self.changed = changed  # positions in the decision read again
        self.records: dict[int, Checked] = {}  # job -> its record from now on
        self.srcs: dict[int, tuple] = {}  # job -> its placement's fields (fast.unchanged)
        self.batch: _Patch | None = None
        self.one_pos: list[int] = []
        self.one_rate: list[float] = []
        self.one_workers: list[int] = []
        self.one_placed: list[bool] = []
        self.ids_pos: list[int] = []  # placements from dicts: positions whose ids change ...
        self.ids: list[tuple[int, ...]] = []  # ... to these
        self.entries: tuple | None = None  # a table's changed entries (for the EntryPool)


#: what a decision that reads no placement again stages (shared: never written to)
_NOTHING_READ = _Read([])
_NO_INDEX = np.zeros(0, dtype=np.intp)


class _Described(NamedTuple):
    """The allocate events' detail of a job's checked placement (made once per record)."""

    record: Checked
    detail: str


def _detail(rec: Checked) -> str:
    return f"workers={rec.workers} ps={rec.ps} machines={len(rec.machines)} rate={rec.rate:.6g}"


def _demands(
    running: list[int], new: dict[int, Checked], old: dict[int, Checked]
) -> Iterator[Checked]:
    """The running jobs' records: read this decision (``new``) or before (``old``)."""
    return (new[j] if j in new else old[j] for j in running)


class ClusterState:
    """One run of the ``cluster`` engine (module docstring).

    ``scheduler``: the name refusals carry.  ``record_events=False`` keeps
    no event log; ``fast=False`` accepts through the referee alone;
    ``start``: the first slot (a service epoch starts mid-way).
    """

    def __init__(
        self,
        workload: ClusterWorkload,
        scheduler: str = "scheduler",
        *,
        record_events: bool = True,
        fast: bool = True,
        start: int = 0,
    ) -> None:
        self.name = scheduler
        self.cluster = private_copy(workload.cluster)  # the engine's own
        self.shown_cluster = private_copy(self.cluster)  # what schedulers are shown
        self.horizon = workload.horizon
        self.slot_seconds = workload.slot_seconds
        self.record_events = record_events
        self.fast = fast
        self.start = start
        speed = workload.speed
        self._rate_of = speed.rate if speed is not None else job_rate
        self._joint = getattr(speed, "slot_rates", None)
        # a new incarnation loses this share of its first slot before its first step: a
        # job's first (``start_slots``), and every later one — resumed, moved or resized —
        # (``restart_slots``: stop, checkpoint, start, restore).  A speed model measured on
        # real processes says so; the papers' models credit the whole slot.
        self._start = float(getattr(speed, "start_slots", 0.0))
        self._restart = float(getattr(speed, "restart_slots", 0.0))
        self._ran: dict[int, Counts] = {}  # each job's placement in the last credited slot
        self._ever: set[int] = set()  # jobs that have run
        R = self.cluster.capacity.shape[1]
        self._limit = capacity_limit(self.cluster)
        self._H, self._R = self.cluster.capacity.shape
        self._cap_total = self.cluster.capacity.sum(axis=0)
        self._cap_on = self._cap_total > 0  # resources with capacity (utilization 0 otherwise)
        self._cap_all_on = bool(self._cap_on.all())
        self._util = np.zeros((max(self.horizon - start, 0), R))
        self._slot = start
        self._phase = "open"
        self._standing: _Standing | None = None
        self._summed: _Summed | None = None  # what the last decision that stood ran
        # jobs by the engine's index (registration order) and their state
        self._all: list[ClusterJob] = []
        self._index: dict[int, int] = {}
        self._id_of: list[int] = []
        self._by_slot: dict[int, list[ClusterJob]] = {}
        self._arrival_slots: list[int] = []
        self._last_arrival = -1
        self._jobs: dict[int, ClusterJob] = {}  # revealed, the engine's (never shown)
        self._shown_jobs: dict[int, ClusterJob] = {}  # the schedulers' copies; never read here
        self._jobs_view = MappingProxyType(self._shown_jobs)
        self._pending: dict[int, None] = {}  # insertion-ordered sets
        self._active: dict[int, None] = {}
        self._rejected: set[int] = set()
        self._finished: dict[int, int] = {}  # id -> completion slot
        self._ended: set[int] = set()  # completed or cancelled
        self._admitted: list[int] = []  # in admission order
        self._shown_finished: dict[int, int] = {}  # for the views' Finished; never read here
        self._finished_fs = Finished(self._shown_finished, 0)
        self._jct: dict[int, float] = {}
        self._events: list[Event] = []
        self._checked: dict[int, Checked] = {}
        self._sources: dict[int, tuple] = {}  # the field tuples ``read`` holds the ids of
        self._described: dict[int, _Described] = {}  # for the allocate events
        self._worker_slots = self._job_slots = 0  # for mean_workers
        self._total = np.zeros(0)
        self._thr = np.zeros(0)
        self._arrival = np.zeros(0, dtype=np.int64)
        self._done = np.zeros(0)
        self._rate = np.zeros(0)  # rate of the checked placement
        self._workers = np.zeros(0, dtype=np.int64)  # its Σ_h w_h
        self._placed = np.zeros(0, dtype=bool)  # it uses a machine
        self._read = np.zeros((0, 3), dtype=np.uint64)  # ids of its source tuples
        self._pool = EntryPool(0)
        jobs = list(workload.jobs)
        # the batched read rates by Eq. (1) itself: not for a workload's own speed model
        self._batching = fast and speed is None
        self._columns: JobColumns | None = None
        integral = integral_usage(jobs, self.cluster)
        kept = fast and integral and self._H > SUMMED_MACHINES
        self._kept = KeptUsage(self.cluster, 0) if kept else None
        self._register(jobs, [0.0] * len(jobs), integral)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (a service snapshot): the views' read-only proxy is made again on load."""
        return {k: v for k, v in self.__dict__.items() if k != "_jobs_view"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._jobs_view = MappingProxyType(self._shown_jobs)
        # a snapshot of code before these: nothing summed to reuse, the pool's lengths reset
        self.__dict__.setdefault("_summed", None)
        for name, value in (("_start", 0.0), ("_restart", 0.0), ("_ran", {}), ("_ever", set())):
            self.__dict__.setdefault(name, value)  # no charge for new incarnations
        if not hasattr(self._pool, "ever"):
            self._pool.ever = True

    # ---------------------------------------------------------------- reading the state

    @property
    def slot(self) -> int:
        """The slot the next :meth:`reveal` opens."""
        return self._slot

    @property
    def phase(self) -> str:
        """Where the slot is: ``open`` (reveal next), ``revealed`` (accept next) or
        ``accepted`` (credit next)."""
        return self._phase

    @property
    def all_arrived(self) -> bool:
        """Whether every registered job has been revealed (no arrival is left)."""
        return self._slot > self._last_arrival

    @property
    def over(self) -> bool:
        """Whether no decision can change anything any more: the horizon is reached, or
        every job has arrived and none is pending or active (the remaining slots' rows
        of utilization stay 0, so every metric equals that of the full loop)."""
        t = self._slot
        return t >= self.horizon or (
            t > self._last_arrival and not self._pending and not self._active
        )

    @property
    def admitted_count(self) -> int:
        """Jobs admitted so far (active or completed)."""
        return len(self._active) + len(self._finished)

    @property
    def completed_count(self) -> int:
        return len(self._finished)

    @property
    def active(self) -> tuple[int, ...]:
        """Admitted, unfinished jobs, by admission."""
        return tuple(self._active)

    @property
    def pending(self) -> tuple[int, ...]:
        """Revealed jobs neither admitted nor rejected, by arrival."""
        return tuple(self._pending)

    @property
    def rejected(self) -> frozenset[int]:
        return frozenset(self._rejected)

    @property
    def completed(self) -> dict[int, int]:
        """Completed jobs → their completion slot t̃_i, in completion order."""
        return dict(self._finished)

    def done(self, job: int) -> float:
        """Work ``job`` has done (samples, or mini-batches for async jobs)."""
        return float(self._done[self._index[job]])

    def job_state(self, job: int) -> str:
        """``queued`` (registered, not revealed), ``pending``, ``active``, ``completed``,
        ``rejected`` or ``cancelled``."""
        if job in self._pending:
            return "pending"
        if job in self._active:
            return "active"
        if job in self._finished:
            return "completed"
        if job in self._rejected:
            return "rejected"
        return "cancelled" if job in self._ended else "queued"

    def placements(self) -> dict[int, Placed]:
        """The accepted decision's placements on at least one machine, in its order."""
        st = self._expect("accepted")
        out = {}
        for j, rate in zip(st.running, st.rates.tolist(), strict=True):
            rec = self._checked[j]
            out[j] = Placed(Placement(*self._counts(j)), rate, rec.workers, rec.ps)
        return out

    def usage(self) -> np.ndarray:
        """Machine usage of the accepted decision (H × R, a copy)."""
        return np.array(self._expect("accepted").usage)

    # ---------------------------------------------------------------- registering jobs

    def _register(self, jobs: list[ClusterJob], done: list[float], integral: bool) -> None:
        """Give ``jobs`` (the engine's, never shown) indices, and reveal each at its arrival or at
        the next reveal, whichever is later (``integral``: :func:`.usage.integral_usage`
        of theirs)."""
        n0, n = len(self._all), len(jobs)
        index = {job.id: n0 + k for k, job in enumerate(jobs)}
        if len(index) != n or not index.keys().isdisjoint(self._index):
            raise ValueError("a job id is registered twice")
        self._index.update(index)
        self._all.extend(jobs)
        self._id_of.extend(j.id for j in jobs)
        first = self._slot
        for job in sorted(jobs, key=attrgetter("arrival", "id")):
            at = max(job.arrival, first)
            if at not in self._by_slot:
                self._by_slot[at] = []
                insort(self._arrival_slots, at)
                self._last_arrival = max(self._last_arrival, at)
            self._by_slot[at].append(job)
        total = np.array([j.total_work for j in jobs], dtype=float)
        arrival = np.fromiter(map(attrgetter("arrival"), jobs), dtype=np.int64, count=n)
        self._total = np.concatenate((self._total, total))
        self._thr = np.concatenate((self._thr, total * (1 - _DONE_TOL)))
        self._arrival = np.concatenate((self._arrival, arrival))
        self._done = np.concatenate((self._done, np.asarray(done, dtype=float)))
        self._rate = np.concatenate((self._rate, np.zeros(n)))
        self._workers = np.concatenate((self._workers, np.zeros(n, dtype=np.int64)))
        self._placed = np.concatenate((self._placed, np.zeros(n, dtype=bool)))
        self._read = np.concatenate((self._read, np.zeros((n, 3), dtype=np.uint64)))
        self._pool.grow(n0 + n)
        if self._batching:
            more = job_columns(jobs, self.cluster.capacity.shape[1])
            if more is None:  # a job's demands are not R long: no batch
                self._batching, self._columns = False, None
            else:
                self._columns = more if self._columns is None else self._columns.extend(more)
        if self._kept is not None:
            if integral:
                self._kept.grow(n0 + n)
            else:  # its demands are fractional: usage is summed afresh from now on
                self._kept = None

    def add_job(self, job: ClusterJob, done: float = 0.0) -> None:
        """Register a job submitted online (before :meth:`reveal`): revealed at its arrival
        or at the next reveal, whichever is later, having done ``done`` work already."""
        self._expect("open")
        job = private_copy(job)
        self._register([job], [done], integral_usage([job], self.cluster))

    def cancel(self, job: int) -> None:
        """Withdraw a pending or active job (before :meth:`reveal`); schedulers then see it
        among ``finished``, and it runs no more."""
        self._expect("open")
        if job not in self._pending and job not in self._active:
            raise ValueError(f"job {job} is neither pending nor active")
        self._pending.pop(job, None)
        if self._active.pop(job, None) is not None or job in self._admitted:
            self._admitted.remove(job)
        self._forget([job], np.array([self._index[job]], dtype=np.intp))
        if self.record_events:
            self._events.append(Event(self._slot, "cancel", job))
        self._finished_fs = Finished(self._shown_finished, len(self._shown_finished))

    def _forget(self, jobs: list[int], at: np.ndarray) -> None:
        """``jobs`` (indices ``at``) ended: nothing of their placements is kept (their
        tuples may be freed, so their ids may come again)."""
        self._read[at] = 0  # NO_IDS
        self._pool.drop(at)
        checked, srcs, ended, shown = (
            self._checked,
            self._sources,
            self._ended,
            self._shown_finished,
        )
        described = self._described
        for j in jobs:
            checked.pop(j, None)
            srcs.pop(j, None)
            described.pop(j, None)
            ended.add(j)
            shown[j] = len(shown)

    def _expect(self, phase: str) -> Any:
        if self._phase != phase:
            raise RuntimeError(f"ClusterState: {phase} expected, the slot is {self._phase}")
        return self._standing

    # ---------------------------------------------------------------- reveal

    def reveal(self) -> ClusterView:
        """Reveal the jobs arriving at :attr:`slot` and return the scheduler's view."""
        if self._phase != "open":
            self._expect("open")
        t = self._slot
        arrivals = []
        jobs, pending, shown, events = self._jobs, self._pending, self._shown_jobs, self._events
        for job in self._by_slot.pop(t, ()):
            j = job.id
            jobs[j] = job
            pending[j] = None
            seen = shown[j] = private_copy(job)
            arrivals.append(seen)
            if self.record_events:
                events.append(Event(t, "arrive", j))
        act = tuple(self._active)
        at = indices(self._index, act, len(act))
        self._phase = "revealed"
        return ClusterView(
            slot=t,
            horizon=self.horizon,
            cluster=self.shown_cluster,
            arrivals=tuple(arrivals),
            pending=tuple(self._pending),
            active=act,
            remaining=MappingProxyType(
                dict(zip(act, (self._total[at] - self._done[at]).tolist(), strict=True))
            ),
            jobs=self._jobs_view,
            finished=self._finished_fs,
            slot_seconds=self.slot_seconds,
        )

    # ---------------------------------------------------------------- accept

    def judge(self, decision: object) -> Ruling:
        """The referee's ruling on ``decision`` (:func:`.referee.judge`); changes nothing."""
        self._expect("revealed")
        return judge(
            self.name,
            self._slot,
            decision,
            cluster=self.cluster,
            jobs=self._jobs,
            pending=self._pending,
            active=self._active,
            rejected=self._rejected,
            finished=self._ended,
        )

    def accept(self, decision: object) -> Accepted:
        """Check ``decision`` and let it stand for the slot (raises InvalidDecision, leaving
        the state as it was)."""
        if not self.fast:
            return self._stand_ruling(self.judge(decision))
        if self._phase != "revealed":
            self._expect("revealed")
        name, t = self.name, self._slot
        d = expect_type(name, t, decision, ClusterDecision)
        limit = len(self._pending) + len(self._active)
        table = read_table(name, t, d.allocations, limit)
        if table is None:
            allocations, admit, reject = read_decision(name, t, d, limit)
        else:
            allocations = dict.fromkeys(table.jobs)
            admit = read_ints(name, t, None, "admit", d.admit)
            reject = read_ints(name, t, None, "reject", d.reject)
        until = read_until(name, t, d)
        rej, adm, by_alloc = check_admissions(
            name,
            t,
            allocations,
            admit,
            reject,
            self._pending,
            self._active,
            self._rejected,
            self._ended,
        )
        accepted = Accepted(t, until, tuple(rej), tuple(adm), tuple(by_alloc))
        keys = list(allocations)
        at = indices(self._index, keys, len(keys))
        got = self._read_changed(t, keys, at, allocations, table)
        return self._stand(accepted, keys, at, got, table)

    def _read_changed(
        self, t: int, keys: list[int], at: np.ndarray, allocations: dict, table: Table | None
    ) -> _Read:
        """Read and check the placements not read before (fast paths; staged, no writes)."""
        if table is None:
            placements: Any = list(allocations.values())
            changed = fast.changed(placements, self._read[at])
        else:
            placements = TablePlacements(table)
            pool = self._pool
            same = table_unchanged(table, at, pool.start, pool.length, pool.arrays)
            changed = (~same).nonzero()[0].tolist()
        if not changed:
            return _NOTHING_READ
        got = _Read(changed)
        one_by_one = changed
        if self._columns is not None and len(changed) >= fast.BATCH_MIN:
            H, d = self.cluster.machines, at[changed]
            if table is None:
                batch, one_by_one = read_batch(t, H, changed, placements, d, self._columns)
            else:
                got.entries = table.entries(changed)
                batch, one_by_one = read_table_batch(
                    t, H, changed, table, d, self._columns, got.entries
                )
            if batch is not None:
                self._take_batch(keys, batch, got)
        self._read_one_by_one(t, keys, placements, one_by_one, got, table is None)
        if table is not None and got.entries is None and changed:
            got.entries = table.entries(changed)
        return got

    def _read_one_by_one(
        self, t: int, keys: list[int], placements: Any, sel: list[int], got: _Read, ids: bool
    ) -> None:
        """Read (and check, if not checked before for the job) the placements at ``sel``."""
        for i in sel:
            j, p = keys[i], placements[i]
            hit = self._checked.get(j)
            c = read_placement(self.name, t, j, p, self.cluster.machines)
            src = got.srcs[j] = sources(p)
            if hit is None or c != hit.counts:
                # a placement already validated for this job is valid again: the checks
                # depend only on the job and the placement (capacity is checked later)
                check_placement(self.name, self._jobs[j], c, t)
                rec = got.records[j] = self._record(self._jobs[j], c)
                got.one_pos.append(i)
                got.one_rate.append(rec.rate)
                got.one_workers.append(rec.workers)
                got.one_placed.append(bool(c.machines))
            if ids:
                got.ids_pos.append(i)
                got.ids.append(NO_IDS if src is NO_SOURCE else tuple(map(id, src)))

    def _take_batch(self, keys: list[int], batch: fast.Batch, got: _Read) -> None:
        """Records of the placements the batch accepted (staged in ``got``)."""
        checked, records, srcs, new = self._checked, got.records, got.srcs, _new_checked
        for i, src, c, lo, hi, rate, total_w, total_s in zip(
            batch.fast,
            batch.sources,
            batch.counts,
            batch.lo,
            batch.hi,
            batch.rates.tolist(),
            batch.total_w,
            batch.total_s,
            strict=True,
        ):
            j = keys[i]
            if src is not NO_SOURCE:  # ids of tuples kept alive (fast.unchanged)
                srcs[j] = src
            hit = checked.get(j)
            if c is not None and hit is not None and hit.counts == c:
                continue  # as checked before: keep its arrays
            # exact tuples of ints are their own Counts (read_placement); None: see _counts
            records[j] = new(
                (
                    None if c is None else Counts(*c),
                    batch.machines[lo:hi],
                    batch.demand[lo:hi],
                    rate,
                    total_w,
                    total_s,
                )
            )
        got.batch = _Patch(
            np.asarray(batch.fast, dtype=np.intp),
            batch.rates,
            np.asarray(batch.total_w, dtype=np.int64),
            np.asarray(batch.hi) > np.asarray(batch.lo),
            batch.ids,
        )

    def _record(self, job: ClusterJob, c: Counts) -> Checked:
        """The record of a placement read one by one (its demand rows and rate)."""
        # w_h·α + s_h·β per machine (the products and sum of np.outer, without its calls)
        demand = np.asarray(c.workers, dtype=float)[:, None] * job.worker_demand
        demand += np.asarray(c.ps, dtype=float)[:, None] * job.ps_demand
        idx = np.asarray(c.machines, dtype=np.intp)
        return Checked(c, idx, demand, self._rate_of(job, *c), sum(c.workers), sum(c.ps))

    def _stand(
        self, accepted: Accepted, keys: list[int], at: np.ndarray, got: _Read, table: Table | None
    ) -> Accepted:
        """Eq. (5) on the decision's placements; if they fit, the decision stands (the
        staged reads are written; a refusal takes back what it added to kept usage)."""
        on = self._placed[at]
        if got.batch is not None:
            on[got.batch.pos] = got.batch.placed
        for i, placed in zip(got.one_pos, got.one_placed, strict=True):
            on[i] = placed
        run_at = on.nonzero()[0]
        run = at[run_at]
        running = [keys[i] for i in run_at.tolist()]
        records, checked = got.records, self._checked
        change: UsageChange | None = None
        summed = self._summed
        if self._kept is not None:
            read = at[got.changed] if got.changed else _NO_INDEX
            change = self._kept.apply(run, read, self._id_of, records, checked)
            usage = self._kept.usage
        elif not got.changed and summed is not None and summed.running == running:
            # the same records in the same order as the last decision that stood: the
            # same sums, checked then (Eq. (5) holds), so neither summed nor checked again
            return self._take(accepted, keys, run, summed)
        else:
            usage = recomputed_usage(self._H, self._R, _demands(running, records, checked))
        if (usage > self._limit).any():
            try:  # summed afresh, for the message (and in case kept usage were off)
                usage = recomputed_usage(self._H, self._R, _demands(running, records, checked))
                owners: dict[int, list[int]] = {}
                for j, rec in zip(running, _demands(running, records, checked), strict=True):
                    for h in rec.machines.tolist():
                        owners.setdefault(h, []).append(j)
                check_capacity(self.name, self.cluster, usage, accepted.slot, owners)
            except InvalidDecision:
                if change is not None:
                    self._kept.undo(change)  # type: ignore[union-attr]  # set with ``change``
                raise
        if got.changed:  # (nothing read again: nothing to write)
            self._write(at, got, table is not None)
            if table is None:
                self._pool.drop(at[got.changed])  # no table entry stands for them
            else:  # the next table is compared with these entries
                self._pool.keep(table, got.changed, got.entries or (), at)
        kept_total = None if self._kept is None else self._kept.total
        total = usage.sum(axis=0) if kept_total is None else kept_total
        workers = sum(self._workers[run].tolist())
        return self._take(
            accepted, keys, run, _Summed(running, usage, total, self._rate[run], workers)
        )

    def _write(self, at: np.ndarray, got: _Read, from_table: bool) -> None:
        """The decision stands: the reads of ``got`` become the state's."""
        rate, workers, placed, read = self._rate, self._workers, self._placed, self._read
        b = got.batch
        if b is not None:
            d = at[b.pos]
            rate[d], workers[d], placed[d], read[d] = b.rate, b.workers, b.placed, b.ids
        for i, r, w, p in zip(
            got.one_pos, got.one_rate, got.one_workers, got.one_placed, strict=True
        ):
            d = at[i]
            rate[d], workers[d], placed[d] = r, w, p
        for i, ids in zip(got.ids_pos, got.ids, strict=True):
            read[at[i]] = ids
        if from_table:  # no tuple stands for placements read from a table
            read[at[got.changed]] = 0
        self._checked.update(got.records)
        self._sources.update(got.srcs)

    def _stand_ruling(self, ruling: Ruling) -> Accepted:
        """The referee's ruling stands (``fast=False``): every placement's record afresh."""
        accepted = Accepted(
            ruling.slot, ruling.until, ruling.rejected, ruling.admitted, ruling.by_allocation
        )
        keys = list(ruling.placements)
        at = indices(self._index, keys, len(keys))
        self._checked = {j: self._record(self._jobs[j], c) for j, c in ruling.placements.items()}
        recs = list(self._checked.values())
        on = np.array([bool(r.counts and r.counts.machines) for r in recs], dtype=np.bool_)
        rate_at = np.array([r.rate for r in recs], dtype=float)
        w_at = np.array([r.workers for r in recs], dtype=np.int64)
        self._rate[at], self._workers[at], self._placed[at] = rate_at, w_at, on
        run_at = on.nonzero()[0]
        running = [keys[i] for i in run_at.tolist()]
        usage = ruling.usage
        workers = sum(w_at[run_at].tolist())
        summed = _Summed(running, usage, usage.sum(axis=0), rate_at[run_at], workers)
        return self._take(accepted, keys, at[run_at], summed)

    def _take(
        self, accepted: Accepted, keys: list[int], run: np.ndarray, summed: _Summed
    ) -> Accepted:
        """Admissions, events and the slot's utilization of an accepted decision."""
        t, events, record = accepted.slot, self._events, self.record_events
        pending, active, admitted = self._pending, self._active, self._admitted
        for j in accepted.rejected:
            del pending[j]
            self._rejected.add(j)
            if record:
                events.append(Event(t, "reject", j))
        for j in accepted.admitted:
            del pending[j]
            active[j] = None
            admitted.append(j)
            if record:
                events.append(Event(t, "admit", j))
        for j in accepted.by_allocation:  # an allocation admits implicitly
            del pending[j]
            active[j] = None
            admitted.append(j)
        running = summed.running
        details: list[tuple[int, str]] = []
        if record:
            details = self._details(running)
            if accepted.by_allocation:  # each admit event just before the job's allocate
                by_alloc = set(accepted.by_allocation)
                detail_of = dict(details)
                for j in keys:
                    if j in by_alloc:
                        events.append(Event(t, "admit", j))
                    detail = detail_of.get(j)
                    if detail is not None:
                        events.append(Event(t, "allocate", j, detail))
            else:
                events.extend([Event(t, "allocate", j, detail) for j, detail in details])
        cap, total = self._cap_total, summed.total
        if self._cap_all_on:  # the same floats as np.divide's where= below, without its calls
            self._util[t - self.start] = total / cap
        else:
            self._util[t - self.start] = np.divide(
                total, cap, out=np.zeros_like(cap), where=self._cap_on
            )
        self._standing = _Standing(
            accepted, run, running, summed.rates, summed.workers, details, summed.usage
        )
        self._summed = summed
        self._phase = "accepted"
        return accepted

    def _details(self, running: list[int]) -> list[tuple[int, str]]:
        """(job, allocate event detail) of the running jobs, each described once per record."""
        checked, described = self._checked, self._described
        out = []
        for j in running:
            rec = checked[j]
            got = described.get(j)
            if got is None or got.record is not rec:  # read again: described anew
                got = described[j] = _Described(rec, _detail(rec))
            out.append((j, got.detail))
        return out

    def _counts(self, j: int) -> Counts:
        """The :class:`Counts` of job ``j``'s checked placement (made from the engine's
        copy of its table entries the first time one read from a table is asked for)."""
        rec = self._checked[j]
        if rec.counts is None:
            rec = self._checked[j] = rec._replace(counts=Counts(*self._pool.counts(self._index[j])))
        return rec.counts  # type: ignore[return-value]  # set just above

    # ---------------------------------------------------------------- credit

    def check_work(
        self, work: object, *, elapsed: float = 1.0, source: str = "measured"
    ) -> dict[int, float]:
        """Measured ``work`` (job → work in the engine's units) checked against the accepted
        decision: each job must have a placement on it and each amount be a number ≥ 0 of
        an exact type, at most what that placement can physically do in ``elapsed`` slots
        (:func:`dmlsched.sim.drive.within_bound`: :data:`~dmlsched.sim.drive.MEASURED_SLACK`
        × its rate × ``elapsed``).  Returns the amounts as floats; raises
        :class:`InvalidReport` naming ``source``."""
        st = self._expect("accepted")
        t = self._slot
        pos = {j: k for k, j in enumerate(st.running)}
        out: dict[int, float] = {}
        for j, v in measured_items(source, t, work):
            k = pos.get(j)
            if k is None:
                raise InvalidReport(source, j, t, "work for a job without a placement")
            out[j] = within_bound(source, j, t, "work", v, float(st.rates[k]), elapsed)
        return out

    def credit(
        self,
        work: Mapping[int, float] | None = None,
        *,
        until: int | None = None,
        elapsed: float = 1.0,
        source: str = "measured",
    ) -> Credited:
        """End the slot: the speed model credits the standing placements (over the slots
        up to ``until`` held; stopping at the next arrival or the first completion), or
        ``work`` measured in ``elapsed`` slots, checked (:meth:`check_work`), is credited."""
        st = self._standing
        if st is None or self._phase != "accepted":
            st = self._expect("accepted")
        t = self._slot
        run, running, rates = st.run, st.running, st.rates
        joint = self._joint is not None and len(running) > 1
        if joint:
            # a speed model that knows what jobs running at once do to each other (shared
            # links): the same set runs in every held slot, so the rates hold with it
            rates = self._joint_rates(running)
        at = None
        if self._start or self._restart:
            self._charge_restarts(run, running, rates, model=work is None)
        if work is None:
            end = t + 1 if until is None else min(until, self.horizon)
            nxt = bisect_right(self._arrival_slots, t)
            if nxt < len(self._arrival_slots):
                end = min(end, self._arrival_slots[nxt])
            k, completed, before = advance(self._done, self._thr, run, rates, max(end - t, 1))
            per_slot = rates
            if joint and completed.any():  # the set shrinks within the slot (work.py)
                slot = shared_slot(
                    before,
                    self._thr[run],
                    self._total[run],
                    rates,
                    lambda alive: self._joint_rates([running[i] for i in alive.tolist()]),
                )
                self._done[run] = before + slot.work
                completed, per_slot, at = slot.completed, slot.work, slot.at
        else:
            measured = self.check_work(work, elapsed=elapsed, source=source)
            per_slot = np.array([measured.get(j, 0.0) for j in running], dtype=float)
            before = self._done[run]
            self._done[run] = before + per_slot
            completed = self._done[run] >= self._thr[run]
            k = 1
        ended = self._close(st, k, completed, before, per_slot, at)
        return Credited(k, tuple(ended), running, per_slot)

    def _charge_restarts(
        self, run: np.ndarray, running: list[int], rates: np.ndarray, *, model: bool
    ) -> None:
        """Jobs that run under another placement than in the last credited slot (or did
        not run in it) start a new incarnation: the speed model credits them
        ``start_slots`` (their first) or ``restart_slots`` (a later one) of a slot less.
        Measured work needs no charge; either way the placements are remembered."""
        counts = [self._counts(j) for j in running]
        if model:
            share = restart_shares(
                running, counts, self._ran, self._ever, self._start, self._restart
            )
            if any(share):
                self._done[run] -= rates * np.array(share)
        self._ran = dict(zip(running, counts, strict=True))
        self._ever.update(running)

    def _joint_rates(self, jobs: list[int]) -> np.ndarray:
        """The workload speed model's rates of ``jobs`` running together (``slot_rates``)."""
        joint = self._joint
        if joint is None:
            raise RuntimeError("the workload's speed model rates no jobs together")
        got = joint([(self._jobs[j], Placement(*self._counts(j))) for j in jobs])
        return np.array([float(x) for _, x in zip(jobs, got, strict=True)])

    def _close(
        self,
        st: _Standing,
        k: int,
        completed: np.ndarray,
        before: np.ndarray,
        per_slot: np.ndarray,
        at: np.ndarray | None = None,
    ) -> list[int]:
        """Book ``k`` credited slots and the completions in the last of them (``at``: the
        share of that slot at which each completed, when :func:`shared_slot` worked it out)."""
        t = self._slot
        run, running = st.run, st.running
        if k > 1:
            row = t - self.start
            self._util[row + 1 : row + k] = self._util[row]
        self._worker_slots += k * st.workers
        self._job_slots += k * len(running)
        if self.record_events and k > 1:
            events, details = self._events, st.details
            for s in range(t + 1, t + k):
                events.extend([Event(s, "allocate", j, detail) for j, detail in details])
        t += k - 1
        ends = completed.nonzero()[0]
        ended: list[int] = []
        if ends.size:
            ended = [running[f] for f in ends.tolist()]
            e = run[ends]
            # JCT counts whole slots from the start of the arrival slot to the moment
            # within slot t when the work ran out (linear progress within a slot);
            # elementwise, the floats of t − a_i + min(1, max(0, E·K − before) / rate)
            if at is None:
                left = np.maximum(0.0, self._total[e] - before[ends])
                took = (t - self._arrival[e]) + np.minimum(1.0, left / per_slot[ends])
            else:
                took = (t - self._arrival[e]) + at[ends]
            self._jct.update(zip(ended, took.tolist(), strict=True))
            self._forget(ended, e)
            active, finished, events = self._active, self._finished, self._events
            for j in ended:
                del active[j]
                finished[j] = t
                if self.record_events:
                    events.append(Event(t, "complete", j))
            self._finished_fs = Finished(self._shown_finished, len(self._shown_finished))
        self._slot = t + 1
        self._phase = "open"
        self._standing = None
        return ended

    # ---------------------------------------------------------------- result

    def result(self) -> RunResult:
        """The run's metrics, event log and per-slot series (utilization, per-job JCT in the
        engine's job order, NaN if unfinished)."""
        n = len(self._all)
        adm = indices(self._index, self._admitted, len(self._admitted))
        fin = indices(self._index, self._finished, len(self._finished))
        out = Outcome(
            jobs=self._all,
            arrival=self._arrival[:n],
            finished=fin,
            finished_slot=np.asarray(list(self._finished.values()), dtype=np.int64),
            jct=list(self._jct.values()),
            admitted=len(self._active) + len(self._finished),
            rejected=len(self._rejected),
            progress=np.minimum(1.0, self._done[adm] / self._total[adm]),  # min(1, done / E·K)
            mean_workers=self._worker_slots / self._job_slots if self._job_slots else 0.0,
        )
        jct_of = np.full(n, np.nan)  # per job in the engine's order, NaN if unfinished
        jct_of[indices(self._index, self._jct, len(self._jct))] = list(self._jct.values())
        util = self._util
        return RunResult(
            metrics=metrics(out, self.cluster.resources, self.horizon, self.slot_seconds, util),
            events=tuple(self._events),
            # per-job JCT (workload order, NaN if unfinished): the testbed compares it with reality
            series={"utilization": util, "jct": jct_of},
        )
