"""SMD speed model: Lemmas 1–2 on hand-worked timelines, η, Eq. (4)/(5), (9)/(10)."""

from __future__ import annotations

import numpy as np
import pytest

from dmlsched.errors import InvalidInput
from dmlsched.model.interval import IntervalJob
from dmlsched.model.speed.smd import (
    completion_time,
    etas,
    priority_schedule,
    sequential_time,
    speed,
    theta_async,
    theta_sync,
    wait_free_schedule,
)
from dmlsched.model.utility import Sigmoid

# Fig. 4's 4-layer wait-free example, communication dominant: b_j = 1, f_j = 1,
# r = (2, 2, 2, 3) (layers 1..4).
F4 = (1.0, 1.0, 1.0, 1.0)
B4 = (1.0, 1.0, 1.0, 1.0)
R4 = (2.0, 2.0, 2.0, 3.0)


def test_wait_free_timeline_matches_lemma_1_by_hand():
    s = wait_free_schedule(F4, B4, R4)
    # push: κ4 = b4 = 1, κ3 = max(2, 1+3) = 4, κ2 = max(3, 4+2) = 6, κ1 = max(4, 6+2) = 8
    assert s.kappa == (8.0, 6.0, 4.0, 1.0)
    # pull: s4 = b4 + r4 = 4, s3 = max(4+2, 4+3) = 7, s2 = max(6+2, 7+2) = 9, s1 = max(10, 11) = 11
    assert s.s == (11.0, 9.0, 7.0, 4.0)
    assert s.tau == (13.0, 14.0, 15.0, 16.0)
    assert s.t == 17.0


def test_wait_free_etas_reproduce_the_fig_4_formulas():
    e = etas(F4, B4, R4, "wait-free")
    assert e.eta1 == pytest.approx(1.0)
    assert e.eta2 == pytest.approx(B4[3] / sum(B4))  # b_4 / Σ b
    assert e.eta3 == pytest.approx((2 * R4[3] + R4[2] + R4[1] + R4[0]) / (2 * sum(R4)))


def test_priority_timeline_matches_lemma_2_by_hand():
    s = priority_schedule(F4, B4, R4, phi=0.5)
    # e1 = Σb + r1 + φ = 4 + 2 + 0.5; e_j = e1 + Σ_{k=2}^j r_k − Σ_{k=1}^{j-1} b_k
    assert s.e == pytest.approx((6.5, 7.5, 8.5, 10.5))
    assert s.tau == pytest.approx((6.5, 7.5, 8.5, 10.5))  # FP waits for each layer
    assert s.t == pytest.approx(11.5)
    assert s.h_f + s.h_b + s.h_r == pytest.approx(s.t)


def test_priority_model_hides_transfers_behind_long_backprop():
    s = priority_schedule((1, 1, 1, 1), (3, 3, 3, 3), (1, 1, 1, 1), phi=0.5)
    assert s.e[0] == pytest.approx(13.5)
    assert max(s.e[1:]) < 12.0  # finished during BP: Lemma 2's "e_j = 0" case
    assert s.tau == pytest.approx((13.5, 14.5, 15.5, 16.5))
    e = etas((1, 1, 1, 1), (3, 3, 3, 3), (1, 1, 1, 1), "priority", 0.5)
    assert e.eta2 == pytest.approx(9 / 12)  # three of the twelve BP units overlap a transfer


def test_overlap_beats_sequential_and_etas_stay_in_unit_interval():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(1, 30))
        f, b, r = (tuple(rng.uniform(lo, hi, n)) for lo, hi in ((1, 500), (1, 300), (80, 500)))
        seq = sequential_time(f, b, r)
        assert wait_free_schedule(f, b, r).t <= seq + 1e-9
        for model in ("wait-free", "priority"):
            e = etas(f, b, r, model, 5.0)
            assert all(0.0 <= v <= 1.0 + 1e-12 for v in (e.eta1, e.eta2, e.eta3))
    assert etas(F4, B4, R4, "sequential") == etas(F4, B4, R4, "sequential")


def _job(mode: str = "sync", **kw) -> IntervalJob:
    base = dict(
        id=0,
        iterations=100,
        global_batch=400,
        minibatch=20,
        grad_mb=125.0,
        ps_bandwidth=10.0,
        fp_ms=(100.0, 100.0),
        bp_ms=(50.0, 50.0),
        comm_ms=(100.0, 100.0),
        beta1=3.0,
        beta2=0.01,
        alpha=0.5,
        worker_demand=(1.0, 2.0),
        ps_demand=(0.0, 2.0),
        limit=(10.0, 40.0),
        utility=Sigmoid(10.0, 5.0, 2.0),
        mode=mode,
        comm_model="sequential",
        time_unit_s=3600.0,
    )
    base.update(kw)
    return IntervalJob(**base)


def test_sync_speed_is_eq_4_by_hand():
    job = _job("sync")
    w, p = 4, 2
    # t_f = 0.2 s / 20 = 0.01 s per sample, t_b = 0.1 s, g/B = 125·8e-3/10 = 0.1 s
    per_iter = 400 / 4 * 0.01 + 0.1 + 2 * 0.1 * 4 / 2 + 3.0 * 4 + 0.01 * 2
    assert speed(job, w, p) == pytest.approx(1 / per_iter)
    assert completion_time(job, w, p) == pytest.approx(100 * per_iter / 3600)


def test_async_speed_is_eq_5_by_hand():
    job = _job("async", time_unit_s=60.0)
    w, p = 4, 2
    per_step = 20 * 0.01 + 0.1 + 2 * 0.5 * 0.1 * 4 / 2 + 3.0 * 4 + 0.01 * 2
    assert speed(job, w, p) == pytest.approx(w / per_step)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_theta_forms_9_and_10_equal_e_over_f(mode):
    job = _job(mode, comm_model="wait-free")
    w, p = np.arange(1, 6)[:, None], np.arange(1, 5)[None, :]
    seconds = job.iterations / speed(job, w, p)
    if mode == "sync":
        t1, t2, t3, t4, t5 = theta_sync(job)
        form = t1 * w + t2 * p + t3 + t4 * w / p + t5 / w
    else:
        t1, t2, t3, t4 = theta_async(job)
        form = t1 + t2 * p / w + t3 / w + t4 / p
    np.testing.assert_allclose(form, seconds)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("iterations", 0),
        ("alpha", 1.5),
        ("mode", "bsp"),
        ("comm_model", "ring"),
        ("limit", (0.5, 40.0)),
        ("bp_ms", (1.0,)),
        ("grad_mb", -1.0),
    ],
)
def test_invalid_job_fields_are_named(field, value):
    with pytest.raises(InvalidInput, match=field.split("_")[0]):
        kw = {"mode": "sync", field: value}
        _job(**kw)
