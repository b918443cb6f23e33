"""Sweeps: deterministic bytes, resumable after interruption, report from CSV alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from dmlsched.errors import InvalidInput
from dmlsched.experiments.catalogue import get
from dmlsched.experiments.claims import Beats, Bound, mean_ci
from dmlsched.experiments.report import render_report
from dmlsched.experiments.runner import RunConfig, run_experiment
from dmlsched.results import COLUMNS, read_results
from tests.experiments.tiny import tiny

EXP = tiny("test-sweep", points=(3, 5), claims=(Bound("admitted_jobs", "drf", ">=", 0.0),))


class Stop(Exception):
    pass


def test_same_sweep_twice_gives_identical_bytes(tmp_path: Path) -> None:
    a = run_experiment(EXP, tmp_path / "a", RunConfig(seeds=2, workers=2))
    b = run_experiment(EXP, tmp_path / "b", RunConfig(seeds=2, workers=1))
    assert a.read_bytes() == b.read_bytes()
    assert a.read_text().splitlines()[0] == ",".join(COLUMNS)


def test_interrupted_sweep_resumes_only_missing_cells(tmp_path: Path) -> None:
    full = run_experiment(EXP, tmp_path / "full", RunConfig(seeds=2, workers=1))
    seen: list[tuple[int, int]] = []

    def stop_after_three(done: int, total: int) -> None:
        seen.append((done, total))
        if done == 3:
            raise Stop

    with pytest.raises(Stop):
        run_experiment(EXP, tmp_path / "cut", RunConfig(seeds=2, workers=1), stop_after_three)
    partial_df = read_results(tmp_path / "cut" / "results.csv")
    assert len(partial_df[["scheduler", "value", "seed"]].drop_duplicates()) == 3
    resumed: list[tuple[int, int]] = []
    out = run_experiment(
        EXP, tmp_path / "cut", RunConfig(seeds=2, workers=1), lambda d, t: resumed.append((d, t))
    )
    assert resumed[0] == (3, 8)  # only the 5 missing cells ran
    assert len(resumed) == 1 + 5
    assert out.read_bytes() == full.read_bytes()


def test_rerun_with_other_config_into_same_folder_is_refused(tmp_path: Path) -> None:
    run_experiment(EXP, tmp_path, RunConfig(seeds=1, workers=1, quick=True))
    with pytest.raises(InvalidInput, match="seeds"):
        run_experiment(EXP, tmp_path, RunConfig(seeds=2, workers=1, quick=True))


def test_report_is_rendered_from_results_csv_alone(tmp_path: Path) -> None:
    exp = get("cluster-baselines")
    run_experiment(exp, tmp_path, RunConfig(seeds=2, workers=1, quick=True))
    summary = render_report(tmp_path)
    text = summary.read_text()
    assert "## Claims" in text and ("HELD" in text)
    assert (tmp_path / "total_utility.png").stat().st_size > 1000
    first = text
    (tmp_path / "summary.md").unlink()
    assert render_report(tmp_path).read_text() == first


def test_mean_ci_uses_student_t() -> None:
    m, h = mean_ci([1.0, 2.0, 3.0])  # type: ignore[arg-type]
    assert m == pytest.approx(2.0)
    assert h == pytest.approx(4.302652729911275 * 1.0 / 3**0.5)
    assert mean_ci([5.0])[1] == 0.0  # type: ignore[arg-type]


def test_beats_claim_reports_failing_points() -> None:
    import pandas as pd

    cells = [("a", "1", 5.0), ("b", "1", 3.0), ("a", "2", 1.0), ("b", "2", 2.0)]
    df = pd.DataFrame(
        [
            ("e", "cluster", s, "jobs", v, seed, "total_utility", u + 0.1 * seed * (s == "a"))
            for seed in (0, 1)
            for s, v, u in cells
        ],
        columns=COLUMNS,
    )
    r = Beats("total_utility", "a", ("b",)).check(df)
    assert r.held is False and "at 2:" in r.evidence


def test_summary_table_says_how_many_non_finite_seeds_it_left_out() -> None:
    import pandas as pd

    from dmlsched.experiments.report import summary_table

    df = pd.DataFrame(
        {
            "metric": ["competitive_ratio"] * 3,
            "scheduler": ["pd-ors"] * 3,
            "value": [6] * 3,
            "metric_value": [1.0, 1.0, float("inf")],
        }
    )
    cell = summary_table(df, "competitive_ratio").loc[6, "pd-ors"]
    assert cell == "1 ± 0 (+1 of 3 seeds infinite)"


def _no_cell(*args: object) -> dict[str, float]:
    raise AssertionError("a cell of the same runs was computed again")


def test_the_same_runs_are_copied_not_recomputed_and_give_the_same_bytes(tmp_path: Path) -> None:
    from dataclasses import replace

    cfg = RunConfig(seeds=2, workers=1)
    twin = replace(EXP, id="test-sweep-twin", metrics=("admitted_jobs",), same_runs_as=EXP.id)
    first = run_experiment(EXP, tmp_path / "a", cfg)
    fresh = run_experiment(twin, tmp_path / "fresh", cfg)
    copied = run_experiment(replace(twin, cell=_no_cell), tmp_path / "b", cfg, reuse=first)
    assert copied.read_bytes() == fresh.read_bytes()
    assert b"test-sweep-twin," in copied.read_bytes()  # relabelled with its own ID


def test_only_the_cells_found_are_copied(tmp_path: Path) -> None:
    from dataclasses import replace

    one = run_experiment(EXP, tmp_path / "a", RunConfig(seeds=1, workers=1))
    twin = replace(EXP, id="test-sweep-twin", same_runs_as=EXP.id)
    fresh = run_experiment(twin, tmp_path / "fresh", RunConfig(seeds=2, workers=1))
    both = run_experiment(twin, tmp_path / "b", RunConfig(seeds=2, workers=1), reuse=one)
    assert both.read_bytes() == fresh.read_bytes()  # seed 1 computed, seed 0 copied


def test_experiments_with_the_same_runs_agree_on_everything_a_cell_reads() -> None:
    from dmlsched.experiments.catalogue import all_experiments

    exps = list(all_experiments())
    order = {e.id: i for i, e in enumerate(exps)}
    twins = [e for e in exps if e.same_runs_as]
    assert {e.id for e in twins} >= {
        "mlbroker-fig11",
        "mlbroker-fig14",
        "thesis-fig3.14",
        "aonline-fig9",
        "aonline-fig10",
        "aonline-fig11",
    }
    for e in twins:
        src = get(e.same_runs_as)
        assert order[src.id] < order[e.id], f"{e.id}: --all must run {src.id} first"
        assert not src.same_runs_as
        for f in ("setting", "param", "build", "cell", "series"):
            assert getattr(e, f) == getattr(src, f), (e.id, f)
        assert set(e.points) <= set(src.points) and set(e.quick_points) <= set(src.quick_points)
        assert set(e.schedulers) <= set(src.schedulers)
        for s in e.schedulers:
            assert e.resolve(s) == src.resolve(s), (e.id, s)
