"""ClusterJob.straggler: τ·straggler in the sync (BSP) speed model."""

from __future__ import annotations

import dataclasses

import pytest

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import ClusterJob
from dmlsched.model.speed.pdors import comm_slots, job_rate, sync_rate, worker_rate
from tests.conftest import make_job


def _job(**kw: object) -> ClusterJob:
    spec: dict[str, object] = dict(grad_mb=100.0, tau=1e-4)
    spec.update(kw)
    return make_job(**spec)


def test_straggler_defaults_to_one_and_leaves_the_rate_unchanged() -> None:
    job = _job()
    assert job.straggler == 1.0
    # Eq. (1) by hand: W / (τ + 2g/S/b · W/F), W=4, S=2, external
    want = 4 / (1e-4 + comm_slots(2 * 100.0 / 2, 1.0) * 4 / 10)
    assert sync_rate(job, 4, 2, internal=False) == pytest.approx(want)


def test_sync_rate_multiplies_tau_by_the_straggler_factor() -> None:
    slow = _job(straggler=1.5)
    same = _job(tau=1.5e-4)
    for internal in (True, False):
        assert sync_rate(slow, 4, 2, internal) == pytest.approx(sync_rate(same, 4, 2, internal))
        assert worker_rate(slow, internal) == pytest.approx(worker_rate(same, internal))
    assert job_rate(slow, [0, 1], [2, 2], [1, 1]) == pytest.approx(
        job_rate(same, [0, 1], [2, 2], [1, 1])
    )
    assert sync_rate(slow, 4, 2, False) < sync_rate(_job(), 4, 2, False)


@pytest.mark.parametrize("bad", [0.5, 0.0, -1.0, float("inf"), float("nan")])
def test_straggler_below_one_or_not_finite_is_invalid_input(bad: float) -> None:
    with pytest.raises(InvalidInput, match="straggler"):
        _job(straggler=bad)


def test_async_jobs_refuse_a_straggler_factor() -> None:
    job = _job(mode="async", samples=10, minibatches=5, batch=1, ps_bandwidth=10.0)
    assert job.straggler == 1.0
    with pytest.raises(InvalidInput, match="straggler"):
        dataclasses.replace(job, straggler=2.0)
