"""The ``slurm`` executor: the executor contract on a real cluster, and what sacct says."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from dmlsched.service.executors.base import Assignment
from dmlsched.service.executors.slurm import SlurmExecutor, batch_script
from dmlsched.service.slurm_cluster import SlurmCluster
from dmlsched.testbed.runtime import TrainSpec
from tests.service.test_executors import _until
from tests.slurm.conftest import needs_slurm


def test_the_batch_script_asks_for_each_node_and_each_roles_count(tmp_path: Path) -> None:
    a = Assignment.from_counts(
        TrainSpec(job=5, target=640.0),
        2,
        [("m1", 2, 1), ("m0", 0, 0), ("m2", 1, 1)],
        worker_demand=(1.0, 2.0, 1.0, 1.0),
        ps_demand=(0.0, 1.0, 1.0, 1.0),
    )
    text = batch_script(
        a, 3, name="t-j5-r3", run_dir=tmp_path / "inc-3", addrs={"m1": "A", "m2": "B"}, resume=""
    )
    lines = text.splitlines()
    assert "#SBATCH -w m1 -N1 -n1 -c5 --gres=gpu:2" in lines
    assert "#SBATCH -w m2 -N1 -n1 -c3 --gres=gpu:1" in lines
    assert lines.count("#SBATCH hetjob") == 1
    steps = [ln for ln in lines if ln.startswith("srun")]
    assert [s.split(" -J ")[1].split()[0] for s in steps] == ["ps", "worker", "ps", "worker"]
    assert "--het-group=1 --exact -n 1 -c 2 -J worker --gres=gpu:1" in steps[3]
    # PSs and workers numbered over the placement in its order
    assert "--index-base 1" in steps[2] and "--index-base 2" in steps[3]
    assert "--ps-machines 0,1 --worker-machines 0,0,1 --hosts A,B" in steps[0]


@needs_slurm
@pytest.mark.slow  # real training, a node lost and Slurm's timeout to notice it
def test_a_lost_node_fails_the_run_and_the_next_resumes_from_the_last_checkpoint(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    every, step = 5, 64
    ex = SlurmExecutor(
        slurm_cluster.client(), tmp_path / "work", tag="lost", checkpoint_every=every
    )
    ex.start()
    train = TrainSpec(job=0, target=float(step * 100_000), batch=step, seed=3)
    try:
        a1 = Assignment.from_counts(train, 1, [("m0", 1, 1), ("m1", 1, 1)])
        ex.apply({0: a1})
        _until(ex, lambda r: r.state == "running" and r.work >= 3 * every * step)
        slurm_cluster.kill_node("m1")  # the machine dies: slurmd and every process on it
        failed = _until(ex, lambda r: r.state == "failed", timeout=90)
        assert "NODE_FAIL" in failed.detail, failed.detail
        # lost at most the steps since the last periodic checkpoint (plus the one in flight)
        assert failed.saved > 0 and failed.work - failed.saved <= (every + 1) * step, failed
        a2 = Assignment.from_counts(train, 2, [("m0", 1, 1), ("m2", 1, 1)])
        ex.apply({0: a2})
        again = _until(ex, lambda r: r.incarnation == 2 and r.state == "running")
        # the new run starts from the checkpoint: its work counts on from there, once
        assert again.saved == failed.saved and again.work >= failed.saved
        assert again.running == a2.placement
        first = json.loads(
            next(
                p for p in (tmp_path / "work" / "job-0").glob(f"inc-{again.run}/ps-0.json")
            ).read_text()
        )
        assert first["work"] >= failed.saved
    finally:
        ex.close()
        slurm_cluster.start_node("m1")
        deadline = time.monotonic() + 60
        client = slurm_cluster.client()
        while time.monotonic() < deadline:
            if any(n.name == "m1" and n.usable for n in client.nodes()):
                break
            time.sleep(0.5)
