"""Verdicts on paired statistics: labels, bands, vacuity, trends (experiments.claims)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dmlsched.experiments.claims import (
    Across,
    Beats,
    Bound,
    Trend,
    check_both,
    decide,
    judge,
    mean_interval,
)
from dmlsched.results import COLUMNS


def _df(rows: list[tuple[str, object, int, str, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [("e", "cluster", s, "jobs", str(v), seed, m, x) for s, v, seed, m, x in rows],
        columns=COLUMNS,
    )


def _pairs(a: list[float], b: list[float], point: object = 1) -> pd.DataFrame:
    rows = [("a", point, i, "u", x) for i, x in enumerate(a)]
    rows += [("b", point, i, "u", x) for i, x in enumerate(b)]
    return _df(rows)


def test_the_interval_is_scipys_student_t_interval() -> None:
    v = np.array([1.0, 2.5, 2.0, 4.0, 3.1])
    iv = mean_interval(v)
    lo, hi = stats.t.interval(0.95, v.size - 1, loc=v.mean(), scale=stats.sem(v))
    assert (iv.low, iv.high) == pytest.approx((lo, hi))
    assert mean_interval([3.0]).low == -math.inf  # one seed: no interval
    assert mean_interval([2.0, 2.0, 2.0]).low == 2.0  # no spread: zero width
    assert mean_interval([1.0, math.inf]).mean == math.inf  # an infinite value is a value
    assert math.isnan(mean_interval([math.inf, -math.inf]).mean)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-100, 100), min_size=2, max_size=12),
    st.lists(st.floats(-5, 5), min_size=2, max_size=12),
)
def test_a_paired_interval_that_holds_zero_is_never_held_or_not_held(
    base: list[float], delta: list[float]
) -> None:
    n = min(len(base), len(delta))
    a = [base[i] + delta[i] for i in range(n)]
    b = base[:n]
    r = Beats("u", "a", ("b",)).check(_pairs(a, b))
    d = np.array(a) - np.array(b)
    half = stats.t.ppf(0.975, n - 1) * d.std(ddof=1) / np.sqrt(n)
    lo, hi = d.mean() - half, d.mean() + half
    if min(abs(lo), abs(hi)) < 1e-9 * (1.0 + abs(d.mean())):
        return  # on the edge: floating point decides, not the rule
    if lo <= 0 <= hi:
        assert r.label not in ("HELD", "NOT HELD")
    elif lo > 0:
        assert r.label in ("HELD", "TIE")
    else:
        assert r.label in ("NOT HELD", "TIE")


def test_the_issue_s_two_seed_held_is_undecided_now() -> None:
    # pdors-fig7 --quick --seeds 2 used to print "HELD … 170.2 ± 7.8e+02 vs drf 146.9 ± 4.9e+02"
    r = Beats("u", "a", ("b",)).check(_pairs([231.6, 108.8], [185.6, 108.2]))
    assert r.label == "UNDECIDED"
    assert r.seeds == 2 and r.seeds_note == "2 seeds < 5"


def test_exact_ties_and_tiny_shortfalls_are_ties() -> None:
    same = [1107.0, 1050.0, 1160.0, 1090.0, 1130.0]
    assert Beats("u", "a", ("b",)).check(_pairs(same, same)).label == "TIE"
    short = [x * (1 - 1.6e-4) for x in same]
    assert Beats("u", "a", ("b",)).check(_pairs(short, same)).label == "TIE"
    # "at least as good" (a + variant): a tie holds, a clear loss does not
    assert Beats("u", "a", ("b",), ties=True).check(_pairs(short, same)).label == "HELD"
    worse = [x * 0.9 for x in same]
    assert Beats("u", "a", ("b",), ties=True).check(_pairs(worse, same)).label == "NOT HELD"


def test_clear_wins_and_losses_and_every_point_must_hold() -> None:
    a = [10.0, 12.0, 11.0, 13.0, 12.5]
    b = [5.0, 6.0, 5.5, 6.2, 6.1]
    assert Beats("u", "a", ("b",)).check(_pairs(a, b)).label == "HELD"
    assert Beats("u", "b", ("a",)).check(_pairs(a, b)).label == "NOT HELD"
    assert Beats("u", "a", ("b",), higher=False).check(_pairs(a, b)).label == "NOT HELD"
    two = pd.concat([_pairs(a, b, 1), _pairs(b, a, 2)])
    r = Beats("u", "a", ("b",)).check(two)
    assert r.label == "NOT HELD" and "at 2:" in r.evidence


def test_a_bound_is_decided_on_its_interval_not_its_mean() -> None:
    wide = _df([("a", 1, i, "r", x) for i, x in enumerate([1.0, 1.7, 1.2])])  # mean 1.3
    assert Bound("r", "a", "<=", 1.4).check(wide).label == "UNDECIDED"
    tight = _df([("a", 1, i, "r", x) for i, x in enumerate([1.30, 1.31, 1.29, 1.30, 1.30])])
    assert Bound("r", "a", "<=", 1.4).check(tight).label == "HELD"
    assert Bound("r", "a", ">=", 1.4).check(tight).label == "NOT HELD"
    inf = _df([("a", 1, i, "r", x) for i, x in enumerate([1.1, math.inf, 1.2])])
    assert Bound("r", "a", "<=", 1.4).check(inf).label == "NOT HELD"  # the mean is infinite
    flat = _df([("a", 1, i, "r", 1.0 + 1e-6 * i) for i in range(5)])
    assert Bound("r", "a", ">", 1.0).check(flat).label == "TIE"  # strictly: inside the band


def test_a_claim_every_baseline_passes_is_vacuous() -> None:
    rows = [(s, 1, i, "ratio", v + 0.01 * i) for i in range(5) for s, v in
            (("alg", 1.05), ("alg+", 1.02), ("fifo", 1.10), ("drf", 1.08))]  # fmt: skip
    df = _df(rows)
    claim = Bound("ratio", "alg", "<=", 1.25)
    r = judge(claim, df, ("alg", "alg+", "fifo", "drf"))
    assert r.label == "VACUOUS" and "fifo HELD" in r.reference and "drf HELD" in r.reference
    printed, plus, rp = check_both(claim, df, ("alg", "alg+", "fifo", "drf"))
    assert printed.label == "VACUOUS" and plus == "alg+" and rp is not None
    assert rp.label == "VACUOUS"  # alg (the printed twin) is never its reference
    # one baseline that fails the bound: the claim can fail, so it is not vacuous
    df2 = _df([*rows, *(("bad", 1, i, "ratio", 3.0 + 0.1 * i) for i in range(5))])
    r2 = judge(claim, df2, ("alg", "alg+", "fifo", "drf", "bad"))
    assert r2.label == "HELD" and "bad NOT HELD" in r2.reference
    # a declared trivial policy beating the losers too makes a Beats claim vacuous
    beats = Beats("ratio", "drf", ("fifo",), higher=False, reference=("alg",))
    assert judge(beats, df, ("alg", "fifo", "drf")).label == "VACUOUS"
    alone = judge(Bound("ratio", "alg", "<=", 1.25), _df(rows[:1] + rows[4:5]), ("alg",))
    assert "none in this run" in alone.reference


def test_trend_claims_are_checked_on_the_end_points() -> None:
    up = _df([("a", p, i, "u", p * 10.0 + i) for p in (1, 2, 3) for i in range(5)])
    assert Trend("u", "a").check(up).label == "HELD"
    assert Trend("u", "a", rising=False).check(up).label == "NOT HELD"
    flat = _df([("a", p, i, "u", 100.0 + i + 1e-3 * p) for p in (1, 2) for i in range(5)])
    assert Trend("u", "a").check(flat).label == "TIE"
    gain = _df(
        [("a", p, i, "u", 10.0 * p + i) for p in (1, 2) for i in range(5)]
        + [("b", p, i, "u", 5.0 * p + i) for p in (1, 2) for i in range(5)]
    )
    assert Trend("u", "a", versus="b").check(gain).label == "HELD"  # gain 5 → 10


def test_across_pairs_two_experiments_by_point_and_seed() -> None:
    here = _df([("a", p, i, "g", 1.2 + 0.01 * i) for p in (10, 30) for i in range(5)])
    there = _df([("a", p, i, "g", 1.5 + 0.01 * i) for p in (10, 30) for i in range(5)])
    claim = Across("g", "a", "other", higher=False)
    assert claim.check(here).label == "NOT RUN"
    assert claim.check(here, {"other": there}).label == "HELD"
    assert Across("g", "a", "other").check(here, {"other": there}).label == "NOT HELD"


def test_decide_follows_the_documented_rules() -> None:
    from dmlsched.experiments.claims import Interval

    def iv(lo: float, hi: float) -> Interval:
        return Interval((lo + hi) / 2, lo, hi, 5)

    assert decide(iv(0.1, 0.3), band=0.5) == "TIE"
    assert decide(iv(0.1, 0.9), band=0.5) == "HELD"
    assert decide(iv(-0.9, -0.1), band=0.5) == "NOT HELD"
    assert decide(iv(-0.9, 0.9), band=0.5) == "UNDECIDED"
    assert decide(iv(-0.4, 0.1), band=0.5, strict=False) == "HELD"
    assert decide(iv(-0.9, -0.6), band=0.5, strict=False) == "NOT HELD"


def test_a_flat_trend_holds_inside_its_band_and_fails_outside_it() -> None:
    flat = _df([("a", p, i, "u", 100.0 + i + 0.5 * (p == 2)) for p in (1, 2) for i in range(5)])
    assert Trend("u", "a", rising=None, band=0.05).check(flat).label == "HELD"
    steep = _df([("a", p, i, "u", 100.0 + i + 30.0 * (p == 2)) for p in (1, 2) for i in range(5)])
    assert Trend("u", "a", rising=None, band=0.05).check(steep).label == "NOT HELD"


def test_trend_end_points_can_be_chosen_among_the_sweep() -> None:
    rows = [("a", f"async:{n}", i, "r", n + 0.1 * i) for n in (10, 30) for i in range(5)]
    rows += [("a", f"sync:{n}", i, "r", 100.0 - n + 0.1 * i) for n in (10, 30) for i in range(5)]
    df = _df(rows)
    assert Trend("r", "a", points=("async:10", "async:30")).check(df).label == "HELD"
    assert Trend("r", "a", points=("sync:10", "sync:30")).check(df).label == "NOT HELD"


def test_across_compares_two_metrics_of_one_experiment() -> None:
    df = _df(
        [("a", p, i, "small", 1.1 + 0.01 * i) for p in (1, 2) for i in range(5)]
        + [("a", p, i, "large", 1.3 + 0.01 * i) for p in (1, 2) for i in range(5)]
    )
    claim = Across("small", "a", other_metric="large", higher=False)
    assert claim.needs == () and claim.check(df).label == "HELD"


def test_a_printed_factor_scales_the_baseline() -> None:
    a = [76.0, 80.0, 72.0, 78.0, 74.0]
    b = [100.0, 104.0, 97.0, 101.0, 99.0]  # a ≈ 0.76 × b
    r = Beats("u", "a", ("b",), higher=False, factor=0.9).check(_pairs(a, b))
    assert r.label == "HELD" and "0.9 × b" in r.text
    assert Beats("u", "a", ("b",), higher=False, factor=0.6).check(_pairs(a, b)).label == "NOT HELD"


def test_a_reading_of_the_subject_is_never_its_reference() -> None:
    rows = [(s, p, i, "u", p * 10.0 + i) for s in ("alg", "alg-b", "alg+") for p in (1, 2)
            for i in range(5)]  # fmt: skip
    df = _df(rows)
    series = {"alg-b": ("alg", {"reading": "b"})}
    claim = Trend("u", "alg-b")
    r = judge(claim, df, ("alg", "alg-b", "alg+"), series=series)
    assert r.label == "HELD" and "none in this run" in r.reference
