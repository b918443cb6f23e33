"""The geo closed loop on real processes (with a data move), the opt-in catalogue entries,
--speed PATH."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any, ClassVar

import numpy as np

from dmlsched.experiments.catalogue import all_experiments
from dmlsched.model.geo import GeoDecision, GeoJob, GeoPlacement, GeoWorkload
from dmlsched.testbed.edge_geo import Move, run_geo
from dmlsched.testbed.runtime import Testbed, TrainSpec
from dmlsched.testbed.state import live_resources
from tests.geo.test_engine import sites


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


class MoveThenStay:
    """Slot 0: DC 0's data to one worker on DC 1 (the PS on DC 0); then train where it is."""

    name: ClassVar[str] = "move-then-stay"
    setting: ClassVar[str] = "geo"

    def reset(self, sites: Any, horizon: int, rng: Any) -> None:
        pass

    def decide(self, view: Any) -> GeoDecision:
        D = np.asarray(view.data[0])
        q = np.zeros((2, 2))
        q[:, 1] = D
        return GeoDecision({0: GeoPlacement((0, 1), 0 if view.slot == 0 else 1, q)})


def test_the_geo_loop_runs_placements_and_moves_data_on_real_processes(tmp_path):
    job = GeoJob(
        id=0,
        arrival=0,
        data=[[4.0, 0.0], [0.0, 4.0]],
        capacity=20.0,
        worker_demand=(1.0,),
        ps_demand=(0.5,),
        exchange_gb=2.0,
        deploy_cost=0.3,
    )
    wl = GeoWorkload(sites(), (job,), horizon=2)
    with Testbed(2, tmp_path / "run", ext_mbit=20, state_dir=tmp_path / "st") as tb:
        run_id = tb.run_id
        specs = {0: TrainSpec(job=0, target=1e12, hidden=64)}
        run = run_geo(wl, MoveThenStay(), tb, specs, 1.5)
    assert run.slots_run == 2
    [(slot, move, got)] = run.moved
    assert (slot, move) == (0, Move(0, 0, 1, 200_000))
    assert 200_000 <= got < 201_000  # the payload and its frame headers
    assert run.status[0].work > 0
    assert run.moves_of_jobs[0] == 1  # machines (0, 1) → (1,)
    secs = run.proc_seconds[(0, 0)]
    assert secs[1][0] > 0 and secs[0][1] > 0  # a worker on 1, the PS on 0
    assert 0 < run.work[(0, 0)] <= 4.0  # GB trained, at most what was moved there
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
