"""Progress that can be believed, fenced machines, lost work shown, a maximum runtime."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from dmlsched.service.app import Service, create_app
from dmlsched.service.core import Core, ServiceConfig, credit_bound
from dmlsched.service.store import open_store
from tests.service.helpers import (
    ADMIN,
    AGENT0,
    AGENT1,
    ALICE,
    CAPACITY,
    bearer,
    job_request,
    tokens,
)

AGENTS = {"m0": AGENT0, "m1": AGENT1}


@dataclass
class Cluster:
    """A measured-progress service with agent machines m0, m1 and a fake wall clock."""

    client: TestClient
    core: Core
    now: list[float]

    def tick(self, n: int = 1) -> None:
        for _ in range(n):
            for name, token in AGENTS.items():  # the agents that are alive beat
                if name not in self.hung:
                    self.client.post(f"/v1/agents/{name}/heartbeat", headers=bearer(token))
            assert self.client.post("/v1/tick", headers=bearer(ADMIN)).status_code == 200

    hung: frozenset[str] = frozenset()

    def task(self, job: int) -> tuple[str, str, int]:
        """(the machine holding the job's PS 0, another machine, its incarnation)."""
        for name, token in AGENTS.items():
            a = self.client.post(f"/v1/agents/{name}/heartbeat", headers=bearer(token)).json()
            for t in a["tasks"]:
                if t["job"] == job and t["ps"] > 0:
                    other = next(m for m in AGENTS if m != name)
                    return name, other, t["incarnation"]
        raise AssertionError(f"job {job} has no PS placed")

    def report(self, machine: str, job: int, inc: int, work: float, **kw: object):
        body = {"job": job, "incarnation": inc, "work": work, **kw}
        return self.client.post(
            f"/v1/agents/{machine}/progress", json=body, headers=bearer(AGENTS[machine])
        )

    def refused(self, reason: str) -> float:
        for line in self.client.get("/metrics", headers=bearer(ADMIN)).text.splitlines():
            if line.startswith(f'dmlsched_reports_refused_total{{reason="{reason}"}}'):
                return float(line.split()[-1])
        raise AssertionError(reason)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    now = [0.0]
    cfg = ServiceConfig("fifo", progress="measured", params={"max_workers": 1})
    core = Core(
        cfg, open_store(str(tmp_path / "s.db")), clock=lambda: now[0], agent_timeout=5.0
    ).open()
    with TestClient(create_app(Service(core, tokens=tokens(tmp_path)))) as c:
        for name, token in AGENTS.items():
            body = {"name": name, "capacity": CAPACITY, "agent": True}
            assert c.post("/v1/machines", json=body, headers=bearer(ADMIN)).status_code == 201
            body = {"name": name, "agent": True}
            assert c.post("/v1/machines", json=body, headers=bearer(token)).status_code == 201
        yield Cluster(c, core, now)


def _submit(cl: Cluster, **kw: object) -> int:
    r = cl.client.post("/v1/jobs", json=job_request(epochs=400, **kw), headers=bearer(ALICE))
    assert r.status_code == 201
    return int(r.json()["id"])


def test_progress_that_cannot_be_believed_is_refused_with_409(cluster: Cluster) -> None:
    cl = cluster
    cl.tick()  # slot 0 without jobs: the job's incarnation is slot 1
    job = _submit(cl)
    cl.tick()
    holder, other, inc = cl.task(job)
    assert inc == 1
    never_placed = _submit(cl)  # queued: no placement yet
    bound = credit_bound(cl.core.jobs[job].rate, 1)
    probes = [
        (cl.report(other, job, inc, 10.0), "not-holder"),  # another machine's job
        (cl.report(holder, job, inc + 1, 10.0), "stale-incarnation"),
        (cl.report(holder, job, inc - 1, 10.0), "stale-incarnation"),
        (cl.report(holder, job, inc, 1e15), "over-bound"),  # completes it at once
        (cl.report(holder, job, inc, 2 * bound), "over-bound"),  # inflated
        (cl.report(holder, never_placed, inc, 10.0), "no-placement"),
    ]
    for r, reason in probes:
        assert r.status_code == 409, (reason, r.text)
        assert reason in r.json()["detail"]
    good = bound / 8
    assert cl.report(holder, job, inc, good).json()["new"] == good
    # replays: the same report 7 more times (as 8 reports worth 1,000 were credited as 7,000)
    for _ in range(7):
        r = cl.report(holder, job, inc, good)
        assert r.status_code == 409 and "replay" in r.json()["detail"]
    cl.tick()
    assert cl.client.get(f"/v1/jobs/{job}", headers=bearer(ALICE)).json()["done"] == good
    assert cl.refused("replay") == 7 and cl.refused("over-bound") == 2
    assert cl.refused("not-holder") == 1 and cl.refused("stale-incarnation") == 2
    events = cl.client.get("/v1/events", headers=bearer(ADMIN)).json()
    assert [(e["work"], e["samples"]) for e in events if e["kind"] == "progress"] == [(good, good)]


def test_reports_without_new_work_are_not_logged(cluster: Cluster) -> None:
    cl = cluster
    job = _submit(cl)
    cl.tick()
    holder, _, inc = cl.task(job)
    cl.report(holder, job, inc, 100.0)
    cl.tick()  # credited: done = 100
    cl.tick()  # the same placement: the same incarnation
    assert cl.task(job)[2] == inc
    before = len(cl.client.get("/v1/events", headers=bearer(ADMIN)).json())
    assert cl.report(holder, job, inc, 150.0).json()["new"] == 50.0
    assert cl.report(holder, job, inc, 250.0).json()["new"] == 100.0
    kinds = [e["kind"] for e in cl.client.get("/v1/events", headers=bearer(ADMIN)).json()]
    assert kinds[before:] == ["progress", "progress"]


def test_a_hung_machine_is_fenced_and_its_late_report_is_not_credited(cluster: Cluster) -> None:
    cl = cluster
    job = _submit(cl)
    cl.tick()
    holder, other, inc = cl.task(job)
    assert cl.report(holder, job, inc, 100.0).status_code == 200
    cl.hung = frozenset({holder})  # its agent stops (SIGSTOP); its processes train on
    cl.now[0] = 10.0  # past the agent timeout: the next slot takes it down
    cl.tick()
    assert not cl.core.by_name[holder].up
    done = cl.core.jobs[job].done
    assert done == 100.0
    # the hung machine's late report (its processes kept training): fenced
    r = cl.report(holder, job, inc, 1508.0)
    assert r.status_code == 409 and "fenced" in r.json()["detail"]
    # the job runs on elsewhere (a new incarnation); the agent returns and joins again
    holder2, _, inc2 = cl.task(job)
    assert holder2 == other and inc2 > inc
    cl.hung = frozenset()
    join = {"name": holder, "agent": True}
    assert (
        cl.client.post("/v1/machines", json=join, headers=bearer(AGENTS[holder])).status_code == 201
    )
    r = cl.report(holder, job, inc, 1508.0)  # still not the job's incarnation
    assert r.status_code == 409
    cl.tick()
    assert cl.core.jobs[job].done == done  # +1,408 never credited
    assert cl.refused("fenced") == 1


def test_lost_work_is_shown_done_versus_restored_from_a_checkpoint(cluster: Cluster) -> None:
    cl = cluster
    job = _submit(cl)
    cl.tick()
    holder, _other, inc = cl.task(job)
    cl.report(holder, job, inc, 1000.0, resumed=0.0)
    cl.hung = frozenset({holder})
    cl.now[0] = 10.0
    cl.tick()  # credited 1,000; the machine is gone; the job moves
    holder2, _, inc2 = cl.task(job)
    # the new incarnation resumed from a checkpoint at 200: 800 samples are redone
    r = cl.report(holder2, job, inc2, 300.0, resumed=200.0)
    assert r.status_code == 200 and r.json()["new"] == 0.0
    js = cl.client.get(f"/v1/jobs/{job}", headers=bearer(ALICE)).json()
    assert (js["done"], js["restored"], js["lost"], js["incarnation"]) == (
        1000.0,
        200.0,
        800.0,
        inc2,
    )
    assert cl.report(holder2, job, inc2, 1100.0).json()["new"] == 100.0


def test_a_job_past_its_max_runtime_is_cancelled_with_the_reason(cluster: Cluster) -> None:
    cl = cluster
    job = _submit(cl, max_runtime=3)
    cl.tick(3)
    assert cl.core.jobs[job].state == "running"
    cl.tick()
    js = cl.client.get(f"/v1/jobs/{job}", headers=bearer(ALICE)).json()
    assert js["state"] == "cancelled"
    events = cl.client.get("/v1/events", headers=bearer(ADMIN)).json()
    cancel = [e for e in events if e["kind"] == "cancel"]
    assert cancel == [
        {
            "seq": cancel[0]["seq"],
            "kind": "cancel",
            "job": job,
            "by": "service",
            "reason": "max runtime: ran 3 slots, its limit is 3",
        }
    ]
