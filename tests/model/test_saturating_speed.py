"""Saturating compute: Eq. (1) whose compute stops shrinking once a worker's batch is small."""

from __future__ import annotations

import pytest

from dmlsched.errors import InvalidInput
from dmlsched.model.speed.pdors import comm_slots, job_rate
from dmlsched.model.speed.saturating import SaturatingSpeed, StepCurve
from tests.conftest import make_job

# a ResNet-50-like curve: 15 ms flat up to b = 50, then 0.3 ms per sample, + 3 ms
R50 = StepCurve("r50", 15e-3, 3e-4, 3e-3, grad_mb=90.0)
FLAT = StepCurve("flat", 8e-3, 0.0, 0.0, grad_mb=40.0)


def test_a_curve_by_hand():
    assert R50.seconds(10) == pytest.approx(18e-3)
    assert R50.seconds(100) == pytest.approx(33e-3)
    assert R50.saturation_batch == pytest.approx(50.0)
    assert FLAT.saturation_batch == float("inf")
    assert R50.share(200, 4) == pytest.approx(18e-3 / 63e-3)  # b = 50: the flat level


def test_one_worker_trains_as_eq1_says():
    sp = SaturatingSpeed((R50, FLAT))
    job = make_job(grad_mb=100.0, batch=200, gamma=1.0)
    for where in (((0,), (1,), (1,)), ((0, 1), (1, 0), (0, 1))):
        assert sp.rate(job, *where) == pytest.approx(job_rate(job, *where), rel=1e-12)


def test_extra_workers_stop_helping_once_the_gpu_is_unsaturated():
    sp = SaturatingSpeed((R50,))
    job = make_job(grad_mb=100.0, batch=200, gamma=1.0, tau=1e-3)
    # W = 4 (b = 50, the flat level) and W = 8 (b = 25, flat too): the same compute
    c4 = 1e-3 * 200 * R50.share(200, 4)
    rate4 = sp.rate(job, (0,), (4,), (4,))
    assert rate4 == pytest.approx(200 / (c4 + comm_slots(2 * 100.0 / 4, job.b_int)))
    rate8 = sp.rate(job, (0,), (8,), (8,))
    assert rate8 == pytest.approx(200 / (c4 + comm_slots(2 * 100.0 / 8, job.b_int)))
    # Eq. (1) says 8 workers compute twice as fast as 4; saturating: no faster at all
    assert job_rate(job, (0,), (8,), (8,)) > 1.5 * job_rate(job, (0,), (4,), (4,))
    assert rate8 < 1.01 * rate4


def test_jobs_take_the_curve_nearest_their_gradient_on_a_log_scale():
    sp = SaturatingSpeed((R50, FLAT))
    assert sp.curve_of(make_job(grad_mb=575.0)) is R50
    assert sp.curve_of(make_job(grad_mb=30.0)) is FLAT
    assert sp.curve_of(make_job(grad_mb=59.0)) is FLAT  # √(40 · 90) = 60
    assert sp.curve_of(make_job(grad_mb=61.0)) is R50


def test_async_jobs_and_empty_placements_are_left_as_printed():
    sp = SaturatingSpeed((R50,))
    job = make_job(mode="async", samples=10, minibatches=3, gamma=1.0)
    assert sp.rate(job, (0,), (3,), (1,)) == job_rate(job, (0,), (3,), (1,))
    assert sp.rate(make_job(), (0,), (0,), (1,)) == 0.0


def test_bad_curves_name_the_field():
    with pytest.raises(InvalidInput, match="tau_s"):
        StepCurve("x", 1e-3, -1.0, 0.0)
    with pytest.raises(InvalidInput, match="grad_mb"):
        SaturatingSpeed((StepCurve("x", 1e-3, 0.0, 0.0),))
