"""One executor contract (tests/service/executor_contract.py) for every executor: ``local``
(processes on this host) and ``slurm`` (a real cluster; skipped without root or packages)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dmlsched.service.executors.base import Assignment, Executor, JobReport
from dmlsched.service.executors.local import LocalExecutor
from dmlsched.testbed.runtime import TrainSpec
from tests.service.executor_contract import run_contract
from tests.slurm.conftest import slurm_cluster  # noqa: F401  (the slurm param's cluster)

MACHINES = ["m0", "m1", "m2"]
CAPACITY = (1.0, 4.0, 8.0, 8.0)


@pytest.fixture(params=["local", "slurm"])
def executor(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Executor]:
    if request.param == "local":
        ex: Executor = LocalExecutor(dict.fromkeys(MACHINES, CAPACITY), tmp_path / "work")
    else:
        from dmlsched.service.executors.slurm import SlurmExecutor

        cluster = request.getfixturevalue("slurm_cluster")
        ex = SlurmExecutor(cluster.client(), tmp_path / "work", tag="contract", stop_timeout=20)
    ex.start()
    try:
        yield ex
    finally:
        ex.close()


@pytest.mark.slow  # three runs of real training: about a minute on a busy 2-core machine
def test_every_executor_keeps_the_contract(executor: Executor) -> None:
    seen = run_contract(executor, MACHINES)
    assert seen[-1].state == "done"
    assert not getattr(executor, "errors", [])
    if executor.name == "slurm":  # and sacct saw every step on its node with its count
        from dmlsched.service.executors.slurm import SlurmExecutor

        assert isinstance(executor, SlurmExecutor)
        ids = executor.slurm_ids(0)
        assert len(ids) == 3  # three runs: started, moved, resumed
        rows = executor.client.accounting(ids)
        steps = sorted(
            (r.job_id, r.name, r.nodes, r.ntasks) for r in rows if r.step not in (None, "batch")
        )
        print(f"sacct steps (job, role, node, tasks): {steps}")  # pytest -s
        assert steps == sorted(
            [
                (ids[0], "ps", "m0", 1),
                (ids[0], "worker", "m0", 1),
                (ids[0], "worker", "m1", 1),
                (ids[1], "ps", "m2", 1),
                (ids[1], "worker", "m2", 2),
                (ids[2], "ps", "m2", 1),
                (ids[2], "worker", "m2", 2),
            ]
        ), steps


def test_the_local_executor_runs_exactly_the_placement_and_fails_a_run_on_a_lost_machine(
    tmp_path: Path,
) -> None:
    ex = LocalExecutor(dict.fromkeys(MACHINES, CAPACITY), tmp_path / "work", stop_timeout=5)
    ex.start()
    try:
        train = TrainSpec(job=0, target=64.0 * 100_000, batch=64, seed=1)
        a = Assignment.from_counts(train, 1, [("m0", 1, 1), ("m1", 2, 0)])
        ex.apply({0: a})
        r = _until(ex, lambda r: r.state == "running" and r.running == a.placement)
        assert r.resumed == 0.0
        ex.kill_machine("m1")
        assert [n.up for n in ex.nodes()] == [True, False, True]
        failed = _until(ex, lambda r: r.state == "failed")
        assert "machine m1 down" in failed.detail and failed.running == ()
        # not started again on a dead machine
        ex.apply({0: a})
        assert ex.poll()[0].run == 0
    finally:
        ex.close()


def _until(ex: Executor, ok: Callable[[JobReport], bool], timeout: float = 120.0) -> JobReport:
    """Job 0's report once ``ok`` holds for it (polled every 0.2 s; fails after ``timeout``)."""
    import time

    deadline = time.monotonic() + timeout
    rep = None
    while time.monotonic() < deadline:
        rep = ex.poll().get(0)
        if rep is not None and ok(rep):
            return rep
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout:g} s: {rep}")


def test_serve_refuses_local_machines_it_cannot_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dmlsched.cli import main as cli

    args = ["serve", "--scheduler", "fifo", "--db", str(tmp_path / "s.db"), "--manual-clock"]
    args += ["--insecure-local", "--executor", "local"]
    for bad, says in (
        (["--machine", "m0=1,4,8,8"], "invalid progress='model' (expected measured with "),
        (["--progress", "measured", "--machine", "m0"], "NAME=gpu,cpu,mem,storage"),
        (["--progress", "measured", "--machine", "m0=1,4,8"], "4 numbers >= 0"),
        (["--progress", "measured", "--machine", "m0=1,4,8,8", "--machine", "m0=1,1,1,1"],
         "each machine once"),
    ):  # fmt: skip
        assert cli([*args, *bad]) == 2, bad
        err = capsys.readouterr().err
        assert says in err and "Traceback" not in err, err
    assert not (tmp_path / "s.db").exists()  # refused before the store is touched
    slurm = [a if a != "local" else "slurm" for a in args]
    assert cli([*slurm, "--progress", "measured", "--machine", "m0=1,4,8,8"]) == 2
    assert "none with --executor slurm" in capsys.readouterr().err
