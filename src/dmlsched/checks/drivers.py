"""One scheduler through each driver of its setting's engine, for contract checks.

Every setting is driven by ``simulate`` (:func:`dmlsched.sim.engine.simulate`);
``cluster`` also by the testbed's executor loop and the service's slot loop.
The three drivers of ``cluster`` run the same engine state
(:class:`~dmlsched.sim.cluster.ClusterState`) and add nothing of their own:

* ``simulate`` — :func:`dmlsched.sim.cluster.simulate_cluster`, event-driven;
* ``testbed`` — :func:`dmlsched.testbed.run.run_cluster` with the
  process-free :class:`~dmlsched.testbed.fake.FakeExecutor` (work at the
  speed model's rate) and :class:`~dmlsched.testbed.fake.FakeClock`;
* ``service`` — the service's slot loop (:class:`dmlsched.service.core.Core`)
  on a temporary SQLite log (in ``/dev/shm`` where it can), one machine per
  machine of the workload's cluster, each job submitted just before the slot
  it arrives in, progress by the speed model, one epoch (the window covers the
  horizon).

:func:`run_driver` returns a :class:`DriverRun`: the engine's refusal (the
message of the :class:`~dmlsched.errors.InvalidDecision` it raised, or that
the service logged) and a fingerprint of what happened — equal fingerprints
of two runs through one driver mean the same run (the simulator's metrics,
events and series; the decisions the testbed's executor was given and the
completions; the service's committed tick records, also in ``log``).
"""

from __future__ import annotations

import dataclasses
import math
import os
import tempfile
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

from dmlsched.checks.replay import result_bytes
from dmlsched.checks.tiny import run_rng
from dmlsched.errors import InvalidDecision, InvalidInput
from dmlsched.model.cluster import ClusterJob, ClusterWorkload
from dmlsched.schedulers.protocols import ClusterScheduler

__all__ = ["DRIVERS", "DriverRun", "job_request", "run_driver"]

#: The drivers of each setting's engine, in the order the checker runs them.
DRIVERS: dict[str, tuple[str, ...]] = {
    "cluster": ("simulate", "testbed", "service"),
    "interval": ("simulate",),
    "edge-cloud": ("simulate",),
    "geo": ("simulate",),
}

SchedulerFactory = Callable[[], Any]

# the service driver's log lives in RAM where there is a tmpfs: its commits' fsyncs (the
# log's durability, which a check does not need) then cost nothing
_RAM = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None

# a tick record's fields that are not what happened: measured times, and the reasons given
# for waiting jobs (they name the scheduler)
_NOT_FINGERPRINTED = ("decide_ms", "at", "reasons")


class DriverRun(NamedTuple):
    """What one driver made of a scheduler (module docstring)."""

    driver: str
    refusal: str | None  # the engine's InvalidDecision message, if it refused a decision
    fingerprint: bytes  # what happened, comparable between runs of one driver
    log: tuple[dict[str, Any], ...] = ()  # the service's committed tick records
    metrics: Mapping[str, float] | None = None  # the simulator's


def run_driver(
    setting: str, driver: str, make: SchedulerFactory, workload: Any, seed: int = 0
) -> DriverRun:
    """Run a scheduler from ``make`` (called once; the service calls it again per epoch)
    on ``workload`` of ``setting`` through ``driver`` (one of ``DRIVERS[setting]``)."""
    runs: dict[tuple[str, str], Callable[..., DriverRun]] = {
        **{(s, "simulate"): partial(_simulate, s) for s in DRIVERS},
        ("cluster", "testbed"): _testbed,
        ("cluster", "service"): _service,
    }
    if (setting, driver) not in runs:
        known = DRIVERS.get(setting, ())
        raise InvalidInput("driver", driver, " | ".join(known) or f"a setting in {list(DRIVERS)}")
    return runs[(setting, driver)](make, workload, seed)


def _simulate(setting: str, make: SchedulerFactory, workload: Any, seed: int) -> DriverRun:
    from dmlsched.sim.engine import simulate

    try:
        res = simulate(setting, workload, make(), run_rng(seed))
    except InvalidDecision as e:
        return DriverRun("simulate", str(e), b"")
    return DriverRun("simulate", None, result_bytes(res), metrics=res.metrics)


def _testbed(make: SchedulerFactory, workload: ClusterWorkload, seed: int) -> DriverRun:
    from dmlsched.testbed.executor import canonical
    from dmlsched.testbed.fake import FakeClock, FakeExecutor, FakeTestbed
    from dmlsched.testbed.run import run_cluster
    from dmlsched.testbed.runtime import TrainSpec
    from dmlsched.testbed.workload import TestbedWorkload

    specs = {j.id: TrainSpec(job=j.id, target=j.total_work, mode=j.mode) for j in workload.jobs}
    tw = TestbedWorkload(workload, specs, workload.slot_seconds, 10.0, None)
    clock = FakeClock()
    ex = FakeExecutor.at_model_speed({j.id: j for j in workload.jobs}, clock, workload.slot_seconds)
    try:
        run = run_cluster(
            tw,
            make(),
            FakeTestbed(),  # type: ignore[arg-type]  # the loop reads only a testbed's notes
            seed,
            executor=ex,
            clock=clock,
            stall_slots=0,
        )
    except InvalidDecision as e:
        return DriverRun("testbed", str(e), b"")
    applied = [sorted((j, canonical(p)) for j, p in a.items()) for a in ex.applied]
    seen = (sorted(run.completion_slot.items()), sorted(run.rejected), applied)
    return DriverRun("testbed", None, repr(seen).encode())


def job_request(job: ClusterJob) -> dict[str, Any]:
    """The service's request body for a job (its job-spec fields; no id, no arrival)."""
    body: dict[str, Any] = {
        f: getattr(job, f)
        for f in (
            "epochs",
            "samples",
            "batch",
            "grad_mb",
            "tau",
            "gamma",
            "b_ext",
            "b_int",
            "mode",
            "minibatches",
        )
    }
    body["worker_demand"] = list(job.worker_demand)
    body["ps_demand"] = list(job.ps_demand)
    if math.isfinite(job.ps_bandwidth):
        body["ps_bandwidth"] = job.ps_bandwidth
    if dataclasses.is_dataclass(job.utility):
        body["utility"] = dataclasses.asdict(job.utility)
    return body


def _service(make: SchedulerFactory, workload: ClusterWorkload, seed: int) -> DriverRun:
    from dmlsched.service.core import Core, ServiceConfig
    from dmlsched.service.schemas import JobRequest, MachineRequest
    from dmlsched.service.store import open_store

    first: list[ClusterScheduler] = [make()]

    def factory() -> ClusterScheduler:
        return first.pop() if first else make()

    name = str(getattr(type(first[0]), "name", type(first[0]).__name__))
    refusal = None
    with tempfile.TemporaryDirectory(prefix="dmlsched-driver-", dir=_RAM) as tmp:
        store = open_store(str(Path(tmp) / "service.db"))
        try:
            config = ServiceConfig(name, seed=seed, window=workload.horizon + 1)
            core = Core(config, store, scheduler_factory=factory, agent_timeout=0).open()
            for h, cap in enumerate(workload.cluster.capacity.tolist()):
                core.register(MachineRequest(name=f"m{h}", capacity=tuple(cap)))
            by_slot: dict[int, list[ClusterJob]] = {}
            for job in sorted(workload.jobs, key=lambda j: (j.arrival, j.id)):
                by_slot.setdefault(job.arrival, []).append(job)
            for t in range(workload.horizon):
                for job in by_slot.get(t, ()):
                    core.submit(JobRequest.model_validate(job_request(job)), key=f"job-{job.id}")
                rec = core.tick()
                if rec["error"]:
                    refusal = str(rec["error"])
                    break
            ticks = [
                {k: v for k, v in r.body.items() if k not in _NOT_FINGERPRINTED}
                for r in store.records()
                if r.kind == "tick"
            ]
        finally:
            store.close()
    return DriverRun("service", refusal, repr(ticks).encode(), tuple(ticks))
