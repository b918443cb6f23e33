"""Paired rank comparison of two runs of one experiment."""

from __future__ import annotations

import math

import pytest

from dmlsched.experiments.rank_change import main, per_seed, rank_changes, render
from dmlsched.results import CellKey, append_rows, cell_rows


def _write(path, values):
    for (point, sched, seed), metrics in values.items():
        append_rows(path, cell_rows("x", "cluster", CellKey(sched, point, seed), "jobs", metrics))


def test_a_reversed_pair_is_found_and_a_tie_is_not_significant(tmp_path, capsys):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    seeds = range(8)
    # first run: p beats q by 1 + seed on every seed; second: q beats p the same way
    _write(a, {("10", "p", s): {"u": 10.0 + s} for s in seeds} | {
        ("10", "q", s): {"u": 9.0 - 0.0 * s} for s in seeds})  # fmt: skip
    _write(b, {("10", "p", s): {"u": 0.0} for s in seeds} | {
        ("10", "q", s): {"u": 1.0 + s} for s in seeds})  # fmt: skip
    (c,) = rank_changes(per_seed([a], "u"), per_seed([b], "u"), ["p", "q"])
    assert c.mean_first == pytest.approx(4.5) and c.mean_second == pytest.approx(-4.5)
    assert c.p_first < 0.01 and c.p_second < 0.01 and c.verdict() == "reversed"
    tie = rank_changes(per_seed([b], "u"), per_seed([b], "u"), ["p", "p"])
    assert tie and math.isnan(tie[0].p_first) and tie[0].verdict() == "neither"
    assert "1 reversed" in render(per_seed([a], "u"), per_seed([b], "u"), ["p", "q"])
    main([str(a), "--vs", str(b), "--metric", "u", "--schedulers", "p,q"])
    assert "reversed" in capsys.readouterr().out


def test_the_share_of_work_done_counts_unadmitted_jobs_as_zero(tmp_path):
    a = tmp_path / "a.csv"
    _write(a, {("20", "p", 0): {"mean_progress": 0.5, "admitted_jobs": 4.0}})
    assert per_seed([a], "share_of_work_done") == {("20", "p", 0): pytest.approx(0.1)}
