"""ClusterJob's one-expression check never passes a job its full checks refuse."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import ClusterJob


class _FullChecks(ClusterJob):
    """Always runs every check."""

    def _plainly_valid(self) -> bool:
        return False


_odd = st.sampled_from([math.nan, math.inf, -math.inf, -1.0, 0.0, 0.5, 3.0, True, "x", None])
_num = st.one_of(st.floats(0.01, 300), st.floats(-2, 300), st.integers(-2, 300), _odd)
_bad_int = st.sampled_from([2.0, 2.5, True, math.nan, "3", None])
_int = st.one_of(st.integers(1, 300), st.integers(-2, 300), _bad_int)
_demand = st.lists(st.one_of(st.floats(-1, 40), _odd), min_size=0, max_size=5).map(tuple)


@settings(max_examples=400, deadline=None)
@given(
    arrival=_int,
    epochs=_int,
    samples=_int,
    batch=_int,
    minibatches=_int,
    grad_mb=_num,
    tau=_num,
    gamma=_num,
    b_int=_num,
    b_ext=_num,
    worker=_demand,
    ps=_demand,
    mode=st.sampled_from(["sync", "async", "other"]),
    straggler=_num,
    ps_bandwidth=_num,
    requested=st.one_of(st.none(), _int),
)
def test_the_quick_check_passes_only_jobs_the_full_checks_accept(**f: object) -> None:
    kw = dict(
        id=0,
        arrival=f["arrival"],
        epochs=f["epochs"],
        samples=f["samples"],
        batch=f["batch"],
        minibatches=f["minibatches"],
        grad_mb=f["grad_mb"],
        tau=f["tau"],
        gamma=f["gamma"],
        b_int=f["b_int"],
        b_ext=f["b_ext"],
        worker_demand=f["worker"],
        ps_demand=f["ps"],
        mode=f["mode"],
        straggler=f["straggler"],
        ps_bandwidth=f["ps_bandwidth"],
        requested_workers=f["requested"],
    )
    probe = object.__new__(ClusterJob)
    probe.__dict__.update(kw)
    quick = probe._plainly_valid()
    try:
        _FullChecks(**kw)  # type: ignore[arg-type]
        full = True
    except (InvalidInput, TypeError, ValueError):
        full = False
    assert not quick or full


def test_a_plain_job_takes_the_quick_check() -> None:
    job = ClusterJob(0, 1, 50, 1000, 20, 100.0, 1e-5, 2.0, (1.0, 2.0, 3.0, 4.0),
                     (0.0, 2.0, 3.0, 4.0), 40.0, 1.0)  # fmt: skip
    assert job._plainly_valid()
