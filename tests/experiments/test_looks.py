"""Sequential looks (``reproduce --until-decided``): the plan, the error rate the two
looks keep, where a run stops, and what the reports say about it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dmlsched.cli import _run, main
from dmlsched.errors import InvalidInput
from dmlsched.experiments import catalogue, looks
from dmlsched.experiments.catalogue import Experiment
from dmlsched.experiments.claims import HELD, UNDECIDED, Bound, Trend, mean_interval
from dmlsched.experiments.looks import (
    Looks,
    check_seeds,
    look_confidence,
    looks_of,
    plan,
)
from dmlsched.experiments.reproduction import write_reproduction
from dmlsched.experiments.runner import RunConfig, read_config, run_experiment
from dmlsched.results import read_results
from tests.experiments.tiny import tiny


def _experiment(exp_id: str, claim: object) -> Experiment:
    return tiny(exp_id, metrics=("admitted_jobs",), claims=(claim,))


# decided on any two seeds: drf admits a non-negative number of jobs
DECIDED = _experiment("test-looks-decided", Bound("admitted_jobs", "drf", ">=", 0.0))
# never decided: a trend over a sweep of one point
OPEN = _experiment("test-looks-open", Trend("admitted_jobs", "drf", rising=True))


def test_two_looks_at_half_the_seeds_and_all_of_them() -> None:
    assert plan(10) == (5, 10)
    assert plan(5) == (3, 5)
    assert plan(4) == (2, 4)
    assert plan(3) == ()  # too few for two looks of two: run whole
    assert look_confidence(1) == pytest.approx(0.985)
    assert look_confidence(2) == pytest.approx(0.965)
    check_seeds(None)
    check_seeds(4)
    with pytest.raises(InvalidInput, match="seeds"):
        check_seeds(3)


def test_the_two_looks_keep_the_error_rate_two_looks_at_95_do_not() -> None:
    # no difference at all: a look whose interval excludes zero decides wrongly
    rng = np.random.default_rng(7)
    trials = 4000
    wrong = {"planned": 0, "twice at 95%": 0}
    levels = {"planned": (look_confidence(1), look_confidence(2)), "twice at 95%": (0.95, 0.95)}
    for _ in range(trials):
        d = rng.normal(size=10)
        for name, (first, second) in levels.items():
            ivs = (mean_interval(d[:5], first), mean_interval(d, second))
            wrong[name] += any(iv.low > 0 or iv.high < 0 for iv in ivs)
    assert wrong["planned"] / trials <= 0.05
    assert wrong["twice at 95%"] / trials > 0.06  # looking twice at 95% errs more than 5%


def test_a_claim_decided_at_95_can_stay_undecided_at_the_first_look() -> None:
    import pandas as pd

    # six seeds whose mean is above 1 by 2.98 standard errors; Student's t with 5 degrees
    # of freedom: 2.57 at 95%, 2.87 at 96.5%, 3.63 at 98.5%
    vals = [1.2, 1.9, 0.9, 1.6, 1.4, 1.5]
    df = pd.DataFrame(
        {"metric": "m", "scheduler": "s", "value": 1, "seed": range(6), "metric_value": vals}
    )
    claim = Bound("m", "s", ">=", 1.0)
    assert claim.check(df).label == HELD
    assert claim.check(df, None, look_confidence(2)).label == HELD
    first = claim.check(df, None, look_confidence(1))
    assert first.label == UNDECIDED
    assert "98.5%" in first.test and "95%" in claim.check(df).test


def test_where_a_run_stands() -> None:
    cfg = {"looks": [2, 4], "points": ["3"], "schedulers": ["fifo", "drf"]}
    cells = {(s, "3", seed) for s in ("fifo", "drf") for seed in (0, 1)}
    first = looks_of(cfg, cells)
    assert first == Looks((2, 4), 2)
    assert first.at_look == 1 and first.complete(stopped=True)
    assert not first.complete(stopped=False)
    assert "stopped at 2 of 4 seeds" in first.note(stopped=True)
    assert "incomplete" in first.note(stopped=False)
    # a second look under way: seed 2 has one of its two cells
    going = looks_of(cfg, cells | {("fifo", "3", 2)})
    assert going is not None and going.partial and going.at_look is None
    assert not going.complete(stopped=True)
    last = looks_of(cfg, {(s, "3", seed) for s in ("fifo", "drf") for seed in range(4)})
    assert last is not None and last.at_look == 2 and last.complete(stopped=False)
    assert looks_of({"points": ["3"]}, cells) is None  # a fixed-seeds run
    for bad in ([2, 4, 8], [4, 2], [1, 4], ["2", 4], 4):
        with pytest.raises(InvalidInput, match="looks"):
            looks_of({**cfg, "looks": bad}, cells)


@pytest.mark.parametrize(
    ("exp", "seeds", "said"),
    [(DECIDED, {0, 1}, "stopped at 2 of 4 seeds"), (OPEN, {0, 1, 2, 3}, "all 4 seeds")],
)
def test_a_run_stops_at_the_first_look_only_when_every_claim_is_decided(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    exp: Experiment,
    seeds: set[int],
    said: str,
) -> None:
    _catalogued(monkeypatch, exp)
    base = tmp_path / "all"
    out = base / exp.id
    cfg = RunConfig(seeds=4, workers=1, looks=plan(4))
    _run(exp, out, cfg, exp.id, plots=False)
    assert set(read_results(out / "results.csv")["seed"]) == seeds
    assert read_config(out / "config.json")["looks"] == [2, 4]
    err = capsys.readouterr().err
    assert f"{exp.id}: look 1 at 2 of 4 seeds (98.5%)" in err
    summary = (out / "summary.md").read_text()
    conf = "98.5%" if seeds == {0, 1} else "96.5%"
    assert said in summary and f"read at {conf}, the confidence of this look" in summary
    assert "ncomplete" not in summary  # a run stopped at a look is whole
    text = write_reproduction(base, [exp], tmp_path / "r.md").read_text()
    assert f"[{said}" in text and "sequential runs" in text
    # run again: nothing to compute, the same stop
    _run(exp, out, cfg, exp.id, plots=False)
    assert set(read_results(out / "results.csv")["seed"]) == seeds


def test_a_resumed_run_judges_its_first_look_on_that_look_s_seeds_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a run killed during its second look has cells of seed 2 beside seeds 0-1; the first
    # look is judged again on seeds 0-1 only (the interval of 2 seeds, not 3)
    out = tmp_path / OPEN.id
    cfg = RunConfig(seeds=4, workers=1, looks=plan(4))
    run_experiment(OPEN, out, cfg, upto=3)
    assert set(read_results(out / "results.csv")["seed"]) == {0, 1, 2}
    seen = []
    real = looks.undecided

    def spy(exp: Experiment, df: object, frames: object, confidence: float) -> list[str]:
        seen.append(set(df["seed"]))  # type: ignore[index]
        return real(exp, df, frames, confidence)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as m:
        m.setattr(looks, "undecided", spy)
        _run(OPEN, out, cfg, OPEN.id, plots=False)
    assert seen[0] == {0, 1}
    assert set(read_results(out / "results.csv")["seed"]) == {0, 1, 2, 3}


def test_an_experiment_of_three_seeds_runs_whole_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    few = tiny("test-looks-few", default_seeds=3)
    _catalogued(monkeypatch, few)
    out = tmp_path / "few"
    assert main(["reproduce", few.id, "--until-decided", "--out", str(out)]) == 0
    assert "test-looks-few: its 3 seeds are too few for two looks" in capsys.readouterr().err
    assert set(read_results(out / "results.csv")["seed"]) == {0, 1, 2}
    assert "looks" not in read_config(out / "config.json")


def _catalogued(monkeypatch: pytest.MonkeyPatch, exp: Experiment) -> None:
    """``exp`` in the catalogue for this test (the reports look experiments up there)."""
    catalogue.all_experiments()  # the catalogue's own first
    monkeypatch.setitem(catalogue._CATALOGUE, exp.id, exp)


def test_a_fixed_run_into_a_sequential_runs_folder_is_refused(tmp_path: Path) -> None:
    out = tmp_path / DECIDED.id
    _run(DECIDED, out, RunConfig(seeds=4, workers=1, looks=plan(4)), "x", plots=False)
    with pytest.raises(InvalidInput, match="looks"):
        _run(DECIDED, out, RunConfig(seeds=4, workers=1), "x", plots=False)


def test_too_few_seeds_for_two_looks_exit_2_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["reproduce", "cluster-baselines", "--until-decided", "--seeds", "3"]
    assert main([*args, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "seeds" in err[0] and "--until-decided" in err[0]
    assert not (tmp_path / "x").exists()
