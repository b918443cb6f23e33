"""The ``edge-cloud`` referee: A_online's constraints on one slot's decision, read literally.

One function per constraint family, chunk by chunk, in the order the engine
reports the first violation (Wang et al., Sec. III-A, ILP (2); storage of
Sec. VI, (7b)–(7d)):

* :func:`check_dispatch` — only pending jobs, all D_j chunks at once, each to
  a worker with v_jsw = 1 (2a) or to the cloud s_c; storage (7b)
  Σ u_j over the chunks held on s ≤ U_s, held until the job completes
  ((7c)–(7d)); the placement is fixed afterwards (no data migration);
* :func:`check_run` — only dispatched, unfinished chunks, each listed once
  ((2c): ≤ D_j workers per job), not before ``dispatch slot + Δ_js`` (2i);
  each edge worker trains at most one chunk per slot (2d); a cloud chunk,
  once started, trains every slot until done (no preemption in the cloud);
* :func:`check_ps` — exactly one PS for every job that trains (2e), of the
  job's PS type (o_jsp = 1), each edge PS serving one job per slot (2f); a
  job with ζ_j = 1 — every chunk in the cloud, fixed at dispatch (2g)–(2h) —
  keeps its PS in the cloud.

:func:`referee` runs the three on a decision already read by
:func:`dmlsched.sim.edge_cloud.read_decision` and returns the slot's
:class:`Plan` without changing anything; a violation raises
:class:`~dmlsched.errors.InvalidDecision` naming scheduler, job, slot,
server (``machine``) and resource.  The engine state
(:class:`~dmlsched.sim.edge_cloud.EdgeCloudState`) accepts through a
vectorised fast path that hands every decision it cannot accept to this
referee, so every refusal message is the referee's; tests check that both
accept exactly the same decisions with the same plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from dmlsched.model.edge_cloud import EdgeCloud, EdgeJob, Slot
from dmlsched.model.speed.aonline import processing_capacity
from dmlsched.sim.boundary import refuse

__all__ = [
    "STORAGE_TOL",
    "DecisionRead",
    "Dispatched",
    "Plan",
    "Standing",
    "check_dispatch",
    "check_ps",
    "check_run",
    "dispatched",
    "referee",
]

#: GB by which storage may exceed U_s (sums of chunk sizes in floating point).
STORAGE_TOL = 1e-9


class DecisionRead(NamedTuple):
    """A decision read once into plain values (:func:`~dmlsched.sim.edge_cloud.read_decision`)."""

    dispatch: dict[int, tuple[Slot, ...]]
    run: dict[int, tuple[int, ...]]
    ps: dict[int, Slot]


@dataclass(slots=True, eq=False)
class Dispatched:
    """The engine's record of a dispatched job; ``rem`` and ``started`` change as it trains."""

    job: EdgeJob
    placement: tuple[Slot, ...]  # (server, worker) per chunk; server S = the cloud
    at: int  # dispatch slot
    cloud: np.ndarray  # per chunk: in s_c
    zeta: int  # ζ_j (2g)–(2h)
    n_cloud: int  # chunks in s_c
    gid: np.ndarray  # per chunk: flat edge-worker id, -1 in the cloud
    ready: np.ndarray  # per chunk: first slot it may train, at + Δ_js (2i)
    all_ready: int  # the slot from which every chunk may train
    rate: float  # n_j of Eq. (1), mini-batches per chunk per slot
    held: np.ndarray  # GB held on each edge server (7b)–(7d)
    rem: np.ndarray  # mini-batches left per chunk
    left: int  # chunks with work left
    started: np.ndarray  # per chunk: trained at least once (read for cloud chunks only)


def dispatched(
    job: EdgeJob, placement: tuple[Slot, ...], system: EdgeCloud, t: int, held: np.ndarray
) -> Dispatched:
    """The record of ``job`` dispatched at slot ``t`` to ``placement`` (already checked)."""
    S = system.servers
    srv = np.array([s for s, _ in placement], dtype=np.int64)
    cloud = srv == S
    zeta = int(cloud.all())
    ready = t + np.asarray(job.delay, dtype=np.int64)[srv]
    return Dispatched(
        job=job,
        placement=placement,
        at=t,
        cloud=cloud,
        zeta=zeta,
        n_cloud=int(cloud.sum()),
        gid=np.array(
            [system.worker_gid(s, w) if s < S else -1 for s, w in placement], dtype=np.int64
        ),
        ready=ready,
        all_ready=int(ready.max()),
        rate=processing_capacity(job, zeta, system.speedup),
        held=held,
        rem=np.full(job.chunks, job.work_per_chunk),
        left=job.chunks,
        started=np.zeros(job.chunks, dtype=bool),
    )


class Standing(NamedTuple):
    """What the referee reads of the engine state at the slot's start (never changed by it)."""

    sched: str
    slot: int
    system: EdgeCloud
    jobs: Mapping[int, EdgeJob]  # every revealed job
    pending: Mapping[int, None]  # arrived, not dispatched
    active: Mapping[int, Dispatched]  # dispatched, unfinished (by dispatch)
    finished: Mapping[int, int]
    storage_used: np.ndarray  # GB held per edge server
    capacity: np.ndarray  # U_s per edge server (inf: unlimited)


@dataclass(frozen=True, eq=False)
class Plan:
    """One slot's accepted decision, in the engine's terms (nothing changed yet).

    ``run`` maps each job that trains to its chunk indices (never empty);
    ``new`` holds the records of the jobs dispatched this slot; ``storage``
    is the GB held per edge server once they are; ``busy`` counts the edge
    workers that train.  An edge-cloud decision holds one slot (``until``).
    """

    slot: int
    dispatch: Mapping[int, tuple[Slot, ...]]
    run: Mapping[int, tuple[int, ...]]
    ps: Mapping[int, Slot]
    new: Mapping[int, Dispatched]
    storage: np.ndarray
    busy: int

    @property
    def until(self) -> int:
        """The first slot to ask again."""
        return self.slot + 1


def referee(now: Standing, d: DecisionRead) -> Plan:
    """The slot's :class:`Plan`, or :class:`InvalidDecision` at the first violation."""
    new, storage = check_dispatch(now, d.dispatch)
    run, busy = check_run(now, new, d.run)
    check_ps(now, new, run, d.ps)
    return Plan(now.slot, d.dispatch, run, d.ps, new, storage, busy)


def check_dispatch(
    now: Standing, dispatch: Mapping[int, tuple[Slot, ...]]
) -> tuple[dict[int, Dispatched], np.ndarray]:
    """(2a), D_j placements, (7b); returns the new records and the storage they leave held."""
    name, t, system = now.sched, now.slot, now.system
    S = system.servers
    used = now.storage_used.copy()
    new: dict[int, Dispatched] = {}
    for j, places in dispatch.items():
        if j not in now.pending:  # dispatched once, never migrated
            why = "already dispatched" if j in now.active or j in now.finished else "not arrived"
            refuse(name, j, t, f"dispatch of a job that is {why}")
        job = now.jobs[j]
        if len(places) != job.chunks:  # every chunk at once
            refuse(name, j, t, f"{len(places)} chunk placements != D_j={job.chunks}")
        add = np.zeros(S)
        for k, (s, w) in enumerate(places):
            if not (0 <= s <= S and w >= 0):
                refuse(name, j, t, f"chunk {k}: bad placement {(s, w)!r}")
            if s == S:  # the cloud: unlimited workers of every type, unlimited storage
                continue
            if w >= len(system.worker_types[s]):
                refuse(name, j, t, f"chunk {k}: no worker {w}", machine=s, resource="worker")
            kind = system.worker_types[s][w]
            if kind != job.worker_type:  # (2a) v_jsw = 1
                refuse(
                    name,
                    j,
                    t,
                    f"chunk {k}: worker {w} has type {kind}, job needs {job.worker_type} (2a)",
                    machine=s,
                    resource="worker",
                )
            add[s] += job.chunk_gb
        over = used + add > now.capacity + STORAGE_TOL  # (7b) Σ_j u_j · (chunks on s) ≤ U_s
        if over.any():
            s = int(np.flatnonzero(over)[0])  # the first server over its U_s
            refuse(
                name,
                j,
                t,
                f"storage {used[s] + add[s]:g} GB > U_s={now.capacity[s]:g} (7b)",
                machine=s,
                resource="storage",
            )
        used += add
        new[j] = dispatched(job, places, system, t, add)
    return new, used


def check_run(
    now: Standing, new: Mapping[int, Dispatched], run: Mapping[int, tuple[int, ...]]
) -> tuple[dict[int, tuple[int, ...]], int]:
    """(2c), (2i), (2d), no preemption in the cloud; returns the jobs that train and the
    number of edge workers they use."""
    name, t, system = now.sched, now.slot, now.system

    def record(j: int) -> Dispatched | None:
        return now.active.get(j) or new.get(j)

    trains: dict[int, tuple[int, ...]] = {}
    owners: dict[int, list[int]] = {}  # edge worker (flat id) → jobs whose chunks it trains
    for j, chunks in run.items():
        st = record(j)
        if st is None:
            why = "finished" if j in now.finished else "not dispatched"
            refuse(name, j, t, f"run for a job that is {why}")
        if not chunks:
            continue
        D = st.job.chunks
        if min(chunks) < 0 or max(chunks) >= D:
            refuse(name, j, t, f"chunk index out of [0, {D})")
        if len(set(chunks)) != len(chunks):  # (2c) a chunk trains on one worker at a time
            refuse(name, j, t, "a chunk listed twice (2c)")
        for k in chunks:
            if st.rem[k] <= 0:
                refuse(name, j, t, f"chunk {k} is already trained")
        for k in chunks:
            if st.ready[k] > t:  # (2i) its data arrives Δ_js slots after dispatch
                refuse(
                    name,
                    j,
                    t,
                    f"chunk {k} trains before its data arrives at slot {int(st.ready[k])} (2i)",
                    machine=st.placement[k][0],
                )
        for k in chunks:
            if st.gid[k] >= 0:
                owners.setdefault(int(st.gid[k]), []).append(j)
        trains[j] = chunks
    shared = sorted(g for g, js in owners.items() if len(js) > 1)
    if shared:  # (2d) Σ_j Σ_d y_jdsw(t) ≤ 1 for every edge worker
        g = shared[0]
        who = sorted(set(owners[g]))
        s = int(system.worker_server[g])
        w = g - int(system.worker_offset[s])
        refuse(
            name,
            who[-1],
            t,
            f"worker {w} trains chunks of jobs {who} in one slot (2d)",
            machine=s,
            resource="worker",
        )
    for j, st in (*now.active.items(), *new.items()):  # the cloud never preempts a chunk
        for k in range(st.job.chunks):
            if st.cloud[k] and st.started[k] and st.rem[k] > 0 and k not in trains.get(j, ()):
                refuse(
                    name,
                    j,
                    t,
                    f"cloud chunk {k} preempted (no preemption in the cloud)",
                    machine=system.servers,
                )
    return trains, sum(len(js) for js in owners.values())


def check_ps(
    now: Standing,
    new: Mapping[int, Dispatched],
    run: Mapping[int, tuple[int, ...]],
    ps: Mapping[int, Slot],
) -> None:
    """(2e), (2g), o_jsp, (2f)."""
    name, t, system = now.sched, now.slot, now.system
    S = system.servers
    if set(ps) != set(run):  # (2e) Σ_s Σ_p z_jsp(t) = 1 exactly when job j trains
        extra = sorted(set(ps) - set(run))
        missing = sorted(set(run) - set(ps))
        refuse(
            name,
            (missing or extra)[0],
            t,
            f"PS for jobs not training {extra} / training without PS {missing} (2e)",
            resource="ps",
        )
    serving: set[Slot] = set()
    for j, (s, p) in ps.items():
        if not (0 <= s <= S and p >= 0):
            refuse(name, j, t, f"bad PS {(s, p)!r}", resource="ps")
        if s == S:  # the cloud: unlimited PSs of every type
            continue
        st = now.active.get(j) or new[j]
        if st.zeta == 1:  # (2g)–(2h): ζ_j = 1 only with the PS in the cloud too
            refuse(
                name,
                j,
                t,
                "an all-cloud job (ζ=1) needs its PS in the cloud (2g)",
                machine=s,
                resource="ps",
            )
        if p >= len(system.ps_types[s]) or system.ps_types[s][p] != st.job.ps_type:  # o_jsp
            refuse(
                name,
                j,
                t,
                f"PS {p} missing or not of type {st.job.ps_type} (o_jsp)",
                machine=s,
                resource="ps",
            )
        if (s, p) in serving:  # (2f) Σ_j z_jsp(t) ≤ 1
            refuse(name, j, t, f"PS {p} serves two jobs (2f)", machine=s, resource="ps")
        serving.add((s, p))
