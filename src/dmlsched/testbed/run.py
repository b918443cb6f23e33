"""Run a ``cluster`` scheduler on the testbed, slot by slot, and predict it in the simulator.

Per slot t (``slot_seconds`` of wall time from the run's start):

1. measure every job (work done, bytes, loss) — a job whose PS 0 reported
   reaching E·K is finished, at the wall time it reported;
2. reveal the slot's arrivals and build the :class:`ClusterView` exactly as
   the engine does, with ``remaining`` from the *measured* work;
3. ask the registered scheduler, and validate its decision with the
   engine's own boundary and checks (:func:`~dmlsched.sim.cluster.read_decision`,
   :func:`~dmlsched.sim.cluster.read_placement`,
   :func:`~dmlsched.sim.cluster.check_admissions`,
   :func:`~dmlsched.sim.cluster.check_placement`,
   :func:`~dmlsched.sim.cluster.check_capacity`) — an invalid decision
   raises :class:`~dmlsched.errors.InvalidDecision` as in the simulator;
4. the executor makes it so (:mod:`.executor`), then the slot runs.

The run stops when every job has arrived and none is pending or active,
after the horizon, or — to spare wall time — when nothing is pending and
every active job has been left unallocated for ``stall_slots`` slots (a
plan-ahead scheduler whose plan ended before the real work did: the job
*stalls*; it counts as unfinished, and the run's notes say so).

Real JCT of a job = (its completion wall time − the start of its arrival
slot) ÷ ``slot_seconds``, in slots, as the engine's ``mean_jct``.

The simulator's predictions of a run: :mod:`.predict`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from dmlsched.model.cluster import Placement
from dmlsched.model.views import ClusterView
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.cluster import (
    check_admissions,
    check_capacity,
    check_placement,
    read_decision,
    read_placement,
)
from dmlsched.testbed.executor import ClusterExecutor, canonical
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
    slots_run: int = 0
    wall_s: float = 0.0
    loss_curves: dict[int, list[tuple[float, float, float]]] = field(default_factory=dict)
    start_time: float = 0.0
    notes: list[str] = field(default_factory=list)


def run_cluster(
    tw: TestbedWorkload,
    scheduler: str,
    testbed: Testbed,
    seed: int = 0,
    *,
    scheduler_params: dict[str, Any] | None = None,
    on_slot: Callable[[int, dict[int, str]], None] | None = None,
    stall_slots: int = 3,
) -> TestbedRun:
    """Drive ``scheduler`` on a started ``testbed`` (module docstring)."""
    wl = tw.workload
    S = tw.slot_seconds
    sched = make_scheduler("cluster", scheduler, **(scheduler_params or {}))
    name = type(sched).name
    _, rng = spawn(make_rng(seed), 2)
    cluster, T, H = wl.cluster, wl.horizon, wl.cluster.machines
    sched.reset(cluster, T, rng)
    by_slot: dict[int, list] = defaultdict(list)
    for job in wl.jobs:
        by_slot[job.arrival].append(job)
    last_arrival = max(by_slot, default=-1)
    jobs: dict[int, Any] = {}
    pending: dict[int, None] = {}
    active: dict[int, None] = {}
    rejected: set[int] = set()
    finished: dict[int, int] = {}
    ex = ClusterExecutor(testbed, tw.specs)
    out = TestbedRun(name, seed, S, notes=list(testbed.notes))
    prev = {j: JobStatus() for j in tw.specs}
    placed: dict[int, tuple] = {}
    acts: dict[int, str] = {}
    idle: dict[int, int] = {}  # consecutive slots an active job got nothing
    start = time.time()
    out.start_time = start
    try:
        for t in range(T + 1):
            if t > 0:  # close slot t-1
                wait = start + t * S - time.time()
                if wait > 0:
                    time.sleep(wait)
                now = ex.measure()
                for j, trip in placed.items():
                    a, b = prev[j], now[j]
                    dn = b.loss_n - a.loss_n
                    loss = (b.loss_sum - a.loss_sum) / dn if dn > 0 else float("nan")
                    out.rows.append(
                        SlotRow(
                            t - 1,
                            j,
                            trip,
                            acts.get(j, "keep"),
                            b.work - a.work,
                            b.bytes - a.bytes,
                            loss,
                        )
                    )
                prev = now
                for j in list(active):
                    st = now[j]
                    if st.done and st.done_time is not None:
                        del active[j]
                        c = int((st.done_time - start) // S)
                        finished[j] = min(c, t - 1)
                        out.real_jct[j] = (st.done_time - start) / S - jobs[j].arrival
                out.slots_run = t
            if t == T or (t > last_arrival and not pending and not active):
                break
            if (
                t > last_arrival
                and not pending
                and stall_slots
                and all(idle.get(j, 0) >= stall_slots for j in active)
            ):
                out.notes.append(
                    f"stopped at slot {t}: jobs {sorted(active)} unallocated for "
                    f"{stall_slots} slots (stalled; counted unfinished)"
                )
                break
            arrivals = tuple(by_slot.get(t, ()))
            for job in arrivals:
                jobs[job.id] = job
                pending[job.id] = None
            status = prev
            view = ClusterView(
                slot=t,
                horizon=T,
                cluster=cluster,
                arrivals=arrivals,
                pending=tuple(pending),
                active=tuple(active),
                remaining=MappingProxyType(
                    {j: max(0.0, jobs[j].total_work - status[j].work) for j in active}
                ),
                jobs=MappingProxyType(dict(jobs)),
                finished=frozenset(finished),
                slot_seconds=wl.slot_seconds,
            )
            t0 = time.monotonic()
            decision = sched.decide(view)
            out.decide_s.append(time.monotonic() - t0)
            allocations, admit_ids, reject_ids = read_decision(
                name, t, decision, len(pending) + len(active)
            )
            rej, adm, by_alloc = check_admissions(
                name, t, allocations, admit_ids, reject_ids, pending, active, rejected, finished
            )
            for j in rej:
                del pending[j]
                rejected.add(j)
            for j in (*adm, *by_alloc):
                del pending[j]
                active[j] = None
            usage = np.zeros((H, len(cluster.resources)))
            owners: dict[int, list[int]] = defaultdict(list)
            allocs: dict[int, Placement] = {}
            for j, given in allocations.items():
                job = jobs[j]
                c = read_placement(name, t, j, given, H)
                check_placement(name, job, c, t)
                p = Placement(*c)
                if not p.machines or p.total_workers == 0:
                    continue
                idx = np.asarray(p.machines, dtype=np.intp)
                np.add.at(
                    usage,
                    idx,
                    np.outer(p.workers, job.worker_demand) + np.outer(p.ps, job.ps_demand),
                )
                for m in p.machines:
                    owners[m].append(j)
                allocs[j] = p
            check_capacity(name, cluster, usage, t, owners)
            res = ex.apply(allocs)
            out.apply_s.append(res.seconds)
            acts = res.actions
            placed = {j: canonical(p) for j, p in allocs.items()}
            for j in active:
                idle[j] = 0 if j in allocs else idle.get(j, 0) + 1
            if on_slot:
                on_slot(t, acts)
    finally:
        ex.close()
        out.wall_s = time.time() - start
    out.status = ex.measure()
    out.rejected = rejected
    out.completion_slot = finished
    out.preemptions = dict(ex.preemptions)
    out.moves = dict(ex.moves)
    out.resizes = dict(ex.resizes)
    out.loss_curves = {j: job.loss_curve() for j, job in ex.jobs.items()}
    return out
