"""``runs.csv``: every ``reproduce --all`` invocation logged from its start, a killed one too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dmlsched.experiments.runlog as runlog
from dmlsched.experiments.reproduction import render
from dmlsched.experiments.runlog import NOT_LOGGED, RunLog, read_runs
from dmlsched.results import done_cells


def _log(base: Path, rows: list[dict[str, str]]) -> None:
    runlog._write_runs(base, [{k: r.get(k, "") for k in runlog.RUN_FIELDS} for r in rows])


def test_the_row_is_written_when_the_invocation_starts_and_ended_when_it_ends(
    tmp_path: Path,
) -> None:
    with RunLog(tmp_path, "2026-11-29 01:00", "abc", cells_now=0) as log:
        (row,) = read_runs(tmp_path)
        assert row["ended"] == "running" and row["commit"] == "abc"
        log.cells(7)
        assert read_runs(tmp_path)[0]["cells_added"] == "7"
        log.cells(9)
        log.end("complete")
    (row,) = read_runs(tmp_path)
    assert row["ended"] == "complete" and row["cells_added"] == "9"
    assert not list(tmp_path.glob(".*.tmp"))  # rewritten through a temporary file


def test_leaving_without_end_is_a_stopped_run(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), RunLog(tmp_path, "t", "abc", cells_now=0) as log:
        log.cells(3)
        raise KeyboardInterrupt
    assert [(r["ended"], r["cells_added"]) for r in read_runs(tmp_path)] == [("stopped", "3")]


def test_a_row_left_running_is_killed_and_takes_the_cells_nobody_accounts_for(
    tmp_path: Path,
) -> None:
    # a complete run added 4 cells, a killed one logged 2 before it died and wrote 5 more
    _log(
        tmp_path,
        [
            {"started_utc": "a", "wall_s": "10", "cells_added": "4", "ended": "complete"},
            {"started_utc": "b", "wall_s": "60", "cells_added": "2", "ended": "running"},
        ],
    )
    with RunLog(tmp_path, "c", "abc", cells_now=11) as log:
        log.cells(11)
        log.end("complete")
    rows = read_runs(tmp_path)
    assert [(r["started_utc"], r["ended"], r["cells_added"]) for r in rows] == [
        ("a", "complete", "4"),
        ("b", "killed", "7"),
        ("c", "complete", "0"),
    ]
    assert sum(int(r["cells_added"]) for r in rows) == 11


def test_cells_of_invocations_never_logged_get_a_row_of_their_own(tmp_path: Path) -> None:
    # a log written only at the end: two invocations killed outright left no row
    _log(tmp_path, [{"started_utc": "a", "wall_s": "10", "cells_added": "4", "ended": "complete"}])
    with RunLog(tmp_path, "c", "abc", cells_now=10) as log:
        log.cells(12)
        log.end("complete")
    rows = read_runs(tmp_path)
    assert [(r["ended"], r["cells_added"], r["wall_s"]) for r in rows] == [
        ("complete", "4", "10"),
        (NOT_LOGGED, "6", ""),
        ("complete", "2", rows[2]["wall_s"]),
    ]
    # the report says that part of the cost is unknown, and a killed row's wall is a floor
    rows.append({**rows[0], "ended": "killed", "wall_s": "60"})
    text = render([], runs=rows)
    assert "| — | — | — | 6 | not logged |" in text and "| ≥ 60 s |" in text
    assert "not counting the invocations that computed 6 cells unlogged." in text


def test_the_wall_time_is_kept_current_while_the_invocation_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = iter(float(t) for t in range(0, 10_000, 100))
    monkeypatch.setattr(runlog.time, "monotonic", lambda: next(clock))
    with RunLog(tmp_path, "t", "abc", cells_now=0, beat_s=0.01):
        deadline = time.monotonic_ns() + 10**10
        while int(read_runs(tmp_path)[0]["wall_s"]) < 200 and time.monotonic_ns() < deadline:
            time.sleep(0.01)
        assert int(read_runs(tmp_path)[0]["wall_s"]) >= 200  # beats, not only at the end


def test_an_invocation_killed_outright_is_in_the_log_with_its_cells(tmp_path: Path) -> None:
    """A real ``reproduce --all`` SIGKILLed mid-run, then resumed: both rows, every cell
    accounted for."""
    out = tmp_path / "all"
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # a killed sweep's memo folder stays here
    cmd = [sys.executable, "-m", "dmlsched", "reproduce", "--all", "--only"]
    cmd += ["cluster-baselines", "--quick", "--seeds", "2", "--workers", "1", "--out", str(out)]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, process_group=0
    )
    results = out / "cluster-baselines" / "results.csv"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if results.exists() and len(done_cells(results)) >= 2:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert [r["ended"] for r in read_runs(out)] == ["running"]  # as the kill left it
    killed_cells = len(done_cells(results))
    assert subprocess.run(cmd, env=env, capture_output=True).returncode == 0
    rows = read_runs(out)
    assert [r["ended"] for r in rows] == ["killed", "complete"]
    assert int(rows[0]["cells_added"]) == killed_cells
    assert sum(int(r["cells_added"]) for r in rows) == len(done_cells(results))
    assert "| killed |" in (out / "reproduction.md").read_text()


def test_a_second_all_run_on_the_same_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One invocation per folder at a time: its row is the log's last (and a row left
    running can only be a dead invocation's)."""
    import threading

    from dmlsched.cli import main
    from dmlsched.experiments.lock import hold

    held, done = threading.Event(), threading.Event()

    def holder() -> None:  # another thread contends like another process
        with hold(tmp_path):
            held.set()
            done.wait(60)

    t = threading.Thread(target=holder)
    t.start()
    try:
        held.wait(60)
        args = ["reproduce", "--all", "--only", "cluster-baselines", "--quick", "--seeds", "1"]
        assert main([*args, "--out", str(tmp_path)]) == 2
    finally:
        done.set()
        t.join()
    assert "out" in capsys.readouterr().err and not read_runs(tmp_path)
