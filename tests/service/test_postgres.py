"""The log on a real PostgreSQL server: a throwaway cluster in a temp folder.

Needs Debian's ``postgresql`` (``make test-deps`` installs it as root) and root to run
the server as the ``postgres`` user; skipped with a reason otherwise.  The cluster
listens on a Unix socket only and is stopped and deleted afterwards.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from dmlsched.errors import InvalidInput
from dmlsched.service.loadtest import ServiceProcess
from dmlsched.service.store import Record, open_store
from tests.service.helpers import CAPACITY, add_machines, job_request, submit


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _why_not() -> str | None:
    if _pg_bin() is None:
        return "needs Debian's postgresql (make test-deps, as root)"
    if os.geteuid() != 0:
        return "needs root to run a throwaway PostgreSQL as the postgres user"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "needs the postgres user (Debian's postgresql package makes it)"
    if shutil.which("runuser") is None:
        return "needs runuser (util-linux)"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    binary = _pg_bin()
    assert binary is not None
    root = Path(tempfile.mkdtemp(prefix="dmlsched-pg-", dir="/tmp"))
    pw = pwd.getpwnam("postgres")
    os.chown(root, pw.pw_uid, pw.pw_gid)
    data = root / "data"

    def as_pg(*cmd: str) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", *cmd],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=120,
        )

    try:
        as_pg(str(binary / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres")
        opts = f"-k {root} -c listen_addresses='' -p 5433 -c fsync=on"
        as_pg(
            str(binary / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            opts,
            "-w",
            "-l",
            str(root / "log"),
            "start",
        )
        yield f"postgresql://postgres@/postgres?host={root}&port=5433"
    finally:
        if (data / "postmaster.pid").exists():
            as_pg(str(binary / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def db(pg_url: str) -> Iterator[str]:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as c:
        c.execute("DROP TABLE IF EXISTS dmlsched_log")
    yield pg_url


def test_records_round_trip_in_order(db: str) -> None:
    st = open_store(db)
    st.append_many([Record(1, "config", {"a": 1}), Record(2, "submit", {"k": [1.5, None]})])
    st.append_many([Record(3, "tick", {"x": "y"})])
    assert [(r.seq, r.kind, r.body) for r in st.records(since=1)] == [
        (2, "submit", {"k": [1.5, None]}),
        (3, "tick", {"x": "y"}),
    ]
    st.close()


def test_a_second_writer_is_refused(db: str) -> None:
    first = open_store(db)
    with pytest.raises(InvalidInput, match="no other service"):
        open_store(db)
    first.close()
    open_store(db).close()  # the lock goes with the session


def test_a_restart_waits_for_the_dead_writers_session_to_end(db: str) -> None:
    # The first writer's session ends 0.5 s after the second asks (as a SIGKILLed
    # service's session ends once the server notices): the second must get the lock,
    # not call the database someone else's.
    import psycopg

    from dmlsched.service.store import _PG_LOCK_KEY

    holder = psycopg.connect(db, autocommit=True)
    holder.execute("SELECT pg_advisory_lock(%s)", (_PG_LOCK_KEY,))
    ends = threading.Timer(0.5, holder.close)
    ends.start()
    try:
        open_store(db).close()
    finally:
        ends.join()


def test_the_service_state_is_rebuilt_from_postgres(db: str, tmp_path: Path) -> None:
    from dmlsched.service.core import Core, ServiceConfig

    core = Core(ServiceConfig("drf"), open_store(db)).open()
    add_machines(core, 2)
    submit(core, 4, epochs=30)
    for _ in range(3):
        core.tick()
    state = [js.summary(core.machines) for js in core.jobs.values()]
    core.store.close()
    again = Core(ServiceConfig("drf"), open_store(db)).open()
    assert [js.summary(again.machines) for js in again.jobs.values()] == state
    assert again.slot == 3 and again.replay_mismatches == 0
    again.store.close()


def test_serve_on_postgres_survives_sigkill(db: str, tmp_path: Path) -> None:
    svc = ServiceProcess(["--scheduler", "fifo", "--db", db, "--manual-clock"], tmp_path, "tok")
    svc.start()
    try:
        h = svc.headers()
        httpx.post(svc.url + "/v1/machines", json={"name": "m0", "capacity": CAPACITY}, headers=h)
        ids = [
            httpx.post(svc.url + "/v1/jobs", json=job_request(), headers=h).json()["id"]
            for _ in range(5)
        ]
        httpx.post(svc.url + "/v1/tick", headers=h)
        svc.kill()
        svc.start()
        listed = httpx.get(svc.url + "/v1/jobs").json()
        assert [j["id"] for j in listed] == ids
        assert httpx.get(svc.url + "/healthz").json()["slot"] == 1
    finally:
        svc.stop()
