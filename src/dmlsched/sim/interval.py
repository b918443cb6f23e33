"""The ``interval``-setting engine (SMD paper, Sec. III): one scheduling interval.

The scheduler sees all of the interval's jobs at once (copies made for it,
:mod:`dmlsched.sim.boundary`) and returns one :class:`IntervalDecision`.
:func:`read_decision` copies it once — an exact ``IntervalDecision``, each
allocation a ``(w, p)`` tuple of exact positive integers (Eq. (8)), a job
named twice refused — and :func:`check_allocation` checks Eq. (3)
O^r w + G^r p ≤ v^r per job and resource, then Eq. (2) Σ_admitted v^r ≤ C^r
per resource, raising :class:`InvalidDecision` (slot 0) naming scheduler,
job and resource.  The engine then computes each admitted job's completion
time E/f(p, w) with its *own* copy of the job's speed model (η from the
job's layers, Eq. (4)/(5)) and utility μ_i.

Metrics: ``total_utility``; ``admitted_jobs``, ``rejected_jobs``;
``used_resource_ratio`` — Σ_admitted (O^r w + G^r p) ÷ Σ_admitted v^r per
resource, averaged over the resources with a positive admitted limit (0
when nothing is admitted); ``capacity_ratio`` — Σ_admitted v^r ÷ C^r
averaged over resources; ``mean_completion_time`` over admitted jobs (job
time units); ``mean_workers``, ``mean_ps``.
"""

from __future__ import annotations

import numpy as np

from dmlsched.model.interval import IntervalDecision, IntervalJob, IntervalWorkload
from dmlsched.model.speed.smd import completion_time, job_etas
from dmlsched.model.views import IntervalView
from dmlsched.schedulers.protocols import IntervalScheduler
from dmlsched.sim.boundary import (
    expect_type,
    frozen_array,
    private_copy,
    read_int,
    read_mapping,
    refuse,
    shown,
)
from dmlsched.sim.engine import Progress, RunResult, register_engine
from dmlsched.sim.events import Event

__all__ = ["check_allocation", "read_decision", "simulate_interval"]

_TOL = 1e-9
_MAX_COUNT = 2**31  # larger counts are refused outright (float checks stay exact below)


def read_decision(
    sched: str, decision: object, known: dict[int, IntervalJob]
) -> dict[int, tuple[int, int]]:
    """Job id → (w, p), read once from an exact ``IntervalDecision``; ids must be ``known``."""
    d = expect_type(sched, 0, decision, IntervalDecision)
    out: dict[int, tuple[int, int]] = {}
    for jid, alloc in read_mapping(sched, 0, "allocations", d.allocations, len(known)).items():
        if jid not in known:
            refuse(sched, jid, 0, f"unknown job {jid!r}")
        if type(alloc) is not tuple or len(alloc) != 2:
            refuse(sched, jid, 0, f"allocation {shown(alloc)} is not a tuple (w, p)")
        pair = []
        for what, v in zip(("workers", "ps"), alloc, strict=True):
            n = read_int(v)
            if n is None or not 1 <= n <= _MAX_COUNT:
                refuse(sched, jid, 0, f"{what}={shown(v)} is not a positive integer (Eq. 8)")
            pair.append(n)
        out[jid] = (pair[0], pair[1])
    return out


def check_allocation(
    sched: str, job: IntervalJob, w: int, p: int, resources: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (3) for one job; returns (usage O^r w + G^r p, limit v^r)."""
    use = job.usage(w, p)
    lim = np.asarray(job.limit, dtype=float)
    over = use > lim * (1 + _TOL) + _TOL
    if over.any():
        r = int(np.argmax(over))
        refuse(
            sched,
            job.id,
            0,
            f"uses {use[r]:g} > user limit {lim[r]:g} (Eq. 3)",
            resource=resources[r],
        )
    return use, lim


@register_engine("interval")
def simulate_interval(
    workload: IntervalWorkload,
    scheduler: IntervalScheduler,
    rng: np.random.Generator,
    *,
    progress: Progress | None = None,
    record_events: bool = True,
) -> RunResult:
    """One decision for the whole interval (``progress`` hears (1, 1, admitted, admitted);
    ``record_events=False``: no event log)."""
    name = type(scheduler).name
    # the engine's own copies; the scheduler gets others
    jobs = [private_copy(j) for j in workload.jobs]
    cap = frozen_array(workload.capacity, float)
    res = tuple(workload.resources)
    scheduler.reset(frozen_array(cap), res, rng)
    view = IntervalView(
        jobs=tuple(private_copy(j) for j in jobs), capacity=frozen_array(cap), resources=res
    )
    by_id = {j.id: j for j in jobs}
    allocations = read_decision(name, scheduler.decide(view), by_id)
    limits = np.zeros(len(res))
    used = np.zeros(len(res))
    events: list[Event] = []
    utility = 0.0
    times: list[float] = []
    ws: list[int] = []
    ps: list[int] = []
    for jid, (w, p) in allocations.items():
        job = by_id[jid]
        use, lim = check_allocation(name, job, w, p, res)
        limits += lim
        used += use
        t = float(completion_time(job, w, p, job_etas(job)))
        u = float(job.utility(t))
        utility += u
        times.append(t)
        ws.append(w)
        ps.append(p)
        events.append(Event(0, "admit", jid, f"workers={w} ps={p}"))
        events.append(Event(0, "complete", jid, f"time={t:.6g} utility={u:.6g}"))
    over = limits > cap * (1 + _TOL) + _TOL
    if over.any():
        r = int(np.argmax(over))
        refuse(
            name,
            None,
            0,
            f"admitted limits sum to {limits[r]:g} > capacity {cap[r]:g} (Eq. 2)",
            resource=res[r],
        )
    for job in jobs:
        if job.id not in allocations:
            events.append(Event(0, "reject", job.id))
    pos = limits > 0
    n_adm = len(times)
    metrics = {
        "total_utility": utility,
        "admitted_jobs": float(n_adm),
        "rejected_jobs": float(len(jobs) - n_adm),
        "used_resource_ratio": float(np.mean(used[pos] / limits[pos])) if pos.any() else 0.0,
        "capacity_ratio": float(
            np.mean(np.divide(limits, cap, out=np.zeros_like(cap), where=cap > 0))
        ),
        "mean_completion_time": float(np.mean(times)) if times else 0.0,
        "mean_workers": float(np.mean(ws)) if ws else 0.0,
        "mean_ps": float(np.mean(ps)) if ps else 0.0,
    }
    if progress is not None:
        progress(1, 1, n_adm, n_adm)
    return RunResult(metrics=metrics, events=tuple(events) if record_events else ())
