"""Every driver of the ``cluster`` engine inherits every guarantee of the simulator.

The cheat catalogue of the boundary tests (``tests/sim/test_boundary.py``: decisions that
lie in their types, mappings, counts; schedulers that tamper with what they were shown)
plus the tampering of issue 27 (demands zeroed with ``object.__setattr__`` and every job
packed on machine 0; a decision over capacity), each run through ``simulate``, the
testbed's executor loop (fake executor and clock) and the service's slot loop
(:mod:`dmlsched.drivers`): a lie in the decision is refused with ``InvalidDecision``
by every driver — and the service commits nothing over capacity to its log —; a lie about
what was shown gains nothing (the same run as the honest one, through that driver).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import pytest

from dmlsched.drivers import DRIVERS, DriverRun, run_driver
from dmlsched.model.cluster import ClusterDecision, ClusterWorkload, Placement
from dmlsched.schedulers.protocols import make_scheduler
from tests.sim import test_boundary
from tests.sim.cheats import Replay, clone, tiny

WL = tiny("cluster")


def _pack_on_machine_0(zero_demands: bool) -> Callable[..., Any]:
    """Every pending and active job on machine 0 with F workers (Eq. (5) can't hold); with
    ``zero_demands``, first the demands of every job shown set to 0 (object.__setattr__)."""

    def on_decide(sched: Replay, view: Any, d: ClusterDecision) -> ClusterDecision:
        if zero_demands:
            for job in view.jobs.values():
                for f in ("worker_demand", "ps_demand"):
                    object.__setattr__(job, f, (0.0,) * len(getattr(job, f)))
        alloc = {}
        for j in (*view.pending, *view.active):
            job = view.jobs[j]
            w = job.max_workers
            alloc[j] = Placement((0,), (w,), (job.min_ps(w),))
        return ClusterDecision(alloc) if alloc else d

    return on_decide


@dataclasses.dataclass(frozen=True)
class Cheat:
    name: str
    refused: bool
    on_decide: Any = None
    on_reset: Any = None
    match: str | None = None


CHEATS = [
    Cheat(c.name, c.refused, c.on_decide, c.on_reset, c.match)
    for c in test_boundary.CHEATS
    if c.setting == "cluster"
] + [
    Cheat("zeroed-demands-packed-on-machine-0", True, _pack_on_machine_0(True), match=r"Eq\. 5"),
    Cheat("every-job-on-machine-0-over-capacity", True, _pack_on_machine_0(False), match="Eq. 5"),
]


class _Recorder:
    """FIFO, recording a clone of every decision it makes."""

    name = "fifo"

    def __init__(self) -> None:
        self.inner = make_scheduler("cluster", "fifo")
        self.decisions: list[ClusterDecision] = []

    def reset(self, *a: Any) -> None:
        self.inner.reset(*a)

    def decide(self, view: Any) -> ClusterDecision:
        d = self.inner.decide(view)
        self.decisions.append(clone(d))
        return d


@cache
def honest(driver: str) -> tuple[DriverRun, list[ClusterDecision]]:
    """FIFO's run through ``driver`` and the decisions it made there."""
    rec = _Recorder()
    run = run_driver(driver, lambda: rec, WL, 3)
    assert run.refusal is None
    return run, rec.decisions


def cheat_run(driver: str, cheat: Cheat) -> DriverRun:
    decisions = honest(driver)[1]
    return run_driver(
        driver, lambda: Replay("cluster", decisions, cheat.on_decide, cheat.on_reset), WL, 3
    )


@pytest.mark.parametrize("cheat", CHEATS, ids=[c.name for c in CHEATS])
@pytest.mark.parametrize("driver", DRIVERS)
def test_every_driver_refuses_a_lying_decision_and_lets_a_lie_about_the_view_gain_nothing(
    driver: str, cheat: Cheat
) -> None:
    run = cheat_run(driver, cheat)
    if cheat.refused:
        assert run.refusal is not None, f"{driver} accepted {cheat.name}"
        assert "invalid decision (scheduler=replay" in run.refusal
        if cheat.match:
            assert re.search(cheat.match, run.refusal), run.refusal
    else:
        assert run.refusal is None, run.refusal
        assert run.fingerprint == honest(driver)[0].fingerprint


def _committed_usage(run: DriverRun, wl: ClusterWorkload) -> list[np.ndarray]:
    """Per committed tick of a service run, the machines' usage its placements add up to
    (the service's job ids are its submission order: by arrival, then id)."""
    jobs = sorted(wl.jobs, key=lambda j: (j.arrival, j.id))
    out = []
    for tick in run.log:
        usage = np.zeros_like(wl.cluster.capacity)
        for j, (machines, workers, ps) in tick["alloc"].items():
            job = jobs[int(j)]
            for h, w, s in zip(machines, workers, ps, strict=True):
                usage[h] += w * np.asarray(job.worker_demand) + s * np.asarray(job.ps_demand)
        out.append(usage)
    return out


@pytest.mark.parametrize(
    "name", ["zeroed-demands-packed-on-machine-0", "astronomical-worker-count"]
)
def test_the_service_commits_nothing_over_capacity_to_its_log(name: str) -> None:
    cheat = next(c for c in CHEATS if c.name == name)
    run = cheat_run("service", cheat)
    assert run.refusal is not None
    usages = _committed_usage(run, WL)
    assert usages, "no tick was committed"
    cap = WL.cluster.capacity
    assert all((u <= cap * (1 + 1e-9)).all() for u in usages)
    assert run.log[-1]["error"] == run.refusal and run.log[-1]["alloc"] == {}
