"""A real `dmlsched serve` process: SIGKILL mid-load, restart, nothing acknowledged lost."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from dmlsched.service.loadtest import (
    ServiceProcess,
    check_jobs,
    load_identities,
    main,
    run_load,
)
from tests.service.helpers import CAPACITY, job_request


def _machines(svc: ServiceProcess, n: int = 3) -> None:
    for i in range(n):
        httpx.post(
            svc.url + "/v1/machines",
            json={"name": f"m{i}", "capacity": CAPACITY},
            headers=svc.headers(),
        ).raise_for_status()


def _load_with_kill(tmp_path: Path, clients: int, jobs: int) -> dict:
    users = load_identities(clients)
    svc = ServiceProcess(
        ["--scheduler", "fifo", "--db", str(tmp_path / "s.db"), "--manual-clock"],
        tmp_path,
        token="tok",
        identities=users,
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

        res = run_load(
            svc,
            clients,
            jobs,
            on_acked=on_acked,
            tick_every=0.1,
            deadline=240,
            tokens=[u[0] for u in users],
        )
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
        h = svc.headers()
        httpx.post(svc.url + "/v1/tick", params={"n": 3}, headers=h)
        before = httpx.get(svc.url + "/v1/jobs", headers=h).json()
        alloc = httpx.get(svc.url + "/v1/allocation", headers=h).json()
        svc.kill()
        svc.start()
        assert httpx.get(svc.url + "/v1/jobs", headers=h).json() == before
        assert httpx.get(svc.url + "/v1/allocation", headers=h).json() == alloc
        assert "dmlsched_replay_mismatches 0.0" in httpx.get(svc.url + "/metrics", headers=h).text
    finally:
        svc.stop()


def test_serve_refuses_bad_flags_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from dmlsched.cli import main as cli
    from dmlsched.service.loadtest import write_secret

    serve = ["serve", "--scheduler", "fifo", "--manual-clock", "--db", str(tmp_path / "s.db")]
    auth = write_secret(tmp_path / "auth.csv", "t0k3n,ops,admin\n")
    assert cli(["serve", "--scheduler", "nope", "--manual-clock"]) == 2
    assert cli(["serve", "--scheduler", "fifo", "--insecure-local"]) == 2  # neither clock
    assert cli(["serve", "--scheduler", "fifo", "--slot-seconds", "-1", "--insecure-local"]) == 2
    # a slot the clock could never wait for (its thread died with a traceback, the API lived on)
    capsys.readouterr()
    assert cli(["serve", "--scheduler", "fifo", "--slot-seconds", "1e308", "--insecure-local"]) == 2
    assert "a week" in capsys.readouterr().err
    for extra, field in [
        ([], "token-auth-file=None"),  # no identities and no --insecure-local
        (["--insecure-local", "--agent-timeout", "nan"], "agent-timeout=nan"),
        (["--insecure-local", "--agent-timeout", "0"], "agent-timeout=0"),
        # a parameter of the wrong type (every slot then failed inside decide)
        (["--insecure-local", "--param", "max_workers=abc"], "parameter max_workers='abc'"),
        (["--insecure-local", "--param", "use_requested=1"], "parameter use_requested=1"),
        # well typed, out of range: the scheduler's reset refuses it, now before the start
        (["--insecure-local", "--param", 'placement="bogus"'], "placement='bogus'"),
        (["--insecure-local", "--seed", "-1"], "seed=-1"),
        (["--token-auth-file", str(tmp_path / "none")], "token-auth-file"),
        (["--insecure-local", "--host", "0.0.0.0"], "host='0.0.0.0'"),
        (["--insecure-local", "--token-auth-file", str(auth)], "insecure-local"),
    ]:
        capsys.readouterr()
        assert cli(serve + extra) == 2, extra
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and field in err, err
    auth.chmod(0o644)  # readable by everyone: a leaked password file
    assert cli([*serve, "--token-auth-file", str(auth)]) == 2
    assert "chmod 600" in capsys.readouterr().err
    auth.chmod(0o600)
    for bad, field in [
        ("t0k3n,ops,root\n", "role='root'"),
        ("t0k3n,ops,agent\n", "machine=None"),
        ("t0k3n,ops,user,m0\n", "machine='m0'"),
        ("t0k3n,ops,admin\nt0k3n,dev,user\n", "line 2"),
        ("t0k3n\n", "fields=1"),
    ]:
        write_secret(auth, bad)
        assert cli([*serve, "--token-auth-file", str(auth)]) == 2, bad
        assert field in capsys.readouterr().err, bad


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
