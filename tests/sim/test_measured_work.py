"""Measured work (a testbed's processes, a service's agents) checked by the engine state:
within :data:`~dmlsched.sim.drive.MEASURED_SLACK` × the placement's Eq. (1) rate × elapsed
slots it is credited; negative, not a number, beyond that, or for a job without a placement
it is refused."""

from __future__ import annotations

import math
from typing import Any

import pytest

from dmlsched.errors import InvalidReport
from dmlsched.model.cluster import Cluster, ClusterDecision, ClusterWorkload, Placement
from dmlsched.model.speed.pdors import job_rate
from dmlsched.sim.cluster import ClusterState
from dmlsched.sim.drive import MEASURED_SLACK
from tests.conftest import make_job

JOBS = (make_job(0, epochs=100), make_job(1, epochs=100))
WL = ClusterWorkload(JOBS, Cluster.uniform(2, (4.0, 8.0, 64.0, 64.0)), 10)
P = Placement((0,), (2,), (1,))
RATE = job_rate(JOBS[0], P.machines, P.workers, P.ps)


def _placed() -> ClusterState:
    """Job 0 placed on machine 0, job 1 pending with no placement."""
    state = ClusterState(WL, "s")
    state.reveal()
    state.accept(ClusterDecision({0: P}))
    return state


def test_work_within_the_slack_is_credited_and_completes_by_it() -> None:
    state = _placed()
    got = state.credit({0: RATE * MEASURED_SLACK})
    assert got.per_slot == {0: RATE * MEASURED_SLACK} and state.done(0) == RATE * MEASURED_SLACK
    assert state.slot == 1 and state.phase == "open"


@pytest.mark.parametrize(
    ("work", "elapsed", "match"),
    [
        ({0: -1.0}, 1.0, "not a finite number >= 0"),
        ({0: math.nan}, 1.0, "not a finite number >= 0"),
        ({0: math.inf}, 1.0, "not a finite number >= 0"),
        ({0: "7"}, 1.0, "not a finite number"),
        ({0: True}, 1.0, "not a finite number"),
        ({"0": 1.0}, 1.0, "not an integer"),
        ({0: RATE * MEASURED_SLACK * 1.001}, 1.0, "can do in 1 slot"),
        ({0: RATE * MEASURED_SLACK * 1.5}, 1.25, "can do in 1.25 slot"),
        ({1: 1.0}, 1.0, "without a placement"),
        ({7: 1.0}, 1.0, "without a placement"),
    ],
)
def test_impossible_work_is_refused_naming_the_job(work: Any, elapsed: float, match: str) -> None:
    state = _placed()
    with pytest.raises(InvalidReport, match=match) as err:
        state.credit(work, elapsed=elapsed, source="agent m0")
    key = next(iter(work))
    assert err.value.source == "agent m0" and err.value.job == (key if type(key) is int else None)
    assert state.phase == "accepted" and state.done(0) == 0.0  # nothing credited
    state.credit({0: RATE})  # the slot can still be closed with honest work
    assert state.done(0) == RATE


def test_more_elapsed_slots_allow_more_work() -> None:
    state = _placed()
    assert state.check_work({0: RATE * MEASURED_SLACK * 1.5}, elapsed=1.5)
    with pytest.raises(InvalidReport):
        state.check_work({0: RATE * MEASURED_SLACK * 1.01})


def test_a_report_that_is_not_a_mapping_is_refused() -> None:
    with pytest.raises(InvalidReport, match="not a mapping"):
        _placed().check_work([(0, 1.0)])


def test_credit_before_a_decision_is_out_of_order() -> None:
    state = ClusterState(WL, "s")
    with pytest.raises(RuntimeError, match="accepted expected"):
        state.credit({0: 1.0})
