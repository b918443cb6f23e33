"""Identities and least privilege: rogue clients and agents are refused, the log says who."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from dmlsched.service.app import PAGE, Service, create_app
from dmlsched.service.auth import RateLimiter
from tests.service.helpers import (
    ADMIN,
    AGENT0,
    AGENT1,
    ALICE,
    BOB,
    CAPACITY,
    bearer,
    job_request,
    make_core,
    tokens,
)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """An admin declared m0 and m1 (agent machines); m0's agent joined."""
    core = make_core(tmp_path / "s.db", "fifo")
    app = create_app(Service(core, tokens=tokens(tmp_path)), allowed_hosts=["testserver"])
    with TestClient(app) as c:
        for name in ("m0", "m1"):
            r = c.post(
                "/v1/machines",
                json={"name": name, "capacity": CAPACITY, "agent": True},
                headers=bearer(ADMIN),
            )
            assert r.status_code == 201
        assert (
            c.post(
                "/v1/machines", json={"name": "m0", "agent": True}, headers=bearer(AGENT0)
            ).status_code
            == 201
        )
        yield c


def _submit(c: TestClient, token: str, **kw: object) -> dict:
    r = c.post("/v1/jobs", json=job_request(**kw), headers=bearer(token))
    assert r.status_code == 201, r.text
    return r.json()


def test_users_see_and_cancel_only_their_own_jobs(client: TestClient) -> None:
    a = _submit(client, ALICE, name="alices")
    b = _submit(client, BOB, name="bobs")
    assert a["owner"] == "alice" and b["owner"] == "bob"
    assert [j["id"] for j in client.get("/v1/jobs", headers=bearer(ALICE)).json()] == [a["id"]]
    assert client.get(f"/v1/jobs/{b['id']}", headers=bearer(ALICE)).status_code == 403
    r = client.delete(f"/v1/jobs/{b['id']}", headers=bearer(ALICE))
    assert r.status_code == 403 and "another user" in r.json()["detail"]
    assert client.get(f"/v1/jobs/{b['id']}", headers=bearer(BOB)).json()["state"] == "queued"
    assert client.delete(f"/v1/jobs/{a['id']}", headers=bearer(ALICE)).status_code == 202
    assert len(client.get("/v1/jobs", headers=bearer(ADMIN)).json()) == 2  # an admin sees all
    state = client.get("/v1/state", headers=bearer(BOB)).json()
    assert [j["id"] for j in state["jobs"]] == [b["id"]]


def test_idempotency_keys_belong_to_their_user(client: TestClient) -> None:
    key = {"Idempotency-Key": "same"}
    a = client.post("/v1/jobs", json=job_request(), headers={**bearer(ALICE), **key})
    b = client.post("/v1/jobs", json=job_request(), headers={**bearer(BOB), **key})
    assert (a.status_code, b.status_code) == (201, 201)  # not Alice's job handed to Bob
    assert a.json()["id"] != b.json()["id"]


@pytest.mark.parametrize(
    ("token", "method", "url", "body"),
    [
        (ALICE, "post", "/v1/machines", {"name": "ghost", "capacity": CAPACITY}),
        (ALICE, "post", "/v1/tick", None),
        (ALICE, "get", "/v1/events", None),
        (ALICE, "post", "/v1/agents/m0/heartbeat", None),
        (ALICE, "post", "/v1/agents/m0/progress", {"job": 0, "incarnation": 0, "work": 10.0}),
        (AGENT0, "post", "/v1/jobs", job_request()),
        (AGENT0, "get", "/v1/jobs", None),
        (AGENT0, "post", "/v1/tick", None),
        (AGENT0, "get", "/v1/events", None),
        # NodeRestriction: an agent acts for its own machine only
        (AGENT0, "post", "/v1/agents/m1/heartbeat", None),
        (AGENT0, "post", "/v1/agents/m1/progress", {"job": 0, "incarnation": 0, "work": 10.0}),
        (AGENT0, "post", "/v1/machines", {"name": "m1", "agent": True}),  # re-register m1
        (AGENT0, "post", "/v1/machines", {"name": "ghost", "capacity": CAPACITY}),
        # ghost capacity: an agent never raises what an admin declared
        (AGENT0, "post", "/v1/machines", {"name": "m0", "capacity": [1000, 16, 64, 100]}),
        (AGENT1, "post", "/v1/machines", {"name": "m1", "capacity": [4, 17, 64, 100]}),
    ],
)
def test_what_a_role_may_not_do_is_refused(
    client: TestClient, token: str, method: str, url: str, body: dict | None
) -> None:
    before = client.get("/v1/events", headers=bearer(ADMIN)).json()
    kw = {"json": body} if body is not None else {}
    r = client.request(method, url, headers=bearer(token), **kw)
    assert r.status_code == 403, (r.status_code, r.text)
    assert "forbidden" in r.json()["detail"]
    assert client.get("/v1/events", headers=bearer(ADMIN)).json() == before  # nothing logged
    machines = {m["name"]: m for m in client.get("/v1/machines", headers=bearer(ADMIN)).json()}
    assert set(machines) == {"m0", "m1"} and not machines["m1"]["up"]
    assert all(list(m["capacity"].values()) == CAPACITY or not m["up"] for m in machines.values())


def test_a_ghost_machine_of_absurd_capacity_is_refused_even_to_an_admin(
    client: TestClient,
) -> None:
    r = client.post(
        "/v1/machines",
        json={"name": "ghost", "capacity": [1e300, 1, 1, 1]},
        headers=bearer(ADMIN),
    )
    assert r.status_code == 422 and "capacity" in r.json()["detail"]
    # so a job asking for 1,000 GPUs fits nowhere and is refused at submission
    r = client.post(
        "/v1/jobs", json=job_request(worker_demand=[1000, 1, 1, 1]), headers=bearer(ALICE)
    )
    assert r.status_code == 422 and "worker_demand[gpu]" in r.json()["detail"]


def test_an_agent_may_offer_less_than_declared_and_the_log_says_who_did_what(
    client: TestClient,
) -> None:
    r = client.post(
        "/v1/machines",
        json={"name": "m1", "capacity": [2, 16, 64, 100], "agent": True},
        headers=bearer(AGENT1),
    )
    assert r.status_code == 201 and r.json()["up"]
    assert r.json()["capacity"]["gpu"] == 2 and r.json()["declared"]["gpu"] == 4
    job = _submit(client, ALICE)
    client.delete(f"/v1/jobs/{job['id']}", headers=bearer(ALICE))
    client.post("/v1/tick", headers=bearer(ADMIN))
    events = client.get("/v1/events", headers=bearer(ADMIN)).json()
    by = [(e["kind"], e["by"]) for e in events if e["kind"] != "config"]
    assert by == [
        ("machine", "admin"),
        ("machine", "admin"),
        ("machine", "agent-m0"),
        ("machine", "agent-m1"),
        ("submit", "alice"),
        ("cancel", "alice"),
        ("tick", "admin"),
    ]


def test_reads_are_paged_by_default(client: TestClient) -> None:
    for _ in range(PAGE + 5):
        _submit(client, ALICE)
    first = client.get("/v1/jobs", headers=bearer(ALICE)).json()
    assert len(first) == PAGE
    rest = client.get("/v1/jobs", params={"since_id": first[-1]["id"]}, headers=bearer(ALICE))
    assert len(rest.json()) == 5
    assert (
        client.get("/v1/jobs", params={"limit": 100_000}, headers=bearer(ALICE)).status_code == 422
    )


def test_a_foreign_host_header_is_refused(client: TestClient) -> None:
    r = client.get("/healthz", headers={"Host": "evil.example"})  # DNS rebinding
    assert r.status_code == 400


def test_each_identity_has_its_own_rate_limit(tmp_path: Path) -> None:
    now = [0.0]
    core = make_core(tmp_path / "s.db", "fifo")
    service = Service(core, tokens=tokens(tmp_path), rate_limit=5.0)
    service.limiter = RateLimiter(5.0, 10.0, clock=lambda: now[0])
    with TestClient(create_app(service)) as c:
        codes = [c.get("/v1/jobs", headers=bearer(ALICE)).status_code for _ in range(12)]
        assert codes == [200] * 10 + [429] * 2  # a burst of 2 s worth, then refused
        r = c.get("/v1/jobs", headers=bearer(ALICE))
        assert r.headers["retry-after"] == "1" and "alice" in r.json()["detail"]
        assert c.get("/v1/jobs", headers=bearer(BOB)).status_code == 200  # Bob is not Alice
        now[0] += 1.0  # 5 requests' worth of refill
        assert [c.get("/v1/jobs", headers=bearer(ALICE)).status_code for _ in range(6)] == [
            200
        ] * 5 + [429]
