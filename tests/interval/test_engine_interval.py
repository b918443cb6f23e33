"""The ``interval`` engine validates Eq. (2), (3), (8) and owns the physics."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.errors import InvalidDecision
from dmlsched.model.interval import IntervalDecision
from dmlsched.model.speed.smd import completion_time
from dmlsched.sim.engine import simulate
from dmlsched.workloads.interval import synthetic_interval

WL = synthetic_interval(6, 1.0, np.random.default_rng(7), sync=True)


class Fixed:
    """A scheduler that returns a given decision (not registered)."""

    name: ClassVar[str] = "fixed"
    setting: ClassVar[str] = "interval"

    def __init__(self, decision):
        self.decision = decision

    def reset(self, capacity, resources, rng):
        pass

    def decide(self, view):
        return self.decision


def run(alloc):
    return simulate("interval", WL, Fixed(IntervalDecision(alloc)), np.random.default_rng(0))


def test_engine_computes_utility_with_its_own_speed_model():
    job = WL.jobs[0]
    m = run({job.id: (1, 1)}).metrics
    assert m["total_utility"] == pytest.approx(job.utility(float(completion_time(job, 1, 1))))
    assert m["admitted_jobs"] == 1 and m["rejected_jobs"] == len(WL.jobs) - 1


@pytest.mark.parametrize("bad", [(0, 1), (1, 0), (1.0, 1), (True, 1), (-2, 3), (1,)])
def test_non_positive_integer_counts_are_refused(bad):
    with pytest.raises(InvalidDecision, match="scheduler=fixed"):
        run({WL.jobs[0].id: bad})


def test_allocation_above_the_user_limit_names_the_resource():
    job = WL.jobs[0]
    with pytest.raises(InvalidDecision, match=r"Eq\. 3") as e:
        run({job.id: (10**6, 1)})
    assert e.value.resource in WL.resources and e.value.job == job.id


def test_admitting_more_limits_than_capacity_is_refused():
    wl = synthetic_interval(60, 0.2, np.random.default_rng(1))
    dec = IntervalDecision({j.id: (1, 1) for j in wl.jobs})
    with pytest.raises(InvalidDecision, match=r"Eq\. 2"):
        simulate("interval", wl, Fixed(dec), np.random.default_rng(0))


def test_unknown_jobs_are_refused():
    with pytest.raises(InvalidDecision, match="unknown job"):
        run({999: (1, 1)})


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.integers(0, 7), st.tuples(st.integers(-1, 40), st.integers(-1, 40)), max_size=6
    )
)
def test_any_accepted_decision_respects_eq_2_and_3_and_scores_what_the_model_says(alloc):
    try:
        res = run(alloc)
    except InvalidDecision:
        ids = {j.id for j in WL.jobs}
        by_id = {j.id: j for j in WL.jobs}
        bad = any(
            k not in ids
            or w < 1
            or p < 1
            or np.any(by_id[k].usage(w, p) > np.asarray(by_id[k].limit) + 1e-6)
            for k, (w, p) in alloc.items()
        ) or np.any(sum(np.asarray(by_id[k].limit) for k in alloc if k in ids) > WL.capacity)
        assert bad
        return
    by_id = {j.id: j for j in WL.jobs}
    expect = sum(
        by_id[k].utility(float(completion_time(by_id[k], w, p))) for k, (w, p) in alloc.items()
    )
    assert res.metrics["total_utility"] == pytest.approx(expect)
    assert 0.0 <= res.metrics["used_resource_ratio"] <= 1.0 + 1e-9
    assert res.metrics["admitted_jobs"] == len(alloc)
