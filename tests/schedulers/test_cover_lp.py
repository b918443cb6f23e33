"""The sorted pass of PD-ORS's class LP against HiGHS: certified bounds are optimal."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from dmlsched.rng import make_rng
from dmlsched.schedulers._shared.cover_lp import sorted_pass
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.synthetic import synthetic_cluster


def _highs(count, room, a, b, cw, cs, m, ratio, mode):  # type: ignore[no-untyped-def]
    """The class LP by HiGHS (scipy's linprog): min cw·W + cs·S over the packing rows,
    ΣW ≥ m and the PS row(s); None if infeasible."""
    C, R = room.shape
    cap = count[:, None] * np.maximum(room, 0.0)
    rows, rhs = [], []
    for c in range(C):
        for r in range(R):
            row = np.zeros(2 * C)
            row[c], row[C + c] = a[r], b[r]
            rows.append(row)
            rhs.append(cap[c, r])
    cover = np.concatenate([-np.ones(C), np.zeros(C)])
    rows.append(cover)
    rhs.append(-m)
    if mode == "sync":
        ps = np.concatenate([ratio * np.ones(C), -np.ones(C)])  # ratio ΣW − ΣS ≤ 0
        rows.append(ps)
        rhs.append(0.0)
    else:
        rows.append(np.concatenate([ratio * np.ones(C), -np.ones(C)]))
        rhs.append(0.0)
        rows.append(np.concatenate([np.zeros(C), -np.ones(C)]))  # ΣS ≥ 1
        rhs.append(-1.0)
        rows.append(np.concatenate([-np.ones(C), np.ones(C)]))  # ΣS ≤ ΣW
        rhs.append(0.0)
    res = linprog(np.concatenate([cw, cs]), A_ub=np.array(rows), b_ub=np.array(rhs), method="highs")
    return res.fun if res.status == 0 else None


def _instance(rng: np.random.Generator):  # type: ignore[no-untyped-def]
    C, R = int(rng.integers(1, 7)), int(rng.integers(1, 5))
    count = rng.integers(1, 6, C).astype(float)
    room = rng.integers(-2, 30, (C, R)).astype(float)
    a = rng.integers(0, 6, R).astype(float)
    b = rng.integers(0, 6, R).astype(float)
    a[rng.integers(R)] = max(a.max(), 1.0)
    b[rng.integers(R)] = max(b.max(), 1.0)
    cw = np.round(rng.random(C), 1) + 1e-6  # rounded: ties between classes
    cs = np.round(rng.random(C), 1) + 1e-6
    mode = "sync" if rng.random() < 0.7 else "async"
    ratio = 1.0 / int(rng.integers(1, 6)) if mode == "sync" else float(rng.random()) * 0.3
    ms = np.arange(1, int(rng.integers(2, 40)), dtype=float)
    return count, room, a, b, cw, cs, ms, ratio, mode


def test_every_certified_bound_is_the_lp_optimum_and_a_feasible_point() -> None:
    rng = np.random.default_rng(16)
    certified = checked = 0
    for _ in range(150):
        count, room, a, b, cw, cs, ms, ratio, mode = _instance(rng)
        res = sorted_pass(count, room, a, b, cw, cs, ms, ratio, mode)
        cap = count[:, None] * np.maximum(room, 0.0)
        for i, m in enumerate(ms):
            checked += 1
            if not res.ok[i]:
                continue
            certified += 1
            w, s = res.w[i], res.s[i]
            # feasible: packing rows, the workload row, the PS row(s)
            assert np.all(w[:, None] * a + s[:, None] * b <= cap + 1e-7 * np.maximum(1, cap))
            assert w.sum() >= m - 1e-7 and np.all(w >= 0) and np.all(s >= 0)
            need = ratio * m if mode == "sync" else max(1.0, ratio * m)
            assert s.sum() >= need - 1e-7
            opt = _highs(count, room, a, b, cw, cs, m, ratio, mode)
            assert opt is not None
            assert res.objective[i] == pytest.approx(opt, rel=1e-7, abs=1e-9)
    assert certified > checked / 2  # the pass is not a vacuous check


def test_a_bound_the_pass_cannot_meet_is_left_to_highs() -> None:
    # one class with room for 3 workers: m = 4 is infeasible for the pass (and the LP)
    res = sorted_pass(
        np.array([1.0]),
        np.array([[3.0]]),
        np.array([1.0]),
        np.array([0.0]),
        np.array([1.0]),
        np.array([1.0]),
        np.array([3.0, 4.0]),
        0.5,
        "sync",
    )
    assert not res.ok.any()  # no PS room at all (b = 0 everywhere): never certified


def test_pd_ors_with_the_pass_and_with_highs_reach_the_same_utility_on_a_small_run() -> None:
    wl = synthetic_cluster(20, 8, 20, make_rng(5))
    got = [
        simulate(
            "cluster", wl, make_scheduler("cluster", "pd-ors+", external_lp=lp), make_rng(6)
        ).metrics["total_utility"]
        for lp in ("pass", "highs")
    ]
    # the same LPs, solved exactly by both; ties may pick other optima, so allow 1 %
    assert got[0] == pytest.approx(got[1], rel=0.01)
