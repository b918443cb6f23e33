"""Run an ``edge-cloud`` or ``geo`` scheduler on the testbed in closed loop.

The loops drive the engine's own state (:class:`~dmlsched.sim.edge_cloud.EdgeCloudState`,
:class:`~dmlsched.sim.geo.GeoState`) — the view, the referee and the bound
on measured work are the simulator's; this module adds only the executor,
the clock and what it measures.  Per slot t (``slot_seconds`` of wall time
from the run's start):

1. ``state.reveal()``, the scheduler decides, ``state.accept()`` referees
   (an invalid decision raises :class:`~dmlsched.errors.InvalidDecision` as
   in the simulator);
2. the executor makes the accepted decision so: each job's workers and its
   PS as processes on the emulated machines (edge servers and the cloud;
   data centers), and — geo — each data move q^{rr'} as a real transfer;
3. at the slot's end, what the processes did is measured and credited
   (``state.credit(work, elapsed=…, source="testbed")``, refused with
   :class:`~dmlsched.errors.InvalidReport` beyond what the decision can
   physically do):

   * **edge-cloud** — the job's mini-batches in the slot (its counter's
     growth) ÷ the chunks it trained: mini-batches per trained chunk, the
     unit of n_j.  A job completes when the engine's chunks are all
     trained (the processes train towards no target of their own), so its
     JCT is the engine's c_j − r_j with measured progress;
   * **geo** — GB trained: at each data center r', the data moved there,
     Σ_r q^{rr'}, as far as the job's workers there ran — P_i GB per worker
     per full slot of measured running time.  What they did not train stays
     there and is routed again in the next slot (:class:`GeoState`).

The executor and the clock can be replaced (``executor=``, ``clock=``):
the tests drive both loops with a fake of each and no process.  The
engine's metrics of the run (:attr:`EdgeGeoRun.result`) are those of the
measured run; the experiments (``testbed-aonline-fig4/5/6``,
``testbed-mlbroker-table4``) put a simulation with the model's speeds
beside them.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dmlsched.model.cluster import Placement
from dmlsched.model.edge_cloud import EdgeCloudWorkload
from dmlsched.model.geo import GeoWorkload
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.edge_cloud import EdgeCloudState
from dmlsched.sim.edge_cloud_referee import Plan
from dmlsched.sim.geo import GeoState
from dmlsched.sim.geo_referee import GeoPlan
from dmlsched.sim.run import RunResult
from dmlsched.testbed.executor import ClusterExecutor
from dmlsched.testbed.protocols import WALL_CLOCK, Clock, Executor
from dmlsched.testbed.runtime import JobStatus, Testbed, TrainSpec
from dmlsched.testbed.training import TaskConfig

__all__ = [
    "EdgeGeoRun",
    "Move",
    "edge_placements",
    "run_edge_cloud",
    "run_geo",
]


@dataclass(frozen=True)
class Move:
    """``nbytes`` of job ``job``'s data from machine ``src`` to ``dst`` in a slot."""

    job: int
    src: int
    dst: int
    nbytes: int


#: Starts a slot's data moves; returns a callable that waits for them and gives each
#: move with the bytes that arrived.
Mover = Callable[[int, tuple[Move, ...]], Callable[[], list[tuple[Move, int]]]]


@dataclass
class EdgeGeoRun:
    """One closed-loop run: the engine's result with measured progress, and what was measured."""

    setting: str
    scheduler: str
    seed: int
    slot_seconds: float
    result: RunResult | None = None
    slots_run: int = 0
    wall_s: float = 0.0
    status: dict[int, JobStatus] = field(default_factory=dict)
    work: dict[tuple[int, int], float] = field(default_factory=dict)  # (slot, job) → credited
    # (slot, job) → machine → (worker-seconds, PS-seconds)
    proc_seconds: dict[tuple[int, int], dict[int, tuple[float, float]]] = field(
        default_factory=dict
    )
    moved: list[tuple[int, Move, int]] = field(default_factory=list)  # (slot, move, bytes)
    plans: list[Any] = field(default_factory=list)  # what accept returned, slot by slot
    preemptions: dict[int, int] = field(default_factory=dict)
    resizes: dict[int, int] = field(default_factory=dict)
    moves_of_jobs: dict[int, int] = field(default_factory=dict)
    unprocessed: dict[int, float] = field(default_factory=dict)  # geo: GB never trained
    notes: list[str] = field(default_factory=list)


def edge_placements(state: EdgeCloudState, plan: Plan) -> dict[int, Placement]:
    """Each training job's processes: a worker per trained chunk on its chunk's server
    (server S is the cloud machine), and its PS where the plan puts it."""
    out = {}
    for j, chunks in plan.run.items():
        where = state.placement(j)
        per: dict[int, int] = defaultdict(int)
        for c in chunks:
            per[where[c][0]] += 1
        ps = plan.ps[j][0]
        ms = sorted(set(per) | {ps})
        out[j] = Placement(
            tuple(ms), tuple(per.get(m, 0) for m in ms), tuple(int(m == ps) for m in ms)
        )
    return out


def run_edge_cloud(
    wl: EdgeCloudWorkload,
    scheduler: str | Any,
    testbed: Testbed | None,
    specs: Mapping[int, TrainSpec],
    slot_seconds: float,
    seed: int = 0,
    *,
    scheduler_params: dict[str, Any] | None = None,
    executor: Executor | None = None,
    clock: Clock = WALL_CLOCK,
    on_slot: Callable[[int, dict[int, str]], None] | None = None,
) -> EdgeGeoRun:
    """Drive ``scheduler`` (a registered name or a scheduler object) on the testbed with
    the ``edge-cloud`` engine state (module docstring)."""
    sched = _scheduler("edge-cloud", scheduler, scheduler_params)
    state = EdgeCloudState(wl, type(sched).name)
    ex = executor if executor is not None else ClusterExecutor(_started(testbed), specs)
    out = EdgeGeoRun("edge-cloud", type(sched).name, seed, slot_seconds)

    def work(plan: Plan, before: Mapping[int, JobStatus], now: Mapping[int, JobStatus], *_: Any):
        return {
            j: max(0.0, now[j].work - before[j].work) / len(chunks)
            for j, chunks in plan.run.items()
        }

    def allocations(plan: Plan) -> tuple[dict[int, Placement], tuple[Move, ...]]:
        return edge_placements(state, plan), ()

    return _loop(state, sched, ex, clock, out, allocations, work, None, on_slot)


def run_geo(
    wl: GeoWorkload,
    scheduler: str | Any,
    testbed: Testbed | None,
    specs: Mapping[int, TrainSpec],
    slot_seconds: float,
    seed: int = 0,
    *,
    bytes_per_gb: int = 50_000,
    scheduler_params: dict[str, Any] | None = None,
    executor: Executor | None = None,
    clock: Clock = WALL_CLOCK,
    mover: Mover | None = None,
    on_slot: Callable[[int, dict[int, str]], None] | None = None,
) -> EdgeGeoRun:
    """Drive ``scheduler`` on the testbed with the ``geo`` engine state (module docstring);
    a data move of q GB is a real transfer of q × ``bytes_per_gb`` bytes (``mover``: the
    testbed's sender and receiver processes unless given)."""
    sched = _scheduler("geo", scheduler, scheduler_params)
    state = GeoState(wl, type(sched).name)
    ex = executor if executor is not None else ClusterExecutor(_started(testbed), specs)
    out = EdgeGeoRun("geo", type(sched).name, seed, slot_seconds)
    R = wl.sites.dcs
    capacity = {j.id: j.capacity for j in wl.jobs}
    if mover is None:
        mover = _testbed_mover(_started(testbed))

    def allocations(plan: GeoPlan) -> tuple[dict[int, Placement], tuple[Move, ...]]:
        allocs, moves = {}, []
        for k, j in enumerate(plan.ids):
            y, ps = plan.y[k], int(np.argmax(plan.s[k]))
            if y.sum() > 0:
                allocs[j] = Placement(
                    tuple(range(R)), tuple(int(w) for w in y), tuple(int(r == ps) for r in range(R))
                )
            for r, r2 in zip(*np.nonzero(plan.q[k]), strict=True):
                if r != r2:
                    moves.append(Move(j, int(r), int(r2), int(plan.q[k][r, r2] * bytes_per_gb)))
        return allocs, tuple(moves)

    def work(plan: GeoPlan, _b: Any, _n: Any, secs: Mapping[int, dict[int, tuple[float, float]]]):
        """GB trained: per DC, the data sent there as far as its workers ran (P_i per
        worker per slot of running time)."""
        out = {}
        for k, j in enumerate(plan.ids):
            inflow = plan.q[k].sum(axis=0)
            ran = secs.get(j, {})
            out[j] = float(
                sum(
                    min(float(inflow[r]), capacity[j] * ran.get(r, (0.0, 0.0))[0] / slot_seconds)
                    for r in range(R)
                )
            )
        return out

    run = _loop(state, sched, ex, clock, out, allocations, work, mover, on_slot)
    run.unprocessed = state.unprocessed
    return run


def _loop(
    state: Any,
    sched: Any,
    ex: Executor,
    clock: Clock,
    out: EdgeGeoRun,
    allocations: Callable[[Any], tuple[dict[int, Placement], tuple[Move, ...]]],
    work: Callable[..., dict[int, float]],
    mover: Mover | None,
    on_slot: Callable[[int, dict[int, str]], None] | None,
) -> EdgeGeoRun:
    """The slot loop both settings share (module docstring)."""
    S = out.slot_seconds
    _, rng = spawn(make_rng(out.seed), 2)
    sched.reset(*state.reset_args(), rng)
    pending: list[tuple[int, Callable[[], list[tuple[Move, int]]]]] = []
    before = ex.measure()
    start = last = clock.time()
    try:
        while not state.over:
            t = state.slot
            plan = state.accept(sched.decide(state.reveal()))
            out.plans.append(plan)
            allocs, moves = allocations(plan)
            acts = ex.apply(allocs).actions
            if moves and mover is not None:
                pending.append((t, mover(t, moves)))
            if on_slot:
                on_slot(t, acts)
            wait = start + (t + 1) * S - clock.time()
            if wait > 0:
                clock.sleep(wait)
            now, at = ex.measure(), clock.time()
            secs = {j: ex.process_seconds(j, start + t * S, at) for j in allocs}
            done = work(plan, before, now, secs)
            state.credit(done, elapsed=(at - last) / S, source="testbed")
            out.work.update({(t, j): w for j, w in done.items()})
            out.proc_seconds.update({(t, j): s for j, s in secs.items() if s})
            before, last = now, at
            out.slots_run = t + 1
    finally:
        ex.close()
        out.wall_s = clock.time() - start
    for t, collect in pending:
        out.moved.extend((t, mv, got) for mv, got in collect())
    out.result = state.result()
    out.status = before  # as measured at the last slot's end: not the processes' stopping
    out.preemptions = dict(ex.preemptions)
    out.resizes = dict(ex.resizes)
    out.moves_of_jobs = dict(ex.moves)
    return out


def _scheduler(setting: str, scheduler: str | Any, params: dict[str, Any] | None) -> Any:
    if isinstance(scheduler, str):
        return make_scheduler(setting, scheduler, **(params or {}))
    return scheduler


def _started(testbed: Testbed | None) -> Testbed:
    if testbed is None:
        raise ValueError("a testbed is needed unless executor= and mover= are given")
    return testbed


def _testbed_mover(tb: Testbed) -> Mover:
    """Each move a sender on ``src`` and a receiver on ``dst`` (processes of the testbed)."""

    def start(slot: int, moves: tuple[Move, ...]) -> Callable[[], list[tuple[Move, int]]]:
        base = tb.task_base()
        d = tb.job_root / "moves"
        paths: list[tuple[Move, Path]] = []
        for k, mv in enumerate(moves):
            common = dict(
                job_dir=str(d),
                job=mv.job,
                inc=slot,
                mode="sync",
                hidden=1,
                lr=0.0,
                batch=1,
                seed=0,
                target=0.0,
                ps_machines=(mv.dst,),
                worker_machines=(mv.src,),
                extra={"nbytes": mv.nbytes},
                **base,
            )
            tb.spawn(mv.dst, TaskConfig(role="recv", index=k, **common))
            tb.spawn(mv.src, TaskConfig(role="send", index=k, **common))
            paths.append((mv, d / f"inc-{slot}" / f"recv-{k}.json"))

        def collect() -> list[tuple[Move, int]]:
            got = []
            for mv, path in paths:
                n = 0
                for _ in range(100):  # a transfer that outlived the slot finishes within seconds
                    try:
                        n = int(json.loads(path.read_text())["bytes"])
                        break
                    except (OSError, ValueError, KeyError):
                        time.sleep(0.1)
                got.append((mv, n))
            return got

        return collect

    return start
