"""Charnes–Cooper, Alg. 1's ε guarantee, Alg. 2 rounding, MKP (exact and PTAS)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dmlsched.solvers.knapsack import mkp_exact, mkp_ptas
from dmlsched.solvers.ratio_rounding import m_delta, smd_round
from dmlsched.solvers.sum_of_ratios import (
    Ratio,
    charnes_cooper,
    grid,
    ratio_bounds,
    solve_sum_of_ratios,
)

# Ω = {x1 + x2 ≤ 4, x ≥ 1}
A = np.array([[1.0, 1.0]])
C = np.array([4.0])
LB = np.ones(2)


def test_charnes_cooper_lp_recovers_the_fractional_optimum_by_hand():
    # min (x1 + 2)/(x2 + 1) over Ω: x1 = 1, x2 = 3 → 3/4
    r = Ratio((1.0, 0.0), 2.0, (0.0, 1.0), 1.0)
    sol = charnes_cooper(r, A, C, LB).solve()
    y, t = sol.x[:2], sol.x[2]
    assert sol.objective == pytest.approx(0.75)
    np.testing.assert_allclose(y / t, [1.0, 3.0], atol=1e-9)
    assert t == pytest.approx(1 / 4)  # t = 1/(c·x + d)
    assert ratio_bounds(r, A, C, LB) == pytest.approx((0.75, 2.5))  # max at (3, 1)


def test_grid_is_geometric_from_l_and_covers_phi():
    g = grid(1.0, 1.5, 0.1)
    np.testing.assert_allclose(g[:-1], 1.1 ** np.arange(5))  # λ = 4: 1.1^4 ≤ 1.5 < 1.1^5
    assert g[-1] == 1.5


def _brute(ratios, const, a_mat, cap, n=801, hi=30.0):
    xs = np.linspace(1.0, hi, n)
    x = np.stack(np.meshgrid(xs, xs, indexing="ij"), axis=-1).reshape(-1, 2)
    ok = np.all(x @ a_mat.T <= cap + 1e-12, axis=1)
    val = const + sum((x @ np.asarray(r.a) + r.q) / (x @ np.asarray(r.c) + r.d) for r in ratios)
    return float(val[ok].min())


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.3])
def test_alg_1_is_within_one_plus_eps_of_a_known_optimum(eps):
    # ζ(x) = 2x1 + x2 + 8/x1 + 4x1/x2 + 9/x2 on x1 + x2 ≤ 10, 2x1 ≤ 12, x ≥ 1: sync-like shape
    ratios = [
        Ratio((2.0, 1.0), 0.0, (0.0, 0.0), 1.0),
        Ratio((0.0, 0.0), 8.0, (1.0, 0.0), 0.0),
        Ratio((4.0, 0.0), 9.0, (0.0, 1.0), 0.0),
    ]
    a_mat = np.array([[1.0, 1.0], [2.0, 0.0]])
    cap = np.array([10.0, 12.0])
    res = solve_sum_of_ratios(ratios, a_mat, cap, LB, eps)
    opt = _brute(ratios, 0.0, a_mat, cap, n=361, hi=10.0)
    assert np.all(a_mat @ res.x <= cap + 1e-7) and np.all(res.x >= 1 - 1e-9)
    assert res.value <= res.psi + 1e-9  # Ψ(ν) bounds ζ(x^ν) from above
    assert res.value <= (1 + eps) * opt + 1e-6
    assert res.value >= opt * (1 - 1e-3)  # never below the optimum (up to the brute grid)


def test_alg_1_finds_the_single_ratio_optimum_exactly_and_ignores_zero_terms():
    ratios = [Ratio((1.0, 0.0), 2.0, (0.0, 1.0), 1.0), Ratio((0.0, 0.0), 0.0, (1.0, 0.0), 0.0)]
    res = solve_sum_of_ratios(ratios, A, C, LB, 0.01, constant=1.0)
    assert res.value == pytest.approx(1.75)
    assert res.grid_points == 1


def test_m_delta_follows_lemma_3_and_grows_with_w_b():
    c = 3 * np.log(2 * 4 / 0.5)
    expect = 1 + c / 20 - np.sqrt((c / 20) ** 2 + c / 10)
    assert m_delta(10.0, 4, 0.5) == pytest.approx(expect)
    assert 0 < m_delta(10.0, 4, 0.5) < m_delta(1000.0, 4, 0.5) < 1


def test_randomized_rounding_returns_a_feasible_integer_point_near_the_fraction():
    x = np.array([2.4, 1.7])
    rng = np.random.default_rng(1)

    def feasible(z):
        return bool(np.all(z >= 1) and z.sum() <= 4)

    out = smd_round(x, feasible, lambda z: float(z @ [1.0, 2.0]), rng, attempts=10)
    assert out.x is not None and feasible(out.x)
    assert set(out.x.tolist()) <= {1.0, 2.0, 3.0}
    assert np.all(np.abs(out.x - x) < 1.0) and out.attempts >= 10


def test_rounding_falls_back_to_the_floor_when_every_attempt_is_infeasible():
    out = smd_round(
        np.array([1.5, 1.5]),
        lambda z: bool(z.sum() <= 2),
        lambda z: 0.0,
        np.random.default_rng(0),
        attempts=1,
        max_attempts=1,
    )
    assert out.fallback or out.x.sum() <= 2


def _brute_mkp(u, w, c):
    best = 0.0
    for bits in itertools.product([0, 1], repeat=len(u)):
        x = np.array(bits, dtype=bool)
        if np.all(w[x].sum(axis=0) <= c):
            best = max(best, u[x].sum())
    return best


@pytest.mark.parametrize("seed", range(5))
def test_mkp_milp_is_exact_and_ptas_is_feasible_and_exact_with_large_subsets(seed):
    rng = np.random.default_rng(seed)
    n = 8
    u = rng.uniform(1, 10, n)
    w = rng.uniform(1, 5, (n, 2))
    c = np.array([8.0, 9.0])
    opt = _brute_mkp(u, w, c)
    x = mkp_exact(u, w, c)
    assert u[x].sum() == pytest.approx(opt)
    for k in (1, 2):
        xp = mkp_ptas(u, w, c, k)
        assert np.all(w[xp].sum(axis=0) <= c + 1e-9)
        assert u[xp].sum() <= opt + 1e-9
    assert u[mkp_ptas(u, w, c, n)].sum() == pytest.approx(opt)
