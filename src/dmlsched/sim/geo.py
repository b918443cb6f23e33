"""The ``geo``-setting engine (mlBroker, Sec. 3): T slots over R data centers.

Per slot t:

1. reveal the jobs arriving at t; I_t = jobs with t_i ≤ t < t_i + duration;
2. hand the scheduler a read-only :class:`GeoView` (the slot's data D_i^r(t)
   of the active jobs only — online: nothing of future slots);
3. validate the :class:`~dmlsched.model.geo.GeoDecision`: exactly the active
   jobs; y_i^r(t) integers ≥ 0 (8k); one PS site (8f); q ≥ 0 (8k);
   (8a) Σ_r q^{rr'} ≤ P_i y^{r'}; (8b) Σ_r' q^{rr'} = D_i^r(t); and (8j)
   with the engine's g = y ⊗ s: Σ_r y_i^r ≥ ⌈Σ_r D_i^r(t)/P_i⌉.  Relative
   tolerance 1e-6 on GB sums.  A violation raises ``InvalidDecision``
   naming scheduler, job, slot and the DC (``machine``) or constraint;
4. compute the four costs itself: C_1 Eq. (1) from q, C_2 Eq. (3) with the
   piecewise F_k^r of Eq. (2) on the usage h_k^r (the optimum of (8c)–(8e)),
   C_3 Eq. (5) with v = 1[y + s > 0] (8g) and z = max(v(t) − v(t−1), 0)
   (8h), C_4 Eq. (6) with g = y ⊗ s ((8i) holds with equality).

Metrics: ``total_cost``, ``cost_transfer``, ``cost_resource``,
``cost_deploy``, ``cost_communication``, plus ``workers`` (worker-slots) and
``discounted_share`` (share of (r, k, t) with usage above l_k^r among used
ones).  Series: the four costs and the total per slot.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from dmlsched.errors import InvalidDecision
from dmlsched.model.geo import (
    GeoDecision,
    GeoJob,
    GeoSites,
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
from dmlsched.sim.engine import RunResult, register_engine
from dmlsched.sim.events import Event

__all__ = ["simulate_geo", "validate_geo"]

_REL_TOL = 1e-6


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


def validate_geo(
    name: str, t: int, sites: GeoSites, jobs: list[GeoJob], decision: GeoDecision
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Check (8a), (8b), (8f), (8j), (8k); return y (I,R), s (I,R), q (I,R,R)."""
    if not isinstance(decision, GeoDecision):
        raise InvalidDecision(name, None, t, f"decide returned {type(decision).__name__}")
    R = sites.dcs
    ids = {j.id for j in jobs}
    for j in decision.placements:
        if j not in ids:
            raise InvalidDecision(name, j, t, "placement for a job that is not active")
    y = np.zeros((len(jobs), R))
    s = np.zeros((len(jobs), R))
    q = np.zeros((len(jobs), R, R))
    for idx, job in enumerate(jobs):
        p = decision.placements.get(job.id)
        if p is None:
            raise InvalidDecision(name, job.id, t, "active job has no placement")
        w = np.asarray(p.workers)
        if w.shape != (R,):
            raise InvalidDecision(name, job.id, t, f"workers has shape {w.shape}, expected ({R},)")
        for r, val in enumerate(p.workers):
            if isinstance(val, bool) or int(val) != val or val < 0:
                raise InvalidDecision(
                    name, job.id, t, f"y={val!r} is not an integer >= 0 (8k)", machine=r
                )
        if isinstance(p.ps, bool) or int(p.ps) != p.ps or not 0 <= p.ps < R:
            raise InvalidDecision(name, job.id, t, f"PS site {p.ps!r} not in [0, {R}) (8f)")
        qq = np.asarray(p.transfers, dtype=float)
        if qq.shape != (R, R) or not np.all(np.isfinite(qq)):
            raise InvalidDecision(name, job.id, t, f"transfers must be finite ({R}, {R})")
        if np.any(qq < -_REL_TOL):
            r, r2 = np.argwhere(qq < -_REL_TOL)[0]
            raise InvalidDecision(
                name, job.id, t, f"q[{r},{r2}]={qq[r, r2]:.6g} < 0 (8k)", machine=int(r)
            )
        D = job.data_at(t)
        scale = max(1.0, float(D.sum()))
        out = qq.sum(axis=1)
        bad = np.abs(out - D) > _REL_TOL * scale
        if bad.any():
            r = int(np.argmax(bad))
            raise InvalidDecision(
                name,
                job.id,
                t,
                f"moves out of DC {r} sum to {out[r]:.6g} GB, data is {D[r]:.6g} GB (8b)",
                machine=r,
            )
        inflow = qq.sum(axis=0)
        over = inflow - job.capacity * w > _REL_TOL * scale
        if over.any():
            r = int(np.argmax(over))
            raise InvalidDecision(
                name,
                job.id,
                t,
                f"{inflow[r]:.6g} GB sent to DC {r} but {int(w[r])} workers "
                f"train {job.capacity * w[r]:.6g} GB (8a)",
                machine=r,
            )
        need = job.workers_needed(t)
        if w.sum() < need:
            raise InvalidDecision(
                name,
                job.id,
                t,
                f"{int(w.sum())} workers connect to the PS, need {need} = ceil(sum D / P) (8j)",
            )
        y[idx] = w
        s[idx, int(p.ps)] = 1.0
        q[idx] = np.maximum(qq, 0.0)
    return y, s, q


@register_engine("geo")
def simulate_geo(workload: GeoWorkload, scheduler: object, rng: np.random.Generator) -> RunResult:
    """Run ``scheduler`` on ``workload``; the engine validates and prices every slot."""
    name = type(scheduler).name  # type: ignore[attr-defined]
    sites = workload.sites
    T, R = workload.horizon, sites.dcs
    scheduler.reset(sites, T, rng)  # type: ignore[attr-defined]
    revealed: dict[int, GeoJob] = {}
    jobs_view = MappingProxyType(revealed)
    prev_v: dict[int, np.ndarray] = {}
    series = {k: np.zeros(T) for k in ("transfer", "resource", "deploy", "communication")}
    events: list[Event] = []
    workers = 0.0
    disc_used = disc_over = 0
    for t in range(T):
        active = workload.active(t)
        arrivals = tuple(j.id for j in active if j.arrival == t)
        for j in active:
            if j.arrival == t:
                revealed[j.id] = j
                events.append(Event(t, "arrive", j.id))
        view = GeoView(
            slot=t,
            horizon=T,
            sites=sites,
            active=tuple(j.id for j in active),
            arrivals=arrivals,
            jobs=jobs_view,
            data=MappingProxyType({j.id: _ro(j.data_at(t)) for j in active}),
            deployed=MappingProxyType({j.id: _ro(prev_v.get(j.id, np.zeros(R))) for j in active}),
        )
        decision = scheduler.decide(view)  # type: ignore[attr-defined]
        y, s, q = validate_geo(name, t, sites, active, decision)
        K = sites.kinds
        n = np.array([j.worker_demand for j in active], dtype=float).reshape(len(active), K)
        m = np.array([j.ps_demand for j in active], dtype=float).reshape(len(active), K)
        h = usage(y, s, n, m) if active else np.zeros((R, sites.kinds))
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
        for j in workload.jobs:
            if j.arrival + j.duration - 1 == t:
                events.append(Event(t, "complete", j.id))
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
    return RunResult(metrics=metrics, events=tuple(events), series=series)
