"""Every driver of the ``cluster`` engine inherits every guarantee of the simulator.

The cheat catalogue runs through ``simulate``, the testbed's executor loop (fake
executor and clock) and the service's slot loop for every registered scheduler
(``check_scheduler``: tests/schedulers/test_contract.py).  Here, what the service
*commits* when a scheduler cheats: nothing over capacity ever reaches its log.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from dmlsched.checks.cheats import CHEATS
from dmlsched.checks.drivers import DriverRun, run_driver
from dmlsched.checks.replay import Replay, clone
from dmlsched.checks.tiny import tiny
from dmlsched.model.cluster import ClusterDecision, ClusterWorkload
from dmlsched.schedulers.protocols import make_scheduler

WL = tiny("cluster")


class _Recorder:
    """FIFO, recording a clone of every decision it makes."""

    name = "fifo"

    def __init__(self) -> None:
        self.inner = make_scheduler("cluster", "fifo")
        self.decisions: list[ClusterDecision] = []

    def reset(self, *a: object) -> None:
        self.inner.reset(*a)

    def decide(self, view: object) -> ClusterDecision:
        d = self.inner.decide(view)
        self.decisions.append(clone(d))
        return d


@cache
def honest_service_decisions() -> list[ClusterDecision]:
    rec = _Recorder()
    assert run_driver("cluster", "service", lambda: rec, WL, 3).refusal is None
    return rec.decisions


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
    "name",
    [
        "zeroed-demands-packed-on-machine-0",
        "every-job-on-machine-0-over-capacity",
        "astronomical-worker-count",
    ],
)
def test_the_service_commits_nothing_over_capacity_to_its_log(name: str) -> None:
    cheat = next(c for c in CHEATS if c.name == name)
    decisions = honest_service_decisions()
    run = run_driver(
        "cluster",
        "service",
        lambda: Replay("cluster", decisions, cheat.on_decide, cheat.on_reset),
        WL,
        3,
    )
    assert run.refusal is not None and "invalid decision (scheduler=replay" in run.refusal
    usages = _committed_usage(run, WL)
    assert usages, "no tick was committed"
    cap = WL.cluster.capacity
    assert all((u <= cap * (1 + 1e-9)).all() for u in usages)
    assert run.log[-1]["error"] == run.refusal and run.log[-1]["alloc"] == {}
