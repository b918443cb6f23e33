"""What a testbed run reports: every job counted, words instead of NaN, reasons, the Gantt."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dmlsched.testbed import workload as tbw
from dmlsched.testbed.predict import Prediction
from dmlsched.testbed.report import (
    headline,
    job_error,
    outcomes,
    run_metrics,
    run_notes,
    write_run,
)
from dmlsched.testbed.run import SlotRow, TestbedRun
from dmlsched.testbed.runtime import JobStatus


def test_job_error_by_hand():
    # both finished: |4 − 5| / 5
    assert job_error(True, 5.0, 1.0, True, 4.0, 1.0) == (pytest.approx(0.2), False)
    # the testbed stopped at C_r = 6 with 70% done, the engine finished at 3:
    # its JCT is at least 6, so the error is at least (6 − 3) / 6 = 50% (> 30% missing)
    assert job_error(False, 6.0, 0.7, True, 3.0, 1.0) == (pytest.approx(0.5), True)
    # ... and at least the missing part when the engine finished late: 1 − 0.2
    assert job_error(False, 6.0, 0.2, True, 6.5, 1.0) == (pytest.approx(0.8), True)
    # the engine did not finish by C_s = 10 (40% done), the testbed took 4: (10 − 4) / 4
    assert job_error(True, 4.0, 1.0, False, 10.0, 0.4) == (pytest.approx(1.5), True)
    # neither finished: the share of the work they disagree on
    assert job_error(False, 6.0, 0.3, False, 10.0, 0.5) == (pytest.approx(0.2), True)


def _case(real_done: dict[int, float], rows: list[SlotRow], work: dict[int, float], **kw):
    tw = tbw.testbed_workload(3, 2, 10, np.random.default_rng(0), slot_seconds=5.0, epochs=(1, 1))
    run = TestbedRun("pd-ors", 0, 5.0, rows=rows, slots_run=kw.pop("slots_run", 6))
    run.status = {j.id: JobStatus(work=work.get(j.id, 0.0)) for j in tw.workload.jobs}
    run.real_jct = dict(real_done)
    run.decide_s = kw.pop("decide_s", [0.01] * 6)
    run.apply_s = kw.pop("apply_s", [0.1] * 6)
    run.load = kw.pop("load", [0.5] * 6)
    run.cpus = 2
    pred = Prediction(
        sim_jct=kw.pop("sim_jct"),
        replay_jct={},
        sim_metrics={"completed_jobs": 2.0},
        rows=kw.pop("pred_rows", rows),
        sim_progress=kw.pop("sim_progress", {}),
        sim_started=frozenset(kw.pop("sim_started", ())),
    )
    return tw, run, pred


def test_every_started_job_counts_and_unfinished_ones_are_censored():
    ids = [0, 1, 2]
    tw, run, pred = _case(
        {0: 2.0},
        [SlotRow(0, 0, ((0, 1, 1),), "start", 10.0, 1, 0.5)],
        {0: 1e9, 1: 0.5},
        sim_jct={0: 2.2, 1: 3.0, 2: math.nan},
        sim_started=(0, 1),
    )
    total = {j.id: j.total_work for j in tw.workload.jobs}
    run.rows.append(SlotRow(1, 1, ((0, 1, 1),), "start", 0.5 * total[1], 1, 0.5))
    # what the processes did while they were being stopped, after the run's end, does not
    # count: the engine credited half the work, so the job is half done
    run.status[1] = JobStatus(work=1.2 * total[1])
    outs = outcomes(tw, run, pred)
    assert [outs[j].counted for j in ids] == [True, True, False]
    assert outs[0].error == pytest.approx(0.1) and not outs[0].censored
    arrival = next(j.arrival for j in tw.workload.jobs if j.id == 1)
    c_r = 6 - arrival
    assert outs[1].censored
    assert outs[1].error == pytest.approx(max(max(0.0, c_r - 3.0) / c_r, 0.5))
    m = run_metrics(tw, run, pred)
    assert m["counted_jobs"] == 2 and m["censored_jobs"] == 1
    assert m["finished_share_real"] == 0.5 and m["finished_share_sim"] == 1.0
    assert m["median_sim_error"] == pytest.approx(np.median([0.1, outs[1].error]))
    assert "nan" not in headline(tw, run, pred)
    assert any("job 1 did not finish (50% done)" in n for n in run_notes(tw, run, pred))


def test_a_scheduler_that_places_nothing_says_why():
    tw, run, pred = _case({}, [], {}, sim_jct=dict.fromkeys(range(3), math.nan))
    run.scheduler = "fifo"
    run.rejected = {0, 1, 2}
    notes = run_notes(tw, run, pred)
    assert notes[0].startswith("fifo placed no job in 6 slots: it rejected jobs 0, 1, 2")
    assert "max_workers" in notes[0] and "try --param max_workers=4" in notes[0]
    assert "no job started" in headline(tw, run, pred)


def test_a_model_far_from_the_measurements_suggests_calibrating():
    rows = [SlotRow(t, 0, ((0, 1, 1),), "keep", 10.0, 1, 0.5, pred_work=25.0) for t in range(4)]
    tw, run, pred = _case({}, rows, {}, sim_jct=dict.fromkeys(range(3), math.nan))
    notes = run_notes(tw, run, pred)
    assert any("differs from the model's by 60%" in n and "testbed calibrate" in n for n in notes)
    rows = [SlotRow(t, 0, ((0, 1, 1),), "keep", 10.0, 1, 0.5, pred_work=12.0) for t in range(4)]
    tw, run, pred = _case({}, rows, {}, sim_jct=dict.fromkeys(range(3), math.nan))
    assert not any("calibrate" in n for n in run_notes(tw, run, pred))


def test_slots_in_which_a_job_completes_are_not_full_slots():
    """A job that completes works part of its last slot, and the job beside it speeds up on
    the links it leaves: neither slot says the model is wrong."""
    rows = [
        SlotRow(0, 0, ((0, 1, 1),), "start", 100.0, 1, 0.5, pred_work=100.0),
        SlotRow(0, 1, ((0, 1, 1),), "start", 100.0, 1, 0.5, pred_work=100.0),
        SlotRow(1, 0, ((0, 1, 1),), "keep", 100.0, 1, 0.5, pred_work=100.0),
        SlotRow(1, 1, ((0, 1, 1),), "keep", 100.0, 1, 0.5, pred_work=100.0),
        SlotRow(2, 0, ((0, 1, 1),), "keep", 10.0, 1, 0.5, pred_work=100.0),  # completes
        SlotRow(2, 1, ((0, 1, 1),), "keep", 190.0, 1, 0.5, pred_work=100.0),  # alone after
        SlotRow(3, 1, ((0, 1, 1),), "keep", 5.0, 1, 0.5, pred_work=200.0),  # completes
    ]
    tw, run, pred = _case({0: 2.1, 1: 3.05}, rows, {}, sim_jct={0: 2.1, 1: 3.05, 2: math.nan})
    assert run_metrics(tw, run, pred)["median_slot_rate_error"] == 0.0
    assert not any("calibrate" in n for n in run_notes(tw, run, pred))
    run.real_jct = {}  # the same rows with no job completing: far off in slots 2 and 3
    assert run_metrics(tw, run, pred)["median_slot_rate_error"] == pytest.approx(0.9)
    assert any("calibrate" in n for n in run_notes(tw, run, pred))


def test_slow_slots_are_counted_as_distorted_and_overrun():
    tw, run, pred = _case(
        {}, [], {}, sim_jct=dict.fromkeys(range(3), math.nan), apply_s=[0.1, 1.0, 6.0]
    )
    m = run_metrics(tw, run, pred)
    assert (m["distorted_slots"], m["overrun_slots"]) == (2, 1)
    assert any("2 of 3 slots" in n for n in run_notes(tw, run, pred))


def test_the_summary_reads_did_not_finish_never_nan(tmp_path):
    rows = [
        SlotRow(0, 0, ((0, 1, 1),), "start", 10.0, 1, 0.5, pred_work=10.0),
        SlotRow(1, 1, ((1, 1, 1),), "start", 10.0, 1, 0.5, pred_work=10.0),
        SlotRow(3, 1, ((1, 1, 1),), "resume", 10.0, 1, 0.5, pred_work=10.0),
    ]
    tw, run, pred = _case(
        {0: 1.5},
        rows,
        {1: 5.0},
        sim_jct={0: 1.4, 1: math.nan, 2: math.nan},
        sim_progress={1: 0.25},
        sim_started=(0, 1),
    )
    write_run(tmp_path, tw, run, pred)
    text = (tmp_path / "summary.md").read_text()
    assert "did not finish (" in text and "nan" not in text.lower().replace("n/a", "")
    assert (tmp_path / "gantt.png").stat().st_size > 0


def test_held_out_probes_print_as_a_table():
    from dmlsched.testbed.validate import summary_lines

    val = {
        "split_vs_colocated": [
            {"W": 1, "S": 1, "cap_mbit": 15.0, "split_s": 0.08, "colocated_s": 0.026,
             "measured": 3.1, "predicted": 3.0, "error": -0.03}
        ],
        "shared": [
            {"case": "same links, W=1", "job": 0, "workers": [1, 0, 0], "ps": [0, 1, 0],
             "alone_s": 0.12, "shared_s": [0.13, 0.16], "measured": 1.2, "predicted": 1.3,
             "error": 0.083}
        ],
    }  # fmt: skip
    text = "\n".join(summary_lines(val))
    assert "| 1 | 1 | 80.0 | 26.0 | 3.10 | 3.00 | -3.0% |" in text
    assert "| same links, W=1 | 0 | [1, 0, 0] | [0, 1, 0] | 120 | 130 / 160 |" in text
    assert "Largest |error| 8.3%, median 5.7% over 2 held-out slowdowns; 2 within 10%." in text
    assert "1 of 1 shared rows vary by more than 20% between repeats" in text
    assert "up to 23%): same links, W=1." in text
    val["shared"][0]["shared_s"] = [0.13, 0.15]
    assert "between repeats" not in "\n".join(summary_lines(val))


def test_an_unfinished_job_never_reads_100_percent_done():
    from dmlsched.testbed.report import JobOutcome

    o = JobOutcome(0, True, False, 3.0, 0.996, 99.6, True, 2.0, 1.0, 0.5, True)
    assert o.real_text() == "did not finish (99% done)"


def test_slots_begun_on_a_loaded_machine_are_counted_and_said():
    tw, run, pred = _case({}, [], {}, sim_jct=dict.fromkeys(range(3), math.nan))
    assert run_metrics(tw, run, pred)["loaded_slots"] == 0
    assert not any("load average" in n for n in run_notes(tw, run, pred))
    tw, run, pred = _case(
        {}, [], {}, sim_jct=dict.fromkeys(range(3), math.nan), load=[0.5, 1.9, 2.5, 9.0, 1.0]
    )
    m = run_metrics(tw, run, pred)
    assert (m["loaded_slots"], m["distorted_slots"]) == (2, 0)
    assert any("2 of 5 slots" in n and "2 CPUs (up to 9.0)" in n for n in run_notes(tw, run, pred))


def test_a_run_read_back_from_its_report_predicts_the_same(tmp_path):
    from dmlsched.testbed.predict import predict
    from dmlsched.testbed.report import load_run

    rows = [
        SlotRow(0, 0, ((0, 1, 1),), "start", 10.0, 7, 0.5),
        SlotRow(0, 1, ((0, 1, 0), (1, 0, 1)), "start", 4.0, 9, 0.75),
        SlotRow(1, 1, ((1, 1, 1),), "move", 8.0, 11, 0.25),
    ]
    tw, run, _ = _case({0: 1.5}, rows, {0: 12.0, 1: 12.0}, sim_jct={})
    run.preemptions[1] = 1
    pred = predict(tw, run, None)
    write_run(tmp_path, tw, run, pred)
    back, summary = load_run(tmp_path, run.slot_seconds)
    assert (back.scheduler, back.seed, back.slots_run) == ("pd-ors", 0, run.slots_run)
    assert back.rows == rows and back.real_jct == run.real_jct and back.preemptions == {1: 1}
    # ``work`` is what the slots measured (job 0's processes did 12, 2 of it while stopping)
    assert {j: s.work for j, s in back.status.items()} == {0: 10.0, 1: 12.0, 2: 0.0}
    assert summary["median_sim_error"] == run_metrics(tw, run, pred)["median_sim_error"]
    again = predict(tw, back, None)
    assert again.sim_jct == pred.sim_jct and again.replay_jct == pred.replay_jct
    assert outcomes(tw, back, again) == outcomes(tw, run, pred)
