"""A speed model's start and restart charges: a job's first incarnation loses
``start_slots`` of its first slot, a later one (resumed, moved, resized) ``restart_slots``;
a job kept where it ran loses nothing."""

from __future__ import annotations

import pickle
from collections.abc import Sequence

import pytest

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import Cluster, ClusterDecision, ClusterJob, ClusterWorkload, Placement
from dmlsched.model.speed.calibrated import CalibratedSpeed
from dmlsched.sim.cluster import ClusterState
from tests.conftest import make_job

JOB = make_job(0)
RATE = 0.4 * JOB.total_work  # work per slot: 2.5 slots of running


class Charged:
    """Every placement runs at RATE; new incarnations lose a share of their first slot."""

    def __init__(self, start_slots: float, restart_slots: float) -> None:
        self.start_slots = start_slots
        self.restart_slots = restart_slots

    def rate(
        self, job: ClusterJob, machines: Sequence[int], workers: Sequence[int], ps: Sequence[int]
    ) -> float:
        return RATE


def _run(
    start: float, restart: float, placements: list[Placement | None], hold: int = 1
) -> ClusterState:
    wl = ClusterWorkload(
        (JOB,), Cluster.uniform(2, (4.0, 8.0, 64.0, 64.0)), 20, speed=Charged(start, restart)
    )
    state = ClusterState(wl, "s")
    for p in placements:
        state.reveal()
        state.accept(ClusterDecision({0: p} if p else {}))
        state.credit(until=state.slot + hold if hold > 1 else None)
    return state


A = Placement((0, 1), (1, 0), (1, 0))
B = Placement((0, 1), (0, 1), (0, 1))


def test_kept_placements_pay_once() -> None:
    # 2.5 slots of work + 0.25 lost at the start: done 0.75 into the third slot
    s = _run(0.25, 0.5, [A, A, A])
    assert s.result().series["jct"].tolist() == pytest.approx([2.75])


def test_every_move_and_every_resume_pays_the_restart() -> None:
    # slots: A (start: 0.9 of a slot's work), B (move: 0.75), idle, A (resume: 0.75), A:
    # 2.4 by slot 4's end; the last 0.1 slot's work takes the 5th slot's first 0.1 → 4.1
    s = _run(0.1, 0.25, [A, B, None, A, A])
    assert s.result().series["jct"].tolist() == pytest.approx([4.1])


def test_a_held_decision_pays_once_over_its_slots() -> None:
    s = _run(0.25, 0.5, [A], hold=5)
    assert s.result().series["jct"].tolist() == pytest.approx([2.75])


def test_no_charge_is_the_papers_credit() -> None:
    assert _run(0.0, 0.0, [A, B, A]).result().series["jct"].tolist() == pytest.approx([2.5])


def test_measured_work_is_never_charged() -> None:
    wl = ClusterWorkload(
        (JOB,), Cluster.uniform(2, (4.0, 8.0, 64.0, 64.0)), 20, speed=Charged(0.5, 0.5)
    )
    state = ClusterState(wl, "s")
    state.reveal()
    state.accept(ClusterDecision({0: A}))
    state.credit({0: RATE})
    assert state.done(0) == pytest.approx(RATE)


def test_the_calibrated_model_charges_its_measured_seconds() -> None:
    m = CalibratedSpeed("links", 20.0, 0.0, 1e5, start_s=0.2, restart_s=0.5)
    assert (m.start_slots, m.restart_slots) == pytest.approx((0.01, 0.025))
    with pytest.raises(InvalidInput, match="restart_s"):
        CalibratedSpeed("links", 20.0, 0.0, 1e5, restart_s=20.0)
    with pytest.raises(InvalidInput, match="start_s"):
        CalibratedSpeed("links", 20.0, 0.0, 1e5, start_s=-1.0)


def test_a_state_pickled_before_the_charges_existed_runs_on_without_them() -> None:
    state = _run(0.25, 0.5, [A])
    blob = state.__getstate__() if hasattr(state, "__getstate__") else dict(state.__dict__)
    old = {k: v for k, v in dict(blob).items() if k not in ("_start", "_restart", "_ran", "_ever")}
    again = ClusterState.__new__(ClusterState)
    again.__setstate__(old)
    again.reveal()
    again.accept(ClusterDecision({0: B}))
    again.credit()  # a move, uncharged: 0.75 + 1 of the 2.5 slots of work
    assert again.done(0) == pytest.approx(1.75 * RATE)
    assert pickle.loads(pickle.dumps(state)).done(0) == pytest.approx(state.done(0))
