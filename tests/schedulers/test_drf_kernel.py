"""DRF's compiled filling makes the decisions of its one-bundle-at-a-time loop."""

from __future__ import annotations

import pytest

from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers._shared import placement
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.synthetic import synthetic_cluster


def _run(wl, seed: int):  # type: ignore[no-untyped-def]
    _, rng = spawn(make_rng(seed), 2)
    return simulate("cluster", wl, make_scheduler("cluster", "drf"), rng)


@pytest.mark.parametrize(
    ("jobs", "machines", "slots", "seed", "mix"),
    [
        (120, 65, 30, 0, (0.1, 0.55, 0.35)),
        (300, 80, 40, 1, (0.1, 0.55, 0.35)),
        (200, 120, 25, 2, (0.3, 0.69, 0.01)),
        (400, 70, 20, 3, (1.0, 0.0, 0.0)),  # crowded: many jobs cannot grow
    ],
)
def test_compiled_filling_gives_the_same_run_as_one_bundle_at_a_time(
    jobs: int, machines: int, slots: int, seed: int, mix: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    wl = synthetic_cluster(jobs, machines, slots, make_rng(seed), mix=mix)
    compiled = _run(wl, seed)
    monkeypatch.setattr(placement, "SMALL_MACHINES", 10**9)  # the loop (and NumPy placement)
    loop = _run(wl, seed)
    assert compiled.events == loop.events  # every allocation, slot by slot
    assert compiled.metrics.keys() == loop.metrics.keys()
    for k, v in compiled.metrics.items():
        assert v == loop.metrics[k] or (v != v and loop.metrics[k] != loop.metrics[k]), k


def test_async_jobs_keep_the_loop_with_its_ps_bandwidth_check() -> None:
    wl = synthetic_cluster(60, 70, 20, make_rng(4), mode="async")
    res = _run(wl, 4)
    assert res.metrics["admitted_jobs"] > 0
