"""The ``geo``-setting engine (mlBroker, Sec. 3): one state over T slots, driven.

:class:`GeoState` is the engine state of :mod:`dmlsched.sim.state`;
:func:`simulate_geo` drives it with a registered scheduler, the testbed
(:func:`dmlsched.testbed.edge_geo.run_geo`) with measured progress.  Per slot t:

1. :meth:`~GeoState.reveal` — the jobs arriving at t are revealed; I_t =
   jobs with t_i ≤ t < t_i + duration; the scheduler gets a read-only
   :class:`GeoView` built from copies made for it
   (:mod:`dmlsched.sim.boundary`): the slot's data D_i^r(t) of the active
   jobs, and job copies whose ``data`` holds only the rows revealed so far,
   D_i(t_i) … D_i(t) — online: nothing of future slots, not even the job's
   lifetime;
2. :meth:`~GeoState.accept` — the :class:`~dmlsched.model.geo.GeoDecision`
   is read once (:func:`read_decision`: exact ``GeoDecision``/``GeoPlacement``
   types, exactly the active jobs, each named once; y_i^r(t) exact integers
   ≥ 0 (8k); one PS site, an exact integer in [0, R) (8f); q a finite
   numeric (R, R) array — NaN, inf, ``None`` or a wrong type is an
   ``InvalidDecision``, never a raw ``TypeError``) and refereed against
   (8a), (8b), (8j), (8k) (:mod:`dmlsched.sim.geo_referee`).  A violation
   raises ``InvalidDecision`` and leaves the state as it was;
3. :meth:`~GeoState.credit` — the engine computes the four costs itself,
   from its own copies of the sites and the jobs made at the start of the
   run: C_1 Eq. (1) from q, C_2 Eq. (3) with the piecewise F_k^r of Eq. (2)
   on the usage h_k^r (the optimum of (8c)–(8e)), C_3 Eq. (5) with
   v = 1[y + s > 0] (8g) and z = max(v(t) − v(t−1), 0) (8h), C_4 Eq. (6)
   with g = y ⊗ s ((8i) holds with equality).  The model trains all the
   data the decision moved ((8a)–(8b)); measured work — the GB a testbed's
   workers trained — may fall short, and what is left stays where it was
   sent: it is added to the job's data there in the next slot (shown in
   ``view.data``, to be moved and trained again, (8b) and (8j) on the sum),
   and counted in :attr:`GeoState.unprocessed` if the job's lifetime ends.

Metrics: ``total_cost``, ``cost_transfer``, ``cost_resource``,
``cost_deploy``, ``cost_communication``, plus ``workers`` (worker-slots) and
``discounted_share`` (share of (r, k, t) with usage above l_k^r among used
ones).  Series: the four costs and the total per slot.

Event-driven time does not apply here: every slot reveals new data
D_i^r(t), which the decision must route exactly ((8b) is an equality) and
size workers for ((8j)), so no decision can hold into the next slot.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from dmlsched.errors import InvalidReport
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
from dmlsched.sim.drive import drive, measured_amount, measured_items
from dmlsched.sim.events import Event
from dmlsched.sim.geo_referee import REL_TOL, GeoPlan, Placed, referee
from dmlsched.sim.run import Progress, RunResult
from dmlsched.sim.state import Credited, one_slot

__all__ = ["Credited", "GeoState", "read_decision", "revealed", "simulate_geo"]

_MAX_COUNT = 2**31  # larger worker counts are refused outright


def revealed(job: GeoJob, t: int) -> GeoJob:
    """A copy of ``job`` for a view at slot t: ``data`` holds rows t_i … t only."""
    return copy_with(job, data=job.data[: t - job.arrival + 1])


def read_decision(
    sched: str, t: int, decision: object, active: list[int], R: int
) -> dict[int, Placed]:
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
        out[j] = Placed(w, ps, np.array(q, dtype=float))
    return out


class GeoState:
    """One ``geo`` run (module docstring; the protocol of :mod:`dmlsched.sim.state`).

    ``scheduler`` is the name refusals carry.  Besides the protocol:
    :meth:`reset_args` (what ``scheduler.reset`` takes before the rng:
    :attr:`shown_sites` and T), :meth:`judge` (the referee's answer alone),
    :meth:`check_work`, :attr:`active`, :attr:`backlog`, :attr:`unprocessed`,
    :attr:`admitted_count` (jobs arrived) and :attr:`completed_count` (jobs
    whose lifetime ended).
    """

    def __init__(self, workload: GeoWorkload, scheduler: str, *, record_events: bool = True):
        self.name = scheduler
        self.record_events = record_events
        # The engine's own copy of the sites; the jobs are read as given (boundary module)
        self.sites = private_copy(workload.sites)
        self._all = list(workload.jobs)
        self._by_arrival = sorted(self._all, key=lambda j: (j.arrival, j.id))
        self.horizon, self._R, self._K = workload.horizon, self.sites.dcs, self.sites.kinds
        self.shown_sites = private_copy(self.sites)
        self._shown_jobs: dict[int, GeoJob] = {}  # the scheduler's copies; never read here
        self._jobs_view = MappingProxyType(self._shown_jobs)
        self._t = 0
        self._phase = "reveal"
        self._active: list[GeoJob] = []  # I_t, by arrival then id
        self._data: list[np.ndarray] = []  # D_i^r(t) the engine holds, by job of I_t
        self._prev_v: dict[int, np.ndarray] = {}
        self._backlog: dict[int, np.ndarray] = {}  # GB left untrained per DC (measured work)
        self._unprocessed: dict[int, float] = {}
        self._plan: GeoPlan | None = None
        self._series = {
            k: np.zeros(self.horizon) for k in ("transfer", "resource", "deploy", "communication")
        }
        self._events: list[Event] = []
        self._workers = 0.0
        self._disc_used = self._disc_over = 0

    # ---------------------------------------------------------------- protocol

    @property
    def slot(self) -> int:
        return self._t

    @property
    def over(self) -> bool:
        return self._t >= self.horizon

    @property
    def admitted_count(self) -> int:
        """Jobs arrived before :attr:`slot`."""
        return sum(1 for j in self._all if j.arrival < self._t)

    @property
    def completed_count(self) -> int:
        """Jobs whose lifetime ended before :attr:`slot`."""
        return sum(1 for j in self._all if j.arrival + j.duration <= self._t)

    @property
    def active(self) -> tuple[int, ...]:
        """I_t of the slot revealed last."""
        return tuple(j.id for j in self._active)

    @property
    def backlog(self) -> dict[int, np.ndarray]:
        """GB per DC each job has left untrained so far (measured work only)."""
        return {j: b.copy() for j, b in self._backlog.items()}

    @property
    def unprocessed(self) -> dict[int, float]:
        """GB each job had left untrained when its lifetime ended (measured work only)."""
        return dict(self._unprocessed)

    def reset_args(self) -> tuple:
        """What ``scheduler.reset`` takes before the rng: (a copy of the sites, T)."""
        return self.shown_sites, self.horizon

    def reveal(self) -> GeoView:
        """Reveal the jobs arriving at :attr:`slot` and return the scheduler's view."""
        self._expect("reveal")
        t, R = self._t, self._R
        active = self._active = [j for j in self._by_arrival if j.active(t)]
        self._data = []
        for j in active:
            self._shown_jobs[j.id] = revealed(j, t)
            D = j.data_at(t)
            left = self._backlog.get(j.id)
            self._data.append(D if left is None else D + left)
            if j.arrival == t:
                self._events.append(Event(t, "arrive", j.id))
        self._phase = "accept"
        return GeoView(
            slot=t,
            horizon=self.horizon,
            sites=self.shown_sites,
            active=tuple(j.id for j in active),
            arrivals=tuple(j.id for j in active if j.arrival == t),
            jobs=self._jobs_view,
            data=MappingProxyType(
                {j.id: frozen_array(D) for j, D in zip(active, self._data, strict=True)}
            ),
            deployed=MappingProxyType(
                {j.id: frozen_array(self._prev_v.get(j.id, np.zeros(R))) for j in active}
            ),
        )

    def accept(self, decision: object) -> GeoPlan:
        """Referee ``decision`` (:mod:`~dmlsched.sim.geo_referee`); on a violation raise
        ``InvalidDecision`` with nothing changed, else keep its plan for :meth:`credit`."""
        plan = self.judge(decision)
        t = self._t
        for k, j in enumerate(plan.jobs):
            self._events.append(
                Event(
                    t,
                    "place",
                    j.id,
                    f"workers={int(plan.y[k].sum())} dcs={int((plan.y[k] > 0).sum())} "
                    f"ps={int(np.argmax(plan.s[k]))}",
                )
            )
        self._plan = plan
        self._phase = "credit"
        return plan

    def judge(self, decision: object) -> GeoPlan:
        """The referee's answer on ``decision`` at this slot, without accepting it."""
        self._expect("accept")
        t, ids = self._t, [j.id for j in self._active]
        placed = read_decision(self.name, t, decision, ids, self._R)
        return referee(self.name, t, self._active, self._data, placed, self._R)

    def check_work(
        self, work: object, *, elapsed: float = 1.0, source: str = "measured"
    ) -> dict[int, float]:
        """Measured ``work`` — job id → **GB of its data its workers trained** in the slot
        (in ``elapsed`` slots: the data is the slot's either way) — checked: each job is
        active, each amount a finite number ≥ 0 and at most the data the decision moved
        to its workers, Σ_{r,r'} q^{rr'} (all there was, (8a)–(8b)).  Refusals are
        :class:`InvalidReport` naming ``source``, the job and the slot."""
        self._expect("credit")
        plan, t = self._plan, self._t
        assert plan is not None
        row = {j: k for k, j in enumerate(plan.ids)}
        out: dict[int, float] = {}
        for j, v in measured_items(source, t, work):
            if j not in row:
                raise InvalidReport(source, j, t, "work for a job that is not active")
            amount = measured_amount(source, j, t, "GB trained", v)
            moved = float(plan.q[row[j]].sum())
            if amount > moved + REL_TOL * max(1.0, moved):
                raise InvalidReport(
                    source, j, t, f"{amount:g} GB trained > the {moved:g} GB moved to its workers"
                )
            out[j] = amount
        return out

    def credit(
        self,
        work: Mapping[int, float] | None = None,
        *,
        until: int | None = None,
        elapsed: float = 1.0,
        source: str = "measured",
    ) -> Credited:
        """End the slot: price it (module docstring) and train all the data moved, or the
        GB ``work`` says (:meth:`check_work`; a job missing from it trained nothing).
        ``until`` may only be the next slot.  The :class:`Credited`: ``completed`` the jobs
        whose lifetime ended with the slot, ``per_slot`` GB trained by active job."""
        self._expect("credit")
        t, plan = self._t, self._plan
        assert plan is not None
        one_slot("a geo decision", t, until)
        trained = None if work is None else self.check_work(work, elapsed=elapsed, source=source)
        self._price(plan)
        moved = {j: float(plan.q[k].sum()) for k, j in enumerate(plan.ids)}
        if trained is not None:
            self._keep_untrained(plan, trained)
        ended = tuple(j.id for j in self._all if j.arrival + j.duration - 1 == t)
        self._events.extend(Event(t, "complete", j) for j in ended)
        self._plan = None
        self._t += 1
        self._phase = "reveal"
        return Credited(1, ended, moved if trained is None else trained)

    def result(self) -> RunResult:
        """The run's metrics (module docstring), events and per-slot costs."""
        series = {k: v.copy() for k, v in self._series.items()}
        parts = {k: float(v.sum()) for k, v in series.items()}
        metrics = {
            "total_cost": sum(parts.values()),
            "cost_transfer": parts["transfer"],
            "cost_resource": parts["resource"],
            "cost_deploy": parts["deploy"],
            "cost_communication": parts["communication"],
            "workers": self._workers,
            "discounted_share": self._disc_over / self._disc_used if self._disc_used else 0.0,
        }
        series["total"] = (  # the same sum (from 0) as sum() over the four parts
            0.0 + series["transfer"] + series["resource"] + series["deploy"]
        ) + series["communication"]
        events = tuple(self._events) if self.record_events else ()
        return RunResult(metrics=metrics, events=events, series=series)

    # ---------------------------------------------------------------- inside

    def _expect(self, phase: str) -> None:
        if self._phase != phase:
            raise RuntimeError(
                f"geo state at slot {self._t}: {phase} called, {self._phase} expected "
                "(each slot is reveal, accept, credit)"
            )
        if phase == "reveal" and self.over:
            raise RuntimeError(f"geo state: the run is over (slot {self._t})")

    def _price(self, plan: GeoPlan) -> None:
        """C_1–C_4 of the slot (Eqs. (1)–(6)) and the usage counts."""
        t, R, K, sites = self._t, self._R, self._K, self.sites
        jobs, y, s, q = plan.jobs, plan.y, plan.s, plan.q
        n_jobs = len(jobs)
        n = np.array([j.worker_demand for j in jobs], dtype=float).reshape(n_jobs, K)
        m = np.array([j.ps_demand for j in jobs], dtype=float).reshape(n_jobs, K)
        h = usage(y, s, n, m) if jobs else np.zeros((R, K))
        v = deployed(y, s)
        prev = self._prev_v
        v_prev = np.array([prev.get(j.id, np.zeros(R)) for j in jobs]).reshape(n_jobs, R)
        c = np.array([j.deploy_cost for j in jobs])
        B = np.array([j.exchange_gb for j in jobs])
        series = self._series
        series["transfer"][t] = transfer_cost(q, sites.d)
        series["resource"][t] = resource_cost(h, sites)
        series["deploy"][t] = deploy_cost(v_prev, v, c)
        series["communication"][t] = communication_cost(connections(y, s), sites.d, B)
        self._prev_v = {j.id: v[k] for k, j in enumerate(jobs)}
        self._workers += float(y.sum())
        self._disc_used += int((h > 0).sum())
        self._disc_over += int((h > sites.l).sum())

    def _keep_untrained(self, plan: GeoPlan, trained: Mapping[int, float]) -> None:
        """What the workers did not train stays where it was sent, in proportion."""
        t = self._t
        for k, job in enumerate(plan.jobs):
            inflow = plan.q[k].sum(axis=0)
            moved = float(inflow.sum())
            left = moved - trained.get(job.id, 0.0)
            if left <= REL_TOL * max(1.0, moved):
                self._backlog.pop(job.id, None)
            elif job.active(t + 1):
                self._backlog[job.id] = inflow * (left / moved)
            else:
                self._backlog.pop(job.id, None)
                self._unprocessed[job.id] = self._unprocessed.get(job.id, 0.0) + left


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
    name = type(scheduler).name  # type: ignore[attr-defined]  # every registered scheduler class has a name (the registry's contract)
    return drive(GeoState(workload, name, record_events=record_events), scheduler, rng, progress)
