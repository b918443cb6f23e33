"""End to end: the service runs 6 jobs with real training on 3 machines of this host — its
embedded `local` executor (`dmlsched serve --executor local --machine ...`) or 3 `dmlsched
agent`s in `local` emulation.

Then the event log is checked against the engine: every slot's allocation passes the
engine's own checks on the jobs as submitted, and a fresh engine replaying the log (same
scheduler, same seed) makes every decision again, identically.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import httpx
import numpy as np
import pytest

from dmlsched.model.cluster import Cluster, Placement
from dmlsched.service.core import Core, ServiceConfig
from dmlsched.service.quickstart import MACHINE, AgentQuickStart, QuickStart, job_body
from dmlsched.service.schemas import JobRequest, job_from_request
from dmlsched.service.store import open_store
from dmlsched.sim.cluster import check_capacity, check_placement, read_placement

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("sklearn") is None,
    reason="needs the testbed's torch (CPU) and scikit-learn",
)


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(QuickStart, id="executor-local"),
        pytest.param(AgentQuickStart, id="agents", marks=pytest.mark.slow),
    ],
)
def test_six_jobs_run_for_real_on_three_machines_and_the_log_passes_the_engine(
    tmp_path: Path, kind: type[QuickStart]
) -> None:
    qs = kind(tmp_path, slot_seconds=2.0)
    try:
        qs.start()
        ids = [qs.submit(job_body(i, epochs=2)) for i in range(6)]
        jobs = qs.wait(ids, timeout=420)
        h = qs.service.headers()  # the admin's
        events = httpx.get(qs.service.url + "/v1/events", params={"limit": 10_000}, headers=h)
        events = events.json()
        final = httpx.get(qs.service.url + "/v1/allocation", headers=h).json()
        metrics = httpx.get(qs.service.url + "/metrics", headers=h).text
    finally:
        qs.stop()
    for a in qs.agents:
        assert a.poll() is not None
    assert [j["state"] for j in jobs] == ["completed"] * 6
    for j in jobs:
        assert j["done"] >= j["work"] * (1 - 1e-9) and j["loss"] is not None
        assert j["loss"] < np.log(10)  # trained: below a uniform guess's cross-entropy
    assert final["jobs"] == {}  # nothing placed once everything completed
    assert 'dmlsched_jobs{state="completed"} 6.0' in metrics
    # honest agents' (or the executor's) reports are believed: none beyond what a placement can do
    assert 'dmlsched_reports_refused_total{reason="over-bound"} 0.0' in metrics

    # every slot's decision against the engine's checks, on the jobs as submitted
    names: list[str] = []
    reqs: dict[int, JobRequest] = {}
    arrival: dict[int, int] = {}
    placed = completed = 0
    for e in events:
        if e["kind"] == "machine" and e["name"] not in names:
            names.append(e["name"])
        elif e["kind"] == "submit":
            reqs[e["job"]] = JobRequest.model_validate(e["request"])
        elif e["kind"] == "tick":
            assert e["error"] is None
            for j in e["arrive"]:
                arrival[j] = e["slot"]
            completed += len(e["complete"])
            if not names:
                assert e["alloc"] == {}
                continue
            cluster = Cluster(np.tile(MACHINE, (len(names), 1)))
            usage = np.zeros_like(cluster.capacity)
            for key, (ms, ws, ss) in e["alloc"].items():
                job = job_from_request(reqs[int(key)], int(key), arrival[int(key)])
                p = Placement(tuple(ms), tuple(ws), tuple(ss))
                c = read_placement("fifo", e["slot"], int(key), p, len(names))
                check_placement("fifo", job, c, e["slot"])
                for m, w, s in zip(ms, ws, ss, strict=True):
                    usage[m] += w * np.asarray(job.worker_demand) + s * np.asarray(job.ps_demand)
                placed += 1
            check_capacity("fifo", cluster, usage, e["slot"], {})
    assert sorted(names) == ["m0", "m1", "m2"] and placed >= 6 and completed == 6
    progress = [e for e in events if e["kind"] == "progress"]
    assert progress and all(e["samples"] >= 0 for e in progress)

    # a fresh engine on the log: the same decisions, the same end state
    cfg = ServiceConfig("fifo", progress="measured", params={"max_workers": 2})
    core = Core(cfg, open_store(str(tmp_path / "service.db"))).open()
    assert core.replay_mismatches == 0 and core.invalid_decisions == 0
    assert {js.id: js.state for js in core.jobs.values()} == dict.fromkeys(ids, "completed")
    core.store.close()


@pytest.mark.slow
def test_a_killed_agents_jobs_are_rescheduled_and_still_complete(tmp_path: Path) -> None:
    import os
    import signal
    import time

    qs = AgentQuickStart(tmp_path, slot_seconds=1.0, agent_timeout=4.0)
    try:
        qs.start()
        ids = [qs.submit(job_body(i, epochs=12)) for i in range(3)]
        h = qs.service.headers()
        deadline = time.monotonic() + 120
        victim = None
        while victim is None and time.monotonic() < deadline:
            alloc = httpx.get(qs.service.url + "/v1/allocation", headers=h).json()["jobs"]
            used = sorted({m for per in alloc.values() for m in per})
            victim = used[-1] if used else None
            time.sleep(0.3)
        assert victim is not None
        os.kill(qs.agents[qs.machines.index(victim)].pid, signal.SIGKILL)  # a crash
        jobs = qs.wait(ids, timeout=600)
        listed = httpx.get(qs.service.url + "/v1/machines", headers=h).json()
        machines = {m["name"]: m["up"] for m in listed}
    finally:
        qs.stop()
    assert machines[victim] is False
    assert [j["state"] for j in jobs] == ["completed"] * 3
    assert sum(j["requeued"] for j in jobs) >= 1


@pytest.mark.slow
def test_a_hung_agent_is_fenced_and_rejoins_without_its_stale_processes(tmp_path: Path) -> None:
    import os
    import signal
    import time

    qs = AgentQuickStart(tmp_path, slot_seconds=1.0, agent_timeout=4.0)
    try:
        qs.start()
        ids = [qs.submit(job_body(i, epochs=12)) for i in range(3)]
        h = qs.service.headers()
        deadline = time.monotonic() + 120
        victim = None
        while victim is None and time.monotonic() < deadline:
            alloc = httpx.get(qs.service.url + "/v1/allocation", headers=h).json()["jobs"]
            used = sorted({m for per in alloc.values() for m in per})
            victim = used[-1] if used else None
            time.sleep(0.3)
        assert victim is not None
        agent = qs.agents[qs.machines.index(victim)]
        os.kill(agent.pid, signal.SIGSTOP)  # the agent hangs; its processes train on
        try:
            while time.monotonic() < deadline + 60:
                ms = httpx.get(qs.service.url + "/v1/machines", headers=h).json()
                if not next(m for m in ms if m["name"] == victim)["up"]:
                    break
                time.sleep(0.3)
            else:
                raise AssertionError(f"{victim} never declared down")
            time.sleep(3.0)  # the stale incarnation keeps training meanwhile
        finally:
            os.kill(agent.pid, signal.SIGCONT)
        jobs = qs.wait(ids, timeout=600)
        ms = httpx.get(qs.service.url + "/v1/machines", headers=h).json()
        metrics = httpx.get(qs.service.url + "/metrics", headers=h).text
    finally:
        qs.stop()
    assert [j["state"] for j in jobs] == ["completed"] * 3
    assert next(m for m in ms if m["name"] == victim)["up"]  # it joined again
    assert sum(j["requeued"] for j in jobs) >= 1
    # nothing the hung machine measured after it was fenced was credited
    assert 'dmlsched_reports_refused_total{reason="over-bound"} 0.0' in metrics
    for j in jobs:
        assert j["done"] <= j["work"] * 1.5  # no inflated credit
