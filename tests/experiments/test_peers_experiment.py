"""peer-replay experiment, calibrate command and the peers benchmark (smoke)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dmlsched.cli import main
from dmlsched.experiments.calibrate import calibration_rows, write_calibration
from dmlsched.experiments.catalogue import get
from dmlsched.workloads.profiles import APPLICATIONS, load_profiles
from tests.workloads.test_peers import POLLUX, needs_peers

PROFILES = POLLUX / "profiles"


@needs_peers
def test_calibration_reports_measured_and_predicted_slowdown_for_1_2_4_nodes(
    tmp_path: Path,
) -> None:
    rows = calibration_rows(load_profiles(PROFILES))
    for app in APPLICATIONS:
        assert {r.nodes for r in rows if r.app == app} == {1, 2, 4}
    # Fact 1: Eq. (1) predicts the same slowdown for 2 and 4 machines
    for r2 in (r for r in rows if r.nodes == 2):
        r4 = next(r for r in rows if (r.app, r.local_bsz, r.nodes) == (r2.app, r2.local_bsz, 4))
        assert r2.predicted == pytest.approx(r4.predicted)
        assert r2.predicted > next(
            r.predicted for r in rows if (r.app, r.local_bsz, r.nodes) == (r2.app, r2.local_bsz, 1)
        )
    summary = write_calibration(rows, tmp_path).read_text()
    assert "all-reduce, not parameter servers" in summary and "error" in summary
    assert (tmp_path / "calibration.png").stat().st_size > 0


@needs_peers
def test_calibrate_command_writes_table_and_plot(tmp_path: Path) -> None:
    assert main(["calibrate", "--out", str(tmp_path), "--profiles", str(PROFILES)]) == 0
    assert "| bert |" in (tmp_path / "summary.md").read_text()


def test_calibrate_with_a_missing_profile_folder_exits_2(tmp_path: Path) -> None:
    assert main(["calibrate", "--out", str(tmp_path), "--profiles", str(tmp_path / "no")]) == 2


def test_calibrate_without_shared_says_to_pass_profiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import dmlsched.workloads.profiles as profiles

    monkeypatch.setattr(profiles, "default_profile_dir", lambda: None)
    assert main(["calibrate", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--profiles PATH" in err and err.count("\n") == 1


@needs_peers
def test_peer_replay_quick_cell_runs_workload6_with_tiresias() -> None:
    exp = get("peer-replay")
    assert exp.quick_points == (
        "workload-6/eq1",
        "workload-6/measured",
        "gavel-51b7ef/eq1",
        "gavel-51b7ef/measured",
    )
    m = exp.run_cell("tiresias", "workload-6/measured", 0, True)
    assert m["completed_jobs"] == 160.0
    assert m["mean_jct_s"] == pytest.approx(m["mean_jct"] * 60.0)
    assert 0 < m["alone_mean_jct_s"] < m["mean_jct_s"]


@needs_peers
def test_peer_replay_reports_ours_beside_the_peers_figures(tmp_path: Path) -> None:
    import pandas as pd

    from dmlsched.experiments.defs.peers import GAVEL_FIFO_51B7EF_S, POLLUX_TIRESIAS_W6_S
    from dmlsched.results import COLUMNS, CellKey, cell_rows

    exp = get("peer-replay")
    rows = []
    for sched, point in (("fifo", "gavel-51b7ef/measured"), ("tiresias", "workload-6/eq1")):
        m = exp.run_cell(sched, point, 0, True)
        rows += cell_rows(exp.id, exp.setting, CellKey(sched, point, 0), exp.param, m)
    df = pd.DataFrame(rows, columns=COLUMNS)
    texts = [c.check(df) for c in exp.claims[:2]]
    assert f"theirs {GAVEL_FIFO_51B7EF_S:,.6g}" in texts[0].evidence
    assert "gavel-51b7ef/measured: ours 14,778.6" in texts[0].evidence
    assert f"theirs {POLLUX_TIRESIAS_W6_S:,.6g}" in texts[1].evidence
    assert "rounds" in texts[0].text and "statistical epochs" in texts[1].text


@needs_peers
def test_exporting_workload6_and_importing_it_again_gives_the_same_jobs(tmp_path: Path) -> None:
    from dmlsched.workloads.peers import load_pollux

    src = POLLUX / "workloads" / "workload-6.csv"
    for fmt in ("pollux", "gavel"):
        out = tmp_path / f"w6.{fmt}"
        assert (
            main(["export", "--workload", f"pollux:{src}", "--format", fmt, "--out", str(out)]) == 0
        )
    again = load_pollux(tmp_path / "w6.pollux")
    assert again.jobs == load_pollux(src).jobs
