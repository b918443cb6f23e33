"""Every decision explains itself: each pending, rejected or preempted job has a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from dmlsched.model.reasons import CODES, Reason
from dmlsched.schedulers.cluster.fifo import Fifo
from dmlsched.schedulers.protocols import Explains, make_scheduler, scheduler_names
from dmlsched.service.schemas import JobRequest, MachineRequest
from tests.service.helpers import make_core, submit

EIGHT_GPUS = (8.0, 64.0, 256.0, 400.0)


def _gpu_job(gpus: float, **kw: object) -> JobRequest:
    body = {
        "epochs": 200, "samples": 2000, "batch": 4, "grad_mb": 10.0, "tau": 4e-4,
        "gamma": 1.0, "worker_demand": [gpus, 2, 4, 5], "ps_demand": [0, 1, 2, 2],
        "b_ext": 1.0, **kw,
    }  # fmt: skip
    return JobRequest.model_validate(body)


@pytest.mark.parametrize("name", scheduler_names("cluster"))
def test_every_registered_cluster_scheduler_explains_what_it_does_not_run(
    tmp_path: Path, name: str
) -> None:
    assert isinstance(make_scheduler("cluster", name), Explains)
    core = make_core(tmp_path / "s.db", name, window=30)
    core.register(MachineRequest(name="m0", capacity=EIGHT_GPUS))
    for i in range(6):  # more than fits: some wait, are rejected or preempted
        core.submit(_gpu_job(3.0, deadline=4 + i, value=10.0), key=f"k{i}")
    for _ in range(3):
        core.tick()
    unplaced = [js for js in core.jobs.values() if js.state in ("pending", "admitted", "rejected")]
    assert unplaced, "the instance must leave someone out"
    for js in unplaced:
        assert js.reason is not None and js.reason["code"] in CODES, (js.id, js.reason)
        assert js.reason["by"] == name, (js.id, js.reason)  # the scheduler's, not the engine's
    for js in core.jobs.values():
        if js.state == "running":
            assert js.reason is None
    core.store.close()


def test_fifo_says_why_its_head_waits_with_7_of_8_gpus_free(tmp_path: Path) -> None:
    core = make_core(tmp_path / "s.db", "fifo", params={"min_workers": 1, "max_workers": 1})
    core.register(MachineRequest(name="m0", capacity=EIGHT_GPUS))
    core.submit(_gpu_job(1.0), key="small")
    core.submit(_gpu_job(8.0), key="big")
    core.submit(_gpu_job(1.0), key="behind")
    rec = core.tick()
    assert core.jobs[0].state == "running"
    big, behind = core.jobs[1].reason, core.jobs[2].reason
    assert big == {
        "code": "insufficient",
        "text": "insufficient gpu in the cluster: need 8, free 7 (1 worker + 1 PS)",
        "by": "fifo",
    }
    assert behind is not None and behind["code"] == "queued"
    assert rec["reasons"] == {"1": big, "2": behind}  # in the event log
    # nothing changed: nothing more is logged
    assert core.tick()["reasons"] == {}
    summary = core.jobs[1].summary(core.machines)
    assert summary["reason"] == big  # in the API
    core.store.close()


def test_pd_ors_says_the_price_was_above_the_payoff(tmp_path: Path) -> None:
    core = make_core(tmp_path / "s.db", "pd-ors")
    core.register(MachineRequest(name="m0", capacity=EIGHT_GPUS))
    core.submit(_gpu_job(1.0, epochs=400, deadline=1, value=1e-6), key="cheap")
    core.tick()
    js = core.jobs[0]
    assert js.state == "rejected"
    assert js.reason is not None and js.reason["code"] in ("price-above-payoff", "no-schedule")
    assert js.reason["by"] == "pd-ors"
    core.store.close()


def test_without_a_schedulers_reason_the_engine_gives_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Fifo, "explain", lambda self, view, jobs: {j: "no" for j in jobs})
    core = make_core(tmp_path / "s.db", "fifo", params={"min_workers": 1, "max_workers": 1})
    core.register(MachineRequest(name="m0", capacity=EIGHT_GPUS))
    core.submit(_gpu_job(1.0), key="small")
    core.submit(_gpu_job(8.0), key="big")
    core.tick()
    r = core.jobs[1].reason
    assert r is not None and r["by"] == "engine"  # "no" is not a Reason: not trusted
    assert r["text"] == "insufficient gpu in the cluster: need 8, free 7 (1 worker + 1 PS)"
    monkeypatch.setattr(
        Fifo, "explain", lambda self, view, jobs: {j: Reason("queued", "a\nb") for j in jobs}
    )
    core.tick()
    assert core.jobs[1].reason == r  # a two-line text is not trusted either
    core.store.close()


def test_cancelled_and_down_say_so(tmp_path: Path) -> None:
    core = make_core(tmp_path / "s.db", "fifo")
    submit(core, 2)
    core.cancel(0, by="alice")
    assert core.jobs[0].reason == {
        "code": "cancelled",
        "text": "cancelled by alice",
        "by": "service",
    }
    core.tick()  # no machine at all
    assert core.jobs[1].reason is not None and core.jobs[1].reason["code"] == "no-machine-up"
    core.store.close()


def test_reasons_survive_a_restart(tmp_path: Path) -> None:
    core = make_core(tmp_path / "s.db", "fifo", params={"min_workers": 1, "max_workers": 1})
    core.register(MachineRequest(name="m0", capacity=EIGHT_GPUS))
    core.submit(_gpu_job(1.0), key="small")
    core.submit(_gpu_job(8.0), key="big")
    core.tick()
    before = {j: js.reason for j, js in core.jobs.items()}
    core.store.close()
    again = make_core(tmp_path / "s.db", "fifo", params={"min_workers": 1, "max_workers": 1})
    assert {j: js.reason for j, js in again.jobs.items()} == before
    again.store.close()
