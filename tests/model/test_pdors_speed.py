"""PD-ORS speed model: Eq. (1) with Fact 1, hand-computed (Fig. 4 a–d)."""

from __future__ import annotations

import math

import pytest

from dmlsched.model.speed.pdors import (
    comm_slots,
    is_internal,
    job_rate,
    ps_bandwidth_load,
    sync_rate,
    worker_rate,
)
from tests.conftest import make_job


def test_comm_slots_converts_megabytes_over_gbps_to_hours() -> None:
    # 450 MB = 3.6 Gb; over 1 Gbps that is 3.6 s = 0.001 h
    assert comm_slots(450.0, 1.0) == pytest.approx(0.001)


# Fig. 4: (a) workers and PSs on two different single machines, (b) PSs spread,
# (c) workers spread, (d) everything on one machine: only (d) is internal.
@pytest.mark.parametrize(
    ("workers_on", "ps_on", "internal"),
    [([0], [1], False), ([0], [0, 1], False), ([0, 1], [0], False), ([0], [0], True)],
    ids=["a-separate", "b-ps-spread", "c-workers-spread", "d-colocated"],
)
def test_fact1_internal_rate_only_when_all_on_one_machine(
    workers_on: list[int], ps_on: list[int], internal: bool
) -> None:
    assert is_internal(workers_on, ps_on) is internal


def test_eq1_rate_for_colocated_job_uses_internal_bandwidth() -> None:
    job = make_job(grad_mb=45.0, tau=1e-3, batch=10, b_int=40.0, b_ext=1.0)
    # W=4, S=2 on machine 0: per-iteration comm = 2*45/2 MB over 40 Gbps = 0.36 s/40... in slots:
    comm = 2 * 45.0 / 2 * 8e-3 / 40.0 / 3600.0
    per_sample = 1e-3 + comm * 4 / 10
    assert job_rate(job, [0], [4], [2]) == pytest.approx(4 / per_sample)


def test_eq1_rate_for_spread_job_uses_external_bandwidth() -> None:
    job = make_job(grad_mb=45.0, tau=1e-3, batch=10, b_int=40.0, b_ext=1.0)
    comm = 2 * 45.0 / 2 * 8e-3 / 1.0 / 3600.0  # 0.0001 slot per iteration
    per_sample = 1e-3 + comm * 4 / 10
    assert job_rate(job, [0, 1], [4, 0], [1, 1]) == pytest.approx(4 / per_sample)
    assert job_rate(job, [0, 1], [2, 2], [2, 0]) == pytest.approx(4 / per_sample)


def test_gamma_form_matches_eq1_when_ratio_is_exact() -> None:
    job = make_job(gamma=2.0)
    for internal in (True, False):
        assert 4 * worker_rate(job, internal) == pytest.approx(sync_rate(job, 4, 2, internal))


def test_no_ps_or_no_worker_means_no_progress() -> None:
    job = make_job()
    assert job_rate(job, [0], [3], [0]) == 0.0
    assert job_rate(job, [0], [0], [1]) == 0.0


def test_async_rate_is_per_worker_locality_against_ps_machines() -> None:
    job = make_job(
        mode="async", samples=10, minibatches=5, tau=0.01, grad_mb=45.0, ps_bandwidth=100.0
    )
    r_int = 1 / (0.01 + comm_slots(90.0, 40.0))
    r_ext = 1 / (0.01 + comm_slots(90.0, 1.0))
    # PS only on machine 0: the 2 workers there are internal, the 3 on machine 1 external
    assert job_rate(job, [0, 1], [2, 3], [1, 0]) == pytest.approx(2 * r_int + 3 * r_ext)
    load, cap = ps_bandwidth_load(job, [0, 1], [2, 3], [1, 0])
    assert load == pytest.approx(2 * 40.0 + 3 * 1.0)
    assert cap == pytest.approx(100.0)


def test_total_work_is_epochs_times_samples_or_minibatches() -> None:
    assert make_job(epochs=3, samples=1000).total_work == 3000
    assert make_job(mode="async", epochs=3, samples=10, minibatches=4).total_work == 120
    assert math.isclose(make_job(gamma=3.0).min_ps(7), 3)


def test_pss_beyond_w_over_gamma_do_not_speed_a_sync_job_up() -> None:
    # γ fixed by the job (Eq. (2)); the engine credits min(S, W/γ) PSs
    job = make_job(gamma=1.5, grad_mb=450.0)
    for internal in (True, False):
        gamma_form = 2 * worker_rate(job, internal)
        # ⌈2/1.5⌉ = 2 PSs (W/S = 1 < γ) and 5 PSs train exactly at the γ-form rate
        assert sync_rate(job, 2, 2, internal) == gamma_form
        assert sync_rate(job, 2, 5, internal) == gamma_form
    assert job_rate(job, [0, 1], [2, 0], [1, 4]) == 2 * worker_rate(job, False)
    # fewer PSs than W/γ (the engine never accepts it for sync jobs): Eq. (1) slows down
    assert sync_rate(job, 3, 1, False) < 3 * worker_rate(job, False)
