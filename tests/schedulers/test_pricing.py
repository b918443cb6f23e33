"""Eq. (12)–(14): PD-ORS prices and their constants, against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dmlsched.model.cluster import Cluster
from dmlsched.model.utility import Sigmoid
from dmlsched.schedulers._shared.pricing import (
    OnlineBounds,
    PriceBounds,
    earliest_training_time,
    external_worker_slots,
    price_bounds,
    prices,
)
from tests.conftest import make_job


def test_eq12_price_is_L_when_idle_U_when_full_and_geometric_between() -> None:
    b = PriceBounds(upper=(8.0, 2.0), lower=0.5)
    cap = np.array([[10.0, 4.0]] * 3)
    rho = np.array([[0.0, 0.0], [10.0, 4.0], [5.0, 2.0]])
    p = prices(rho, cap, b)
    assert p[0] == pytest.approx([0.5, 0.5])
    assert p[1] == pytest.approx([8.0, 2.0])
    assert p[2] == pytest.approx([math.sqrt(8.0 * 0.5), math.sqrt(2.0 * 0.5)])


def test_eq13_eq14_for_a_hand_computed_job() -> None:
    # make_job: E=1, K=1000, F=10, g=45 MB, τ=1e-3, γ=2, b_i=40, b_e=1 Gbps,
    # worker (1 GPU, 2 CPU), PS (1 CPU); u ≡ 10/(1+e^0) = 5.
    job = make_job(0, utility=Sigmoid(10.0, 0.0, 0.0))
    # 2g over b: 90 MB · 8e-3 Gb/MB / b / 3600 s = 2e-4 / b slots
    r_int = 1 / (1e-3 + 0.2 * 2e-4 / 40)  # 999.0 samples/slot
    r_ext = 1 / (1e-3 + 0.2 * 2e-4)  # 961.54
    assert earliest_training_time(job) == math.ceil(1000 / (10 * r_int)) - 1 == 0
    assert external_worker_slots(job) == math.ceil(1000 / r_ext) == 2
    capacity = Cluster.uniform(1, (4.0, 8.0, 64.0, 64.0)).capacity  # Σ C = 140
    b = price_bounds([job], horizon=4, capacity=capacity)
    # U^gpu = 5 / (1 + 0), U^cpu = 5 / (2 + 1); mem, storage unused → U = L
    assert b.upper[0] == pytest.approx(5.0)
    assert b.upper[1] == pytest.approx(5.0 / 3.0)
    # D = 2 worker-slots · Σ(α+β) = 2 · 4 = 8; 1/μ = 8 / (T · ΣC) = 8/560
    # L = (1/2)(1/μ) u(T−1−a) / D = 0.5 · (8/560) · 5 / 8
    assert b.lower == pytest.approx(0.5 * (8 / 560) * 5 / 8)
    assert b.upper[2] == b.upper[3] == pytest.approx(b.lower)


def test_online_estimate_widens_as_jobs_arrive_and_matches_oracle_at_the_end() -> None:
    jobs = [
        make_job(0, utility=Sigmoid(10.0, 0.0, 0.0)),
        make_job(1, samples=5000, utility=Sigmoid(40.0, 0.0, 0.0)),
        make_job(2, samples=3000, utility=Sigmoid(2.0, 0.0, 0.0)),
    ]
    cap = Cluster.uniform(2, (4.0, 8.0, 64.0, 64.0)).capacity
    est = OnlineBounds(4, 6, float(cap.sum()))
    seen = []
    for j in jobs:
        est.observe(j)
        seen.append(est.bounds())
    assert seen[1].upper[0] >= seen[0].upper[0]
    assert seen[2].lower <= seen[1].lower
    oracle = price_bounds(jobs, 6, cap)
    assert seen[-1] == oracle


def test_zero_utility_jobs_do_not_make_L_zero() -> None:
    job = make_job(0, arrival=0, utility=Sigmoid(1.0, 1000.0, 0.0))  # u(t>0) = 0
    b = price_bounds([job], horizon=5, capacity=np.ones((1, 4)) * 100)
    assert b.lower > 0 and np.all(np.isfinite(b.log_ratio))
