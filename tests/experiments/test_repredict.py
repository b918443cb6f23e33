"""A finished testbed run predicted again from its report gives what its cell predicted
(with no change to the engine in between), and a folder not named like a run is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dmlsched.errors import InvalidInput
from dmlsched.experiments.defs.testbed import _speed, _workload
from dmlsched.experiments.repredict import AGAIN, repredict
from dmlsched.results import columns, scan_results
from dmlsched.testbed.fake import FakeClock, FakeExecutor, FakeTestbed
from dmlsched.testbed.predict import predict
from dmlsched.testbed.report import write_run
from dmlsched.testbed.run import run_cluster
from tests.testbed.test_models import _profile_with_slow_told_eq1


def _errors(path: Path) -> dict[str, float]:
    cols = columns(scan_results(path).rows)
    return {
        f"{v}/{m}": float(x)
        for v, m, x in zip(cols["value"], cols["metric"], cols["metric_value"], strict=True)
        if m in ("sim_error", "replay_error", "sim_jct", "replay_jct", "median_sim_error")
    }


@pytest.mark.parametrize("scheduler", ["fifo", "drf"])
def test_a_run_predicted_again_from_its_report_gives_its_cells_prediction(
    tmp_path: Path, scheduler: str
) -> None:
    prof = _profile_with_slow_told_eq1()
    tw = _workload(1, True, prof)
    clock = FakeClock()
    jobs = {j.id: j for j in tw.workload.jobs}
    ex = FakeExecutor.at_model_speed(jobs, clock, tw.slot_seconds, 0.9)
    run = run_cluster(tw, scheduler, FakeTestbed(), 1, executor=ex, clock=clock, stall_slots=0)
    run_dir = tmp_path / f"testbed-pdors-{scheduler}-local-1"
    report = run_dir / "report"
    write_run(report, tw, run, predict(tw, run, _speed(prof, True)), experiment="testbed-pdors")
    (report / "profile.json").write_text(json.dumps(prof))
    again = repredict(run_dir, quick=True)
    assert again == report / AGAIN
    before, after = _errors(report / "results.csv"), _errors(again)
    assert before and after == pytest.approx(before, nan_ok=True)


def test_a_folder_not_named_like_a_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="run folder"):
        repredict(tmp_path / "somewhere")


def test_another_profile_predicts_the_same_run_with_its_own_speed(tmp_path: Path) -> None:
    """A calibration that charges new incarnations replays no job earlier and some later
    (the run's own decisions: closed loop, a delay may change them)."""
    prof = _profile_with_slow_told_eq1()
    tw = _workload(1, True, prof)
    clock = FakeClock()
    jobs = {j.id: j for j in tw.workload.jobs}
    ex = FakeExecutor.at_model_speed(jobs, clock, tw.slot_seconds, 0.9)
    run = run_cluster(tw, "fifo", FakeTestbed(), 1, executor=ex, clock=clock, stall_slots=0)
    run_dir = tmp_path / "testbed-pdors-fifo-local-1"
    report = run_dir / "report"
    write_run(report, tw, run, predict(tw, run, _speed(prof, True)), experiment="testbed-pdors")
    (report / "profile.json").write_text(json.dumps(prof))
    charged = {**prof, "restart": {"start_s": 2.0, "restart_s": 3.0}}
    plain = _errors(repredict(run_dir, quick=True))
    slow = _errors(repredict(run_dir, quick=True, speed=charged))
    sim = [k for k in plain if k.endswith("/replay_jct") and plain[k] == plain[k]]
    assert sim and all(slow[k] >= plain[k] for k in sim)
    assert any(slow[k] > plain[k] for k in sim)
