"""Pairwise dependent rounding (mlBroker Alg. 3, Round2_y, IR, GR)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.rng import make_rng
from dmlsched.solvers.dependent_rounding import (
    greedy_round,
    independent_round,
    pairwise_round,
    round1_y,
    round2_y,
)

values = st.lists(st.floats(0.0, 20.0, allow_nan=False), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(values, st.integers(0, 2**31 - 1), st.data())
def test_round1_preserves_weighted_sum_exactly_up_to_the_leftover(
    ys: list[float], seed: int, data: st.DataObject
) -> None:
    y = np.array(ys)
    w = np.array(data.draw(st.lists(st.floats(0.5, 10.0), min_size=y.size, max_size=y.size)))
    res = pairwise_round(y, w, make_rng(seed))
    out = res.values
    assert np.all(out == np.round(out))
    assert np.all((out == np.floor(y + 1e-7)) | (out == np.floor(y + 1e-7) + 1))
    # Lemma 1 / P2: Σ ω ȳ = Σ ω ỹ, plus what the last element gains when rounded up.
    gain = 0.0 if res.leftover is None else w[res.leftover] * (1.0 - res.leftover_p)
    assert np.isclose(w @ out, w @ y + gain, rtol=1e-9, atol=1e-6)
    assert w @ out >= w @ y - 1e-6


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_round1_y_keeps_every_data_centers_weighted_sum(jobs: int, dcs: int, seed: int) -> None:
    rng = make_rng(seed)
    y = rng.uniform(0, 5, (jobs, dcs))
    omega = rng.uniform(1, 4, jobs)
    out = round1_y(y, omega, make_rng(seed + 1))
    for r in range(dcs):
        # never below, and above by less than one worker's weight (the leftover)
        assert omega @ out[:, r] >= omega @ y[:, r] - 1e-9
        assert omega @ out[:, r] < omega @ y[:, r] + omega.max() + 1e-9


def test_round2_y_keeps_each_jobs_worker_total_when_fractions_sum_to_an_integer() -> None:
    y = np.array([[0.5, 1.25, 0.25], [2.4, 0.6, 0.0]])
    out = round2_y(y, make_rng(7))
    assert out.sum(axis=1).tolist() == [2.0, 3.0]


def test_rounding_keeps_marginals_in_expectation_when_nothing_is_left_over() -> None:
    # equal weights and integral Σ p: no leftover, so P1 holds exactly in expectation
    y = np.array([0.3, 0.7, 1.5, 2.5])
    w = np.ones(4)
    rng = make_rng(0)
    mean = np.mean([pairwise_round(y, w, rng).values for _ in range(4000)], axis=0)
    assert np.allclose(mean, y, atol=0.04)


def test_zero_weight_entries_are_rounded_independently() -> None:
    out = pairwise_round(np.array([0.5, 1.5, 3.0]), np.array([0.0, 2.0, 1.0]), make_rng(1))
    assert out.values[2] == 3.0 and out.values[1] == 2.0  # lone weighted entry goes up


def test_ir_rounds_to_nearest_and_gr_rounds_up() -> None:
    y = np.array([2.6, 2.1, 3.0])
    assert independent_round(y).tolist() == [3.0, 2.0, 3.0]
    assert greedy_round(y).tolist() == [3.0, 3.0, 3.0]
