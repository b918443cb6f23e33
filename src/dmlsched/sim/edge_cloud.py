"""The ``edge-cloud``-setting engine (A_online, Wang et al., Sec. III).

Per slot t:

1. reveal jobs with r_j = t;
2. ask the scheduler for an :class:`EdgeCloudDecision` through a read-only
   :class:`EdgeCloudView` built from the scheduler's own per-run copies of
   the jobs and the system (:mod:`dmlsched.sim.boundary`; the engine computes
   from copies of its own, so a scheduler that changes what it was shown —
   even the system object, which a workload reuses across runs — changes
   nothing);
3. read it once (:func:`read_decision`: an exact ``EdgeCloudDecision``,
   ``(server, worker)`` pairs and chunk indices of exact integers, a job
   named twice in a mapping refused) and validate it — any violation raises
   :class:`InvalidDecision`:

   * dispatch: only pending jobs, all D_j chunks at once, each to a worker
     with v_jsw = 1 (2a) or to the cloud; storage (7b): Σ u_j over chunks held
     on s ≤ U_s, a chunk's storage held until its job completes ((7c)–(7d));
     the placement never changes afterwards (no data migration);
   * run: only dispatched, unfinished chunks, on their own worker, not before
     ``dispatch slot + Δ_js`` (2i); each edge worker trains at most one chunk
     per slot (2d); a chunk at most once (so ≤ D_j workers per job, (2c));
     cloud chunks, once started, run every slot until done (no preemption
     in the cloud, Sec. III-A);
   * ps: exactly one PS for every job that trains this slot (2e), of the
     job's PS type (o_jsp = 1), each edge PS serving one job per slot (2f);
     the cloud has unlimited PSs.  ζ_j is fixed at dispatch — 1 iff every
     chunk is in the cloud (2g)–(2h) — and a ζ_j = 1 job must keep its PS in
     the cloud (otherwise (2h) would change its rate mid-run);

4. advance each trained chunk by the engine's own n_j (Eq. (1), with the
   system's speed augmentation); a job completes when all its chunks have
   E_j·B_j mini-batches; c_j is that slot (2j).

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
(t − r_j)/(E_j D_j B_j)).  The loop stops once every job has completed (or at T).

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
from types import MappingProxyType

import numpy as np

from dmlsched.errors import InvalidDecision
from dmlsched.model.edge_cloud import EdgeCloudDecision, EdgeCloudWorkload, EdgeJob, Slot
from dmlsched.model.speed.aonline import processing_capacity
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
from dmlsched.sim.engine import Progress, RunResult, register_engine
from dmlsched.sim.events import Event

__all__ = ["read_decision", "simulate_edge_cloud"]

_DONE_TOL = 1e-9


class _Job:
    """Engine-side state of a dispatched job."""

    __slots__ = ("cloud", "gid", "job", "placement", "rate", "ready", "rem", "started", "zeta")

    def __init__(self, job: EdgeJob, placement: tuple, system, t: int, speedup: float) -> None:
        S = system.servers
        srv = np.array([s for s, _ in placement], dtype=np.int64)
        self.job = job
        self.placement = tuple((int(s), int(w)) for s, w in placement)
        self.cloud = srv == S
        self.zeta = int(self.cloud.all())
        self.gid = np.array(
            [system.worker_gid(s, w) if s < S else -1 for s, w in self.placement], dtype=np.int64
        )
        delay = np.asarray(job.delay, dtype=np.int64)
        self.ready = t + delay[srv]  # first slot a chunk may train, (2i)
        self.rate = processing_capacity(job, self.zeta, speedup)
        self.rem = np.full(job.chunks, job.work_per_chunk)
        self.started = np.zeros(job.chunks, dtype=bool)


def read_decision(
    sched: str, slot: int, decision: object, limit: int
) -> tuple[dict[int, tuple[Slot, ...]], dict[int, tuple[int, ...]], dict[int, Slot]]:
    """(dispatch, run, ps) read once from an exact ``EdgeCloudDecision`` into plain tuples.

    ``limit`` bounds each mapping (the jobs it may name); the model's checks
    follow in the loop.
    """
    d = expect_type(sched, slot, decision, EdgeCloudDecision)
    dispatch: dict[int, tuple[Slot, ...]] = {}
    for j, places in read_mapping(sched, slot, "dispatch", d.dispatch, limit).items():
        if type(places) not in (tuple, list):
            refuse(sched, j, slot, f"dispatch {shown(places)} is not a tuple of (server, worker)")
        dispatch[j] = tuple(
            read_pair(sched, slot, j, f"chunk {k}: placement", sw)
            for k, sw in enumerate(tuple(places))  # type: ignore[arg-type]
        )
    run = {
        j: read_ints(sched, slot, j, "chunk indices", chunks)
        for j, chunks in read_mapping(sched, slot, "run", d.run, limit).items()
    }
    ps = {
        j: read_pair(sched, slot, j, "PS", sp)
        for j, sp in read_mapping(sched, slot, "ps", d.ps, limit).items()
    }
    return dispatch, run, ps


@register_engine("edge-cloud")
def simulate_edge_cloud(
    workload: EdgeCloudWorkload,
    scheduler: EdgeCloudScheduler,
    rng: np.random.Generator,
    *,
    record_events: bool = True,
    progress: Progress | None = None,
) -> RunResult:
    """Run ``scheduler`` on ``workload``; the engine owns progress and metrics
    (``progress`` hears (slot, horizon, admitted, completed) after every slot)."""
    name = type(scheduler).name
    # The engine's own copies of the system and the jobs; the scheduler gets others.
    system = private_copy(workload.system)
    all_jobs = [private_copy(j) for j in workload.jobs]
    S = system.servers
    T = workload.horizon
    W = system.edge_workers
    speedup = system.speedup
    by_slot: dict[int, list[EdgeJob]] = defaultdict(list)
    for job in sorted(all_jobs, key=lambda j: (j.arrival, j.id)):
        by_slot[job.arrival].append(job)
    n_jobs = len(all_jobs)

    shown_system = private_copy(system)
    scheduler.reset(shown_system, T, rng)

    jobs: dict[int, EdgeJob] = {}
    pending: dict[int, None] = {}
    active: dict[int, _Job] = {}
    finished: dict[int, int] = {}
    placement: dict[int, tuple] = {}
    held: dict[int, np.ndarray] = {}  # storage per edge server held by a job
    storage_used = np.zeros(S)
    cap = np.array([system.storage_of(s) for s in range(S)])
    last_run: dict[int, tuple[int, ...]] = {}
    last_ps: dict[int, tuple[int, int]] = {}
    events: list[Event] = []
    util: list[float] = []
    preemptions = 0
    frac_flow = 0.0  # Σ_j Σ_d f_jd(y) of Eq. (3) on the actual schedule
    chunks_cloud = chunks_total = 0
    # What the scheduler is shown lives in dicts of its own (a MappingProxyType gives its
    # dict away to gc.get_referents): the engine writes them and never reads them.
    for_view: dict[str, dict] = {
        k: {} for k in ("jobs", "placement", "dispatched_at", "zeta", "finished")
    }
    views = {k: MappingProxyType(v) for k, v in for_view.items()}

    t = 0
    while t < T and len(finished) < n_jobs:
        arrivals = []
        for job in by_slot.get(t, ()):
            jobs[job.id] = job
            pending[job.id] = None
            seen = for_view["jobs"][job.id] = private_copy(job)
            arrivals.append(seen)
            if record_events:
                events.append(Event(t, "arrive", job.id))
        view = EdgeCloudView(
            slot=t,
            horizon=T,
            system=shown_system,
            arrivals=tuple(arrivals),
            jobs=views["jobs"],
            pending=tuple(pending),
            active=tuple(active),
            placement=views["placement"],
            dispatched_at=views["dispatched_at"],
            remaining=MappingProxyType({j: frozen_array(a.rem) for j, a in active.items()}),
            zeta=views["zeta"],
            last_run=MappingProxyType(dict(last_run)),
            last_ps=MappingProxyType(dict(last_ps)),
            storage_used=tuple(storage_used.tolist()),
            finished=views["finished"],
        )
        dispatch, run, ps_of = read_decision(name, t, scheduler.decide(view), n_jobs)

        # --- dispatch: (2a), (7b), fixed placement -------------------------------------------
        for j, places in dispatch.items():
            if j not in pending:
                why = "already dispatched" if j in placement else "not arrived"
                raise InvalidDecision(name, j, t, f"dispatch of a job that is {why}")
            job = jobs[j]
            if len(places) != job.chunks:
                raise InvalidDecision(
                    name, j, t, f"{len(places)} chunk placements != D_j={job.chunks}"
                )
            add = np.zeros(S)
            for d, (s, w) in enumerate(places):
                if not (0 <= s <= S and w >= 0):
                    raise InvalidDecision(name, j, t, f"chunk {d}: bad placement {(s, w)!r}")
                if s < S:
                    if w >= len(system.worker_types[s]):
                        raise InvalidDecision(
                            name, j, t, f"chunk {d}: no worker {w}", machine=s, resource="worker"
                        )
                    if system.worker_types[s][w] != job.worker_type:  # (2a)
                        raise InvalidDecision(
                            name,
                            j,
                            t,
                            f"chunk {d}: worker {w} has type "
                            f"{system.worker_types[s][w]}, job needs {job.worker_type} (2a)",
                            machine=s,
                            resource="worker",
                        )
                    add[s] += job.chunk_gb
            over = storage_used + add > cap + 1e-9
            if over.any():  # (7b)
                s = int(np.argmax(over))
                raise InvalidDecision(
                    name,
                    j,
                    t,
                    f"storage {storage_used[s] + add[s]:g} GB > U_s={cap[s]:g} (7b)",
                    machine=s,
                    resource="storage",
                )
            storage_used += add
            held[j] = add
            del pending[j]
            st = _Job(job, places, system, t, speedup)
            active[j] = st
            placement[j] = for_view["placement"][j] = st.placement
            for_view["dispatched_at"][j] = t
            for_view["zeta"][j] = st.zeta
            n_cloud = int(st.cloud.sum())
            chunks_cloud += n_cloud
            chunks_total += job.chunks
            if record_events:
                events.append(
                    Event(
                        t,
                        "dispatch",
                        j,
                        f"edge={job.chunks - n_cloud} cloud={n_cloud} zeta={st.zeta}",
                    )
                )

        # --- run: (2c), (2d), (2i), cloud non-preemption --------------------------------------
        ran: dict[int, np.ndarray] = {}
        gids: list[np.ndarray] = []
        owners: list[np.ndarray] = []
        for j, chunks in run.items():
            if j not in active:
                why = "finished" if j in finished else "not dispatched"
                raise InvalidDecision(name, j, t, f"run for a job that is {why}")
            if len(chunks) == 0:
                continue
            st = active[j]
            if min(chunks) < 0 or max(chunks) >= st.job.chunks:  # before numpy: ints may be huge
                raise InvalidDecision(name, j, t, f"chunk index out of [0, {st.job.chunks})")
            idx = np.asarray(chunks, dtype=np.int64)
            if len(set(chunks)) != len(chunks):
                raise InvalidDecision(name, j, t, "a chunk listed twice (2c)")
            if (st.rem[idx] <= 0).any():
                d = int(idx[st.rem[idx] <= 0][0])
                raise InvalidDecision(name, j, t, f"chunk {d} is already trained")
            early = st.ready[idx] > t
            if early.any():  # (2i)
                d = int(idx[early][0])
                raise InvalidDecision(
                    name,
                    j,
                    t,
                    f"chunk {d} trains before its data arrives at slot {int(st.ready[d])} (2i)",
                    machine=int(st.placement[d][0]),
                )
            g = st.gid[idx]
            g = g[g >= 0]
            gids.append(g)
            owners.append(np.full(len(g), j))
            ran[j] = idx
        busy = 0
        if gids:
            allg = np.concatenate(gids)
            busy = len(allg)
            if busy != len(np.unique(allg)):  # (2d)
                u, c = np.unique(allg, return_counts=True)
                g0 = int(u[c > 1][0])
                who = sorted({int(o) for o in np.concatenate(owners)[allg == g0]})
                s0 = int(system.worker_server[g0])
                raise InvalidDecision(
                    name,
                    who[-1],
                    t,
                    f"worker {g0 - int(system.worker_offset[s0])} trains "
                    f"chunks of jobs {who} in one slot (2d)",
                    machine=s0,
                    resource="worker",
                )
        for j, st in active.items():
            if st.cloud.any():
                must = st.cloud & st.started & (st.rem > 0)
                if j in ran:
                    must[ran[j]] = False
                if must.any():
                    d = int(np.argmax(must))
                    raise InvalidDecision(
                        name,
                        j,
                        t,
                        f"cloud chunk {d} preempted (no preemption in the cloud)",
                        machine=S,
                    )

        # --- ps: (2e), (2f), o_jsp, (2g) -------------------------------------------------------
        if set(ps_of) != set(ran):
            extra = sorted(set(ps_of) - set(ran))
            missing = sorted(set(ran) - set(ps_of))
            j0 = (missing or extra)[0]
            raise InvalidDecision(
                name,
                j0,
                t,
                f"PS for jobs not training {extra} / training without PS {missing} (2e)",
                resource="ps",
            )
        used_ps: set[tuple[int, int]] = set()
        for j, (s, p) in ps_of.items():
            if not (0 <= s <= S and p >= 0):
                raise InvalidDecision(name, j, t, f"bad PS {(s, p)!r}", resource="ps")
            job = jobs[j]
            if s < S:
                if active[j].zeta == 1:  # (2g)
                    raise InvalidDecision(
                        name,
                        j,
                        t,
                        "an all-cloud job (ζ=1) needs its PS in the cloud (2g)",
                        machine=s,
                        resource="ps",
                    )
                if p >= len(system.ps_types[s]) or system.ps_types[s][p] != job.ps_type:
                    raise InvalidDecision(
                        name,
                        j,
                        t,
                        f"PS {p} missing or not of type {job.ps_type} (o_jsp)",
                        machine=s,
                        resource="ps",
                    )
                if (s, p) in used_ps:  # (2f)
                    raise InvalidDecision(
                        name, j, t, f"PS {p} serves two jobs (2f)", machine=s, resource="ps"
                    )
                used_ps.add((s, p))

        # --- progress (Eq. (1)) and bookkeeping ------------------------------------------------
        for j, prev in last_run.items():
            if j in active:
                idx = np.asarray(prev)
                still = idx[active[j].rem[idx] > 0]
                cur = ran.get(j)
                stopped = still if cur is None else np.setdiff1d(still, cur)
                if len(stopped):
                    preemptions += 1
                    if record_events:
                        events.append(Event(t, "preempt", j, f"chunks={len(stopped)}"))
        last_run = {}
        for j, idx in ran.items():
            st = active[j]
            st.started[idx] = True
            done_now = np.minimum(st.rem[idx], st.rate)
            frac_flow += (
                float(done_now.sum())
                * (t - st.job.arrival)
                / (st.job.work_per_chunk * st.job.chunks)
            )
            st.rem[idx] -= st.rate
            st.rem[idx[st.rem[idx] <= _DONE_TOL * st.job.work_per_chunk]] = 0.0
            if (st.rem <= 0).all():
                del active[j]
                finished[j] = for_view["finished"][j] = t
                storage_used -= held.pop(j)
                if record_events:
                    events.append(Event(t, "complete", j))
            else:
                last_run[j] = tuple(idx.tolist())
        last_ps = {j: sp for j, sp in ps_of.items() if j in last_run}
        util.append(busy / W if W else 0.0)
        t += 1
        if progress is not None:
            progress(t, T, len(active) + len(finished), len(finished))

    return RunResult(
        metrics={
            **_metrics(all_jobs, finished, T, util, preemptions, chunks_cloud, chunks_total),
            "fractional_flow": frac_flow,
        },
        events=tuple(events),
        series={"utilization": np.asarray(util)},
    )


def _metrics(
    all_jobs: list[EdgeJob],
    finished: dict[int, int],
    T: int,
    util: list[float],
    preemptions: int,
    chunks_cloud: int,
    chunks_total: int,
) -> dict[str, float]:
    jct = [finished[j.id] - j.arrival if j.id in finished else T - j.arrival for j in all_jobs]
    first = min((j.arrival for j in all_jobs), default=0)
    last = max(finished.values(), default=first)
    window = np.asarray(util[first : last + 1]) if util else np.zeros(0)
    return {
        "total_jct": float(sum(jct)),
        "mean_jct": float(np.mean(jct)) if jct else 0.0,
        "completed_jobs": float(len(finished)),
        "preemptions": float(preemptions),
        "utilization": float(window.mean()) if window.size else 0.0,
        "makespan": float(last - first),
        "cloud_chunk_share": chunks_cloud / chunks_total if chunks_total else 0.0,
    }
