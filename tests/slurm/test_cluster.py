"""The Slurm cluster itself: real daemons, one slurmd per namespace, exact task layouts."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from dmlsched.errors import InvalidInput
from dmlsched.service.slurm import SlurmClient, parse_job_id
from dmlsched.service.slurm_cluster import SlurmCluster
from dmlsched.testbed.state import live_resources
from tests.slurm.conftest import needs_slurm


def _layout(out: str) -> Counter[str]:
    """host names printed one per task → tasks per host."""
    return Counter(line.split()[-1] for line in out.splitlines() if line.strip())


def test_job_ids_of_components_and_steps_are_read_apart() -> None:
    assert parse_job_id("12+1.0") == (12, 1, "0")
    assert parse_job_id("12.batch") == (12, None, "batch")
    assert parse_job_id("7") == (7, None, None)
    with pytest.raises(ValueError):
        parse_job_id("7_[1-3]")


def test_a_cluster_refuses_fractional_cpus_or_gpus(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="capacity"):
        SlurmCluster(tmp_path, 2, capacity=(0.5, 4, 8, 8))


@needs_slurm
def test_every_node_is_its_own_slurmd_with_its_own_address(slurm_cluster: SlurmCluster) -> None:
    client = slurm_cluster.client()
    nodes = client.nodes()
    assert [n.name for n in nodes] == ["m0", "m1", "m2"]
    assert [n.addr for n in nodes] == ["10.77.0.1", "10.77.0.2", "10.77.0.3"]
    assert all(n.capacity == (1.0, 4.0, 8.0, 8.0) for n in nodes)
    # each task sees its node's host name and address: three daemons, three machines
    out = client.run("srun", "-N", "3", "-n", "3", "sh", "-c", "hostname -I; hostname")
    assert sorted(out.split()) == sorted(["10.77.0.1", "10.77.0.2", "10.77.0.3", "m0", "m1", "m2"])


@needs_slurm
def test_a_heterogeneous_job_places_exact_task_counts_per_node(
    slurm_cluster: SlurmCluster,
) -> None:
    client = slurm_cluster.client()
    out = client.run(
        "srun", "-w", "m0", "-n", "3", "hostname", ":", "-w", "m2", "-n", "1", "hostname"
    )
    assert _layout(out) == Counter({"m0": 3, "m2": 1})


@needs_slurm
def test_a_hostfile_with_arbitrary_distribution_places_exact_task_counts(
    slurm_cluster: SlurmCluster,
) -> None:
    client = slurm_cluster.client()
    hostfile = Path(slurm_cluster.dir) / "hosts-test"
    hostfile.write_text("m1\nm0\nm1\nm1\n")
    out = client.run(
        "env",
        f"SLURM_HOSTFILE={hostfile}",
        "srun",
        "-n",
        "4",
        "-m",
        "arbitrary",
        "sh",
        "-c",
        'echo "$SLURM_PROCID $(hostname)"',
    )
    by_rank = dict(line.split() for line in out.splitlines())
    assert by_rank == {"0": "m1", "1": "m0", "2": "m1", "3": "m1"}


@needs_slurm
def test_sacct_shows_each_step_with_its_node_and_task_count(
    slurm_cluster: SlurmCluster,
) -> None:
    client = slurm_cluster.client()
    script = "\n".join(
        [
            "#!/bin/sh",
            "#SBATCH -J acct-check -w m1 -N1 -n2",
            "#SBATCH hetjob",
            "#SBATCH -w m2 -N1 -n1",
            "srun --het-group=0 --exact -n 2 -J two true",
            "srun --het-group=1 --exact -n 1 -J one true",
        ]
    )
    job = client.submit(script, args=["-o", "/dev/null"])
    rows: list = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = [r for r in client.accounting([job]) if r.step not in (None, "batch")]
        if len(rows) == 2 and all(r.state == "COMPLETED" for r in rows):
            break
        time.sleep(0.3)
    got = {(r.name, r.nodes, r.ntasks, r.component) for r in rows}
    assert got == {("two", "m1", 2, 0), ("one", "m2", 1, 1)}


def test_a_client_names_the_failed_command(tmp_path: Path) -> None:
    client = SlurmClient(tmp_path / "missing.conf")
    with pytest.raises(Exception, match="exited"):
        client.run("sh", "-c", "echo boom >&2; exit 3")


@needs_slurm
def test_stopping_a_cluster_leaves_nothing_behind(tmp_path: Path) -> None:
    cluster = SlurmCluster(tmp_path, 1, ext_mbit=None, accounting=False)
    cluster.start()
    run_id = cluster.info.run_id if cluster.info else ""
    client = cluster.client()
    assert client.ping()
    cluster.stop()
    assert live_resources(run_id) == []
    assert not any(tmp_path.glob("slurm-*"))


@needs_slurm
def test_two_hundred_jobs_in_a_loop_leave_the_controller_up(slurm_cluster: SlurmCluster) -> None:
    # several slurmd sharing one host's node made slurmctld die here (run_job_cnt underflow)
    client = slurm_cluster.client()
    script = "#!/bin/sh\nsrun -n1 true\n"
    ids = [client.submit(script, args=["-n1", "-J", "loop", "-o", "/dev/null"]) for _ in range(200)]
    deadline = time.monotonic() + 120
    while [j for j in client.queue() if j.name == "loop"] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert client.ping()
    assert not [j for j in client.queue() if j.name == "loop"]
    assert len(set(ids)) == 200
    assert "run_job_cnt underflow" not in (slurm_cluster.dir / "log" / "slurmctld.log").read_text()
