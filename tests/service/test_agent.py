"""The agent never blocks on a slow or hung peer, and fences itself before it rejoins.

A fake testbed spawns shell processes for the PSs and workers; the service is a scripted
HTTP handler (httpx's MockTransport), so each step's requests are seen in order.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dmlsched.service.agent import _RESUME_WAIT_S, _STOP_TIMEOUT_S, MachineAgent, _alive


class FakeTestbed:
    """Spawns ``sh`` processes; ``stubborn``: they ignore SIGTERM (a hung process)."""

    def __init__(self, stubborn: bool = False) -> None:
        self.stubborn = stubborn
        self.procs: list[subprocess.Popen] = []

    def task_base(self) -> dict[str, Any]:
        return {"bind": "127.0.0.1"}

    def spawn(self, machine: int, cfg: Any) -> int:
        script = ("trap '' TERM; " if self.stubborn else "") + "sleep 60 & wait"
        p = subprocess.Popen(["sh", "-c", script], start_new_session=True)
        self.procs.append(p)
        return p.pid

    def reap(self) -> None:
        for p in self.procs:
            p.poll()  # the testbed's machine agent reaps its children; we are their parent

    def gone(self, pids: list[int], timeout: float = 5.0) -> bool:
        """Whether every one of ``pids`` ends within ``timeout`` (a signal takes a moment)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.reap()
            if not any(_alive(p) for p in pids):
                return True
            time.sleep(0.02)
        return False

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


class Service:
    """The scripted service: ``up`` and ``tasks`` are what the next heartbeat answers."""

    def __init__(self) -> None:
        self.up = True
        self.tasks: list[dict[str, Any]] = []
        self.log: list[tuple[str, str]] = []
        self.on_join: list[Any] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.log.append((request.method, path))
        if path.endswith("/heartbeat"):
            body = {
                "slot": 1,
                "machine": "m0",
                "up": self.up,
                "machines": {"m0": 0, "m1": 1},
                "tasks": self.tasks,
            }
            return httpx.Response(200, json=body)
        if path == "/v1/machines":
            for f in self.on_join:
                f()
            self.up = True
            return httpx.Response(201, json={"name": "m0", "up": True})
        return httpx.Response(200, json={"accepted": True, "new": 0.0})


def _task(job: int, inc: int, *, wait: bool = True) -> dict[str, Any]:
    return {
        "job": job,
        "workers": 1,
        "ps": 1,
        "incarnation": inc,
        "checkpoint_wait": wait,
        "placement": {"m0": [1, 1]},
        "request": {"batch": 4},
        "done": 0.0,
        "work": 1000.0,
    }


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[tuple[MachineAgent, Service, FakeTestbed, list[float]]]:
    svc = Service()
    tb = FakeTestbed()
    now = [0.0]
    http = httpx.Client(transport=httpx.MockTransport(svc.handler), base_url="http://svc")
    agent = MachineAgent(http, "m0", None, tb, tmp_path, clock=lambda: now[0])
    try:
        yield agent, svc, tb, now
    finally:
        tb.close()
        http.close()


def _pids(agent: MachineAgent) -> list[int]:
    return [p for loc in [*agent.running.values(), *agent.stopping] for p in loc.pids()]


def test_a_returning_agent_kills_its_fenced_processes_before_it_joins(rig: Any) -> None:
    agent, svc, tb, _ = rig
    svc.tasks = [_task(0, 1)]
    agent.step()
    pids = _pids(agent)
    assert len(pids) == 2 and all(_alive(p) for p in pids)
    alive_at_join: list[bool] = []
    svc.on_join.append(lambda: (tb.reap(), alive_at_join.extend(_alive(p) for p in pids)))
    svc.up = False  # the service declared the machine down while the agent hung
    agent.step()
    assert alive_at_join == [False, False]  # killed before the join, not after
    assert svc.log[-1] == ("POST", "/v1/machines")
    assert agent.running == {} and (0, 1) in agent.ended  # never restarted
    svc.tasks = [_task(0, 1)]
    agent.step()
    assert agent.running == {}


def test_a_stop_never_blocks_the_loop_and_ends_in_sigkill(rig: Any, tmp_path: Path) -> None:
    agent, svc, _, now = rig
    agent.tb.stubborn = True  # processes that ignore SIGTERM (hung)
    svc.tasks = [_task(0, 1), _task(1, 1)]
    agent.step()
    pids = {j: loc.pids() for j, loc in agent.running.items()}
    svc.tasks = [_task(1, 1)]  # job 0 leaves this machine
    t0 = time.monotonic()
    agent.step()
    assert time.monotonic() - t0 < 2.0  # not 20 s waiting on job 0's processes
    assert all(_alive(p) for p in pids[0]) and set(agent.running) == {1}
    now[0] += _STOP_TIMEOUT_S + 1
    agent.step()
    assert agent.tb.gone(pids[0]) and agent.stopping == []
    assert all(_alive(p) for p in pids[1])  # the other job was never disturbed


def _predecessor(tmp_path: Path, job: int, inc: int, final: bool) -> None:
    d = tmp_path / f"job-{job}" / f"inc-{inc}"
    d.mkdir(parents=True)
    (d / "ps-0.addr").write_text(json.dumps({"port": 1}))
    (d / "ps-0.json").write_text(json.dumps({"work": 10.0, "final": final}))


def test_a_new_incarnation_waits_for_its_predecessors_checkpoint_without_blocking(
    rig: Any, tmp_path: Path
) -> None:
    agent, svc, _, _now = rig
    _predecessor(tmp_path, 0, 1, final=False)  # its PSs have not checkpointed yet
    _predecessor(tmp_path, 1, 1, final=False)  # ... and never will: fenced
    svc.tasks = [_task(0, 5), _task(1, 5, wait=False)]
    t0 = time.monotonic()
    agent.step()
    assert time.monotonic() - t0 < 2.0
    assert set(agent.running) == {1}  # the fenced one's successor starts at once
    (tmp_path / "job-0" / "inc-1" / "ps-0.json").write_text(json.dumps({"final": True}))
    agent.step()
    assert set(agent.running) == {0, 1}


def test_a_predecessor_that_never_checkpoints_delays_only_its_own_job(
    rig: Any, tmp_path: Path
) -> None:
    agent, svc, _, now = rig
    _predecessor(tmp_path, 0, 1, final=False)
    svc.tasks = [_task(0, 5), _task(2, 5)]
    agent.step()
    assert set(agent.running) == {2}
    now[0] += _RESUME_WAIT_S
    agent.step()
    assert set(agent.running) == {0, 2}
    assert os.path.isdir(tmp_path / "job-0" / "inc-5")


def test_bad_agent_flags_exit_2_with_one_line_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dmlsched.cli import main

    base = ["agent", "--server", "http://127.0.0.1:1", "--workdir", str(tmp_path / "w")]
    for extra, field in [
        (["--machine", "m0", "--poll", "1e308"], "poll=1e+308"),  # a wait no clock can do
        (["--machine", "../m0"], "machine='../m0'"),  # a path, not a name
        (["--machine", "m0", "--server", "notaurl"], "server='notaurl'"),
    ]:
        args = [*base, *extra]
        assert main(args) == 2, extra
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and field in err, err


def test_a_refusal_ends_the_agent_with_the_services_detail_and_a_5xx_is_asked_again() -> None:
    from dmlsched.errors import InvalidInput
    from dmlsched.service.agent import _answered, _Unavailable

    def answer(status: int, body: dict[str, Any]) -> Any:
        def call() -> None:
            transport = httpx.MockTransport(lambda req: httpx.Response(status, json=body))
            with httpx.Client(transport=transport, base_url="http://svc") as c:
                c.post("/v1/machines").raise_for_status()

        return call

    detail = {"detail": "invalid machine='m0' (not declared by an admin)"}
    with pytest.raises(InvalidInput, match=r"machine='m0'.*404: invalid machine='m0' \(not decl"):
        _answered(answer(404, detail), "m0", "http://svc")
    with pytest.raises(InvalidInput, match=r"token-file=.*401"):
        _answered(answer(401, {"detail": "unknown token"}), "m0", "http://svc")
    with pytest.raises(_Unavailable):
        _answered(answer(503, {"detail": "the log is unavailable"}), "m0", "http://svc")
