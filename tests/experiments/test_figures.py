"""Figures a researcher can publish: words and units, clipped intervals, tables, paper values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dmlsched.experiments.plots as plots
from dmlsched.experiments.catalogue import PaperValue, get
from dmlsched.experiments.diagnose import explain_completions
from dmlsched.experiments.metrics import cell_stats, describe, format_cell, param_label
from dmlsched.results import COLUMNS


def frame(metric: str, cells: dict[tuple[str, str], list[float]]) -> pd.DataFrame:
    rows = [
        ("e", "cluster", s, "jobs", p, seed, metric, v)
        for (s, p), vs in cells.items()
        for seed, v in enumerate(vs)
    ]
    return pd.DataFrame(rows, columns=COLUMNS)


def test_every_catalogue_metric_and_parameter_reads_in_words_with_a_unit() -> None:
    from dmlsched.experiments.catalogue import all_experiments
    from dmlsched.experiments.metrics import _PARAMS

    for e in all_experiments():
        label = param_label(e.param).replace("G_δ", "").replace("c_i", "")
        assert e.param in _PARAMS and "_" not in label
        for m in e.metrics:
            d = describe(m)
            names = ("P_i", "P_f", "A_online", "A_fractional", "A_round")  # the papers' symbols
            label = d.label
            for n in names:
                label = label.replace(n, "")
            assert "_" not in label and d.unit, m
    assert describe("competitive_ratio_eps0.1").label == "Competitive ratio, ε = 0.1"
    assert describe("mean_utilization_gpu").axis == "Mean GPU utilization (fraction of capacity)"


def test_intervals_never_leave_the_metrics_domain() -> None:
    c = cell_stats(np.array([0.0, 0.0, 30.0]), describe("total_utility"))
    assert c.low == 0.0 and c.high > c.mean  # the t-interval reaches below 0: clipped
    assert format_cell(c).startswith("10 [0, ")
    u = cell_stats(np.array([0.99, 1.0, 0.5]), describe("mean_utilization_gpu"))
    assert u.high <= 1.0


def test_one_seed_says_so_and_never_prints_plus_minus_zero() -> None:
    text = format_cell(cell_stats(np.array([3.0]), describe("completed_jobs")))
    assert text == "3 (1 seed)" and "±" not in text


def test_an_undefined_mean_is_marked() -> None:
    text = format_cell(cell_stats(np.array([np.nan, np.nan]), describe("mean_jct")))
    assert text.startswith("undefined")


def _drawn(monkeypatch: pytest.MonkeyPatch) -> list:
    """The figures plots saves, kept open for inspection."""
    figs: list = []
    real = plots._save

    def keep(fig, path, formats):  # type: ignore[no-untyped-def]
        figs.append(fig)
        fig.savefig(path)
        return path

    monkeypatch.setattr(plots, "_save", keep)
    assert real is not None
    return figs


def test_a_single_point_is_horizontal_bars_with_intervals_not_a_picture_of_a_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figs = _drawn(monkeypatch)
    df = frame("total_cost", {("mlbroker", "3dc"): [1.0, 2.0], ("local", "3dc"): [3.0, 3.5]})
    paper = (PaperValue("total_cost", "mlbroker", ("3dc",), 1070.1, "Table 4"),)
    out = plots.plot_metric(df, "total_cost", "setup", "t", tmp_path / "a.png", "bar", paper=paper)
    assert out is not None and out.stat().st_size > 0
    ax = figs[0].axes[0]
    assert not ax.tables  # a chart, not a table
    assert [t.get_text() for t in ax.get_yticklabels()] == ["mlbroker", "local"]
    bars = [p for p in ax.patches if p.get_width() > 0]
    assert len(bars) == 2 and all(b.get_height() < 1 for b in bars)  # horizontal bars
    assert ax.get_title().startswith("Total cost")
    texts = {t.get_text() for t in ax.texts}
    assert "3.25 ± 3.18" in texts  # the value at the bar's end
    # the paper's 1,070 stays in view: the axis reaches it
    assert ax.get_xlim()[1] >= 1070.1


def test_sweep_error_bars_are_dodged_so_they_never_overlap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figs = _drawn(monkeypatch)
    cells = {(s, p): [1.0, 2.0, 3.0] for s in ("a", "b", "c") for p in ("20", "60", "100")}
    df = frame("total_utility", cells)
    plots.plot_metric(df, "total_utility", "jobs", "t", tmp_path / "x.png")
    ax = figs[0].axes[0]
    xs = sorted({round(float(x), 6) for line in ax.lines for x in line.get_xdata()})
    assert len(xs) == 9  # 3 schedulers × 3 points, each at its own x
    near_20 = [x for x in xs if x < 40]
    assert len(near_20) == 3 and max(near_20) - min(near_20) < 40 * 0.5  # beside, not apart


def test_an_outlying_interval_is_cut_and_noted_instead_of_squeezing_the_curves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pdors-fig7: one interval reaching 2,980 pressed every curve into the bottom 20%."""
    figs = _drawn(monkeypatch)
    cells = {("a", p): [100.0, 110.0, 120.0] for p in ("20", "60", "100")}
    cells |= {("b", p): [90.0, 95.0, 100.0] for p in ("20", "60")}
    cells[("b", "100")] = [0.0, 10.0, 400.0]  # one wild seed: interval to ~690
    df = frame("total_utility", cells)
    plots.plot_metric(df, "total_utility", "jobs", "", tmp_path / "y.png")
    ax = figs[0].axes[0]
    low, high = ax.get_ylim()
    assert low == 0.0 and high < 200  # the axis follows the means, not the wild interval
    notes = [t.get_text() for t in ax.texts if "reaches" in t.get_text()]
    assert notes and "b at 100 reaches" in notes[0]


def test_each_figure_is_titled_with_its_own_metric_not_the_experiments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figs = _drawn(monkeypatch)
    cells = {(s, p): [1.0, 2.0] for s in ("a", "b") for p in ("20", "60")}
    plots.plot_metric(
        frame("completed_jobs", cells),
        "completed_jobs",
        "jobs",
        "total utility vs number of jobs",
        tmp_path / "completed_jobs.png",
        figure="PD-ORS TNSE 2022 Fig. 7",
    )
    title = figs[0].axes[0].get_title()
    assert title.startswith("Completed jobs vs jobs I")
    assert "utility" not in title and "PD-ORS TNSE 2022 Fig. 7" in title


def test_vector_figures_are_written_beside_the_png_with_the_same_bytes_each_time(
    tmp_path: Path,
) -> None:
    cells = {(s, p): [1.0, 2.0] for s in ("a", "b") for p in ("20", "60")}
    df = frame("total_utility", cells)
    sizes = []
    for run in ("1", "2"):
        d = tmp_path / run
        d.mkdir()
        plots.plot_metric(df, "total_utility", "jobs", "", d / "u.png", formats=("pdf", "svg"))
        assert {p.name for p in d.iterdir()} == {"u.png", "u.pdf", "u.svg"}
        sizes.append({p.name: p.read_bytes() for p in d.iterdir()})
    assert sizes[0] == sizes[1]


def test_a_sweep_draws_paper_values_and_marks_undefined_means(tmp_path: Path) -> None:
    df = frame(
        "competitive_ratio",
        {("pd-ors", "2"): [1.0, 1.1], ("pd-ors", "4"): [np.nan, np.nan], ("x", "2"): [2.0, 2.0]},
    )
    df = pd.concat([df, frame("competitive_ratio", {("x", "4"): [2.0, 2.5]})])
    paper = (PaperValue("competitive_ratio", "pd-ors", (2, 4), (1.0, 1.4), "Sec. V text"),)
    out = plots.plot_metric(
        df, "competitive_ratio", "jobs", "t", tmp_path / "b.png", figure="Fig. 10", paper=paper
    )
    assert out is not None and out.stat().st_size > 1000


def test_a_mean_a_hair_below_the_domain_is_drawn_without_a_negative_bar(tmp_path: Path) -> None:
    """mlBroker Fig. 8's offline optimum reported a transfer cost of −4.8e-9 (LP
    tolerance) on one seed of ten, zero on the others: the mean lies below the
    interval clipped at 0, and matplotlib refuses a negative error bar."""
    df = frame("cost_transfer", {("opt", "400"): [-4.8e-9] + [0.0] * 9})
    df = pd.concat([df, frame("cost_transfer", {("opt", "500"): [1.0, 2.0]})])
    out = plots.plot_metric(df, "cost_transfer", "jobs", "t", tmp_path / "c.png")
    assert out is not None and out.stat().st_size > 1000


def test_report_prints_the_papers_values_under_the_table(tmp_path: Path) -> None:
    from dmlsched.experiments.report import render_report

    exp = get("mlbroker-table4")
    df = frame("total_cost", {(s, "testbed"): [1.0] for s in exp.schedulers})
    df["experiment"] = exp.id
    df["param"] = exp.param
    df.to_csv(tmp_path / "results.csv", index=False)
    (tmp_path / "config.json").write_text('{"experiment": "mlbroker-table4"}')
    text = render_report(tmp_path).read_text()
    assert "mlbroker at testbed: 1,070.1 (Table 4)" in text
    assert "## Total cost (USD) — `total_cost`" in text
    assert "one seed, so cells are single runs" in text


def test_the_demo_explains_why_few_jobs_complete() -> None:
    rows = []
    for s, adm, done, w in (("drf", 60, 0, 12.0), ("pd-ors", 7, 7, 95.0)):
        for metric, v in (
            ("admitted_jobs", adm),
            ("completed_jobs", done),
            ("mean_workers", w),
            ("mean_progress", 0.08 if s == "drf" else 1.0),
            ("workload_jobs", 60),
            ("workload_horizon", 20),
            ("workload_finishable_alone", 11),
            ("workload_alone_median_slots", 28),
            ("workload_alone_median_workers", 97),
        ):
            rows.append(("compare", "cluster", s, "workload", "synthetic", 0, metric, v))
    lines = explain_completions(pd.DataFrame(rows, columns=COLUMNS))
    assert "only 11 of the 60 jobs could finish within the horizon of 20 slots" in lines[0]
    assert len(lines) == 2 and lines[1].startswith("drf admitted 60 and completed 0 jobs")
    assert "12 workers on average" in lines[1] and "8% of their work" in lines[1]
