"""The testbed's slot loop drives the engine's own state (no processes: a fake executor
and clock).  Honest measured work runs as the simulator runs the same decisions; work
beyond what a placement can do is refused; the scheduler is shown private copies."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from dmlsched.errors import InvalidReport
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.cluster import simulate_cluster
from dmlsched.sim.drive import MEASURED_SLACK
from dmlsched.testbed.fake import FakeClock, FakeExecutor, FakeTestbed
from dmlsched.testbed.run import run_cluster
from dmlsched.testbed.workload import TestbedWorkload
from dmlsched.testbed.workload import testbed_workload as make_workload

TW = make_workload(6, 3, 15, make_rng(1), slot_seconds=10.0, epochs=(2, 6))
# jobs of many slots: a job's work in a slot is its placement's, not what it had left
LONG = make_workload(3, 3, 30, make_rng(2), slot_seconds=1.0, epochs=(40, 60))
PARAMS: dict[str, dict[str, Any]] = {"fifo": {"max_workers": 2, "min_workers": 1}}


def fake_run(tw: TestbedWorkload, scheduler: Any, speedup: float = 1.0, **kw: Any) -> Any:
    clock = FakeClock()
    jobs = {j.id: j for j in tw.workload.jobs}
    ex = FakeExecutor.at_model_speed(jobs, clock, tw.slot_seconds, speedup)
    return run_cluster(tw, scheduler, FakeTestbed(), 0, executor=ex, clock=clock, **kw), ex


@pytest.mark.parametrize("name", ["pd-ors", "oasis", "drf", "fifo", "tiresias"])
def test_measured_work_at_the_models_rate_completes_jobs_when_the_simulator_does(
    name: str,
) -> None:
    run, _ = fake_run(TW, name, scheduler_params=PARAMS.get(name), stall_slots=0)
    _, rng = spawn(make_rng(0), 2)
    sched = make_scheduler("cluster", name, **PARAMS.get(name, {}))
    res = simulate_cluster(TW.workload, sched, rng, event_driven=False)
    assert run.completion_slot == {e.job: e.slot for e in res.events if e.kind == "complete"}
    assert all(run.real_jct[j] > 0 for j in run.completion_slot)


def test_work_beyond_what_a_placement_can_do_is_refused() -> None:
    run, _ = fake_run(LONG, "pd-ors", speedup=0.99 * MEASURED_SLACK)  # within the slack
    assert run.completion_slot
    with pytest.raises(InvalidReport, match=r"source=testbed.*can do in 1 slot"):
        fake_run(LONG, "pd-ors", speedup=1.01 * MEASURED_SLACK)


def test_the_workloads_jobs_are_not_what_the_scheduler_is_shown() -> None:
    # the scheduler zeroes the demands of the jobs it is shown: the workload's own jobs,
    # and the jobs of later slots, keep theirs
    before = [dataclasses.astuple(j) for j in TW.workload.jobs]
    seen: list[int] = []

    class Zeroing:
        name = "zeroing"

        def __init__(self) -> None:
            self.inner = make_scheduler("cluster", "pd-ors")

        def reset(self, *a: Any) -> None:
            self.inner.reset(*a)

        def decide(self, view: Any) -> Any:
            for job in view.jobs.values():
                seen.append(id(job))
                object.__setattr__(job, "worker_demand", (0.0,) * 4)
            return self.inner.decide(view)

    fake_run(TW, Zeroing())
    assert [dataclasses.astuple(j) for j in TW.workload.jobs] == before
    assert not {id(j) for j in TW.workload.jobs} & set(seen)


@pytest.mark.parametrize(("name", "tw"), [("oasis", TW), ("pd-ors", LONG)])
def test_a_job_training_slower_than_its_plan_is_planned_again_on_the_testbed(
    name: str, tw: TestbedWorkload
) -> None:
    # measured work 20% below the rate the plans were sized with: as printed, a job whose
    # schedule runs out unfinished never runs again; the default plans its work left again
    kept, _ = fake_run(tw, name, speedup=0.8, scheduler_params={"shortfall": "keep"})
    again, _ = fake_run(tw, name, speedup=0.8)
    assert len(again.completion_slot) > len(kept.completion_slot)
    assert again.rejected == kept.rejected
