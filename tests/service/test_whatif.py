"""`POST /v1/simulate` and `dmlsched whatif`: the service's answer before a job is submitted.

The check that matters: for every registered cluster scheduler, the answer
agrees with what the service then does when the job is really submitted and
nothing else changes — admission, the slot it is decided, where and when it
starts, when it completes and the utility.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from dmlsched.cli import main as cli
from dmlsched.schedulers.protocols import scheduler_names
from dmlsched.service.app import Service, create_app
from dmlsched.service.schemas import JobRequest
from dmlsched.service.whatif import simulate
from tests.service.helpers import add_machines, job_request, make_core, submit

HORIZON = 30


def _outcome(core: Any, j: int, slots: int) -> dict[str, Any]:
    """What the service did with job ``j`` over the next ``slots`` ticks."""
    out: dict[str, Any] = {"decision": "pending", "start": None, "placement": None}
    out["completion"], out["decided_at"] = None, None
    for _ in range(slots):
        core.tick()
        t = core.slot - 1
        js = core.jobs[j]
        if js.state == "rejected" and out["decision"] != "rejected":
            out["decision"], out["decided_at"] = "rejected", t
        elif js.state in ("admitted", "running", "completed") and out["decision"] == "pending":
            out["decision"], out["decided_at"] = "admitted", t
        if js.placement is not None and out["start"] is None:
            out["start"], out["placement"] = t, js.summary(core.machines)["placement"]
        if js.state == "completed" and out["completion"] is None:
            out["completion"] = js.completed
        if js.state in ("completed", "rejected"):
            break
    return out


@pytest.mark.parametrize("scheduler", scheduler_names("cluster"))
def test_the_answer_agrees_with_what_the_service_then_does(tmp_path: Path, scheduler: str) -> None:
    core = make_core(tmp_path / "s.db", scheduler, seed=3)
    add_machines(core, 3)
    submit(core, 4, epochs=3)
    for _ in range(2):
        core.tick()
    question = JobRequest.model_validate(job_request(epochs=2, name="asked"))
    before = core.seq
    (pred,) = simulate(core, [question], horizon=HORIZON)
    assert core.seq == before and not core.batch  # nothing committed, nothing queued
    js, _ = core.submit(question, None)
    did = _outcome(core, js.id, HORIZON)
    got = {k: getattr(pred, k) for k in did}
    assert got == did, scheduler
    if did["completion"] is not None:
        assert pred.utility == pytest.approx(js.job.utility(did["completion"] - js.arrival))


def test_the_api_answers_one_job_or_many_and_names_a_bad_field(tmp_path: Path) -> None:
    core = make_core(tmp_path / "s.db", "fifo")
    add_machines(core, 2)
    with TestClient(create_app(Service(core))) as c:
        seq = c.get("/healthz").json()["seq"]
        r = c.post("/v1/simulate", json=job_request(epochs=1))
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["slot"] == 0 and len(body["jobs"]) == 1
        (p,) = body["jobs"]
        assert p["decision"] == "admitted" and p["start"] == 0 and p["completion"] is not None
        assert p["placement"] and p["utility"] > 0
        two = c.post("/v1/simulate?horizon=5", json={"jobs": [job_request(), job_request()]})
        assert [j["index"] for j in two.json()["jobs"]] == [0, 1]
        bad = c.post("/v1/simulate", json={"jobs": [job_request(), job_request(epochs=0)]})
        assert bad.status_code == 422
        assert bad.json()["detail"].startswith("invalid jobs.1.epochs=0")
        assert c.post("/v1/simulate", json={"jobs": []}).status_code == 422
        assert c.get("/healthz").json()["seq"] == seq  # nothing was logged
        assert c.get("/v1/jobs").json() == []


def test_a_job_that_fits_nowhere_or_no_machine_says_so(tmp_path: Path) -> None:
    core = make_core(tmp_path / "s.db", "fifo")
    (p,) = simulate(core, [JobRequest.model_validate(job_request())], horizon=3)
    assert (p.decision, p.reason_code, p.reason) == (
        "pending",
        "no-machine-up",
        "no machine is declared yet",
    )


def test_the_cli_prints_the_answer_and_exits_2_on_a_bad_file(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx

    core = make_core(tmp_path / "s.db", "fifo")
    add_machines(core, 2)
    client = TestClient(create_app(Service(core)))

    def post(url: str, timeout: float, **kw: Any) -> Any:
        return client.post(url.split("8080")[1], **kw)

    monkeypatch.setattr(httpx, "post", post)
    job = tmp_path / "job.json"
    job.write_text(json.dumps(job_request(epochs=1, name="mine")))
    assert cli(["whatif", "--server", "http://127.0.0.1:8080", str(job)]) == 0
    out = capsys.readouterr().out
    assert "admitted" in out and "mine" in out
    assert cli(["whatif", "--server", "http://127.0.0.1:8080", str(job), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["jobs"][0]["decision"] == "admitted"
    job.write_text("{")
    assert cli(["whatif", "--server", "http://127.0.0.1:8080", str(job)]) == 2
    job.write_text(json.dumps(job_request(epochs=0)))
    assert cli(["whatif", "--server", "http://127.0.0.1:8080", str(job)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("invalid jobs.0.epochs=0")
