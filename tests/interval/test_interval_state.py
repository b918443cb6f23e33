"""The ``interval`` engine state: the referee's answer from every driver; measured speeds.

A decision breaking each constraint (Eq. (2), (3), (8)) is refused alike by
``simulate`` and by a driver written here (:mod:`tests.sim.stepwise`),
reaching every refusal of the referee; a refused decision leaves the state
as it was; a measured training speed replaces Eq. (4)/(5)'s and is refused
where impossible.  (The cheat catalogue for every state:
:mod:`tests.sim.test_states_stepwise`.)
"""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dmlsched.sim.interval_referee as interval_referee
from dmlsched.checks.replay import result_bytes
from dmlsched.checks.tiny import run_rng
from dmlsched.errors import InvalidDecision, InvalidReport
from dmlsched.model.interval import IntervalDecision
from dmlsched.model.speed.smd import completion_time, job_etas, speed
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.drive import MEASURED_SLACK
from dmlsched.sim.engine import simulate
from dmlsched.sim.interval import IntervalState
from dmlsched.workloads.interval import synthetic_interval
from tests.interval.test_engine_interval import WL, Fixed
from tests.sim.stepwise import engine_snapshot, stepwise

RNG = np.random.default_rng(0)
J0 = WL.jobs[0].id
TIGHT = synthetic_interval(60, 0.2, np.random.default_rng(1))

# (name, workload, allocations, what the refusal says)
CONSTRAINTS = [
    ("user-limit-eq3", WL, {J0: (10**6, 1)}, r"Eq\. 3"),
    ("capacity-eq2", TIGHT, {j.id: (1, 1) for j in TIGHT.jobs}, r"Eq\. 2"),
    ("zero-workers-eq8", WL, {J0: (0, 1)}, "positive integer"),
    ("zero-ps-eq8", WL, {J0: (1, 0)}, "positive integer"),
    ("float-count-eq8", WL, {J0: (1.0, 1)}, "positive integer"),
    ("bool-count-eq8", WL, {J0: (True, 1)}, "positive integer"),
    ("unknown-job", WL, {999: (1, 1)}, "unknown job"),
    ("not-a-pair", WL, {J0: (1,)}, "not a tuple"),
]


@pytest.mark.parametrize(
    ("wl", "alloc", "match"), [c[1:] for c in CONSTRAINTS], ids=[c[0] for c in CONSTRAINTS]
)
def test_each_constraint_is_refused_alike_by_simulate_and_by_the_state_step_by_step(
    wl: Any, alloc: dict, match: str
) -> None:
    sched = Fixed(IntervalDecision(alloc))
    with pytest.raises(InvalidDecision, match=match) as a:
        simulate("interval", wl, sched, RNG)
    with pytest.raises(InvalidDecision, match=match) as b:
        stepwise("interval", wl, sched, RNG)
    assert str(a.value) == str(b.value) and a.value.scheduler == "fixed"


def test_the_constraint_catalogue_reaches_every_refusal_of_the_referee() -> None:
    path = interval_referee.__file__
    with open(path) as f:
        calls = {n for n, line in enumerate(f, 1) if "refuse(" in line and "import" not in line}
    reached = set()
    for _, wl, alloc, _ in CONSTRAINTS:
        with pytest.raises(InvalidDecision) as e:
            simulate("interval", wl, Fixed(IntervalDecision(alloc)), RNG)
        frames = traceback.extract_tb(e.value.__traceback__)
        reached |= {fr.lineno for fr in frames if fr.filename == path and "refuse(" in fr.line}
    assert reached == calls


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.integers(0, 7), st.tuples(st.integers(-1, 40), st.integers(-1, 40)), max_size=6
    )
)
def test_a_refused_interval_decision_changes_nothing_and_a_valid_one_is_taken(alloc) -> None:
    state = IntervalState(WL, "fixed")
    state.reveal()
    before = engine_snapshot(state)
    try:
        judged = state.judge(IntervalDecision(alloc))
    except InvalidDecision as e:
        with pytest.raises(InvalidDecision) as again:
            state.accept(IntervalDecision(alloc))
        assert str(again.value) == str(e) and engine_snapshot(state) == before
        state.accept(IntervalDecision({}))
    else:
        assert dict(state.accept(IntervalDecision(alloc)).allocations) == dict(judged.allocations)
    state.credit()
    assert state.over and state.slot == 1


# ---------------------------------------------------------------- measured speeds


def _model_speed(state: IntervalState, plan: Any) -> dict[int, float]:
    jobs = {j.id: j for j in WL.jobs}
    return {
        j: float(speed(jobs[j], w, p, job_etas(jobs[j]))) for j, (w, p) in plan.allocations.items()
    }


@pytest.mark.parametrize("name", ["esw", "smd"])
def test_measured_speeds_equal_to_the_models_give_its_bytes(name: str) -> None:
    a = simulate("interval", WL, make_scheduler("interval", name), run_rng())
    b = stepwise("interval", WL, make_scheduler("interval", name), run_rng(), _model_speed)
    assert result_bytes(a) == result_bytes(b)


def test_a_job_measured_at_half_speed_completes_twice_as_late() -> None:
    job = WL.jobs[0]
    state = IntervalState(WL, "fixed")
    state.reveal()
    state.accept(IntervalDecision({job.id: (2, 1)}))
    f = float(speed(job, 2, 1, job_etas(job)))
    assert state.credit({job.id: f / 2}).per_slot == {job.id: f / 2}
    m = state.result().metrics
    assert m["mean_completion_time"] == pytest.approx(2 * float(completion_time(job, 2, 1)))
    assert m["total_utility"] == pytest.approx(job.utility(m["mean_completion_time"]))


@pytest.mark.parametrize(
    ("scale", "key", "match"),
    [
        (float("nan"), None, "not a finite number"),
        (-1.0, None, "not a finite number"),
        (0.0, None, "speed 0"),
        (MEASURED_SLACK * 1.01, None, "can do"),
        (1.0, 999, "not admitted"),
    ],
    ids=["nan", "negative", "zero", "too-fast", "not-admitted"],
)
def test_impossible_measured_speeds_are_refused_and_nothing_is_credited(scale, key, match):
    job = WL.jobs[0]
    state = IntervalState(WL, "fixed")
    state.reveal()
    state.accept(IntervalDecision({job.id: (2, 1)}))
    f = float(speed(job, 2, 1, job_etas(job)))
    before = engine_snapshot(state)
    with pytest.raises(InvalidReport, match=match) as e:
        state.credit({job.id if key is None else key: f * scale}, source="testbed")
    assert e.value.source == "testbed" and engine_snapshot(state) == before
    state.credit({job.id: f})
    assert state.result().metrics["admitted_jobs"] == 1.0
