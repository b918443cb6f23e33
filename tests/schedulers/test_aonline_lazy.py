"""A_greedy's lazy Eq. (5) (idle workers as one heap entry, busy ones by lower bound)
makes the choices of evaluating every qualified worker first."""

from __future__ import annotations

import pytest

from dmlsched.rng import make_rng
from dmlsched.schedulers.edge_cloud import aonline
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.edge_cloud import edge_cloud_workload

SIZES = [(80, 20, 100, 0, None), (200, 40, 150, 1, None), (150, 30, 120, 2, 0.01)]
CASES = [(name, *size) for name in ("a-online", "a-online-edge", "a-online+") for size in SIZES]


@pytest.mark.parametrize(("name", "jobs", "servers", "slots", "seed", "storage"), CASES)
def test_lazy_q_gives_the_same_run_as_evaluating_every_worker(
    name: str,
    jobs: int,
    servers: int,
    slots: int,
    seed: int,
    storage: float | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wl = edge_cloud_workload(jobs, servers, slots, make_rng(seed), storage_gb=storage)
    lazy = simulate("edge-cloud", wl, make_scheduler("edge-cloud", name), make_rng(seed))
    monkeypatch.setattr(aonline, "LAZY_Q", False)
    eager = simulate("edge-cloud", wl, make_scheduler("edge-cloud", name), make_rng(seed))
    assert lazy.events == eager.events
    for k, v in lazy.metrics.items():
        assert v == eager.metrics[k] or (v != v and eager.metrics[k] != eager.metrics[k]), k
