"""The ``edge-cloud``-setting engine (A_online, Wang et al., Sec. III): one state, driven.

:class:`EdgeCloudState` is the engine state of :mod:`dmlsched.sim.state`;
:func:`simulate_edge_cloud` drives it with a registered scheduler, the
testbed (:func:`dmlsched.testbed.edge_geo.run_edge_cloud`) with measured
progress.  Per slot t:

1. :meth:`~EdgeCloudState.reveal` — the jobs with r_j = t arrive; the
   scheduler gets a read-only :class:`EdgeCloudView` built from copies made
   for it (:mod:`dmlsched.sim.boundary`; the engine computes from copies of
   its own, so a scheduler that changes what it was shown — even the system
   object, which a workload reuses across runs — changes nothing);
2. :meth:`~EdgeCloudState.accept` — the decision is read once
   (:func:`read_decision`: an exact ``EdgeCloudDecision``, ``(server,
   worker)`` pairs and chunk indices of exact integers, a job named twice in
   a mapping refused) and refereed against ILP (2) and (7b)–(7d)
   (:mod:`dmlsched.sim.edge_cloud_referee`, which lists the constraints).
   A violation raises :class:`~dmlsched.errors.InvalidDecision` and leaves
   the state as it was;
3. :meth:`~EdgeCloudState.credit` — each trained chunk advances by the
   engine's own n_j (Eq. (1), with the system's speed augmentation) or by
   the mini-batches a testbed measured; a job completes when all its chunks
   have E_j·B_j mini-batches; c_j is that slot (2j).

Metrics: ``total_jct`` = Σ_j (c_j − r_j) (2) with unfinished jobs counted as
T − r_j; ``mean_jct``; ``completed_jobs``; ``preemptions`` — number of (job,
slot) pairs where a chunk that trained in the previous slot is unfinished
and does not train now (a job-level suspension and a worker-level preemption
each count once per job per slot); ``utilization`` — busy edge workers ÷ all
edge workers, averaged over slots from the first arrival to the last
completion (per-slot values in ``series["utilization"]``); ``makespan`` =
max c_j − min r_j; ``cloud_chunk_share`` — fraction of chunks sent to the
cloud; ``fractional_flow`` — the ILP (4) objective Σ_j Σ_d f_jd(y) of
Eq. (3) on the actual schedule (mini-batches trained in slot t weighted by
(t − r_j)/(E_j D_j B_j)).  The run stops once every job has completed (or at T).

Event-driven time (a decision that says how long it holds, as in the
``cluster`` engine) does not apply here, deliberately: what a decision runs
changes at chunk granularity, not job granularity — each edge worker trains
one chunk per slot and switches when any chunk on it completes (HAPRF,
Tiresias-L, SRTF all re-rank then), when a dispatched chunk's data arrives
(Δ_js) and when A_ps re-pairs PSs; and ``preemptions`` and
``fractional_flow`` are defined per slot.  Holding would need chunk-level
events in this engine and a promise from every policy for gains that are
small here: edge-cloud horizons are about a thousand slots
(:mod:`dmlsched.workloads.edge_cloud`), not the hundreds of thousands of
the cluster replays.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple, cast

import numpy as np

from dmlsched.errors import InvalidReport
from dmlsched.model.edge_cloud import EdgeCloudDecision, EdgeCloudWorkload, EdgeJob, Slot
from dmlsched.model.views import EdgeCloudView
from dmlsched.schedulers.protocols import EdgeCloudScheduler
from dmlsched.sim.boundary import (
    expect_type,
    frozen_array,
    private_copy,
    read_ints,
    read_mapping,
    read_pair,
    refuse,
    shown,
)
from dmlsched.sim.drive import drive, measured_items, within_bound
from dmlsched.sim.edge_cloud_referee import (
    DecisionRead,
    Dispatched,
    Plan,
    Standing,
    check_dispatch,
    check_ps,
    check_run,
    referee,
)
from dmlsched.sim.events import Event
from dmlsched.sim.run import Progress, RunResult
from dmlsched.sim.state import Credited, one_slot

__all__ = [
    "Credited",
    "EdgeCloudState",
    "read_decision",
    "simulate_edge_cloud",
]

_DONE_TOL = 1e-9
_add = np.add.reduce  # ``ndarray.sum`` without its Python wrapper: the same reduction


class _RunRead(NamedTuple):
    """A decision's ``run`` as :meth:`EdgeCloudState._check_run` read it, by job that
    trains: its chunks, their index array and the edge workers (gids) they train on."""

    run: dict[int, tuple[int, ...]]
    busy: int  # edge workers that train
    idx: dict[int, np.ndarray]
    edges: dict[int, np.ndarray]


def read_decision(sched: str, slot: int, decision: object, limit: int) -> DecisionRead:
    """(dispatch, run, ps) read once from an exact ``EdgeCloudDecision`` into plain tuples.

    ``limit`` bounds each mapping (the jobs it may name); the referee's
    checks follow in :meth:`EdgeCloudState.accept`.
    """
    d = expect_type(sched, slot, decision, EdgeCloudDecision)
    dispatch: dict[int, tuple[Slot, ...]] = {}
    for j, places in read_mapping(sched, slot, "dispatch", d.dispatch, limit).items():
        if type(places) not in (tuple, list):
            refuse(sched, j, slot, f"dispatch {shown(places)} is not a tuple of (server, worker)")
        dispatch[j] = tuple(
            read_pair(sched, slot, j, f"chunk {k}: placement", sw)
            for k, sw in enumerate(cast("tuple[object, ...] | list[object]", places))
        )
    run = {
        j: read_ints(sched, slot, j, "chunk indices", chunks)
        for j, chunks in read_mapping(sched, slot, "run", d.run, limit).items()
    }
    ps = {
        j: read_pair(sched, slot, j, "PS", sp)
        for j, sp in read_mapping(sched, slot, "ps", d.ps, limit).items()
    }
    return DecisionRead(dispatch, run, ps)


class EdgeCloudState:
    """One ``edge-cloud`` run (module docstring; the protocol of :mod:`dmlsched.sim.state`).

    ``scheduler`` is the name refusals carry.  Besides the protocol:
    :meth:`reset_args` (what ``scheduler.reset`` takes before the rng:
    :attr:`shown_system` and T), :meth:`judge` (the referee's answer alone),
    :meth:`check_work`, :meth:`placement`, :attr:`admitted_count` (jobs
    dispatched) and :attr:`completed_count`.
    """

    def __init__(
        self, workload: EdgeCloudWorkload, scheduler: str, *, record_events: bool = True
    ) -> None:
        self.name = scheduler
        self.record_events = record_events
        # The engine's own copy of the system; the jobs are read as given (boundary module)
        self.system = system = private_copy(workload.system)
        self._all = list(workload.jobs)
        self.horizon = workload.horizon
        self._S = system.servers
        self._W = system.edge_workers
        self._cap = np.array([system.storage_of(s) for s in range(self._S)])
        self._by_slot: dict[int, list[EdgeJob]] = defaultdict(list)
        for job in sorted(self._all, key=lambda j: (j.arrival, j.id)):
            self._by_slot[job.arrival].append(job)
        self.shown_system = private_copy(system)
        self._t = 0
        self._phase = "reveal"
        self._jobs: dict[int, EdgeJob] = {}
        self._pending: dict[int, None] = {}
        self._active: dict[int, Dispatched] = {}
        self._finished: dict[int, int] = {}
        self._storage = np.zeros(self._S)
        # jobs with a cloud chunk that started and is unfinished: the cloud never preempts it
        self._cloud_running: dict[int, None] = {}
        # by job that trained in the last slot and is unfinished (preemptions, ``_check_run``):
        # the chunks it trained (their index array) and which of them are unfinished
        self._last_mask: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._last_count: dict[int, int] = {}
        self._last_run: dict[int, tuple[int, ...]] = {}
        self._last_ps: dict[int, Slot] = {}
        self._plan: Plan | None = None
        self._idx: dict[int, np.ndarray] = {}  # the accepted decision's, by job that trains
        self._edges: dict[int, np.ndarray] = {}  # … the edge workers of those chunks
        self._events: list[Event] = []
        self._util: list[float] = []
        self._preemptions = 0
        self._frac_flow = 0.0  # Σ_j Σ_d f_jd(y) of Eq. (3) on the actual schedule
        self._chunks_cloud = self._chunks_total = 0
        # What the scheduler is shown lives in dicts of its own (a MappingProxyType gives its
        # dict away to gc.get_referents): the engine writes them and never reads them.
        self._for_view: dict[str, dict] = {
            k: {} for k in ("jobs", "placement", "dispatched_at", "zeta", "finished")
        }
        self._views = {k: MappingProxyType(v) for k, v in self._for_view.items()}
        self._shown_rem: dict[int, np.ndarray] = {}  # frozen copies, renewed when a job trains

    # ---------------------------------------------------------------- protocol

    @property
    def slot(self) -> int:
        return self._t

    @property
    def over(self) -> bool:
        return self._t >= self.horizon or len(self._finished) == len(self._all)

    @property
    def admitted_count(self) -> int:
        """Jobs dispatched so far."""
        return len(self._active) + len(self._finished)

    @property
    def completed_count(self) -> int:
        return len(self._finished)

    def reset_args(self) -> tuple:
        """What ``scheduler.reset`` takes before the rng: (a copy of the system, T)."""
        return self.shown_system, self.horizon

    def placement(self, job: int) -> tuple[Slot, ...]:
        """The (server, worker) of each chunk of a dispatched ``job`` (server S: the cloud)."""
        st = self._active.get(job)
        if st is None:
            raise KeyError(f"job {job} is not active")
        return st.placement

    def reveal(self) -> EdgeCloudView:
        """Reveal the jobs arriving at :attr:`slot` and return the scheduler's view."""
        self._step("reveal", "accept")
        t = self._t
        arrivals = []
        for job in self._by_slot.get(t, ()):
            self._jobs[job.id] = job
            self._pending[job.id] = None
            seen = self._for_view["jobs"][job.id] = private_copy(job)
            arrivals.append(seen)
            if self.record_events:
                self._events.append(Event(t, "arrive", job.id))
        views = self._views
        return EdgeCloudView(
            slot=t,
            horizon=self.horizon,
            system=self.shown_system,
            arrivals=tuple(arrivals),
            jobs=views["jobs"],
            pending=tuple(self._pending),
            active=tuple(self._active),
            placement=views["placement"],
            dispatched_at=views["dispatched_at"],
            remaining=MappingProxyType({j: self._shown_rem[j] for j in self._active}),
            zeta=views["zeta"],
            last_run=MappingProxyType(dict(self._last_run)),
            last_ps=MappingProxyType(dict(self._last_ps)),
            storage_used=tuple(self._storage.tolist()),
            finished=views["finished"],
        )

    def accept(self, decision: object) -> Plan:
        """Referee ``decision`` for this slot; on a violation raise ``InvalidDecision``
        with nothing changed, else commit its dispatches and return its :class:`Plan`."""
        self._expect("accept")
        t = self._t
        d = read_decision(self.name, t, decision, len(self._jobs))
        now = self._standing()
        new, storage = check_dispatch(now, d.dispatch)
        fast = self._check_run(new, d.run)
        if fast is None:  # the referee names the violation
            check_run(now, new, d.run)
            raise AssertionError(f"slot {t}: the fast run check refused what the referee accepts")
        check_ps(now, new, fast.run, d.ps)
        plan = Plan(t, d.dispatch, fast.run, d.ps, new, storage, fast.busy)
        self._commit(plan, fast)
        self._phase = "credit"
        return plan

    def credit(
        self,
        work: Mapping[int, float] | None = None,
        *,
        until: int | None = None,
        elapsed: float = 1.0,
        source: str = "measured",
    ) -> Credited:
        """End the slot: every chunk that trains advances by n_j (Eq. (1)), or by ``work``.

        ``work`` maps job id → **mini-batches each of its trained chunks
        advanced** (n_j's unit: a testbed divides a job's measured
        mini-batches by the chunks it trained) in ``elapsed`` slots, checked
        first (:meth:`check_work`); a job that trained and is missing
        advanced by 0; a chunk never advances beyond its remaining work.
        ``until`` may only be the next slot: a decision holds one slot here
        (module docstring).  ``per_slot`` of the :class:`Credited`: mini-batches per
        trained chunk, by job that trained.
        """
        self._expect("credit")
        t = self._t
        one_slot("an edge-cloud decision", t, until)
        rate = None if work is None else self.check_work(work, elapsed=elapsed, source=source)
        active = self._active
        per_slot = {j: active[j].rate if rate is None else rate.get(j, 0.0) for j in self._idx}
        completed = self._advance(per_slot)
        plan = self._plan
        assert plan is not None
        self._last_run = {j: c for j, c in plan.run.items() if j in self._last_mask}
        self._last_ps = {j: sp for j, sp in plan.ps.items() if j in self._last_mask}
        self._util.append(plan.busy / self._W if self._W else 0.0)
        self._plan = None
        self._t += 1
        self._phase = "reveal"
        return Credited(1, tuple(completed), per_slot)

    def result(self) -> RunResult:
        """The run's metrics (module docstring), events and the utilization series."""
        T, finished = self.horizon, self._finished
        jct = [finished[j.id] - j.arrival if j.id in finished else T - j.arrival for j in self._all]
        first = min((j.arrival for j in self._all), default=0)
        last = max(finished.values(), default=first)
        util = self._util
        window = np.asarray(util[first : last + 1]) if util else np.zeros(0)
        total = self._chunks_total
        metrics = {
            "total_jct": float(sum(jct)),
            "mean_jct": float(np.mean(jct)) if jct else 0.0,
            "completed_jobs": float(len(finished)),
            "preemptions": float(self._preemptions),
            "utilization": float(window.mean()) if window.size else 0.0,
            "makespan": float(last - first),
            "cloud_chunk_share": self._chunks_cloud / total if total else 0.0,
            "fractional_flow": self._frac_flow,
        }
        return RunResult(metrics, tuple(self._events), {"utilization": np.asarray(util)})

    def judge(self, decision: object) -> Plan:
        """The referee's answer on ``decision`` at this slot, without accepting it (nothing
        changes): :meth:`accept` gives exactly this plan or this refusal."""
        self._expect("accept")
        d = read_decision(self.name, self._t, decision, len(self._jobs))
        return referee(self._standing(), d)

    # ---------------------------------------------------------------- inside

    def _standing(self) -> Standing:
        return Standing(
            self.name,
            self._t,
            self.system,
            self._jobs,
            self._pending,
            self._active,
            self._finished,
            self._storage,
            self._cap,
        )

    def _step(self, phase: str, then: str) -> None:
        self._expect(phase)
        self._phase = then

    def _expect(self, phase: str) -> None:
        if self._phase != phase:
            raise RuntimeError(
                f"edge-cloud state at slot {self._t}: {phase} called, {self._phase} expected "
                "(each slot is reveal, accept, credit)"
            )
        if self.over and phase == "reveal":
            raise RuntimeError(f"edge-cloud state: the run is over (slot {self._t})")

    def _check_run(
        self, new: Mapping[int, Dispatched], run: Mapping[int, tuple[int, ...]]
    ) -> _RunRead | None:
        """:func:`~dmlsched.sim.edge_cloud_referee.check_run` per job on arrays, or None
        where the referee refuses (it then names the violation)."""
        t = self._t
        active = self._active
        trains: dict[int, tuple[int, ...]] = {}
        idxs: dict[int, np.ndarray] = {}
        edges: dict[int, np.ndarray] = {}
        last_run, last_count, last_idx = self._last_run, self._last_count, self._idx
        for j, chunks in run.items():
            st = active.get(j) or new.get(j)
            if st is None:
                return None
            if not chunks:
                continue
            if last_run.get(j) == chunks and last_count[j] == len(chunks):
                # the chunks it trained last slot, none finished: in range, distinct, with
                # work left, their data there, on the same workers — checked then
                trains[j], idxs[j], edges[j] = chunks, last_idx[j], self._edges[j]
                continue
            if min(chunks) < 0 or max(chunks) >= st.job.chunks:  # before numpy: ints may be huge
                return None
            if len(set(chunks)) != len(chunks):
                return None
            idx = np.asarray(chunks, dtype=np.int64)
            if st.left < st.job.chunks and st.rem[idx].min() <= 0:
                return None
            if st.all_ready > t and (st.ready[idx] > t).any():
                return None
            g = st.gid[idx]
            edges[j] = g[g >= 0] if st.n_cloud else g
            trains[j] = chunks
            idxs[j] = idx
        busy = 0
        if edges:
            gids = np.concatenate(list(edges.values()))
            busy = len(gids)
            if busy and np.bincount(gids).max() > 1:  # (2d)
                return None
        for j in self._cloud_running:  # no preemption in the cloud
            held = idxs.get(j)
            if held is None:
                return None
            if held is last_idx.get(j):  # the chunks of last slot, which held every such one
                continue
            st = active[j]
            must = st.cloud & st.started & (st.rem > 0)
            must[held] = False
            if must.any():
                return None
        return _RunRead(trains, busy, idxs, edges)

    def _commit(self, plan: Plan, read: _RunRead) -> None:
        t = self._t
        idx = read.idx
        view = self._for_view
        for j, st in plan.new.items():
            del self._pending[j]
            self._active[j] = st
            self._shown_rem[j] = frozen_array(st.rem)
            view["placement"][j] = st.placement
            view["dispatched_at"][j] = t
            view["zeta"][j] = st.zeta
            self._chunks_cloud += st.n_cloud
            self._chunks_total += st.job.chunks
            if self.record_events:
                edge, cloud = st.job.chunks - st.n_cloud, st.n_cloud
                self._events.append(
                    Event(t, "dispatch", j, f"edge={edge} cloud={cloud} zeta={st.zeta}")
                )
        self._storage = plan.storage
        for j, (was, kept) in self._last_mask.items():  # chunks trained last slot, now not
            cur = idx.get(j)
            if cur is None:
                stopped = self._last_count[j]
            elif cur is was:  # the same chunks (``_check_run``), every one unfinished
                stopped = 0
            else:
                last = np.zeros(self._active[j].job.chunks, dtype=bool)
                last[was] = kept
                stopped = self._last_count[j] - int(np.count_nonzero(last[cur]))
            if stopped:
                self._preemptions += 1
                if self.record_events:
                    self._events.append(Event(t, "preempt", j, f"chunks={stopped}"))
        self._last_mask = {}
        self._last_count = {}
        self._plan = plan
        self._idx = idx
        self._edges = read.edges

    def _advance(self, per_slot: dict[int, float]) -> list[int]:
        """Every trained chunk advances by its job's ``per_slot`` mini-batches; returns the
        jobs that completed, in the order trained.

        The arithmetic is one array over every trained chunk; each job's Eq. (3) sum is
        taken over its own slice (as NumPy sums a job's chunks alone, so the floats are
        the same), and the frozen arrays the next view shows are slices of one frozen
        copy, not a copy per job.
        """
        t = self._t
        idxs = self._idx
        if not idxs:
            return []
        sts = [self._active[j] for j in idxs]
        lens = np.fromiter(map(len, idxs.values()), dtype=np.int64, count=len(idxs))
        ends = np.cumsum(lens)
        r = np.concatenate([st.rem[idx] for st, idx in zip(sts, idxs.values(), strict=True)])
        n = np.repeat(np.fromiter(per_slot.values(), dtype=float, count=len(sts)), lens)
        mins = np.minimum(r, n)
        r -= n
        wpc = np.array([st.job.work_per_chunk for st in sts])
        done = r <= np.repeat(_DONE_TOL * wpc, lens)
        r[done] = 0.0
        done_at = np.cumsum(done)[ends - 1]
        ended = np.diff(done_at, prepend=0).tolist()
        bounds = np.concatenate(([0], ends)).tolist()
        completed: list[int] = []
        alive: list[Dispatched] = []
        for k, (j, idx) in enumerate(idxs.items()):
            st, a, b = sts[k], bounds[k], bounds[k + 1]
            job = st.job
            self._frac_flow += (
                float(_add(mins[a:b])) * (t - job.arrival) / (job.work_per_chunk * job.chunks)
            )
            st.rem[idx] = r[a:b]
            st.left -= ended[k]
            if st.left == 0:
                self._complete(j, st)
                completed.append(j)
                continue
            alive.append(st)
            self._last_mask[j] = (idx, ~done[a:b])
            self._last_count[j] = b - a - ended[k]
            if st.n_cloud:
                st.started[idx] = True
                # the cloud chunks that started before and are unfinished all trained now
                # (``_check_run``): what is left of them is what trained and is unfinished
                left = self._last_count[j] if st.zeta == 1 else (st.cloud[idx] & ~done[a:b]).any()
                if left:
                    self._cloud_running[j] = None
                else:
                    self._cloud_running.pop(j, None)
        self._show_remaining(alive)
        return completed

    def _show_remaining(self, sts: list[Dispatched]) -> None:
        """The views' arrays of work left for ``sts``: slices of one frozen copy."""
        if not sts:
            return
        shown = frozen_array(np.concatenate([st.rem for st in sts]))
        at = 0
        for st in sts:
            D = st.job.chunks
            self._shown_rem[st.job.id] = shown[at : at + D]
            at += D

    def _complete(self, j: int, st: Dispatched) -> None:
        t = self._t
        del self._active[j]
        del self._shown_rem[j]
        self._cloud_running.pop(j, None)
        self._finished[j] = self._for_view["finished"][j] = t
        self._storage = self._storage - st.held
        if self.record_events:
            self._events.append(Event(t, "complete", j))

    def check_work(
        self, work: object, *, elapsed: float = 1.0, source: str = "measured"
    ) -> dict[int, float]:
        """Measured ``work`` (see :meth:`credit`) checked against the accepted decision:
        each job trained a chunk, each amount is a finite number ≥ 0 and at most what a
        worker can do in ``elapsed`` slots — :data:`~dmlsched.sim.drive.MEASURED_SLACK` ×
        n_j (Eq. (1)) × ``elapsed``.  Returns the amounts as floats; refusals are
        :class:`InvalidReport` naming ``source``, the job and the slot."""
        self._expect("credit")
        t = self._t
        out: dict[int, float] = {}
        for j, v in measured_items(source, t, work):
            st = self._active.get(j)
            if j not in self._idx or st is None:
                raise InvalidReport(source, j, t, "work for a job that trained no chunk")
            out[j] = within_bound(source, j, t, "mini-batches per chunk", v, st.rate, elapsed)
        return out


def simulate_edge_cloud(
    workload: EdgeCloudWorkload,
    scheduler: EdgeCloudScheduler,
    rng: np.random.Generator,
    *,
    record_events: bool = True,
    progress: Progress | None = None,
) -> RunResult:
    """Run ``scheduler`` on ``workload``; the engine owns progress and metrics
    (``progress`` hears (slot, horizon, dispatched, completed) after every slot)."""
    state = EdgeCloudState(workload, type(scheduler).name, record_events=record_events)
    return drive(state, scheduler, rng, progress)
