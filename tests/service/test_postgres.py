"""The log on a real PostgreSQL server: a throwaway cluster in a temp folder.

Needs Debian's ``postgresql`` (``make test-deps`` installs it as root) and root to run
the server as the ``postgres`` user; skipped with a reason otherwise
(:mod:`dmlsched.service.pgserver`).  The cluster listens on a Unix socket only and is
stopped and deleted afterwards.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from dmlsched.errors import InvalidInput
from dmlsched.service.loadtest import ServiceProcess, check_jobs, load_identities, run_load
from dmlsched.service.pgserver import ThrowawayPostgres, why_not
from dmlsched.service.store import Record, open_store
from tests.service.helpers import CAPACITY, add_machines, job_request, submit

pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))


@pytest.fixture(scope="module")
def pg() -> Iterator[ThrowawayPostgres]:
    with ThrowawayPostgres() as server:
        yield server


@pytest.fixture(scope="module")
def pg_url(pg: ThrowawayPostgres) -> str:
    return pg.url


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
        listed = httpx.get(svc.url + "/v1/jobs", headers=h).json()
        assert [j["id"] for j in listed] == ids
        assert httpx.get(svc.url + "/healthz").json()["slot"] == 1
    finally:
        svc.stop()


def test_postgres_restarted_under_load_loses_nothing_and_the_service_recovers(
    db: str, pg: ThrowawayPostgres, tmp_path: Path
) -> None:
    users = load_identities(8)
    svc = ServiceProcess(
        ["--scheduler", "fifo", "--db", db, "--manual-clock"], tmp_path, "tok", users
    )
    svc.start()
    restarted = threading.Event()
    try:
        for i in range(2):
            httpx.post(
                svc.url + "/v1/machines",
                json={"name": f"m{i}", "capacity": CAPACITY},
                headers=svc.headers(),
            ).raise_for_status()

        def on_acked(n: int) -> None:
            if n >= 100 and not restarted.is_set():
                restarted.set()
                pg.stop("fast")  # every session ends: the service's connection breaks
                time.sleep(1.0)
                pg.start()

        res = run_load(
            svc, 8, 300, on_acked=on_acked, tick_every=0.1, deadline=240,
            tokens=[u[0] for u in users],
        )  # fmt: skip
        out = {**res.summary(), **check_jobs(svc, res)}
        health = httpx.get(svc.url + "/healthz")
    finally:
        svc.stop()
    assert restarted.is_set()
    assert out["errors"] == 0, out["first_errors"]
    assert out["acknowledged"] == 300
    assert out["missing"] == out["duplicated"] == out["wrong_id"] == 0
    assert health.status_code == 200  # recovered on its own: nobody restarted it
    print("postgres restarted under load:", out)


def test_postgres_gone_for_longer_than_the_retry_budget_stops_the_service_non_zero(
    db: str, pg: ThrowawayPostgres, tmp_path: Path
) -> None:
    svc = ServiceProcess(
        ["--scheduler", "fifo", "--db", db, "--manual-clock", "--db-retry-seconds", "2"],
        tmp_path,
        "tok",
    )
    svc.start()
    try:
        pg.stop("fast")
        t0 = time.monotonic()
        r = httpx.post(svc.url + "/v1/jobs", json=job_request(), headers=svc.headers(), timeout=30)
        assert r.status_code == 503
        assert svc.proc is not None
        rc = svc.proc.wait(timeout=30)
        err = svc.proc.stderr.read().decode() if svc.proc.stderr else ""
        assert rc == 1 and time.monotonic() - t0 < 20
        assert "unreachable for 2 s" in err and "Traceback" not in err, err
    finally:
        if not (Path(pg.data) / "postmaster.pid").exists():
            pg.start()
        svc.stop()
