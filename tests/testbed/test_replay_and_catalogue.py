"""Replay of recorded decisions (with a data move), the opt-in catalogue entries, --speed PATH."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from dmlsched.experiments.catalogue import all_experiments
from dmlsched.model.cluster import Placement
from dmlsched.testbed.replay import Move, ReplaySlot, record, replay
from dmlsched.testbed.runtime import Testbed, TrainSpec
from dmlsched.testbed.state import live_resources
from dmlsched.testbed.workload import testbed_edge_workload as edge_workload


def test_testbed_experiments_are_opt_in_and_registered():
    ids = {e.id: e for e in all_experiments()}
    for eid in (
        "testbed-pdors",
        "testbed-aonline-fig4",
        "testbed-aonline-fig5",
        "testbed-aonline-fig6",
        "testbed-mlbroker-table4",
    ):
        assert ids[eid].opt_in
    assert not any(e.opt_in for e in ids.values() if not e.id.startswith("testbed-"))


def test_reproduce_all_leaves_testbed_experiments_out_unless_named():
    from dmlsched.cli import _select

    assert not [e for e in _select(None) if e.opt_in]
    assert [e.id for e in _select("testbed-pdors")] == ["testbed-pdors"]


def test_record_keeps_every_decision_the_engine_accepted():
    wl = edge_workload(
        2, np.random.default_rng(0), slot_seconds=10, edge_step_s=0.1, cloud_step_s=0.03
    )
    res, decisions = record("edge-cloud", wl, "srtf", 0)
    assert res.metrics["completed_jobs"] == 2
    assert decisions and all(hasattr(d, "run") for d in decisions)
    dispatched = {j for d in decisions for j in d.dispatch}
    assert dispatched == {0, 1}


def test_replay_runs_placements_and_moves_data(tmp_path):
    slots = [
        ReplaySlot({0: Placement((0, 1), (1, 0), (0, 1))}, (Move(0, 0, 1, 200_000),)),
        ReplaySlot({0: Placement((0,), (1,), (1,))}),
    ]
    with Testbed(2, tmp_path / "run", ext_mbit=20, state_dir=tmp_path / "st") as tb:
        run_id = tb.run_id
        run = replay(tb, {0: TrainSpec(job=0, target=1e12, hidden=64)}, {0: 0}, slots, 1.5)
    assert run.slots_run == 2
    [(slot, job, src, dst, got)] = run.moved
    assert (slot, job, src, dst) == (0, 0, 0, 1)
    assert 200_000 <= got < 201_000  # the payload and its frame headers
    assert run.status[0].work > 0
    assert run.moves_of_jobs[0] == 1  # machines (0, 1) → (0,)
    secs = run.proc_seconds[(0, 0)]
    assert secs[0][0] > 0 and secs[1][1] > 0  # a worker on 0, the PS on 1
    assert live_resources(run_id) == []


def test_speed_option_takes_a_testbed_profile(tmp_path):
    prof = {
        "format": "dmlsched-speed-profile/1",
        "default": "links",
        "slot_seconds": 20.0,
        "ext_mbit": [10.0],
        "int_mbit": [50.0],
        "grad_bytes": 76840.0,
        "forms": {
            "links": {
                "batch_tau_s": 0.0,
                "inv_eta_ext": 0.55,
                "inv_eta_int": 0.9,
                "overhead_s": 0.006,
            }
        },
    }
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(prof))
    args = ["run", "--scheduler", "fifo", "--jobs", "4", "--machines", "3", "--slots", "5"]
    p = subprocess.run(
        [sys.executable, "-m", "dmlsched", *args, "--speed", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "total_utility" in json.loads(p.stdout)
    p = subprocess.run(
        [sys.executable, "-m", "dmlsched", *args, "--speed", str(tmp_path / "nope.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and "speed" in p.stderr
