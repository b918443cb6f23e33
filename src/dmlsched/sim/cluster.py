"""The ``cluster``-setting engine: a time-slotted loop over T slots.

Per slot t:

1. reveal the jobs with arrival a_i = t (online: never earlier);
2. ask the scheduler for the slot's :class:`ClusterDecision` through a
   read-only :class:`ClusterView`;
3. validate it (:mod:`dmlsched.sim.validate`): pending-only admit/reject,
   nothing for rejected, finished or unarrived jobs, integer counts, Eq. (2),
   (4), (5), (7) and, for async jobs, (3.2), (3.4), (3.5);
4. advance each allocated job by the engine's own speed model
   (:func:`dmlsched.model.speed.pdors.job_rate` on the actual counts and
   locality, Fact 1 — or ``workload.speed.rate`` when the workload carries a
   measured speed model, same signature); a job completes in the slot its
   work reaches E·K (sync) or E·K·M (async).

Once every job has arrived and none is pending or active, the remaining
slots cannot change anything (no decision can touch a finished or rejected
job), so the loop stops early; their utilization rows stay 0, so every
metric equals that of the full loop.  This keeps long horizons (peer
replays, 60-s slots) cheap.

Completion and utility follow the paper: t̃_i is the completion slot and the
job earns u_i(t̃_i − a_i) (Eq. (6), DMLRS objective), so a job that finishes in
its arrival slot has training time 0.  Unfinished or rejected jobs earn
nothing and count T − a_i as training time (PD-ORS Fig. 9).

Metrics: ``total_utility``, ``median_training_time``, ``mean_training_time``,
``completed_jobs``, ``admitted_jobs``, ``rejected_jobs``, ``mean_jct`` (completed
jobs only, in slots from the start of the arrival slot to the moment the work
ran out, progress being linear within a slot; NaN when none completed),
``mean_jct_s`` (the same in seconds: × ``workload.slot_seconds``),
``mean_progress`` (fraction of its work each admitted job got through by T,
1 for completed ones, averaged; 0 when none was admitted),
``mean_workers`` (workers per job per slot it ran, averaged over those
job-slots; 0 when nothing ran), ``mean_utilization`` (over resources) and
``mean_utilization_<resource>`` (per-slot used ÷ capacity summed over
machines, averaged over slots).
"""

from __future__ import annotations

from collections import defaultdict
from types import MappingProxyType

import numpy as np

from dmlsched.errors import InvalidDecision
from dmlsched.model.cluster import ClusterDecision, ClusterWorkload
from dmlsched.model.speed.pdors import job_rate
from dmlsched.model.views import ClusterView
from dmlsched.schedulers.protocols import ClusterScheduler
from dmlsched.sim.engine import RunResult, register_engine
from dmlsched.sim.events import Event
from dmlsched.sim.validate import check_admissions, check_capacity, check_placement

__all__ = ["simulate_cluster"]

_DONE_TOL = 1e-9


@register_engine("cluster")
def simulate_cluster(
    workload: ClusterWorkload,
    scheduler: ClusterScheduler,
    rng: np.random.Generator,
    *,
    record_events: bool = True,
) -> RunResult:
    """Run ``scheduler`` on ``workload``; the engine owns progress and metrics."""
    name = type(scheduler).name
    cluster = workload.cluster
    T = workload.horizon
    H = cluster.machines
    by_slot: dict[int, list] = defaultdict(list)
    for job in sorted(workload.jobs, key=lambda j: (j.arrival, j.id)):
        by_slot[job.arrival].append(job)

    scheduler.reset(cluster, T, rng)

    jobs: dict[int, object] = {}
    pending: dict[int, None] = {}  # insertion-ordered set
    active: dict[int, None] = {}
    rejected: set[int] = set()
    finished: dict[int, int] = {}  # id -> completion slot
    done: dict[int, float] = {}
    events: list[Event] = []
    cap_total = cluster.capacity.sum(axis=0)
    util = np.zeros((T, len(cluster.resources)))
    jobs_view = MappingProxyType(jobs)
    finished_fs: frozenset[int] = frozenset()
    jct: dict[int, float] = {}
    checked: dict[int, tuple] = {}  # job -> (placement, machine idx, demand, rate)
    rate_of = workload.speed.rate if workload.speed is not None else job_rate
    rate_model = workload.speed
    last_arrival = max(by_slot, default=-1)
    worker_slots = job_slots = 0  # for mean_workers: workers per job per slot it ran

    for t in range(T):
        if t > last_arrival and not pending and not active:
            break  # nothing left that a decision could change (see module docstring)
        arrivals = tuple(by_slot.get(t, ()))
        for job in arrivals:
            jobs[job.id] = job
            pending[job.id] = None
            if record_events:
                events.append(Event(t, "arrive", job.id))
        view = ClusterView(
            slot=t,
            horizon=T,
            cluster=cluster,
            arrivals=arrivals,
            pending=tuple(pending),
            active=tuple(active),
            remaining=MappingProxyType({j: jobs[j].total_work - done[j] for j in active}),
            jobs=jobs_view,
            finished=finished_fs,
            slot_seconds=workload.slot_seconds,
        )
        decision = scheduler.decide(view)
        if not isinstance(decision, ClusterDecision):
            raise InvalidDecision(name, None, t, f"decide returned {type(decision).__name__}")

        rej_now, adm_now, _ = check_admissions(
            name, decision, t, pending, active, rejected, finished
        )
        for j in rej_now:
            del pending[j]
            rejected.add(j)
            if record_events:
                events.append(Event(t, "reject", j))
        for j in adm_now:
            del pending[j]
            active[j] = None
            done[j] = 0.0
            if record_events:
                events.append(Event(t, "admit", j))

        usage = np.zeros((H, len(cluster.resources)))
        owners: dict[int, list[int]] = defaultdict(list)
        progress: list[tuple[int, float]] = []
        for j, p in decision.allocations.items():
            if j in pending:  # allocation admits implicitly
                del pending[j]
                active[j] = None
                done[j] = 0.0
                if record_events:
                    events.append(Event(t, "admit", j))
            job = jobs[j]
            hit = checked.get(j)
            if hit is None or (hit[0] is not p and hit[0] != p):
                # a placement already validated for this job is valid again: the checks
                # depend only on the job and the placement (capacity is checked below)
                check_placement(name, job, p, t, H)  # type: ignore[arg-type]
                idx = np.asarray(p.machines, dtype=np.intp)
                demand = (
                    np.outer(p.workers, job.worker_demand)  # type: ignore[attr-defined]
                    + np.outer(p.ps, job.ps_demand)
                )  # type: ignore[attr-defined]
                rate = rate_of(job, p.machines, p.workers, p.ps)  # type: ignore[arg-type]
                hit = checked[j] = (p, idx, demand, rate)
            _, idx, demand, rate = hit
            if not p.machines:
                continue
            np.add.at(usage, idx, demand)
            for m in p.machines:
                owners[m].append(j)
            progress.append((j, rate))
            worker_slots += p.total_workers
            job_slots += 1
            if record_events:
                events.append(
                    Event(
                        t,
                        "allocate",
                        j,
                        f"workers={p.total_workers} ps={p.total_ps} machines={len(p.machines)} "
                        f"rate={rate:.6g}",
                    )
                )
        check_capacity(name, cluster, usage, t, owners)
        util[t] = np.divide(
            usage.sum(axis=0), cap_total, out=np.zeros_like(cap_total), where=cap_total > 0
        )

        joint = getattr(rate_model, "slot_rates", None)
        if joint is not None and len(progress) > 1:
            # a speed model that knows what jobs running at once do to each other (shared links)
            rates = joint([(jobs[j], checked[j][0]) for j, _ in progress])
            progress = [(j, float(r)) for (j, _), r in zip(progress, rates, strict=True)]

        newly_done = False
        for j, rate in progress:
            before = done[j]
            done[j] += rate
            total = jobs[j].total_work  # type: ignore[attr-defined]
            if done[j] >= total * (1 - _DONE_TOL):
                del active[j]
                checked.pop(j, None)
                finished[j] = t
                # JCT counts whole slots from the start of the arrival slot to the moment
                # within slot t when the work ran out (linear progress within a slot)
                jct[j] = t - jobs[j].arrival + min(1.0, max(0.0, total - before) / rate)  # type: ignore[attr-defined]
                newly_done = True
                if record_events:
                    events.append(Event(t, "complete", j))
        if newly_done:
            finished_fs = frozenset(finished)

    mean_workers = worker_slots / job_slots if job_slots else 0.0
    return RunResult(
        metrics=_metrics(workload, finished, jct, active, rejected, util, done, mean_workers),
        events=tuple(events),
        # per-job JCT (workload order, NaN if unfinished): the testbed compares it with reality
        series={
            "utilization": util,
            "jct": np.array([jct.get(j.id, np.nan) for j in workload.jobs], dtype=float),
        },
    )


def _metrics(
    workload: ClusterWorkload,
    finished: dict[int, int],
    jct: dict[int, float],
    active: dict[int, None],
    rejected: set[int],
    util: np.ndarray,
    done: dict[int, float],
    mean_workers: float,
) -> dict[str, float]:
    T = workload.horizon
    by_id = {j.id: j for j in workload.jobs}
    utility = 0.0
    times = []
    for job in workload.jobs:
        if job.id in finished:
            dur = finished[job.id] - job.arrival
            utility += job.utility(dur)
        else:
            dur = T - job.arrival
        times.append(dur)
    admitted = len(finished) + len(active)
    out = {
        "total_utility": utility,
        "median_training_time": float(np.median(times)) if times else 0.0,
        "mean_training_time": float(np.mean(times)) if times else 0.0,
        "completed_jobs": float(len(finished)),
        "admitted_jobs": float(admitted),
        "rejected_jobs": float(len(rejected)),
        "mean_utilization": float(util.mean()) if util.size else 0.0,
        "mean_jct": float(np.mean(list(jct.values()))) if jct else float("nan"),
        "mean_jct_s": (
            float(np.mean(list(jct.values()))) * workload.slot_seconds if jct else float("nan")
        ),
        "mean_progress": (
            float(np.mean([min(1.0, done[j] / by_id[j].total_work) for j in done])) if done else 0.0
        ),
        "mean_workers": mean_workers,
    }
    for r, res in enumerate(workload.cluster.resources):
        out[f"mean_utilization_{res}"] = float(util[:, r].mean())
    return out
