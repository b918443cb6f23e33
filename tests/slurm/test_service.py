"""``dmlsched serve --executor slurm``: the service's decisions run as Slurm job steps."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from dmlsched.cli import main as cli
from dmlsched.service.executors.base import Slice
from dmlsched.service.executors.driver import assignments, read_agent_tokens
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


def test_the_executor_acts_only_with_agent_tokens_from_a_private_file(tmp_path: Path) -> None:
    from dmlsched.errors import InvalidInput

    f = tmp_path / "tokens.csv"
    f.write_text("# node tokens\nt0,agent-m0,agent,m0\nt1,agent-m1,agent,m1\n")
    f.chmod(0o600)
    assert read_agent_tokens(f) == {"m0": "t0", "m1": "t1"}
    f.chmod(0o644)
    with pytest.raises(InvalidInput, match="chmod 600"):
        read_agent_tokens(f)
    f.chmod(0o600)
    f.write_text("t0,ops,admin\n")  # an executor is its nodes' agents, never an admin
    with pytest.raises(InvalidInput, match="token,name,agent,machine"):
        read_agent_tokens(f)


def test_serve_refuses_a_slurm_executor_it_cannot_use(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["serve", "--scheduler", "fifo", "--db", str(tmp_path / "s.db"), "--manual-clock"]
    args += ["--insecure-local"]
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


def _until(what: str, ok: Callable[[], Any], timeout: float, poll: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = ok()
        if got:
            return got
        time.sleep(poll)
    raise AssertionError(f"{what}: not within {timeout:g} s")


@needs_slurm
@pytest.mark.slow  # real training under PD-ORS on a 3-node cluster: minutes
def test_quickstart_on_slurm_runs_four_jobs_to_completion_where_pdors_said(
    tmp_path: Path,
) -> None:
    qs = SlurmQuickStart(tmp_path)
    try:
        qs.start()
        ids = [qs.submit(qs.job(i)) for i in range(4)]
        jobs = qs.wait(ids, timeout=1200)
        assert [j["state"] for j in jobs] == ["completed"] * 4, jobs
        assert all(j["done"] == j["work"] for j in jobs)
        runs = qs.steps()
        assert {r.job for r in runs} == set(ids)
        # every run's steps: on the node, with the count, the decision named
        started = [r for r in runs if r.steps]
        assert started and all(r.matches for r in started), [r for r in started if not r.matches]
        finished = {r.job for r in started if all(s[3] == "COMPLETED" for s in r.steps)}
        assert finished == set(ids)
    finally:
        qs.stop()


@needs_slurm
@pytest.mark.slow  # real training, a node killed, the service's agent timeout: minutes
def test_a_killed_slurmd_has_its_job_rescheduled_losing_at_most_the_steps_since_a_checkpoint(
    tmp_path: Path,
) -> None:
    qs = SlurmQuickStart(
        tmp_path,
        scheduler="fifo",
        params=("max_workers=1",),
        slot_seconds=5.0,
        agent_timeout=8.0,
        window=10_000,  # one epoch: the job moves only because its node is lost
    )
    try:
        qs.start()
        h = qs.service.headers(qs.user_token)
        body = {**qs.job(0, epochs=60), "deadline": 1000}  # 86,220 samples
        (j,) = [qs.submit(body)]

        def job() -> dict[str, Any]:
            return httpx.get(f"{qs.service.url}/v1/jobs/{j}", headers=h, timeout=30).json()

        first = _until(
            "running with a periodic checkpoint",
            lambda: (x := job())["state"] == "running" and x["done"] >= 10_000 and x,
            timeout=300,
        )
        victim = next(m for m, c in first["placement"].items() if c["ps"])  # PS 0's node
        inc = first["incarnation"]
        qs.cluster.kill_node(victim)
        moved = _until(
            "rescheduled on another node",
            lambda: (
                (x := job())["incarnation"] != inc
                and x["placement"]
                and victim not in x["placement"]
                and x["restored"]  # the new incarnation has reported where it resumed
                and x
            ),
            timeout=300,
        )
        done = _until("completed", lambda: (x := job())["state"] == "completed" and x, timeout=600)
        every = 20 * 64  # the executor checkpoints every 20 steps of 64 samples
        # progress since the last checkpoint is lost (redone, credited once), nothing more
        assert moved["restored"] > 0, moved  # resumed from a checkpoint, not from scratch
        assert done["lost"] <= every + 2 * 64, done  # the steps since it (and one in flight)
        assert done["done"] == done["work"]  # credited once: never beyond the job's work
        log = httpx.get(
            f"{qs.service.url}/v1/events", params={"limit": 10000}, headers=qs.service.headers()
        ).json()
        assert any(r["kind"] == "tick" and victim in (r.get("down") or []) for r in log)
        credited = sum(r["samples"] for r in log if r["kind"] == "progress" and r["job"] == j)
        print(  # the numbers behind the verdict (pytest -s)
            f"killed slurmd of {victim} at done={first['done']:g} (incarnation {inc}); "
            f"resumed at {moved['restored']:g} on {sorted(moved['placement'])}; lost "
            f"{done['lost']:g} (bound {every + 2 * 64}); credited {credited:g} of work "
            f"{done['work']:g}"
        )
        # nothing counted twice: the credited total is the final counter (whole steps of 64)
        assert done["work"] <= credited < done["work"] + 64, credited
    finally:
        qs.stop()


@needs_slurm
@pytest.mark.slow  # 200 submissions, each run a Slurm job: a few minutes
def test_two_hundred_submissions_through_the_service_leave_the_controller_up(
    tmp_path: Path,
) -> None:
    # one scheduler epoch for the whole test: FIFO keeps each job where it started
    qs = SlurmQuickStart(
        tmp_path, scheduler="fifo", params=("max_workers=1",), slot_seconds=3.0, window=10_000
    )
    try:
        qs.start()
        small = {**qs.job(0, epochs=1), "deadline": 1000}
        ids = [qs.submit({**small, "name": f"small-{i}"}) for i in range(200)]
        assert len(set(ids)) == 200
        client = qs.cluster.client()
        h = qs.service.headers(qs.user_token)

        def completed() -> int:
            r = httpx.get(
                f"{qs.service.url}/v1/jobs",
                params={"state": "completed", "limit": 1000},
                headers=h,
                timeout=30,
            )
            return len(r.json())

        _until("20 jobs completed through Slurm", lambda: completed() >= 20, timeout=600, poll=3)
        assert client.ping()  # slurmctld answers
        assert httpx.get(f"{qs.service.url}/healthz", timeout=30).json()["status"] == "ok"
        runs = qs.steps()
        assert len({r.slurm_job for r in runs}) >= 20
        assert all(r.matches for r in runs if r.steps)
        log = (Path(qs.cluster.dir) / "log" / "slurmctld.log").read_text(errors="replace")
        print(  # the numbers behind the verdict (pytest -s)
            f"200 submitted; {completed()} completed; {len({r.slurm_job for r in runs})} Slurm "
            f"jobs, {sum(r.matches for r in runs if r.steps)} of "
            f"{sum(1 for r in runs if r.steps)} with steps as decided; "
            f"controller up: {client.ping()}"
        )
        assert "underflow" not in log
    finally:
        qs.stop()
