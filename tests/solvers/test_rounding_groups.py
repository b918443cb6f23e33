"""Eq. (27)–(28) drawn per group of identical coordinates (``cheapest_round_groups``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.solvers.rounding import _first_distinct, cheapest_round, cheapest_round_groups


def _all(cand: np.ndarray) -> np.ndarray:
    return np.ones(cand.shape[0], dtype=bool)


def test_integral_groups_round_to_their_totals_in_one_attempt() -> None:
    # 3 coordinates of 2 and 4 of 0.5 scaled by 2 (= 1): totals 6 and 4, no draw
    res = cheapest_round_groups(
        np.array([2.0, 0.5]),
        np.array([3, 4]),
        2.0,
        np.random.default_rng(0),
        cost=np.array([1.0, 3.0]),
        attempts=50,
        accept=_all,
    )
    assert res.x.tolist() == [12, 4] and res.cost == 24.0 and res.attempts == 1


def test_two_halves_sum_to_0_1_2_with_probabilities_quarter_half_quarter() -> None:
    # by hand: two coordinates of 0.5, each up w.p. 1/2: P(0) = 1/4, P(1) = 1/2, P(2) = 1/4
    rng = np.random.default_rng(3)
    sums = [
        int(
            cheapest_round_groups(
                np.array([0.5]), np.array([2]), 1.0, rng, cost=np.ones(1), attempts=1, accept=_all
            ).x[0]
        )
        for _ in range(8000)
    ]
    freq = np.bincount(sums, minlength=3) / len(sums)
    assert freq == pytest.approx([0.25, 0.5, 0.25], abs=0.02)


def test_the_cheapest_feasible_draw_is_kept_and_attempts_count_to_the_first() -> None:
    # the draws are rng.binomial(n, f, (S, groups)); accept only sums >= 3 of group 0
    x_bar, count = np.array([0.4, 0.7]), np.array([10, 3])
    want = np.random.default_rng(5).binomial(count, x_bar, size=(40, 2))
    res = cheapest_round_groups(
        x_bar,
        count,
        1.0,
        np.random.default_rng(5),
        cost=np.array([1.0, 10.0]),
        attempts=40,
        accept=lambda cand: cand[:, 0] >= 3,
    )
    ok = np.flatnonzero(want[:, 0] >= 3)
    costs = want[ok] @ np.array([1.0, 10.0])
    assert res.x.tolist() == want[ok[np.argmin(costs)]].tolist()
    assert res.attempts == ok[0] + 1


def test_no_feasible_draw_fails_after_s_attempts() -> None:
    res = cheapest_round_groups(
        np.array([0.5]),
        np.array([4]),
        1.0,
        np.random.default_rng(0),
        cost=np.ones(1),
        attempts=9,
        accept=lambda cand: cand[:, 0] > 4,
    )
    assert not res.success and res.attempts == 9 and math.isinf(res.cost)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0.0, 5.0), st.integers(1, 40)), min_size=1, max_size=5),
    st.floats(0.5, 1.5),
    st.integers(0, 2**32 - 1),
)
def test_group_sums_are_what_a_per_coordinate_rounding_could_sum_to(
    groups: list[tuple[float, int]], gain: float, seed: int
) -> None:
    # a group's total is between n⌊x'⌋ and n⌈x'⌉ (the sums of the per-coordinate
    # rounding), and its mean over draws is G_δ · n x̄, the LP's fractional total
    # scaled: the expectation Eq. (27)–(28) keep
    x_bar = np.array([g[0] for g in groups])
    count = np.array([g[1] for g in groups])
    xs = gain * x_bar
    lo, hi = count * np.floor(xs + 1e-9), count * np.ceil(xs - 1e-9)
    rng = np.random.default_rng(seed)
    seen = []
    for _ in range(300):
        res = cheapest_round_groups(
            x_bar, count, gain, rng, cost=np.zeros(x_bar.size), attempts=1, accept=_all
        )
        assert np.all(res.x >= lo) and np.all(res.x <= hi)
        seen.append(res.x)
    mean = np.mean(seen, axis=0)
    sd = np.sqrt(count * 0.25 / 300)  # the binomial's largest standard error
    assert np.all(np.abs(mean - count * xs) <= 5 * sd + 1e-9)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 6), st.integers(1, 5))
def test_per_group_and_per_coordinate_roundings_reach_the_same_cheapest_sums_distribution(
    seed: int, n: int, groups: int
) -> None:
    # the same Alg. 4 Steps 10-12 on a cover row Σ x ≥ a, drawn per coordinate (each
    # group expanded to n coordinates) and per group: the cheapest feasible totals
    # have the same distribution, compared by their means over many calls
    gen = np.random.default_rng(seed)
    x_bar = gen.uniform(0, 2, groups)
    cost = gen.uniform(1, 2, groups)
    need = float(np.floor(n * x_bar.sum()))
    g_rng, m_rng = np.random.default_rng(seed + 1), np.random.default_rng(seed + 2)
    by_group, by_coord = [], []
    for _ in range(400):
        rg = cheapest_round_groups(
            x_bar, np.full(groups, n), 1.0, g_rng, cost=cost, attempts=4,
            accept=lambda c: c.sum(axis=1) >= need,
        )  # fmt: skip
        rm = cheapest_round(
            np.repeat(x_bar, n), 1.0, m_rng, cost=np.repeat(cost, n), attempts=4,
            accept=lambda c: c.sum(axis=1) >= need,
        )  # fmt: skip
        by_group.append(rg.cost if rg.success else np.nan)
        by_coord.append(rm.cost if rm.success else np.nan)
    a, b = np.array(by_group), np.array(by_coord)
    assert abs(np.isnan(a).mean() - np.isnan(b).mean()) <= 0.2
    fa, fb = a[~np.isnan(a)], b[~np.isnan(b)]
    if fa.size > 30 and fb.size > 30:
        se = math.sqrt(fa.var() / fa.size + fb.var() / fb.size)
        assert abs(fa.mean() - fb.mean()) <= 5 * se + 1e-6


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 400), st.integers(1, 6), st.integers(1, 50))
def test_distinct_draws_are_found_at_their_first_index_by_key_or_by_bytes(
    seed: int, rows: int, cols: int, top: int
) -> None:
    # the mixed-radix keys and the byte-string sort find the same first occurrences,
    # and both are the naive first index of every distinct row
    gen = np.random.default_rng(seed)
    bound = gen.integers(0, top + 1, cols)
    draws = gen.integers(0, bound + 1, size=(rows, cols))
    seen: dict[tuple[int, ...], int] = {}
    for i, row in enumerate(map(tuple, draws.tolist())):
        seen.setdefault(row, i)
    want = sorted(seen.values())
    assert _first_distinct(draws, bound).tolist() == want
    assert _first_distinct(draws, np.full(cols, 2**40)).tolist() == want  # bytes
