"""The ``geo``-setting engine (mlBroker, Sec. 3): T slots over R data centers.

Per slot t:

1. reveal the jobs arriving at t; I_t = jobs with t_i ≤ t < t_i + duration;
2. hand the scheduler a read-only :class:`GeoView` built from copies made for
   it (:mod:`dmlsched.sim.boundary`): the slot's data D_i^r(t) of the active
   jobs, and job copies whose ``data`` holds only the rows revealed so far,
   D_i(t_i) … D_i(t) — online: nothing of future slots, not even the job's
   lifetime;
3. read the :class:`~dmlsched.model.geo.GeoDecision` once
   (:func:`read_decision`: exact ``GeoDecision``/``GeoPlacement`` types,
   exactly the active jobs, each named once; y_i^r(t) exact integers ≥ 0
   (8k); one PS site, an exact integer in [0, R) (8f); q a finite numeric
   (R, R) array — NaN, inf, ``None`` or a wrong type is an
   ``InvalidDecision``, never a raw ``TypeError``) and check it
   (:func:`check_placement`): q ≥ 0 (8k); (8a) Σ_r q^{rr'} ≤ P_i y^{r'};
   (8b) Σ_r' q^{rr'} = D_i^r(t); and (8j) with the engine's g = y ⊗ s:
   Σ_r y_i^r ≥ ⌈Σ_r D_i^r(t)/P_i⌉.  Relative tolerance 1e-6 on GB sums.  A
   violation raises ``InvalidDecision`` naming scheduler, job, slot and the
   DC (``machine``) or constraint;
4. compute the four costs itself, from its own copies of the sites and the
   jobs made at the start of the run: C_1 Eq. (1) from q, C_2 Eq. (3) with
   the piecewise F_k^r of Eq. (2) on the usage h_k^r (the optimum of
   (8c)–(8e)), C_3 Eq. (5) with v = 1[y + s > 0] (8g) and
   z = max(v(t) − v(t−1), 0) (8h), C_4 Eq. (6) with g = y ⊗ s ((8i) holds
   with equality).

Metrics: ``total_cost``, ``cost_transfer``, ``cost_resource``,
``cost_deploy``, ``cost_communication``, plus ``workers`` (worker-slots) and
``discounted_share`` (share of (r, k, t) with usage above l_k^r among used
ones).  Series: the four costs and the total per slot.

Event-driven time does not apply here: every slot reveals new data
D_i^r(t), which the decision must route exactly ((8b) is an equality) and
size workers for ((8j)), so no decision can hold into the next slot.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from dmlsched.model.geo import (
    GeoDecision,
    GeoJob,
    GeoPlacement,
    GeoWorkload,
    communication_cost,
    connections,
    deploy_cost,
    deployed,
    resource_cost,
    transfer_cost,
    usage,
)
from dmlsched.model.views import GeoView
from dmlsched.sim.boundary import (
    copy_with,
    expect_type,
    frozen_array,
    private_copy,
    read_int,
    read_ints,
    read_mapping,
    refuse,
    shown,
)
from dmlsched.sim.engine import Progress, RunResult, register_engine
from dmlsched.sim.events import Event

__all__ = ["check_placement", "read_decision", "revealed", "simulate_geo"]

_REL_TOL = 1e-6
_MAX_COUNT = 2**31  # larger worker counts are refused outright


def revealed(job: GeoJob, t: int) -> GeoJob:
    """A copy of ``job`` for a view at slot t: ``data`` holds rows t_i … t only."""
    return copy_with(job, data=job.data[: t - job.arrival + 1])


def read_decision(
    sched: str, t: int, decision: object, active: list[int], R: int
) -> dict[int, tuple[tuple[int, ...], int, np.ndarray]]:
    """Job id → (y, PS site, q) for exactly the ``active`` jobs, read once into plain values."""
    d = expect_type(sched, t, decision, GeoDecision)
    given = read_mapping(sched, t, "placements", d.placements, len(active))
    ids = set(active)
    for j in given:
        if j not in ids:
            refuse(sched, j, t, "placement for a job that is not active")
    out = {}
    for j in active:
        if j not in given:
            refuse(sched, j, t, "active job has no placement")
        p = expect_type(sched, t, given[j], GeoPlacement, j)
        w = read_ints(sched, t, j, "y", getattr(p, "workers", None), "an integer >= 0 (8k)")
        if len(w) != R:
            refuse(sched, j, t, f"workers has shape ({len(w)},), expected ({R},)")
        for r, v in enumerate(w):
            if not 0 <= v <= _MAX_COUNT:
                refuse(sched, j, t, f"y={v!r} is not an integer >= 0 (8k)", machine=r)
        raw_ps = getattr(p, "ps", None)
        ps = read_int(raw_ps)
        if ps is None or not 0 <= ps < R:
            refuse(sched, j, t, f"PS site {shown(raw_ps)} not an integer in [0, {R}) (8f)")
        q = getattr(p, "transfers", None)
        if not (
            type(q) is np.ndarray and q.dtype.kind in "fiu" and q.shape == (R, R)
        ) or not np.all(np.isfinite(q)):
            refuse(sched, j, t, f"transfers must be a finite numeric ({R}, {R}) array")
        out[j] = (w, ps, np.array(q, dtype=float))
    return out


def check_placement(sched: str, t: int, job: GeoJob, w: tuple[int, ...], q: np.ndarray) -> None:
    """(8k) q ≥ 0, (8b) all data moved, (8a) worker capacity, (8j) enough workers."""
    if np.any(q < -_REL_TOL):
        r, r2 = np.argwhere(q < -_REL_TOL)[0]
        refuse(sched, job.id, t, f"q[{r},{r2}]={q[r, r2]:.6g} < 0 (8k)", machine=int(r))
    D = job.data_at(t)
    scale = max(1.0, float(D.sum()))
    out = q.sum(axis=1)
    bad = np.abs(out - D) > _REL_TOL * scale
    if bad.any():
        r = int(np.argmax(bad))
        refuse(
            sched,
            job.id,
            t,
            f"moves out of DC {r} sum to {out[r]:.6g} GB, data is {D[r]:.6g} GB (8b)",
            machine=r,
        )
    y = np.asarray(w, dtype=float)
    inflow = q.sum(axis=0)
    over = inflow - job.capacity * y > _REL_TOL * scale
    if over.any():
        r = int(np.argmax(over))
        refuse(
            sched,
            job.id,
            t,
            f"{inflow[r]:.6g} GB sent to DC {r} but {w[r]} workers "
            f"train {job.capacity * y[r]:.6g} GB (8a)",
            machine=r,
        )
    need = job.workers_needed(t)
    if sum(w) < need:
        refuse(
            sched,
            job.id,
            t,
            f"{sum(w)} workers connect to the PS, need {need} = ceil(sum D / P) (8j)",
        )


@register_engine("geo")
def simulate_geo(
    workload: GeoWorkload,
    scheduler: object,
    rng: np.random.Generator,
    *,
    progress: Progress | None = None,
    record_events: bool = True,
) -> RunResult:
    """Run ``scheduler`` on ``workload``; the engine validates and prices every slot
    (``progress`` hears (slot, horizon, jobs arrived, jobs ended) after each;
    ``record_events=False``: no event log)."""
    name = type(scheduler).name  # type: ignore[attr-defined]
    # The engine's own copies of the sites and jobs; the scheduler gets others.
    sites = private_copy(workload.sites)
    all_jobs = [private_copy(j) for j in workload.jobs]
    by_arrival = sorted(all_jobs, key=lambda j: (j.arrival, j.id))
    T, R, K = workload.horizon, sites.dcs, sites.kinds
    shown_sites = private_copy(sites)
    scheduler.reset(shown_sites, T, rng)  # type: ignore[attr-defined]
    shown_jobs: dict[int, GeoJob] = {}  # the scheduler's copies; never read by the engine
    jobs_view = MappingProxyType(shown_jobs)
    prev_v: dict[int, np.ndarray] = {}
    series = {k: np.zeros(T) for k in ("transfer", "resource", "deploy", "communication")}
    events: list[Event] = []
    workers = 0.0
    disc_used = disc_over = 0
    for t in range(T):
        active = [j for j in by_arrival if j.active(t)]  # I_t, by arrival then id
        ids = [j.id for j in active]
        for j in active:
            shown_jobs[j.id] = revealed(j, t)
            if j.arrival == t:
                events.append(Event(t, "arrive", j.id))
        view = GeoView(
            slot=t,
            horizon=T,
            sites=shown_sites,
            active=tuple(ids),
            arrivals=tuple(j.id for j in active if j.arrival == t),
            jobs=jobs_view,
            data=MappingProxyType({j.id: frozen_array(j.data_at(t)) for j in active}),
            deployed=MappingProxyType(
                {j.id: frozen_array(prev_v.get(j.id, np.zeros(R))) for j in active}
            ),
        )
        placed = read_decision(name, t, scheduler.decide(view), ids, R)  # type: ignore[attr-defined]
        y = np.zeros((len(active), R))
        s = np.zeros((len(active), R))
        q = np.zeros((len(active), R, R))
        for k, job in enumerate(active):
            w, ps, qq = placed[job.id]
            check_placement(name, t, job, w, qq)
            y[k] = w
            s[k, ps] = 1.0
            q[k] = np.maximum(qq, 0.0)
        n = np.array([j.worker_demand for j in active], dtype=float).reshape(len(active), K)
        m = np.array([j.ps_demand for j in active], dtype=float).reshape(len(active), K)
        h = usage(y, s, n, m) if active else np.zeros((R, K))
        v = deployed(y, s)
        v_prev = np.array([prev_v.get(j.id, np.zeros(R)) for j in active]).reshape(len(active), R)
        c = np.array([j.deploy_cost for j in active])
        B = np.array([j.exchange_gb for j in active])
        series["transfer"][t] = transfer_cost(q, sites.d)
        series["resource"][t] = resource_cost(h, sites)
        series["deploy"][t] = deploy_cost(v_prev, v, c)
        series["communication"][t] = communication_cost(connections(y, s), sites.d, B)
        prev_v = {j.id: v[k] for k, j in enumerate(active)}
        workers += float(y.sum())
        used = h > 0
        disc_used += int(used.sum())
        disc_over += int((h > sites.l).sum())
        for k, j in enumerate(active):
            events.append(
                Event(
                    t,
                    "place",
                    j.id,
                    f"workers={int(y[k].sum())} dcs={int((y[k] > 0).sum())} "
                    f"ps={int(np.argmax(s[k]))}",
                )
            )
        for j in all_jobs:
            if j.arrival + j.duration - 1 == t:
                events.append(Event(t, "complete", j.id))
        if progress is not None:
            arrived = sum(1 for j in all_jobs if j.arrival <= t)
            ended = sum(1 for j in all_jobs if j.arrival + j.duration - 1 <= t)
            progress(t + 1, T, arrived, ended)
    parts = {k: float(v.sum()) for k, v in series.items()}
    metrics = {
        "total_cost": sum(parts.values()),
        "cost_transfer": parts["transfer"],
        "cost_resource": parts["resource"],
        "cost_deploy": parts["deploy"],
        "cost_communication": parts["communication"],
        "workers": workers,
        "discounted_share": disc_over / disc_used if disc_used else 0.0,
    }
    series["total"] = sum(series[k] for k in ("transfer", "resource", "deploy", "communication"))
    return RunResult(metrics=metrics, events=tuple(events) if record_events else (), series=series)
