"""``smd+`` (exact inner grid, frugal choice) and the baselines' two admission readings."""

from __future__ import annotations

import numpy as np
import pytest

from dmlsched.errors import InvalidInput
from dmlsched.model.speed.smd import completion_time
from dmlsched.rng import make_rng
from dmlsched.schedulers._shared.interval import allocation_grid, best_allocation
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.registry import WorkloadParams, build_workload


def _wl(seed: int, jobs: int = 10, machines: float = 1, sync: bool = False):
    params = WorkloadParams(jobs=jobs, machines=machines, extra={"sync": sync})
    return build_workload("interval", "synthetic", params, make_rng(seed))


def _run(wl, name: str, **kw):
    return simulate("interval", wl, make_scheduler("interval", name, **kw), make_rng(0)).metrics


@pytest.mark.parametrize("sync", [False, True])
def test_smd_plus_earns_the_optimum_to_its_tolerance_and_uses_less(sync):
    from dmlsched.offline.interval import interval_optimum

    wl = _wl(7, sync=sync)
    opt = interval_optimum(wl).total_utility
    exact = _run(wl, "smd+", frugal=None)
    plus = _run(wl, "smd+")
    paper = _run(wl, "smd", eps=0.05)
    assert exact["total_utility"] == pytest.approx(opt)
    assert plus["total_utility"] >= (1 - 1e-9) * exact["total_utility"]
    assert plus["total_utility"] >= paper["total_utility"] - 1e-9 * opt
    assert plus["used_resource_ratio"] <= exact["used_resource_ratio"] + 1e-12


def test_frugal_takes_the_smallest_allocation_within_the_tolerance():
    wl = _wl(3, jobs=6)
    for job in wl.jobs:
        _, _, share, t = allocation_grid(job)
        bw, bp, bu = best_allocation(job)
        fw, fp, fu = best_allocation(job, 0.01)
        assert fu >= 0.99 * bu
        # no allocation within the tolerance is smaller
        ok = np.isfinite(t)
        u = np.array([job.utility(float(x)) if np.isfinite(x) else -1.0 for x in t.ravel()])
        qual = ok.ravel() & (u >= 0.99 * bu)
        assert share[fw - 1, fp - 1] <= share.ravel()[qual].min() + 1e-12
        assert float(completion_time(job, bw, bp)) == pytest.approx(float(t[np.isfinite(t)].min()))


def test_frugal_needs_the_exact_inner_problem_and_a_tolerance_below_one():
    sched = make_scheduler("interval", "smd", frugal=0.0)
    with pytest.raises(InvalidInput, match="frugal"):
        sched.reset(np.ones(4), ("gpu", "cpu", "mem", "storage"), make_rng(0))
    sched = make_scheduler("interval", "smd+", frugal=1.0)
    with pytest.raises(InvalidInput, match="frugal"):
        sched.reset(np.ones(4), ("gpu", "cpu", "mem", "storage"), make_rng(0))


@pytest.mark.parametrize("name", ["esw", "optimus"])
def test_knapsack_admission_never_earns_less_than_first_come(name):
    # the same allocations, admitted by the exact MKP over their utilities
    for seed in range(3):
        wl = _wl(seed, jobs=20, machines=1)
        first = _run(wl, name)
        knap = _run(wl, name, admission="knapsack")
        assert knap["total_utility"] >= first["total_utility"] - 1e-9


@pytest.mark.parametrize("name", ["esw", "optimus"])
def test_baselines_reject_an_unknown_admission_by_name(name):
    sched = make_scheduler("interval", name, admission="lottery")
    with pytest.raises(InvalidInput, match="admission"):
        sched.reset(np.ones(4), ("gpu", "cpu", "mem", "storage"), make_rng(0))
