"""``dmlsched serve --executor slurm``: the service's decisions run as Slurm job steps."""

from __future__ import annotations

from pathlib import Path

import pytest

from dmlsched.cli import main as cli
from dmlsched.service.executors.base import Slice
from dmlsched.service.executors.driver import assignments
from dmlsched.service.quickstart_slurm import SlurmQuickStart
from tests.service.helpers import job_request
from tests.slurm.conftest import needs_slurm


def test_the_heartbeats_answers_make_one_assignment_per_job() -> None:
    req = job_request(batch=8)
    task = {
        "job": 4,
        "incarnation": 7,
        "work": 800.0,
        "request": req,
        "placement": {"b": [1, 1], "a": [2, 0]},
    }
    beats = {
        "a": {"machines": {"a": 0, "b": 1}, "tasks": [task]},
        "b": {"machines": {"a": 0, "b": 1}, "tasks": [task]},
    }
    (a,) = assignments(beats).values()
    assert a.incarnation == 7 and a.train.target == 800.0 and a.train.batch == 8
    assert a.placement == (Slice("a", 2, 0), Slice("b", 1, 1))  # the service's machine order
    assert a.worker_demand == tuple(float(x) for x in req["worker_demand"])


def test_serve_refuses_a_slurm_executor_it_cannot_use(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["serve", "--scheduler", "fifo", "--db", str(tmp_path / "s.db"), "--manual-clock"]
    assert cli([*args, "--executor", "slurm", "--progress", "model"]) == 2
    assert "invalid progress='model' (expected measured with --executor slurm)" in (
        capsys.readouterr().err
    )
    assert (
        cli([*args, "--executor", "slurm", "--progress", "measured", "--slurm-dir", str(tmp_path)])
        == 2
    )
    assert "slurm-dir" in capsys.readouterr().err
    assert cli([*args, "--executor", "kubernetes"]) == 2


@needs_slurm
@pytest.mark.slow  # real training under PD-ORS on a 3-node cluster: minutes
def test_quickstart_on_slurm_runs_four_jobs_to_completion_where_pdors_said(
    tmp_path: Path,
) -> None:
    qs = SlurmQuickStart(tmp_path, slot_seconds=10.0)
    try:
        qs.start()
        ids = [qs.submit(qs.job(i, 2)) for i in range(4)]
        jobs = qs.wait(ids, timeout=900)
        assert [j["state"] for j in jobs] == ["completed"] * 4, jobs
        runs = qs.steps()
        assert {r.job for r in runs} == set(ids)
        # every run's steps: on the node, with the count, the decision named
        started = [r for r in runs if r.steps]
        assert started and all(r.matches for r in started), [r for r in started if not r.matches]
        finished = {r.job for r in started if all(s[3] == "COMPLETED" for s in r.steps)}
        assert finished == set(ids)
    finally:
        qs.stop()
