"""Run a ``cluster`` scheduler on the testbed, slot by slot, and predict it in the simulator.

The loop drives the engine's own state (:class:`~dmlsched.sim.cluster.ClusterState`)
— the view, the referee and the bound on measured work are the
simulator's; this module adds only the executor and the clock.  Per slot t
(``slot_seconds`` of wall time from the run's start):

1. measure every job and credit the work each placed job did in slot t − 1
   (its absolute counter minus what the engine credited so far:
   ``state.credit(work, elapsed=…)``, refused with
   :class:`~dmlsched.errors.InvalidReport` beyond what its placement can do);
   a job completes when the credited work reaches E·K;
2. reveal the slot's arrivals (``state.reveal()``: private copies, with
   ``remaining`` from the credited, measured work);
3. ask the scheduler and let the engine check its decision
   (``state.accept``) — an invalid decision raises
   :class:`~dmlsched.errors.InvalidDecision` as in the simulator;
4. the executor makes the accepted placements so (:mod:`.executor`), then
   the slot runs.

The run stops when the engine has nothing left (every job arrived, none
pending or active), after the horizon, or — to spare wall time — when
nothing is pending and every active job has been left unallocated for
``stall_slots`` slots (a plan-ahead scheduler whose plan ended before the
real work did: the job *stalls*; it counts as unfinished, and the run's
notes say so).

Real JCT of a job = (its completion wall time, as its PS 0 reported it −
the start of its arrival slot) ÷ ``slot_seconds``, in slots, as the
engine's ``mean_jct``.  The executor and the clock can be replaced
(``executor=``, ``clock=``): the contract tests drive the loop with a fake
of each and no process.

The simulator's predictions of a run: :mod:`.predict`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dmlsched.model.cluster import Placement
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import ClusterScheduler, make_scheduler
from dmlsched.sim.cluster import ClusterState
from dmlsched.testbed.executor import ClusterExecutor, canonical
from dmlsched.testbed.protocols import WALL_CLOCK, Clock, Executor
from dmlsched.testbed.runtime import JobStatus, Testbed
from dmlsched.testbed.workload import TestbedWorkload

__all__ = ["SlotRow", "TestbedRun", "run_cluster"]


@dataclass(frozen=True)
class SlotRow:
    """One job in one slot: its placement, what the executor did and what was measured."""

    slot: int
    job: int
    placement: tuple[tuple[int, int, int], ...]
    action: str
    work: float  # measured work in the slot
    bytes: int
    loss: float  # mean training loss in the slot (NaN if no step)
    pred_work: float = float("nan")


@dataclass
class TestbedRun:
    __test__ = False  # not a pytest test class
    scheduler: str
    seed: int
    slot_seconds: float
    rows: list[SlotRow] = field(default_factory=list)
    status: dict[int, JobStatus] = field(default_factory=dict)
    real_jct: dict[int, float] = field(default_factory=dict)
    completion_slot: dict[int, int] = field(default_factory=dict)
    rejected: set[int] = field(default_factory=set)
    preemptions: dict[int, int] = field(default_factory=dict)
    moves: dict[int, int] = field(default_factory=dict)
    resizes: dict[int, int] = field(default_factory=dict)
    decide_s: list[float] = field(default_factory=list)
    apply_s: list[float] = field(default_factory=list)
    load: list[float] = field(default_factory=list)  # 1-min load average at each decision
    cpus: int = 0  # the machine's CPUs (os.cpu_count)
    slots_run: int = 0
    wall_s: float = 0.0
    loss_curves: dict[int, list[tuple[float, float, float]]] = field(default_factory=dict)
    start_time: float = 0.0
    notes: list[str] = field(default_factory=list)


def run_cluster(
    tw: TestbedWorkload,
    scheduler: str | ClusterScheduler,
    testbed: Testbed,
    seed: int = 0,
    *,
    scheduler_params: dict[str, Any] | None = None,
    on_slot: Callable[[int, dict[int, str]], None] | None = None,
    stall_slots: int = 3,
    executor: Executor | None = None,
    clock: Clock = WALL_CLOCK,
) -> TestbedRun:
    """Drive ``scheduler`` (a registered name, or a scheduler object) on a started
    ``testbed`` (module docstring)."""
    wl = tw.workload
    S = tw.slot_seconds
    if isinstance(scheduler, str):
        sched = make_scheduler("cluster", scheduler, **(scheduler_params or {}))
    else:
        sched = scheduler
    name = type(sched).name
    _, rng = spawn(make_rng(seed), 2)
    state = ClusterState(wl, name, record_events=False)
    sched.reset(state.shown_cluster, wl.horizon, rng)
    ex = executor if executor is not None else ClusterExecutor(testbed, tw.specs)
    out = TestbedRun(name, seed, S, notes=list(testbed.notes), cpus=os.cpu_count() or 1)
    arrival = {j.id: j.arrival for j in wl.jobs}
    prev = {j: JobStatus() for j in tw.specs}
    allocs: dict[int, Placement] = {}
    acts: dict[int, str] = {}
    idle: dict[int, int] = {}  # consecutive slots an active job got nothing
    start = last = out.start_time = clock.time()
    try:
        for t in range(wl.horizon + 1):
            if t > 0:  # close slot t-1
                wait = start + t * S - clock.time()
                if wait > 0:
                    clock.sleep(wait)
                now = ex.measure()
                out.rows.extend(_rows(t - 1, allocs, acts, prev, now))
                prev, at = now, clock.time()
                work = {j: max(0.0, now[j].work - state.done(j)) for j in allocs}
                credited = state.credit(work, elapsed=(at - last) / S, source="testbed")
                last = at
                for j in credited.completed:
                    reported = now[j].done_time
                    done_time = reported if reported is not None else at
                    out.real_jct[j] = (done_time - start) / S - arrival[j]
                out.slots_run = t
            if state.over:
                break
            if _stalled(state, idle, stall_slots):
                out.notes.append(
                    f"stopped at slot {t}: jobs {sorted(state.active)} unallocated for "
                    f"{stall_slots} slots (stalled; counted unfinished)"
                )
                break
            view = state.reveal()
            out.load.append(os.getloadavg()[0])
            t0 = time.monotonic()
            decision = sched.decide(view)
            out.decide_s.append(time.monotonic() - t0)
            state.accept(decision)
            allocs = {j: p.placement for j, p in state.placements().items() if p.workers > 0}
            res = ex.apply(allocs)
            out.apply_s.append(res.seconds)
            acts = res.actions
            for j in state.active:
                idle[j] = 0 if j in allocs else idle.get(j, 0) + 1
            if on_slot:
                on_slot(t, acts)
    finally:
        ex.close()
        out.wall_s = clock.time() - start
    out.status = ex.measure()
    out.rejected = set(state.rejected)
    out.completion_slot = state.completed
    out.preemptions = dict(ex.preemptions)
    out.moves = dict(ex.moves)
    out.resizes = dict(ex.resizes)
    out.loss_curves = ex.loss_curves()
    return out


def _rows(
    slot: int,
    allocs: Mapping[int, Placement],
    acts: Mapping[int, str],
    prev: Mapping[int, JobStatus],
    now: Mapping[int, JobStatus],
) -> list[SlotRow]:
    """What was measured of each placed job in ``slot``."""
    rows = []
    for j, p in allocs.items():
        a, b = prev[j], now[j]
        dn = b.loss_n - a.loss_n
        loss = (b.loss_sum - a.loss_sum) / dn if dn > 0 else float("nan")
        action = acts.get(j, "keep")
        rows.append(
            SlotRow(slot, j, canonical(p), action, b.work - a.work, b.bytes - a.bytes, loss)
        )
    return rows


def _stalled(state: ClusterState, idle: Mapping[int, int], stall_slots: int) -> bool:
    """Every job has arrived, none is pending, and every active one has been left
    unallocated for ``stall_slots`` slots."""
    return bool(
        stall_slots
        and state.all_arrived
        and not state.pending
        and all(idle.get(j, 0) >= stall_slots for j in state.active)
    )
