"""curves.csv: each run's utilization over time and JCT distribution, kept beside
results.csv, resumable, sorted, and drawn (jobs, JCT CDF, utilization figures)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dmlsched.experiments import plots
from dmlsched.experiments.curves import (
    MAX_POINTS,
    append_curves,
    prune_curves,
    read_curves,
    run_curves,
    sort_curves,
)
from dmlsched.results import COLUMNS, CellKey


def test_the_jct_curve_ends_at_the_share_of_jobs_completed() -> None:
    curves = run_curves({"jct": np.array([2.0, np.nan, 0.5, 1.0]), "utilization": np.zeros((3, 4))})
    cdf = curves["jct_cdf"]
    assert [x for x, _ in cdf] == [0.5, 1.0, 2.0]
    assert [y for _, y in cdf] == [0.25, 0.5, 0.75]  # 3 of 4 jobs finished
    assert [x for x, _ in curves["utilization"]] == [0.0, 1.0, 2.0]


def test_utilization_is_averaged_over_resources_and_long_runs_are_binned() -> None:
    util = np.zeros((10_000, 2))
    util[:, 0] = 1.0  # one resource full, the other idle: half the capacity in use
    curve = run_curves({"utilization": util})["utilization"]
    assert len(curve) == MAX_POINTS
    assert curve[0] == (0.0, 0.5) and curve[1][0] == 20.0  # x: each bin's first slot
    jct = run_curves({"jct": np.arange(5_000, dtype=float)})["jct_cdf"]
    assert len(jct) == MAX_POINTS and jct[-1] == (4999.0, 1.0)  # the last job kept


def test_curves_round_trip_prune_the_orphans_of_a_kill_and_sort(tmp_path: Path) -> None:
    path = tmp_path / "curves.csv"
    a, b = CellKey("fifo", "p", 1), CellKey("drf", "p", 0)
    for key in (a, b):
        append_curves(path, "e", "cluster", key, "workload", {"jct_cdf": ((1.0, 0.5),)})
    got = read_curves(path)
    assert set(got) == {("fifo", "p", 1, "jct_cdf"), ("drf", "p", 0, "jct_cdf")}
    assert read_curves(path, {("drf", "p", 0)}).keys() == {("drf", "p", 0, "jct_cdf")}
    prune_curves(path, {("fifo", "p", 1)})  # drf's cell never reached results.csv
    assert set(read_curves(path)) == {("fifo", "p", 1, "jct_cdf")}
    append_curves(path, "e", "cluster", b, "workload", {"jct_cdf": ((2.0, 1.0),)})
    sort_curves(path, ["p"], ["drf", "fifo"])
    lines = path.read_text().splitlines()
    assert lines[1].startswith("e,cluster,drf,") and lines[2].startswith("e,cluster,fifo,")


def test_a_line_cut_by_a_kill_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "curves.csv"
    append_curves(path, "e", "cluster", CellKey("fifo", "p", 0), "w", {"u": ((0.0, 1.0),)})
    with path.open("a") as f:
        f.write("e,cluster,fifo,w,p,1,u,0.0")
    assert set(read_curves(path)) == {("fifo", "p", 0, "u")}


def _compare_rows() -> pd.DataFrame:
    rows = []
    for seed in range(3):
        for s, adm, done in (("pd-ors", 50, 48), ("fifo", 20, 6)):
            for metric, v in (
                ("admitted_jobs", adm + seed),
                ("completed_jobs", done + seed),
                ("workload_jobs", 60),
                ("workload_finishable_alone", 55),
            ):
                rows.append(("compare", "cluster", s, "workload", "synthetic", seed, metric, v))
    return pd.DataFrame(rows, columns=COLUMNS)


def test_the_comparison_figures_are_drawn_from_results_and_curves(tmp_path: Path) -> None:
    curves = {}
    for seed in range(3):
        for s in ("pd-ors", "fifo"):
            got = run_curves(
                {
                    "jct": np.array([1.0, 2.0, np.nan, 3.0 + seed]),
                    "utilization": np.full((20, 4), 0.3 if s == "fifo" else 0.6),
                }
            )
            for name, pts in got.items():
                curves[(s, "synthetic", seed, name)] = np.array(pts)
    assert plots.plot_jobs(_compare_rows(), tmp_path / "jobs.png").stat().st_size > 1000
    assert plots.plot_jct_cdf(curves, tmp_path / "cdf.png").stat().st_size > 1000
    assert plots.plot_utilization(curves, tmp_path / "u.png").stat().st_size > 1000
    assert plots.plot_jct_cdf({}, tmp_path / "none.png") is None
