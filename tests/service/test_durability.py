"""Acknowledged means durable: failed commits answer 503, never 2xx; one writer per log."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from dmlsched.service.app import Service, create_app
from dmlsched.service.core import Core, ServiceConfig
from dmlsched.service.loadtest import ServiceProcess, list_all_jobs
from dmlsched.service.store import Record, SQLiteStore, open_store
from tests.service.helpers import ADMIN, CAPACITY, bearer, job_request, tokens

AUTH = bearer(ADMIN)


class FlakyStore:
    """A SQLite store whose first commit of at least ``fail_at`` records raises (as a
    full disk does), once.

    Every commit is slowed down so that concurrent requests pile up in one group.
    """

    def __init__(self, path: Path, fail_at: int, pause: float = 0.02) -> None:
        self.inner = SQLiteStore(path).open()
        self.url = self.inner.url
        self.fail_at = fail_at
        self.pause = pause
        self.commits = 0
        self.failed: list[list[int]] = []

    def append_many(self, records: list[Record]) -> None:
        self.commits += 1
        time.sleep(self.pause)
        if len(records) >= self.fail_at and not self.failed:
            self.failed.append([r.seq for r in records])
            raise OSError(28, "No space left on device")
        self.inner.append_many(records)

    def records(self, since: int = 0, limit: int | None = None) -> Iterator[Record]:
        return self.inner.records(since, limit)

    def last_seq(self) -> int:
        return self.inner.last_seq()

    def save_snapshot(self, seq: int, blob: bytes) -> None:
        self.inner.save_snapshot(seq, blob)

    def latest_snapshot(self) -> tuple[int, bytes] | None:
        return self.inner.latest_snapshot()

    def close(self) -> None:
        self.inner.close()


def _submit_concurrently(client: TestClient, n: int) -> list[tuple[str, int, dict]]:
    out: list[tuple[str, int, dict]] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        key = f"k{i}"
        r = client.post(
            "/v1/jobs", json=job_request(name=key), headers={**AUTH, "Idempotency-Key": key}
        )
        with lock:
            out.append((key, r.status_code, r.json()))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_a_failed_group_commit_answers_503_to_every_request_in_it(tmp_path: Path) -> None:
    store = FlakyStore(tmp_path / "s.db", fail_at=2)
    core = Core(ServiceConfig("fifo"), store).open()
    service = Service(core, tokens=tokens(tmp_path))
    with TestClient(create_app(service), headers=AUTH) as client:
        client.post("/v1/machines", json={"name": "m0", "capacity": CAPACITY}, headers=AUTH)
        answers = _submit_concurrently(client, 24)
        assert store.failed and len(store.failed[0]) > 1  # a group, not one request
        codes = sorted(code for _, code, _ in answers)
        assert 503 in codes and set(codes) <= {201, 503}
        acked = {key: body["id"] for key, code, body in answers if code == 201}
        # the live service forgot what it did not keep: it lists exactly what was acked
        listed = {j["key"]: j["id"] for j in client.get("/v1/jobs").json()}
        assert listed == acked
        assert all("not kept" in body["detail"] for _, code, body in answers if code == 503)
        # and it goes on: the 503s retried with their keys are kept now
        for key, code, _ in answers:
            if code == 503:
                r = client.post(
                    "/v1/jobs", json=job_request(name=key), headers={**AUTH, "Idempotency-Key": key}
                )
                assert r.status_code == 201
        assert "dmlsched_failed_commits_total 1.0" in client.get("/metrics").text
    store.close()
    again = Core(ServiceConfig("fifo"), open_store(str(tmp_path / "s.db"))).open()
    assert {js.key for js in again.jobs.values()} == {key for key, _, _ in answers}
    assert {again.jobs[i].key: i for i in acked.values()} == acked  # the acked ids held
    again.store.close()


def test_a_slot_whose_commit_fails_is_not_acted_on(tmp_path: Path) -> None:
    store = FlakyStore(tmp_path / "s.db", fail_at=1, pause=0.0)
    store.failed.append([])  # not yet
    core = Core(ServiceConfig("fifo"), store).open()
    service = Service(core, tokens=tokens(tmp_path))
    with TestClient(create_app(service), headers=AUTH) as client:
        client.post("/v1/machines", json={"name": "m0", "capacity": CAPACITY}, headers=AUTH)
        client.post("/v1/jobs", json=job_request(epochs=50), headers=AUTH)
        store.failed.clear()  # the next commit fails: the slot's
        r = client.post("/v1/tick", headers=AUTH)
        assert r.status_code == 503 and "slot not run" in r.json()["detail"]
        assert client.get("/v1/allocation").json()["jobs"] == {}  # nothing to act on
        assert client.get("/healthz").json()["slot"] == 0
        assert client.get("/v1/jobs/0").json()["state"] == "queued"
        assert client.post("/v1/tick", headers=AUTH).status_code == 200  # the slot, again
        assert client.get("/v1/allocation").json()["slot"] == 0
        assert client.get("/v1/jobs/0").json()["state"] == "running"
    store.close()


def test_a_second_serve_on_the_same_sqlite_file_exits_2_naming_the_holder(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "s.db")
    svc = ServiceProcess(["--scheduler", "fifo", "--db", db, "--manual-clock"], tmp_path, "tok")
    with svc:
        assert svc.proc is not None
        second = subprocess.run(
            [sys.executable, "-m", "dmlsched", "serve", "--scheduler", "fifo", "--db", db,
             "--manual-clock", "--port", "0", "--insecure-local"],
            capture_output=True, text=True, timeout=60, cwd=tmp_path,
        )  # fmt: skip
        assert second.returncode == 2
        line = second.stderr.strip()
        assert "\n" not in line and f"held by pid {svc.proc.pid}" in line, line
        assert httpx.get(svc.url + "/healthz").status_code == 200  # the first is untouched


def _why_no_tmpfs() -> str | None:
    if os.geteuid() != 0:
        return "needs root to mount a small tmpfs"
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return "needs mount and umount"
    return None


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    why = _why_no_tmpfs()
    if why is not None:
        pytest.skip(why)
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_on_a_full_disk_every_201_is_kept_after_a_restart(tmp_path: Path, small_disk: Path) -> None:
    db = str(small_disk / "s.db")
    args = ["--scheduler", "fifo", "--db", db, "--manual-clock", "--rate-limit", "0"]
    svc = ServiceProcess(args, tmp_path, "tok")
    svc.start()
    try:
        httpx.post(
            svc.url + "/v1/machines",
            json={"name": "m0", "capacity": CAPACITY},
            headers=svc.headers(),
        ).raise_for_status()
        acked: dict[str, int] = {}
        refused = 0
        with httpx.Client(base_url=svc.url, headers=svc.headers(), timeout=30) as http:

            def client(c: int) -> None:
                nonlocal refused
                for i in range(2000):
                    key = f"fill-{c}-{i}"
                    r = http.post(
                        "/v1/jobs", json=job_request(name=key), headers={"Idempotency-Key": key}
                    )
                    if r.status_code == 201:
                        acked[key] = r.json()["id"]
                    else:
                        assert r.status_code == 503, r.text
                        refused += 1
                        if refused > 40:
                            return

            threads = [threading.Thread(target=client, args=(c,)) for c in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        assert refused > 0 and len(acked) > 100  # the disk did fill up under load
        assert httpx.get(svc.url + "/healthz").status_code == 200  # up, refusing what it can't keep
        svc.kill()
        # the operator frees space; the service restarts on the same log
        subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
        svc.start()
        listed = {j["key"]: j["id"] for j in list_all_jobs(svc)}
        assert {k: listed.get(k) for k in acked} == acked
    finally:
        svc.stop()
