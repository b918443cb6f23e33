"""Scaled randomized rounding, Eq. (27)–(28), and G_δ of Eq. (29)–(30)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.errors import InvalidInput
from dmlsched.solvers.rounding import _draw_up, g_delta_cover, g_delta_packing, scaled_round


def test_eq30_gain_for_w1_10_delta_half_matches_hand_value() -> None:
    # c = ln(3/0.5) = 1.791759; 1 + c/10 + sqrt((c/10)^2 + 2c/10) = 1.804041
    assert g_delta_cover(10.0, 0.5) == pytest.approx(1.8040406633, rel=1e-9)


def test_eq29_gain_for_fig5_parameters_matches_hand_value() -> None:
    # W2 = 15, RH + 1 = 401 (Fig. 5), δ = 0.1: c = 3 ln(12030) = 28.17955
    # 1 + c/30 − sqrt((c/30)^2 + c/15) = 0.277673
    assert g_delta_packing(15.0, 401, 0.1) == pytest.approx(0.2776729725, rel=1e-9)


@given(st.floats(0.5, 1e4), st.floats(1e-3, 1.0), st.integers(1, 5000))
def test_eq29_gain_is_in_zero_one_and_eq30_gain_exceeds_one(
    w: float, delta: float, rows: int
) -> None:
    assert 0.0 < g_delta_packing(w, rows, delta) <= 1.0
    assert g_delta_cover(w, delta) > 1.0


def test_gain_formulas_reject_bad_delta() -> None:
    with pytest.raises(InvalidInput):
        g_delta_cover(5.0, 0.0)
    with pytest.raises(InvalidInput):
        g_delta_packing(5.0, 10, 1.5)


def test_integral_input_rounds_to_itself_in_one_attempt() -> None:
    x = np.array([2.0, 0.0, 5.0])
    res = scaled_round(x, 1.0, np.random.default_rng(0), cost=np.ones(3))
    assert res.success and res.attempts == 1
    assert res.x.tolist() == [2, 0, 5] and res.cost == 7.0


def test_rounding_is_unbiased_per_coordinate() -> None:
    x = np.array([0.3, 2.75])
    rng = np.random.default_rng(1)
    draws = np.array(
        [scaled_round(x, 1.0, rng, cost=np.zeros(2), attempts=1).x for _ in range(4000)]
    )
    assert set(np.unique(draws[:, 0])) <= {0, 1} and set(np.unique(draws[:, 1])) <= {2, 3}
    assert draws.mean(axis=0) == pytest.approx(x, abs=0.05)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 8), st.floats(0.5, 1.3))
def test_a_reported_success_meets_packing_and_cover(seed: int, n: int, gain: float) -> None:
    rng = np.random.default_rng(seed)
    x_bar = rng.uniform(0, 4, n)
    b_mat = rng.uniform(0, 2, (3, n))
    b_vec = b_mat @ x_bar + rng.uniform(0, 2, 3)
    a_mat = rng.uniform(0, 1, (1, n))
    a_vec = a_mat @ x_bar - rng.uniform(0, 1, 1)
    res = scaled_round(
        x_bar, gain, rng, cost=np.ones(n), cover=(a_mat, a_vec), packing=(b_mat, b_vec), attempts=20
    )
    if res.success:
        x = res.x
        assert np.all(b_mat @ x <= b_vec + 1e-9)
        assert np.all(a_mat @ x >= a_vec - 1e-9)
        assert np.all((x == np.floor(gain * x_bar + 1e-9)) | (x == np.ceil(gain * x_bar - 1e-9)))
        assert 1 <= res.attempts <= 20
    else:
        assert res.attempts == 20 and math.isinf(res.cost)


def test_impossible_cover_fails_after_exactly_s_attempts() -> None:
    res = scaled_round(
        np.array([0.5, 0.5]),
        1.0,
        np.random.default_rng(0),
        cost=np.ones(2),
        cover=(np.ones((1, 2)), np.array([3.0])),
        attempts=7,
    )
    assert not res.success and res.attempts == 7


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 700), st.integers(0, 40), st.integers(0, 2**32 - 1))
def test_block_draws_equal_one_array_of_draws_and_leave_the_same_state(
    attempts: int, f: int, seed: int
) -> None:
    # cheapest_round's draws, taken 256 rows at a time, are the numbers (and the generator
    # state after) of one rng.random((attempts, f)) call: the rounding's bytes depend on it
    frac = np.random.default_rng(seed + 1).random(f)
    one, blocks = np.random.default_rng(seed), np.random.default_rng(seed)
    want = one.random((attempts, f)) < frac
    got = _draw_up(blocks, attempts, frac)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert blocks.bit_generator.state == one.bit_generator.state


@pytest.mark.parametrize("k", [0, 1, 5])
def test_the_constraint_products_of_candidates_are_the_same_dense_or_sparse(k: int) -> None:
    """A dense matrix is multiplied without BLAS (``dmlsched.numerics``), a sparse one by
    scipy: the same (k × rows) products, also for no candidate at all."""
    import scipy.sparse as sp

    from dmlsched.solvers.rounding import _times

    rng = np.random.default_rng(k)
    mat = rng.integers(0, 4, (3, 6)).astype(float)
    cand = rng.integers(0, 3, (k, 6)).astype(float)
    dense, sparse = _times(mat, cand), _times(sp.csr_matrix(mat), cand)
    assert dense.shape == sparse.shape == (k, 3)
    assert np.array_equal(dense, sparse)
    assert np.array_equal(dense, cand @ mat.T)
