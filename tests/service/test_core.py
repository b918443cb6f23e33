"""The live engine: same physics as the simulator, rebuilt exactly from its log."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dmlsched.model.cluster import Cluster, ClusterDecision, ClusterWorkload, Placement
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.service.schemas import JobRequest, MachineRequest
from dmlsched.sim.cluster import simulate_cluster
from tests.service.helpers import CAPACITY, add_machines, job_request, make_core, submit


def _drive(core, plan: list[int]) -> None:
    """plan[t] jobs submitted before tick t."""
    done = 0
    for n in plan:
        submit(core, n, start=done, epochs=1 + done % 3)
        done += n
        core.tick()


def _untimed(summary: dict) -> dict:
    """A job's summary without its wall-clock times (two runs differ in those only)."""
    return {k: v for k, v in summary.items() if not k.endswith("_at")}


def _state(core) -> dict:
    return {
        "slot": core.slot,
        "epoch": core.epoch,
        "jobs": [_untimed(js.summary(core.machines)) for js in core.jobs.values()],
        "history": list(core.history),
        "machines": [core.machine_summary(m) for m in core.machines],
    }


@pytest.mark.parametrize("scheduler", ["fifo", "drf", "dorm", "oasis", "pd-ors"])
def test_the_service_makes_the_simulators_decisions_and_progress(
    tmp_path: Path, scheduler: str
) -> None:
    core = make_core(tmp_path / "s.db", scheduler, window=30)
    add_machines(core, 3)
    plan = [3, 0, 2, 1, 0, 0, 2, 0, 0, 0, 0, 0]
    _drive(core, plan)
    # the same jobs, revealed at the slots the service revealed them, through the simulator
    jobs = tuple(js.job for js in core.jobs.values())
    wl = ClusterWorkload(jobs, Cluster(np.tile(CAPACITY, (3, 1))), horizon=30)
    rng = spawn(make_rng(0), 1)[0]
    res = simulate_cluster(wl, make_scheduler("cluster", scheduler), rng)
    sim_done = {e.job: e.slot for e in res.events if e.kind == "complete"}
    live_done = {js.id: js.completed for js in core.jobs.values() if js.state == "completed"}
    assert live_done == {j: s for j, s in sim_done.items() if s < len(plan) - 1}
    sim_alloc = [(e.slot, e.job, e.detail) for e in res.events if e.kind == "allocate"]
    live_alloc = []
    for h in core.history:
        for j, per in h["alloc"].items():
            js = core.jobs[int(j)]
            w = sum(v[0] for v in per.values())
            s = sum(v[1] for v in per.values())
            live_alloc.append((h["slot"], int(j), w, s, len(per)))
            assert js is not None
    sim_cmp = [
        (t, j, int(d.split()[0][8:]), int(d.split()[1][3:]), int(d.split()[2][9:]))
        for t, j, d in sim_alloc
        if t < len(plan)
    ]
    assert sorted(live_alloc) == sorted(sim_cmp)


@pytest.mark.parametrize("scheduler", ["fifo", "pd-ors"])
def test_a_restart_rebuilds_the_same_state_and_the_same_next_decisions(
    tmp_path: Path, scheduler: str
) -> None:
    a = make_core(tmp_path / "a.db", scheduler, window=20)
    ref = make_core(tmp_path / "ref.db", scheduler, window=20)  # never restarted
    for core in (a, ref):
        add_machines(core, 2)
        _drive(core, [2, 1, 0, 3])
    a.store.close()  # as the kernel releases a killed service's lock
    b = make_core(tmp_path / "a.db", scheduler, window=20)  # "restart" on a's log
    assert _state(b) == _state(a) == _state(ref)
    assert b.replay_mismatches == 0
    submit(ref, 2, start=100)
    submit(b, 2, start=100)
    for _ in range(4):
        assert ref.tick()["alloc"] == b.tick()["alloc"]
    assert _state(b) == _state(ref)


def test_a_changed_cluster_starts_an_epoch_and_requeues_unfinished_jobs(tmp_path: Path) -> None:
    core = make_core(tmp_path / "s.db", "fifo")
    add_machines(core, 1)
    submit(core, 2, epochs=50)
    first = core.tick()
    assert first["reset"] and first["arrive"] == [0, 1]
    assert core.jobs[0].state == "running"
    core.register(MachineRequest(name="m9", capacity=tuple(CAPACITY)))
    rec = core.tick()
    assert rec["reset"] and rec["epoch"] == 1 and set(rec["requeue"]) == {0, 1}
    assert core.jobs[0].done > 0  # kept across the epoch: a real job resumes from a checkpoint
    assert core.jobs[0].requeued == 1


def test_a_dead_agents_machine_goes_down_and_its_jobs_are_rescheduled(tmp_path: Path) -> None:
    now = [0.0]
    from dmlsched.service.core import Core, ServiceConfig
    from dmlsched.service.store import open_store

    core = Core(
        ServiceConfig("fifo"),
        open_store(str(tmp_path / "s.db")),
        clock=lambda: now[0],
        agent_timeout=5.0,
    ).open()
    for name in ("a", "b"):  # declared by an admin, joined by their agents
        core.register(MachineRequest(name=name, capacity=tuple(CAPACITY), agent=True))
        core.join(name, None, by=f"agent-{name}")
    submit(core, 1, epochs=100)
    core.tick()
    machine = sorted(core.allocation()["jobs"]["0"])[0]
    other = "b" if machine == "a" else "a"
    now[0] = 10.0
    core.heartbeat(other)  # only the other agent is alive
    rec = core.tick()
    assert rec["down"] == [machine] and rec["reset"] and rec["requeue"] == [0]
    assert list(core.allocation()["jobs"]["0"]) == [other]
    assert not core.by_name[machine].up
    # the agent comes back: it re-registers, the cluster grows again
    core.join(machine, None, by=f"agent-{machine}")  # its agent is back
    assert core.tick()["reset"]


class _Cheat:
    name = "cheat"
    setting = "cluster"

    def reset(self, cluster, horizon, rng) -> None:
        pass

    def decide(self, view):
        # twice the machine's GPUs: the engine's Eq. (5) check must refuse it
        return ClusterDecision({j: Placement((0,), (8,), (4,)) for j in view.pending})


def test_an_invalid_decision_runs_nothing_and_resets_the_scheduler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dmlsched.service.core as core_mod

    monkeypatch.setattr(core_mod, "make_scheduler", lambda *a, **k: _Cheat())
    core = make_core(tmp_path / "s.db", "fifo")
    add_machines(core, 1)
    submit(core, 1, batch=16)
    rec = core.tick()
    assert "Eq. 5" in rec["error"] and rec["alloc"] == {}
    assert core.invalid_decisions == 1
    assert core.tick()["reset"]


def test_cancel_stops_a_job_and_the_scheduler_sees_it_finished(tmp_path: Path) -> None:
    core = make_core(tmp_path / "s.db", "fifo")
    add_machines(core, 1)
    submit(core, 2, epochs=100)
    core.tick()
    core.cancel(0)
    rec = core.tick()
    assert rec["cancel"] == [0] and "0" not in rec["alloc"]
    assert core.jobs[0].state == "cancelled"
    submit(core, 1, start=5)
    core.cancel(2)  # queued, never shown to the scheduler
    assert core.jobs[2].state == "cancelled" and core.tick()["arrive"] == []


def test_a_log_made_with_another_scheduler_is_refused(tmp_path: Path) -> None:
    from dmlsched.errors import InvalidInput

    make_core(tmp_path / "s.db", "fifo").store.close()
    with pytest.raises(InvalidInput, match="scheduler"):
        make_core(tmp_path / "s.db", "drf")


def test_a_job_too_big_for_every_machine_is_refused_naming_the_resource(tmp_path: Path) -> None:
    from dmlsched.errors import InvalidInput

    core = make_core(tmp_path / "s.db", "fifo")
    add_machines(core, 1)
    with pytest.raises(InvalidInput, match=r"worker_demand\[gpu\]"):
        core.submit(JobRequest.model_validate(job_request(worker_demand=[9, 1, 1, 1])), None)


def test_replay_keeps_the_order_in_which_jobs_became_active(tmp_path: Path) -> None:
    # ids 8, 9, 10 in one slot: a log that sorted its keys would replay them as 10, 8, 9
    a = make_core(tmp_path / "a.db", "fifo")
    add_machines(a, 3)
    for i in range(60):
        submit(a, 1, start=i)
        if i % 7 == 6:
            a.tick()
    for _ in range(5):
        a.tick()
    a.store.close()
    b = make_core(tmp_path / "a.db", "fifo")
    assert _state(b) == _state(a) and b.replay_mismatches == 0


def test_with_every_machine_down_nothing_is_decided_and_nothing_rejected(tmp_path: Path) -> None:
    from dmlsched.service.core import Core, ServiceConfig
    from dmlsched.service.store import open_store

    now = [0.0]
    core = Core(
        ServiceConfig("fifo"),
        open_store(str(tmp_path / "s.db")),
        clock=lambda: now[0],
        agent_timeout=5.0,
    ).open()
    core.register(MachineRequest(name="a", capacity=tuple(CAPACITY), agent=True))
    core.join("a", None, by="agent-a")
    submit(core, 2, epochs=100)
    core.tick()
    now[0] = 10.0
    rec = core.tick()
    assert rec["down"] == ["a"] and rec["reject"] == [] and rec["alloc"] == {}
    assert {js.state for js in core.jobs.values()} <= {"admitted", "pending"}
    core.join("a", None, by="agent-a")
    rec = core.tick()
    assert rec["reset"] and set(rec["requeue"]) == {0, 1} and rec["alloc"]
