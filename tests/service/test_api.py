"""The HTTP API in-process: auth, one-line 4xx, idempotency, events, metrics, OpenAPI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from dmlsched.service.app import MAX_BODY, Service, create_app
from tests.service.helpers import ADMIN, CAPACITY, bearer, job_request, make_core, tokens

AUTH = bearer(ADMIN)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """An admin's client (its requests carry the admin's token unless they say otherwise)."""
    core = make_core(tmp_path / "s.db", "fifo")
    with TestClient(create_app(Service(core, tokens=tokens(tmp_path))), headers=AUTH) as c:
        for i in range(2):
            assert (
                c.post("/v1/machines", json={"name": f"m{i}", "capacity": CAPACITY}).status_code
                == 201
            )
        yield c


def test_every_endpoint_but_healthz_needs_a_known_token(client: TestClient) -> None:
    anon = TestClient(client.app)
    for method, url, body in [
        ("post", "/v1/jobs", job_request()),
        ("get", "/v1/jobs", None),
        ("get", "/v1/jobs/0", None),
        ("get", "/v1/machines", None),
        ("get", "/v1/allocation", None),
        ("get", "/v1/events", None),
        ("get", "/v1/state", None),
        ("get", "/metrics", None),
        ("post", "/v1/machines", {"name": "x", "capacity": CAPACITY}),
        ("post", "/v1/tick", None),
        ("delete", "/v1/jobs/0", None),
        ("post", "/v1/agents/m0/heartbeat", None),
        ("post", "/v1/agents/m0/progress", {"job": 0, "incarnation": 0, "work": 1.0}),
    ]:
        kw = {"json": body} if body is not None else {}
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": ADMIN}):
            r = anon.request(method, url, headers=headers, **kw)
            assert r.status_code == 401, (method, url, headers)
            assert r.headers["www-authenticate"] == "Bearer"
    assert anon.get("/healthz").status_code == 200
    assert anon.get("/").status_code == 200  # the dashboard's page: it asks for a token


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        (job_request(epochs=0), 422, "body.epochs"),
        (job_request(tau=-1), 422, "body.tau"),
        (job_request(mode="turbo"), 422, "body.mode"),
        (job_request(worker_demand=[9, 1, 1, 1]), 422, "worker_demand[gpu]"),
        (job_request(deadline=-3), 422, "body.deadline"),
        (
            job_request(deadline=3, utility={"kind": "linear", "value": 1, "slope": 0.1}),
            422,
            "deadline",
        ),
        (job_request(colour="red"), 422, "body.colour"),
        ({"epochs": 1}, 422, "body.samples"),
        (job_request(utility={"kind": "cubic"}), 422, "body.utility.kind"),
    ],
)
def test_bad_bodies_get_a_4xx_with_one_line_naming_the_field(
    client: TestClient, body: dict, status: int, field: str
) -> None:
    r = client.post("/v1/jobs", json=body, headers=AUTH)
    assert r.status_code == status
    detail = r.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and field in detail, detail


def test_malformed_and_oversized_bodies(client: TestClient) -> None:
    h = {**AUTH, "content-type": "application/json"}
    r = client.post("/v1/jobs", content=b'{"epochs": 1,', headers=h)
    assert r.status_code == 400 and "malformed JSON" in r.json()["detail"]
    r = client.post("/v1/jobs", content=b" " * (MAX_BODY + 1), headers=h)
    assert r.status_code == 413 and "larger than" in r.json()["detail"]
    r = client.post("/v1/jobs", content=b"NaN", headers=h)
    assert r.status_code in (400, 422)
    r = client.post("/v1/machines", json={"name": "../etc", "capacity": CAPACITY}, headers=AUTH)
    assert r.status_code == 422 and "body.name" in r.json()["detail"]


def test_a_repeated_idempotency_key_returns_the_same_job(client: TestClient) -> None:
    h = {**AUTH, "Idempotency-Key": "abc"}
    first = client.post("/v1/jobs", json=job_request(), headers=h)
    again = client.post("/v1/jobs", json=job_request(), headers=h)
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    assert len(client.get("/v1/jobs").json()) == 1


def test_jobs_run_to_completion_on_the_manual_clock(client: TestClient) -> None:
    ids = [
        client.post("/v1/jobs", json=job_request(name=f"j{i}", deadline=5), headers=AUTH).json()[
            "id"
        ]
        for i in range(4)
    ]
    assert [client.get(f"/v1/jobs/{j}").json()["state"] for j in ids] == ["queued"] * 4
    client.post("/v1/tick", headers=AUTH)
    alloc = client.get("/v1/allocation").json()
    assert alloc["slot"] == 0 and alloc["jobs"]
    r = client.post("/v1/tick", params={"n": 10}, headers=AUTH)
    assert r.status_code == 200 and r.json()["slot"] == 10
    states = {client.get(f"/v1/jobs/{j}").json()["state"] for j in ids}
    assert states == {"completed"}
    assert client.get("/v1/jobs", params={"state": "completed"}).json()[0]["progress"] == 1.0


def test_the_event_log_reads_from_a_sequence_number(client: TestClient) -> None:
    client.post("/v1/jobs", json=job_request(), headers=AUTH)
    client.post("/v1/tick", headers=AUTH)
    events = client.get("/v1/events").json()
    kinds = [e["kind"] for e in events]
    assert kinds == ["config", "machine", "machine", "submit", "tick"]
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs)
    tail = client.get("/v1/events", params={"since": seqs[2]}).json()
    assert [e["kind"] for e in tail] == ["submit", "tick"]
    assert tail[-1]["arrive"] == [0] and "0" in tail[-1]["alloc"]


def test_cancel_and_unknown_jobs(client: TestClient) -> None:
    client.post("/v1/jobs", json=job_request(epochs=500), headers=AUTH)
    client.post("/v1/tick", headers=AUTH)
    assert client.delete("/v1/jobs/0", headers=AUTH).status_code == 202
    client.post("/v1/tick", headers=AUTH)
    assert client.get("/v1/jobs/0").json()["state"] == "cancelled"
    assert client.get("/v1/jobs/99").status_code == 404
    assert client.delete("/v1/jobs/99", headers=AUTH).status_code == 404


def test_metrics_healthz_and_openapi(client: TestClient) -> None:
    client.post("/v1/jobs", json=job_request(), headers=AUTH)
    client.post("/v1/tick", headers=AUTH)
    text = client.get("/metrics").text
    for name in (
        'dmlsched_jobs{state="running"} 1.0',
        "dmlsched_decision_seconds_count 1.0",
        'dmlsched_utilization{resource="gpu"}',
        'dmlsched_machines{state="up"} 2.0',
    ):
        assert name in text
    h = client.get("/healthz").json()
    assert h["status"] == "ok" and h["slot"] == 1 and h["clock"] == "manual"
    paths = client.get("/openapi.json").json()["paths"]
    for p in ("/v1/jobs", "/v1/jobs/{job_id}", "/v1/machines", "/v1/allocation", "/v1/events"):
        assert p in paths
    schema = client.get("/openapi.json").json()["components"]["schemas"]["JobRequest"]
    assert {"epochs", "deadline", "utility", "worker_demand"} <= set(schema["properties"])


def test_the_wall_clock_refuses_manual_ticks(tmp_path: Path) -> None:
    core = make_core(tmp_path / "w.db", "fifo")  # no tokens: --insecure-local
    with TestClient(create_app(Service(core, slot_seconds=0.05))) as c:
        import time

        time.sleep(0.3)
        assert c.get("/healthz").json()["slot"] >= 2
        assert c.post("/v1/tick").status_code == 409
