"""The ``interval``-setting engine (SMD paper, Sec. III): one scheduling interval, one state.

:class:`IntervalState` is the engine state of :mod:`dmlsched.sim.state`
with a single slot; :func:`simulate_interval` drives it.
:meth:`~IntervalState.reveal` shows the scheduler all of the interval's
jobs at once (copies made for it, :mod:`dmlsched.sim.boundary`);
:meth:`~IntervalState.accept` reads its one :class:`IntervalDecision` once
(:func:`read_decision`: an exact ``IntervalDecision``, each allocation a
``(w, p)`` tuple of exact positive integers (Eq. (8)), a job named twice
refused) and referees Eq. (3) per job and Eq. (2) over the admitted jobs
(:mod:`dmlsched.sim.interval_referee`), raising :class:`InvalidDecision`
(slot 0) naming scheduler, job and resource.  :meth:`~IntervalState.credit`
computes each admitted job's completion time E/f(p, w) with the engine's
*own* copy of the job's speed model (η from the job's layers, Eq. (4)/(5)),
or from the speed a testbed measured, and its utility μ_i.

Metrics: ``total_utility``; ``admitted_jobs``, ``rejected_jobs``;
``used_resource_ratio`` — Σ_admitted (O^r w + G^r p) ÷ Σ_admitted v^r per
resource, averaged over the resources with a positive admitted limit (0
when nothing is admitted); ``capacity_ratio`` — Σ_admitted v^r ÷ C^r
averaged over resources; ``mean_completion_time`` over admitted jobs (job
time units); ``mean_workers``, ``mean_ps``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dmlsched.errors import InvalidReport
from dmlsched.model.interval import IntervalDecision, IntervalJob, IntervalWorkload
from dmlsched.model.speed.smd import job_etas, speed
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
from dmlsched.sim.drive import drive, measured_items, within_bound
from dmlsched.sim.events import Event
from dmlsched.sim.interval_referee import IntervalPlan, referee
from dmlsched.sim.run import Progress, RunResult
from dmlsched.sim.state import Credited, one_slot

__all__ = ["Credited", "IntervalState", "read_decision", "simulate_interval"]

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


class IntervalState:
    """One ``interval`` run: a single slot (module docstring; :mod:`dmlsched.sim.state`).

    ``scheduler`` is the name refusals carry.  Besides the protocol:
    :meth:`reset_args` (what ``scheduler.reset`` takes before the rng: the
    capacity and the resources), :meth:`judge` (the referee's answer alone),
    :meth:`check_work`, :attr:`admitted_count` and :attr:`completed_count`.
    """

    horizon = 1

    def __init__(
        self, workload: IntervalWorkload, scheduler: str, *, record_events: bool = True
    ) -> None:
        self.name = scheduler
        self.record_events = record_events
        # the jobs are read as given (boundary module); the scheduler gets copies
        self._jobs = list(workload.jobs)
        self._by_id = {j.id: j for j in self._jobs}
        self.capacity = frozen_array(workload.capacity, float)
        self.resources = tuple(workload.resources)
        self._phase = "reveal"
        self._plan: IntervalPlan | None = None
        self._metrics: dict[str, float] = {}
        self._events: list[Event] = []

    @property
    def slot(self) -> int:
        return 0 if self._phase != "over" else 1

    @property
    def over(self) -> bool:
        return self._phase == "over"

    @property
    def admitted_count(self) -> int:
        return 0 if self._plan is None or not self.over else len(self._plan.allocations)

    @property
    def completed_count(self) -> int:
        return self.admitted_count

    def reset_args(self) -> tuple:
        """What ``scheduler.reset`` takes before the rng: (a copy of C^r, the resources)."""
        return frozen_array(self.capacity), self.resources

    def reveal(self) -> IntervalView:
        """Every job of the interval, as copies."""
        self._expect("reveal")
        self._phase = "accept"
        return IntervalView(
            jobs=tuple(private_copy(j) for j in self._jobs),
            capacity=frozen_array(self.capacity),
            resources=self.resources,
        )

    def judge(self, decision: object) -> IntervalPlan:
        """The referee's answer on ``decision``, without accepting it."""
        self._expect("accept")
        allocations = read_decision(self.name, decision, self._by_id)
        return referee(self.name, self._by_id, allocations, self.capacity, self.resources)

    def accept(self, decision: object) -> IntervalPlan:
        """Referee ``decision``; on a violation raise ``InvalidDecision`` with nothing
        changed, else keep its plan for :meth:`credit`."""
        self._plan = self.judge(decision)
        self._phase = "credit"
        return self._plan

    def check_work(
        self, work: object, *, elapsed: float = 1.0, source: str = "measured"
    ) -> dict[int, float]:
        """Measured ``work`` — job id → **training speed f, iterations per second**
        (Eq. (4)/(5)'s unit), measured over ``elapsed`` intervals — checked: each job is
        admitted, each speed a finite number > 0 and at most
        :data:`~dmlsched.sim.drive.MEASURED_SLACK` × the model's f(p, w).  Refusals are
        :class:`InvalidReport` naming ``source`` and the job."""
        self._expect("credit")
        plan = self._plan
        assert plan is not None
        out: dict[int, float] = {}
        for j, v in measured_items(source, 0, work):
            if j not in plan.allocations:
                raise InvalidReport(source, j, 0, "work for a job that is not admitted")
            job = self._by_id[j]
            w, p = plan.allocations[j]
            f = float(speed(job, w, p, job_etas(job)))
            amount = within_bound(source, j, 0, "iterations per second", v, f, 1.0)
            if amount == 0:
                raise InvalidReport(source, j, 0, "speed 0: an admitted job trains")
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
        """Complete every admitted job at E/f (f: the engine's Eq. (4)/(5), or the speed
        ``work`` measured, :meth:`check_work`; an admitted job missing from it trains at the
        model's f) and score its utility.  The :class:`Credited`: ``completed`` the admitted
        jobs (each completes at its own time), ``per_slot`` f (iterations per second)."""
        self._expect("credit")
        one_slot("the interval", 0, until)
        measured = None if work is None else self.check_work(work, elapsed=elapsed, source=source)
        plan = self._plan
        assert plan is not None
        utility = 0.0
        times: list[float] = []
        per_slot: dict[int, float] = {}
        for jid, (w, p) in plan.allocations.items():
            job = self._by_id[jid]
            f = speed(job, w, p, job_etas(job)) if measured is None else measured.get(jid)
            if f is None:
                f = speed(job, w, p, job_etas(job))
            per_slot[jid] = float(f)
            t = float(job.iterations / f / job.time_unit_s)  # E/f in the job's time unit
            u = float(job.utility(t))
            utility += u
            times.append(t)
            self._events.append(Event(0, "admit", jid, f"workers={w} ps={p}"))
            self._events.append(Event(0, "complete", jid, f"time={t:.6g} utility={u:.6g}"))
        self._events.extend(Event(0, "reject", j.id) for j in self._jobs if j.id not in per_slot)
        self._metrics = self._score(plan, utility, times)
        self._phase = "over"
        return Credited(1, tuple(plan.allocations), per_slot)

    def result(self) -> RunResult:
        """The interval's metrics (module docstring) and events."""
        events = tuple(self._events) if self.record_events else ()
        return RunResult(metrics=dict(self._metrics), events=events)

    def _score(self, plan: IntervalPlan, utility: float, times: list[float]) -> dict[str, float]:
        cap, limits, used = self.capacity, plan.limits, plan.used
        ws = [w for w, _ in plan.allocations.values()]
        ps = [p for _, p in plan.allocations.values()]
        pos = limits > 0
        n_adm = len(times)
        return {
            "total_utility": utility,
            "admitted_jobs": float(n_adm),
            "rejected_jobs": float(len(self._jobs) - n_adm),
            "used_resource_ratio": float(np.mean(used[pos] / limits[pos])) if pos.any() else 0.0,
            "capacity_ratio": float(
                np.mean(np.divide(limits, cap, out=np.zeros_like(cap), where=cap > 0))
            ),
            "mean_completion_time": float(np.mean(times)) if times else 0.0,
            "mean_workers": float(np.mean(ws)) if ws else 0.0,
            "mean_ps": float(np.mean(ps)) if ps else 0.0,
        }

    def _expect(self, phase: str) -> None:
        if self._phase != phase:
            raise RuntimeError(
                f"interval state: {phase} called, {self._phase} expected "
                "(the interval is reveal, accept, credit)"
            )


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
    state = IntervalState(workload, type(scheduler).name, record_events=record_events)
    return drive(state, scheduler, rng, progress)
