"""Errors pooled over the jobs of many testbed runs."""

from __future__ import annotations

import pytest

from dmlsched.results import CellKey, append_rows, cell_rows
from dmlsched.testbed.pooled import main, pooled_errors, render


def _run(root, sched, mode, seed, errors, overrun=0.0, loaded=0.0):
    path = root / f"testbed-pdors-{sched}-{mode}-{seed}" / "report" / "results.csv"
    path.parent.mkdir(parents=True)
    rows = []
    for j, e in enumerate(errors):
        m = {
            "sim_error": e,
            "sim_error_censored": float(e > 0.5),
            "real_progress": 1.0,
            "arrival": 0.0,
            "real_jct": 2.0,
            "replay_jct": 2.0 * (1 + e / 2),  # a replay error of e / 2
        }
        rows += cell_rows("x", "cluster", CellKey(sched, str(j), seed), "job", m)
    rows += cell_rows(
        "x",
        "cluster",
        CellKey(sched, "all", seed),
        "job",
        {"overrun_slots": overrun, "loaded_slots": loaded},
    )
    append_rows(path, rows)


def test_jobs_pool_per_scheduler_and_mode_and_the_calibration_seed_is_left_out(tmp_path, capsys):
    _run(tmp_path, "pd-ors+", "local", 0, [0.9, 0.9])  # the calibration seed
    _run(tmp_path, "pd-ors+", "local", 1, [0.01, 0.02, float("nan")])
    _run(tmp_path, "pd-ors+", "local", 2, [0.03, 0.6], overrun=2.0)
    _run(tmp_path, "fifo", "netns", 1, [0.1], loaded=3.0)
    pools = pooled_errors(tmp_path)
    p = pools[("pd-ors+", "local")]
    assert p.runs == 2 and sorted(p.errors) == [0.01, 0.02, 0.03, 0.6]
    assert p.median == pytest.approx(0.025) and p.censored == 1
    assert p.distorted == ["seed 2: 0 distorted, 2 overrun, 0 loaded"]
    assert p.replay_stats()[0] == pytest.approx(0.0125)
    assert pools[("fifo", "netns")].distorted == ["seed 1: 0 distorted, 0 overrun, 3 loaded"]
    text = render(pools)
    assert "| local | **all** | 2 | 4 |" in text and "| **both** | **all** | 3 | 5 |" in text
    main([str(tmp_path)])
    assert "pd-ors+" in capsys.readouterr().out


def test_a_job_finished_on_a_side_only_when_that_side_has_its_jct(tmp_path):
    _run(tmp_path, "oasis", "netns", 1, [0.05])  # job 0: finished on the testbed
    path = tmp_path / "testbed-pdors-oasis-netns-1" / "report" / "results.csv"
    # job 1: its processes reached the work while being stopped, after the horizon
    rows = cell_rows(
        "x", "cluster", CellKey("oasis", "1", 1), "job",
        {"sim_error": 0.5, "real_jct": float("nan"), "real_progress": 1.0, "sim_jct": 3.0,
         "sim_progress": 1.0},
    )  # fmt: skip
    append_rows(path, rows)
    p = pooled_errors(tmp_path)[("oasis", "netns")]
    assert (p.finished_real, p.finished_sim) == (1, 1)


def test_a_root_without_runs_is_named_on_one_line_and_exits_2(tmp_path, capsys):
    from dmlsched.experiments.repredict import main as repredict_main

    _run(tmp_path, "fifo", "netns", 0, [0.1])  # the calibration seed only: nothing held out
    for run_main in (main, repredict_main):
        with pytest.raises(SystemExit) as e:
            run_main([str(tmp_path)])
        assert e.value.code == 2
        err = capsys.readouterr().err.strip()
        assert err == f"invalid runs={tmp_path} (no testbed-pdors runs of seed >= 1 under it)"
