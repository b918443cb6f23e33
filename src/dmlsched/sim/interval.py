"""The ``interval``-setting engine (SMD paper, Sec. III): one scheduling interval.

The scheduler sees all of the interval's jobs at once and returns one
:class:`IntervalDecision`.  The engine validates it — known job ids, w and p
positive integers (Eq. (8)), Eq. (3) O^r w + G^r p ≤ v^r per job and
resource, Eq. (2) Σ_admitted v^r ≤ C^r per resource — raising
:class:`InvalidDecision` (slot 0) naming scheduler, job and resource; then
computes each admitted job's completion time E/f(p, w) with its *own* speed
model (η from the job's layers, Eq. (4)/(5)) and utility μ_i.

Metrics: ``total_utility``; ``admitted_jobs``, ``rejected_jobs``;
``used_resource_ratio`` — Σ_admitted (O^r w + G^r p) ÷ Σ_admitted v^r per
resource, averaged over the resources with a positive admitted limit (0
when nothing is admitted); ``capacity_ratio`` — Σ_admitted v^r ÷ C^r
averaged over resources; ``mean_completion_time`` over admitted jobs (job
time units); ``mean_workers``, ``mean_ps``.
"""

from __future__ import annotations

import numpy as np

from dmlsched.errors import InvalidDecision
from dmlsched.model.interval import IntervalDecision, IntervalWorkload
from dmlsched.model.speed.smd import completion_time, job_etas
from dmlsched.model.views import IntervalView
from dmlsched.schedulers.protocols import IntervalScheduler
from dmlsched.sim.engine import RunResult, register_engine
from dmlsched.sim.events import Event

__all__ = ["simulate_interval"]

_TOL = 1e-9


def _is_pos_int(v: object) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool) and v >= 1


@register_engine("interval")
def simulate_interval(
    workload: IntervalWorkload, scheduler: IntervalScheduler, rng: np.random.Generator
) -> RunResult:
    name = type(scheduler).name
    scheduler.reset(workload.capacity, workload.resources, rng)
    view = IntervalView(
        jobs=workload.jobs, capacity=workload.capacity, resources=workload.resources
    )
    decision = scheduler.decide(view)
    if not isinstance(decision, IntervalDecision):
        raise InvalidDecision(name, None, 0, f"decide returned {type(decision).__name__}")
    by_id = {j.id: j for j in workload.jobs}
    res = workload.resources
    limits = np.zeros(len(res))
    used = np.zeros(len(res))
    events: list[Event] = []
    utility = 0.0
    times: list[float] = []
    ws: list[int] = []
    ps: list[int] = []
    for jid, alloc in decision.allocations.items():
        if jid not in by_id:
            raise InvalidDecision(
                name, jid if isinstance(jid, int) else None, 0, f"unknown job {jid!r}"
            )
        job = by_id[jid]
        if not (isinstance(alloc, tuple) and len(alloc) == 2):
            raise InvalidDecision(name, jid, 0, f"allocation {alloc!r} is not (w, p)")
        w, p = alloc
        for what, v in (("workers", w), ("ps", p)):
            if not _is_pos_int(v):
                raise InvalidDecision(
                    name, jid, 0, f"{what}={v!r} is not a positive integer (Eq. 8)"
                )
        use = job.usage(int(w), int(p))
        lim = np.asarray(job.limit, dtype=float)
        over = use > lim * (1 + _TOL) + _TOL
        if over.any():
            r = int(np.argmax(over))
            raise InvalidDecision(
                name, jid, 0, f"uses {use[r]:g} > user limit {lim[r]:g} (Eq. 3)", resource=res[r]
            )
        limits += lim
        used += use
        t = float(completion_time(job, int(w), int(p), job_etas(job)))
        u = float(job.utility(t))
        utility += u
        times.append(t)
        ws.append(int(w))
        ps.append(int(p))
        events.append(Event(0, "admit", jid, f"workers={w} ps={p}"))
        events.append(Event(0, "complete", jid, f"time={t:.6g} utility={u:.6g}"))
    cap = workload.capacity
    over = limits > cap * (1 + _TOL) + _TOL
    if over.any():
        r = int(np.argmax(over))
        raise InvalidDecision(
            name,
            None,
            0,
            f"admitted limits sum to {limits[r]:g} > capacity {cap[r]:g} (Eq. 2)",
            resource=res[r],
        )
    for job in workload.jobs:
        if job.id not in decision.allocations:
            events.append(Event(0, "reject", job.id))
    pos = limits > 0
    n_adm = len(times)
    metrics = {
        "total_utility": utility,
        "admitted_jobs": float(n_adm),
        "rejected_jobs": float(len(workload.jobs) - n_adm),
        "used_resource_ratio": float(np.mean(used[pos] / limits[pos])) if pos.any() else 0.0,
        "capacity_ratio": float(
            np.mean(np.divide(limits, cap, out=np.zeros_like(cap), where=cap > 0))
        ),
        "mean_completion_time": float(np.mean(times)) if times else 0.0,
        "mean_workers": float(np.mean(ws)) if ws else 0.0,
        "mean_ps": float(np.mean(ps)) if ps else 0.0,
    }
    return RunResult(metrics=metrics, events=tuple(events))
