"""A real `dmlsched serve` process: SIGKILL mid-load, restart, nothing acknowledged lost."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from dmlsched.service.loadtest import ServiceProcess, check_jobs, main, run_load
from tests.service.helpers import CAPACITY, job_request


def _machines(svc: ServiceProcess, n: int = 3) -> None:
    for i in range(n):
        httpx.post(
            svc.url + "/v1/machines",
            json={"name": f"m{i}", "capacity": CAPACITY},
            headers=svc.headers(),
        ).raise_for_status()


def _load_with_kill(tmp_path: Path, clients: int, jobs: int) -> dict:
    svc = ServiceProcess(
        ["--scheduler", "fifo", "--db", str(tmp_path / "s.db"), "--manual-clock"],
        tmp_path,
        token="tok",
    )
    svc.start()
    try:
        _machines(svc)
        killed = threading.Event()

        def on_acked(n: int) -> None:
            if n >= jobs // 2 and not killed.is_set():
                killed.set()
                svc.kill()
                svc.start()

        res = run_load(svc, clients, jobs, on_acked=on_acked, tick_every=0.1, deadline=240)
        out = {**res.summary(), **check_jobs(svc, res)}
        out["healthz"] = httpx.get(svc.url + "/healthz").json()
        out["killed"] = killed.is_set()
    finally:
        svc.stop()
    assert svc.proc is not None and svc.proc.poll() is not None  # nothing left running
    return out


def test_sigkill_mid_load_loses_no_acknowledged_job_and_duplicates_none(tmp_path: Path) -> None:
    out = _load_with_kill(tmp_path, clients=16, jobs=240)
    assert out["killed"]
    assert out["errors"] == 0, out["first_errors"]
    assert out["acknowledged"] == 240
    assert out["missing"] == out["duplicated"] == out["wrong_id"] == 0
    assert out["jobs_listed"] == 240
    print("load (16 clients, 240 jobs, SIGKILL at 120):", out)


@pytest.mark.slow
def test_full_load_16_clients_2000_jobs_with_a_sigkill(capsys: pytest.CaptureFixture) -> None:
    assert main(["--clients", "16", "--jobs", "2000", "--kill"]) == 0


def test_a_restarted_service_keeps_jobs_slots_and_decisions(tmp_path: Path) -> None:
    args = ["--scheduler", "drf", "--db", str(tmp_path / "s.db"), "--manual-clock", "--seed", "7"]
    svc = ServiceProcess(args, tmp_path, token="tok")
    svc.start()
    try:
        _machines(svc, 2)
        for i in range(5):
            httpx.post(
                svc.url + "/v1/jobs", json=job_request(epochs=20 + i), headers=svc.headers()
            ).raise_for_status()
        httpx.post(svc.url + "/v1/tick", params={"n": 3}, headers=svc.headers())
        before = httpx.get(svc.url + "/v1/jobs").json()
        alloc = httpx.get(svc.url + "/v1/allocation").json()
        svc.kill()
        svc.start()
        assert httpx.get(svc.url + "/v1/jobs").json() == before
        assert httpx.get(svc.url + "/v1/allocation").json() == alloc
        assert "dmlsched_replay_mismatches 0.0" in httpx.get(svc.url + "/metrics").text
    finally:
        svc.stop()


def test_serve_refuses_bad_flags_with_one_line(tmp_path: Path) -> None:
    from dmlsched.cli import main as cli

    assert cli(["serve", "--scheduler", "nope", "--manual-clock"]) == 2
    assert cli(["serve", "--scheduler", "fifo"]) == 2  # neither clock
    assert cli(["serve", "--scheduler", "fifo", "--slot-seconds", "-1"]) == 2
    assert (
        cli(
            [
                "serve",
                "--scheduler",
                "fifo",
                "--manual-clock",
                "--token-file",
                str(tmp_path / "none"),
            ]
        )
        == 2
    )


def test_ctrl_c_stops_the_service_gracefully_with_status_130(tmp_path: Path) -> None:
    import signal

    svc = ServiceProcess(
        ["--scheduler", "fifo", "--db", str(tmp_path / "s.db"), "--manual-clock"], tmp_path
    )
    svc.start()
    try:
        assert svc.proc is not None
        svc.proc.send_signal(signal.SIGINT)
        assert svc.proc.wait(timeout=30) == 130
    finally:
        svc.stop()
