"""The ``edge-cloud`` engine state: every driver gets the referee's answer.

A decision breaking each constraint is refused alike by ``simulate`` and by
a driver written here (:mod:`tests.sim.stepwise`), and the catalogue
reaches every refusal of the referee; the fast run check accepts exactly
what the referee accepts, with the same plan; measured work is credited in
n_j's unit and refused where impossible.  (The cheat catalogue and atomic
refusals, for every state: :mod:`tests.sim.test_states_stepwise`.)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dmlsched.checks.replay import result_bytes
from dmlsched.checks.tiny import run_rng, tiny
from dmlsched.errors import InvalidDecision, InvalidReport
from dmlsched.model.edge_cloud import EdgeCloud, EdgeCloudWorkload
from dmlsched.model.edge_cloud import EdgeCloudDecision as Dec
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.drive import MEASURED_SLACK
from dmlsched.sim.edge_cloud import EdgeCloudState
from dmlsched.sim.edge_cloud_referee import Plan
from dmlsched.sim.engine import simulate
from dmlsched.workloads.registry import WorkloadParams, build_workload
from tests.edge_cloud_helpers import RandomEdge, Scripted, ec_job, workload
from tests.sim.stepwise import engine_snapshot, stepwise

EDGE = ("a-online", "a-online+", "a-online-edge", "batchsche", "srtf", "tiresias-l")
RNG = np.random.default_rng(0)


def _outcome(fn: Any) -> Any:
    try:
        return "ran", result_bytes(fn())
    except InvalidDecision as e:
        return "refused", str(e)


# ---------------------------------------------------------------- one decision per constraint


def _two() -> EdgeCloudWorkload:
    return workload((ec_job(0), ec_job(1)), EdgeCloud(((0, 0),), ((0, 0),), 2))


def _typed() -> EdgeCloudWorkload:  # worker 1 and PS 1 of type 1; job 0 needs type 0
    return workload((ec_job(0, delay=(1, 1)),), EdgeCloud(((0, 1),), ((0, 1),), 2))


def _stored() -> EdgeCloudWorkload:
    jobs = (ec_job(0, chunk_gb=2.0, minibatches=1), ec_job(1, chunk_gb=2.0, minibatches=1))
    return workload(jobs, EdgeCloud(((0, 0),), ((0, 0),), 2, storage=(3.0,)))


def _late() -> EdgeCloudWorkload:
    return workload((ec_job(0), ec_job(1, arrival=3)), EdgeCloud(((0, 0),), ((0, 0),), 2))


RUN0 = Dec(run={0: (0,)}, ps={0: (0, 0)})
DISPATCHED = {0: Dec(dispatch={0: ((0, 0),)})}
# (name, workload, script, what the refusal says) — one entry per refusal of the referee
CONSTRAINTS = [
    ("dispatch-not-arrived", _late, {0: Dec(dispatch={1: ((0, 0),)})}, "not arrived"),
    ("dispatch-twice", _two, {**DISPATCHED, 1: Dec(dispatch={0: ((0, 1),)})}, "already"),
    ("dispatch-D_j", _two, {0: Dec(dispatch={0: ((0, 0), (0, 0))})}, "D_j"),
    ("dispatch-bad-server", _two, {0: Dec(dispatch={0: ((5, 0),)})}, "bad placement"),
    ("dispatch-no-worker", _two, {0: Dec(dispatch={0: ((0, 5),)})}, "no worker 5"),
    ("dispatch-type-2a", _typed, {0: Dec(dispatch={0: ((0, 1),)})}, r"\(2a\)"),
    ("storage-7b", _stored, {0: Dec(dispatch={0: ((0, 0),), 1: ((0, 1),)})}, r"\(7b\)"),
    ("run-finished", _stored, {**DISPATCHED, 1: RUN0, 2: RUN0}, "finished"),
    ("run-not-dispatched", _two, {0: RUN0}, "not dispatched"),
    (
        "run-index",
        _two,
        {**DISPATCHED, 1: Dec(run={0: (1,)}, ps={0: (0, 0)})},
        "out of",
    ),
    ("run-twice-2c", _two, {**DISPATCHED, 1: Dec(run={0: (0, 0)}, ps={0: (0, 0)})}, r"\(2c\)"),
    (
        "run-trained",
        lambda: workload((ec_job(0, chunks=2, minibatches=1),)),
        {0: Dec(dispatch={0: ((0, 0), (0, 0))}), 1: RUN0, 2: RUN0},
        "already trained",
    ),
    ("run-early-2i", _two, {0: Dec(dispatch={0: ((0, 0),)}, run={0: (0,)}, ps={0: (0, 0)})}, "2i"),
    (
        "worker-twice-2d",
        _two,
        {
            0: Dec(dispatch={0: ((0, 0),), 1: ((0, 0),)}),
            1: Dec(run={0: (0,), 1: (0,)}, ps={0: (0, 0), 1: (0, 1)}),
        },
        r"\(2d\)",
    ),
    (
        "cloud-preempted",
        lambda: workload((ec_job(delay=(1, 1)),)),
        {0: Dec(dispatch={0: ((1, 0),)}), 1: Dec(run={0: (0,)}, ps={0: (1, 0)})},
        "no preemption in the cloud",
    ),
    ("ps-missing-2e", _two, {**DISPATCHED, 1: Dec(run={0: (0,)})}, r"\(2e\)"),
    ("ps-idle-2e", _two, {**DISPATCHED, 1: Dec(ps={0: (0, 0)})}, r"\(2e\)"),
    ("ps-bad", _two, {**DISPATCHED, 1: Dec(run={0: (0,)}, ps={0: (7, 0)})}, "bad PS"),
    (
        "ps-cloud-job-2g",
        lambda: workload((ec_job(delay=(1, 1)),)),
        {0: Dec(dispatch={0: ((1, 0),)}), 1: RUN0},
        r"\(2g\)",
    ),
    (
        "ps-type-o_jsp",
        _typed,
        {0: Dec(dispatch={0: ((0, 0),)}), 1: Dec(run={0: (0,)}, ps={0: (0, 1)})},
        "o_jsp",
    ),
    (
        "ps-twice-2f",
        _two,
        {
            0: Dec(dispatch={0: ((0, 0),), 1: ((0, 1),)}),
            1: Dec(run={0: (0,), 1: (0,)}, ps={0: (0, 0), 1: (0, 0)}),
        },
        r"\(2f\)",
    ),
]


def test_the_constraint_catalogue_reaches_every_refusal_of_the_referee() -> None:
    import traceback

    import dmlsched.sim.edge_cloud_referee as referee

    path = referee.__file__
    with open(path) as f:
        calls = {n for n, line in enumerate(f, 1) if "refuse(" in line and "import" not in line}
    reached = set()
    for _, build, script, _ in CONSTRAINTS:
        with pytest.raises(InvalidDecision) as e:
            simulate("edge-cloud", build(), Scripted(script), RNG)
        frames = traceback.extract_tb(e.value.__traceback__)
        reached |= {fr.lineno for fr in frames if fr.filename == path and "refuse(" in fr.line}
    assert reached == calls


@pytest.mark.parametrize(
    ("build", "script", "match"),
    [c[1:] for c in CONSTRAINTS],
    ids=[c[0] for c in CONSTRAINTS],
)
def test_each_constraint_is_refused_alike_by_simulate_and_by_the_state_step_by_step(
    build: Any, script: dict, match: str
) -> None:
    wl = build()
    with pytest.raises(InvalidDecision, match=match) as a:
        simulate("edge-cloud", wl, Scripted(script), RNG)
    with pytest.raises(InvalidDecision, match=match) as b:
        stepwise("edge-cloud", wl, Scripted(script), RNG)
    assert str(a.value) == str(b.value) and a.value.scheduler == "scripted"


# ---------------------------------------------------------------- the fast path is the referee


def _plan_key(p: Plan) -> Any:
    new = {
        j: (d.placement, d.at, d.zeta, d.rate, d.held.tobytes(), d.ready.tobytes())
        for j, d in p.new.items()
    }
    return (dict(p.dispatch), dict(p.run), dict(p.ps), new, p.storage.tobytes(), p.busy)


def _answer(fn: Any) -> Any:
    try:
        return "plan", _plan_key(fn())
    except InvalidDecision as e:
        return "refused", str(e)


def _slow_workload(seed: int, stored: bool) -> EdgeCloudWorkload:
    """Few chunks that train over several slots (n_j of a few mini-batches): chunks of a job
    finish apart, cloud chunks run for a while; with ``stored``, edge storage is scarce."""
    wl_rng, _ = spawn(make_rng(seed), 2)
    extra = {"storage_gb": 20.0} if stored else {}
    params = WorkloadParams(jobs=6, machines=2, slots=80, extra=extra)
    wl = build_workload("edge-cloud", "synthetic", params, wl_rng)
    jobs = tuple(
        dataclasses.replace(
            j,
            chunks=min(j.chunks, 2 + j.id % 5),
            epochs=1,
            minibatches=min(j.minibatches, 12),
            m=j.m * 200,
            delay=tuple(min(d, 4) for d in j.delay),
            chunk_gb=6.0 if stored else 0.0,
        )
        for j in wl.jobs
    )
    return EdgeCloudWorkload(jobs, wl.system, wl.horizon, wl.source, wl.notes)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    p_bad=st.sampled_from([0.0, 0.05, 0.2, 0.5]),
    wl_seed=st.integers(1, 4),
    stored=st.booleans(),
)
def test_accept_gives_exactly_the_referees_plan_or_refusal(
    seed: int, p_bad: float, wl_seed: int, stored: bool
) -> None:
    wl = _slow_workload(wl_seed, stored)
    sched = RandomEdge(seed, p_bad)
    state = EdgeCloudState(wl, sched.name)
    sched.reset(*state.reset_args(), run_rng())

    def same(d: Any) -> str:
        expect = _answer(lambda: state.judge(d))
        assert _answer(lambda: state.accept(d)) == expect
        return expect[0]

    while not state.over:
        view = state.reveal()
        if same(sched.decide(view)) == "refused":
            assert same(sched.valid(view)) == "plan"  # the state is as before the refusal
        state.credit()


# ---------------------------------------------------------------- measured work


def _model_work(state: EdgeCloudState, plan: Plan) -> dict[int, float]:
    """The engine's own n_j for every job that trains, as a testbed would report it."""
    return {j: state._active[j].rate for j in plan.run}


@pytest.mark.parametrize("name", ["a-online", "srtf", "tiresias-l"])
def test_measured_work_equal_to_n_j_gives_the_models_bytes(name: str) -> None:
    wl = tiny("edge-cloud", 2)
    a = simulate("edge-cloud", wl, make_scheduler("edge-cloud", name), run_rng())
    b = stepwise("edge-cloud", wl, make_scheduler("edge-cloud", name), run_rng(), _model_work)
    assert result_bytes(a) == result_bytes(b)


def _half(state: EdgeCloudState, plan: Plan) -> dict[int, float]:
    return {j: 0.5 for j in plan.run}


def test_slower_measured_work_delays_completion_and_is_fed_back_to_the_scheduler() -> None:
    wl = workload((ec_job(minibatches=4),))  # n_j = 1: four slots of training
    script = {0: Dec(dispatch={0: ((0, 0),)}), **{t: RUN0 for t in range(1, 20)}}
    half = stepwise("edge-cloud", wl, Scripted(script), RNG, _half)
    assert half.metrics["total_jct"] == 8.0  # c_j = 8: slots 1..8 at half speed
    seen = []

    class Spy(Scripted):
        def decide(self, view: Any) -> Any:
            if 0 in view.remaining:
                seen.append(float(view.remaining[0][0]))
            return super().decide(view)

    stepwise("edge-cloud", wl, Spy(script), RNG, _half)
    assert seen[:3] == [4.0, 3.5, 3.0]


@pytest.mark.parametrize(
    ("work", "match"),
    [
        ({0: float("nan")}, "not a finite number"),
        ({0: -1.0}, "not a finite number"),
        ({0: True}, "not a finite number"),
        ({0: "1"}, "not a finite number"),
        ({1: 1.0}, "trained no chunk"),
        ({"0": 1.0}, "not an integer"),
        ({0: 1.0 * MEASURED_SLACK + 0.01}, "can do in 1 slot"),
        ([(0, 1.0)], "not a mapping"),
    ],
    ids=["nan", "negative", "bool", "text", "idle-job", "text-id", "too-fast", "list"],
)
def test_impossible_measured_work_is_refused_naming_job_and_slot_and_nothing_is_credited(
    work: Any, match: str
) -> None:
    wl = workload((ec_job(0), ec_job(1, arrival=5)))
    state = EdgeCloudState(wl, "scripted")
    for d in (Dec(dispatch={0: ((0, 0),)}), RUN0):
        state.reveal()
        state.accept(d)
        if state.slot == 1:
            break
        state.credit()
    before = engine_snapshot(state)
    with pytest.raises(InvalidReport, match=match) as e:
        state.credit(work, source="testbed")
    assert e.value.source == "testbed" and e.value.slot == 1
    assert engine_snapshot(state) == before
    with pytest.raises(InvalidReport, match="can do in 2 slot"):
        state.credit({0: 2.0 * MEASURED_SLACK + 0.01}, elapsed=2.0)
    assert state.credit({0: 1.0}, until=2).slots == 1
    assert state.slot == 2


def test_a_chunk_never_advances_beyond_its_remaining_work() -> None:
    wl = workload((ec_job(minibatches=1, m=0.5),))  # n_j = 2 > the 1 mini-batch left
    state = EdgeCloudState(wl, "scripted")
    state.reveal()
    state.accept(Dec(dispatch={0: ((0, 0),)}))
    state.credit()
    state.reveal()
    state.accept(RUN0)
    assert state.credit({0: 2.4}).completed == (0,)
    assert state.result().metrics["fractional_flow"] == pytest.approx(1.0)  # 1 mini-batch × 1


def test_the_slot_goes_reveal_accept_credit_in_that_order() -> None:
    state = EdgeCloudState(workload((ec_job(),)), "scripted")
    with pytest.raises(RuntimeError, match="accept called, reveal expected"):
        state.accept(Dec())
    state.reveal()
    with pytest.raises(RuntimeError, match="credit called, accept expected"):
        state.credit()
