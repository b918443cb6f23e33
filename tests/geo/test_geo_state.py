"""The ``geo`` engine state: every driver gets the referee's answer; measured work feeds back.

A placement breaking each constraint is refused alike by ``simulate`` and
by a driver written here (:mod:`tests.sim.stepwise`), and the catalogue
reaches every refusal of the referee; any accepted placement keeps (8a),
(8b), (8j), (8k) and a refused one leaves the state as it was; measured GB
trained below what was moved stays where it was sent and is shown and
routed again in the next slot.  (The cheat catalogue for every state:
:mod:`tests.sim.test_states_stepwise`.)
"""

from __future__ import annotations

import math
import traceback
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dmlsched.sim.geo_referee as geo_referee
from dmlsched.checks.replay import result_bytes
from dmlsched.checks.tiny import run_rng, tiny
from dmlsched.errors import InvalidDecision, InvalidReport
from dmlsched.model.geo import GeoDecision, GeoJob, GeoPlacement, GeoWorkload
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.sim.geo import GeoState
from dmlsched.workloads.registry import WorkloadParams, build_workload
from tests.geo.random_geo import RandomGeo
from tests.geo.test_engine import Fixed, central0, sites, workload
from tests.sim.stepwise import engine_snapshot, stepwise

RNG = make_rng(0)


def _one(data: list[list[float]], capacity: float = 20.0, horizon: int | None = None) -> Any:
    job = GeoJob(
        id=0,
        arrival=0,
        data=data,
        capacity=capacity,
        worker_demand=(1.0,),
        ps_demand=(0.5,),
        exchange_gb=2.0,
        deploy_cost=0.3,
    )
    return GeoWorkload(sites(), (job,), horizon=horizon or len(data))


def _diag(D: np.ndarray) -> np.ndarray:
    return np.diag(np.asarray(D, dtype=float))


class Ghost(Fixed):
    def decide(self, view: Any) -> GeoDecision:
        return GeoDecision({7: central0(np.zeros(2))})


class Empty(Fixed):
    def decide(self, view: Any) -> GeoDecision:
        return GeoDecision({})


# (name, workload, scheduler, what the refusal says) — every refusal of the referee, and the
# reader's for y, the PS site (8f) and q
CONSTRAINTS = [
    (
        "negative-q-8k",
        workload,
        Fixed(lambda D: GeoPlacement((2, 1), 0, np.array([[D[0] + 5, -5], [0, D[1]]]))),
        r"< 0 \(8k\)",
    ),
    ("unmoved-8b", workload, Fixed(lambda D: GeoPlacement((2, 0), 0, np.zeros((2, 2)))), "8b"),
    (
        "capacity-8a",
        workload,
        Fixed(lambda D: GeoPlacement((1, 0), 0, np.array([[D[0], 0], [D[1], 0]]))),
        r"\(8a\)",
    ),
    (  # (8a) and (8b) hold within their tolerance, ⌈Σ D / P⌉ = 3 > 2 workers
        "workers-8j",
        lambda: _one([[1.0 + 5e-7, 1.0 + 5e-7]], capacity=1.0),
        Fixed(lambda D: GeoPlacement((1, 1), 0, _diag(D))),
        r"\(8j\)",
    ),
    ("ps-site-8f", workload, Fixed(lambda D: GeoPlacement((2, 0), 2, _diag(D))), r"\(8f\)"),
    ("fractional-y-8k", workload, Fixed(lambda D: GeoPlacement((1.5, 1), 0, _diag(D))), "8k"),
    ("negative-y-8k", workload, Fixed(lambda D: GeoPlacement((-1, 3), 0, _diag(D))), "8k"),
    ("y-length", workload, Fixed(lambda D: GeoPlacement((2,), 0, _diag(D))), "shape"),
    ("q-shape", workload, Fixed(lambda D: GeoPlacement((2, 1), 0, np.zeros((2, 3)))), "(2, 2)"),
    ("unknown-job", workload, Ghost(None), "not active"),
    ("missing-job", workload, Empty(None), "no placement"),
]


@pytest.mark.parametrize(
    ("build", "sched", "match"), [c[1:] for c in CONSTRAINTS], ids=[c[0] for c in CONSTRAINTS]
)
def test_each_constraint_is_refused_alike_by_simulate_and_by_the_state_step_by_step(
    build: Any, sched: Any, match: str
) -> None:
    with pytest.raises(InvalidDecision, match=match) as a:
        simulate("geo", build(), sched, RNG)
    with pytest.raises(InvalidDecision, match=match) as b:
        stepwise("geo", build(), sched, RNG)
    assert str(a.value) == str(b.value) and a.value.scheduler == "fixed" and a.value.slot == 0


def test_the_constraint_catalogue_reaches_every_refusal_of_the_referee() -> None:
    path = geo_referee.__file__
    with open(path) as f:
        calls = {n for n, line in enumerate(f, 1) if "refuse(" in line and "import" not in line}
    reached = set()
    for _, build, sched, _ in CONSTRAINTS:
        with pytest.raises(InvalidDecision) as e:
            simulate("geo", build(), sched, RNG)
        frames = traceback.extract_tb(e.value.__traceback__)
        reached |= {fr.lineno for fr in frames if fr.filename == path and "refuse(" in fr.line}
    assert reached == calls


# ---------------------------------------------------------------- random placements


def _keeps_8a_8b_8j_8k(job: GeoJob, D: np.ndarray, p: GeoPlacement) -> bool:
    """The constraints read literally, DC by DC (the referee's tolerance)."""
    R = len(D)
    q, y = np.asarray(p.transfers), p.workers
    if q.shape != (R, R) or len(y) != R or not 0 <= p.ps < R:
        return False
    if any(type(w) is not int or w < 0 for w in y):
        return False
    tol = 1e-6 * max(1.0, float(sum(D)))
    for r in range(R):
        if any(q[r, r2] < -1e-6 for r2 in range(R)):
            return False  # (8k)
        if abs(sum(q[r, r2] for r2 in range(R)) - D[r]) > tol:
            return False  # (8b)
        if sum(q[r2, r] for r2 in range(R)) - job.capacity * y[r] > tol:
            return False  # (8a)
    return sum(y) >= (max(1, math.ceil(sum(D) / job.capacity - 1e-9)) if sum(D) > 0 else 0)


def _geo_workload(seed: int) -> GeoWorkload:
    wl_rng, _ = spawn(make_rng(seed), 2)
    return build_workload("geo", "synthetic", WorkloadParams(jobs=5, machines=3, slots=8), wl_rng)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    p_bad=st.sampled_from([0.0, 0.2, 0.6]),
    wl_seed=st.integers(1, 4),
)
def test_accepted_placements_keep_the_constraints_and_refused_ones_change_nothing(
    seed: int, p_bad: float, wl_seed: int
) -> None:
    wl = _geo_workload(wl_seed)
    jobs = {j.id: j for j in wl.jobs}
    sched = RandomGeo(seed, p_bad)
    state = GeoState(wl, sched.name)
    sched.reset(*state.reset_args(), run_rng())
    while not state.over:
        view = state.reveal()
        d = sched.decide(view)
        before = engine_snapshot(state)
        literal = set(view.active) == set(d.placements) and all(
            _keeps_8a_8b_8j_8k(jobs[j], np.asarray(view.data[j]), p)
            for j, p in d.placements.items()
        )
        try:
            state.accept(d)
        except InvalidDecision:
            assert not literal
            assert engine_snapshot(state) == before
            state.accept(sched.valid(view))
        else:
            assert literal
        state.credit()


# ---------------------------------------------------------------- measured work


def _moved(state: GeoState, plan: Any) -> dict[int, float]:
    return {j: float(plan.q[k].sum()) for k, j in enumerate(plan.ids)}


@pytest.mark.parametrize("name", ["local", "central", "mlbroker"])
def test_measured_work_equal_to_what_was_moved_gives_the_models_bytes(name: str) -> None:
    wl = tiny("geo", 2)
    a = simulate("geo", wl, make_scheduler("geo", name), run_rng())
    b = stepwise("geo", wl, make_scheduler("geo", name), run_rng(), _moved)
    assert result_bytes(a) == result_bytes(b)


class Sizing:
    """Central at DC 0 with ⌈Σ D / P⌉ workers there; records what it was shown."""

    name: ClassVar[str] = "sizing"
    setting: ClassVar[str] = "geo"

    def reset(self, sites: Any, horizon: int, rng: Any) -> None:
        self.seen: list[list[float]] = []

    def decide(self, view: Any) -> GeoDecision:
        out = {}
        for j in view.active:
            D = np.asarray(view.data[j])
            self.seen.append(D.tolist())
            q = np.zeros((2, 2))
            q[:, 0] = D
            out[j] = GeoPlacement((math.ceil(D.sum() / view.jobs[j].capacity), 0), 0, q)
        return GeoDecision(out)


def test_untrained_data_stays_where_it_was_sent_and_is_routed_again_next_slot() -> None:
    wl = workload()  # D(0) = (30, 10), D(1) = (20, 20), P = 20
    sched = Sizing()
    state = GeoState(wl, sched.name)
    sched.reset(*state.reset_args(), None)
    state.accept(sched.decide(state.reveal()))  # 40 GB to DC 0, 2 workers
    assert state.credit({0: 25.0}).per_slot == {0: 25.0}
    assert state.backlog[0].tolist() == [15.0, 0.0]
    state.accept(sched.decide(state.reveal()))  # (20 + 15, 20): 55 GB, 3 workers
    assert sched.seen == [[30.0, 10.0], [35.0, 20.0]]
    state.credit({0: 50.0})  # the job's last slot: 5 GB never trained
    assert state.unprocessed == {0: 5.0} and state.backlog == {}
    m = state.result().metrics
    assert m["workers"] == 5.0 and m["cost_transfer"] == pytest.approx(0.1 * (10 + 20))


def test_a_scheduler_that_ignores_the_backlog_is_refused() -> None:
    wl = workload()
    state = GeoState(wl, "fixed")
    fixed = Fixed(central0)  # always 2 workers at DC 0
    state.accept(fixed.decide(state.reveal()))
    state.credit({0: 20.0})  # 20 of 40 GB left at DC 0
    with pytest.raises(InvalidDecision, match=r"\(8a\)"):
        state.accept(fixed.decide(state.reveal()))  # 60 GB for 2 workers of 20


@pytest.mark.parametrize(
    ("work", "match"),
    [
        ({0: float("nan")}, "not a finite number"),
        ({0: -1.0}, "not a finite number"),
        ({0: True}, "not a finite number"),
        ({1: 1.0}, "not active"),
        ({0: 40.1}, "moved to its workers"),
        ([(0, 1.0)], "not a mapping"),
    ],
    ids=["nan", "negative", "bool", "inactive", "more-than-moved", "list"],
)
def test_impossible_measured_work_is_refused_and_nothing_is_credited(work: Any, match: str):
    state = GeoState(workload(), "fixed")
    state.accept(Fixed(central0).decide(state.reveal()))
    before = engine_snapshot(state)
    with pytest.raises(InvalidReport, match=match) as e:
        state.credit(work, source="testbed")
    assert e.value.source == "testbed" and e.value.slot == 0
    assert engine_snapshot(state) == before
    assert state.credit({0: 40.0}).slots == 1
