"""Jobs sharing links: when one completes within a slot, the others get its share for the
rest of the slot (:func:`dmlsched.sim.cluster.work.shared_slot`), in the engine and in the
testbed's replay."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.model.cluster import Cluster, ClusterDecision, ClusterJob, ClusterWorkload, Placement
from dmlsched.sim.cluster import ClusterState
from dmlsched.sim.cluster.work import shared_slot
from tests.conftest import make_job

JOBS = (make_job(0), make_job(1))
TOTAL = {j.id: j.total_work for j in JOBS}
# per slot: alone, and with the other job on the same links
ALONE = {0: 4.0 * TOTAL[0], 1: 2.0 * TOTAL[1]}
TOGETHER = {0: 2.0 * TOTAL[0], 1: 0.5 * TOTAL[1]}


class Shared:
    """A speed model whose two jobs halve (job 0) and quarter (job 1) each other's rate."""

    def rate(
        self, job: ClusterJob, machines: Sequence[int], workers: Sequence[int], ps: Sequence[int]
    ) -> float:
        return ALONE[job.id]

    def slot_rates(self, items: Sequence[tuple[ClusterJob, Placement]]) -> list[float]:
        table = TOGETHER if len(items) > 1 else ALONE
        return [table[j.id] for j, _ in items]


def _two() -> np.ndarray:
    """Job 0 completes half-way through the slot; job 1 then runs alone."""
    rates = np.array([TOGETHER[0], TOGETHER[1]])
    total = np.array([TOTAL[0], TOTAL[1]])
    return shared_slot(
        np.zeros(2), total, total, rates, lambda alive: np.array([ALONE[1]] * alive.size)
    )


def test_a_job_that_completes_mid_slot_leaves_its_share_to_the_others() -> None:
    got = _two()
    # job 0: 2 × its work per slot → done at 0.5; job 1 did 0.25 of its work by then and
    # the remaining 0.75 alone at 2 per slot takes 0.375 more: done at 0.875
    assert got.completed.tolist() == [True, True]
    assert got.at.tolist() == pytest.approx([0.5, 0.875])
    assert got.work.tolist() == pytest.approx([TOTAL[0], TOTAL[1]])


def test_with_no_completion_the_slot_is_the_rates() -> None:
    before = np.array([0.0, 0.0])
    big = np.array([100.0, 100.0])
    got = shared_slot(before, big, big, np.array([3.0, 5.0]), lambda alive: 1 / 0)
    assert got.work.tolist() == [3.0, 5.0] and not got.completed.any()
    assert np.isnan(got.at).all()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0, 10),  # work before
            st.floats(0.1, 20),  # work left to do
            st.floats(0, 10),  # rate together
            st.floats(0, 10),  # extra rate once others complete
        ),
        min_size=1,
        max_size=6,
    )
)
def test_work_never_exceeds_the_fastest_rate_and_completions_are_ordered(rows) -> None:
    before = np.array([r[0] for r in rows])
    total = before + np.array([r[1] for r in rows])
    rates = np.array([r[2] for r in rows])
    fast = rates + np.array([r[3] for r in rows])
    got = shared_slot(before, total, total, rates, lambda alive: fast[alive])
    assert (got.work >= rates - 1e-9).all() or got.completed.any()
    assert (got.work <= fast + 1e-9).all()
    done = got.completed
    assert (before[done] + got.work[done] >= total[done] - 1e-9).all()
    assert (before[~done] + got.work[~done] < total[~done]).all()
    assert ((got.at[done] >= 0) & (got.at[done] <= 1)).all()


def test_the_engine_gives_a_completed_jobs_share_to_the_others() -> None:
    wl = ClusterWorkload(JOBS, Cluster.uniform(2, (4.0, 8.0, 64.0, 64.0)), 4, speed=Shared())
    state = ClusterState(wl, "s")
    state.reveal()
    p = Placement((0, 1), (1, 0), (0, 1))
    state.accept(ClusterDecision({0: p, 1: p}))
    got = state.credit()
    assert sorted(got.completed) == [0, 1]
    assert state.result().series["jct"].tolist() == pytest.approx([0.5, 0.875])
