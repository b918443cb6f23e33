"""End to end: every ``interval`` scheduler on a tiny and a small workload."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from dmlsched.model.views import IntervalView
from dmlsched.offline.interval import best_allocation, interval_optimum
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.interval.esw import equal_bundle
from dmlsched.schedulers.interval.optimus import optimus_allocation
from dmlsched.schedulers.protocols import IntervalScheduler, make_scheduler, scheduler_names
from dmlsched.sim.engine import simulate
from dmlsched.workloads.registry import WorkloadParams, build_workload

NAMES = ("smd", "esw", "optimus")


def test_the_three_schedulers_are_registered_and_follow_the_protocol():
    assert set(NAMES) <= set(scheduler_names("interval"))
    for n in NAMES:
        assert isinstance(make_scheduler("interval", n), IntervalScheduler)


@pytest.mark.parametrize("sync", [False, True])
@pytest.mark.parametrize("name", NAMES)
def test_tiny_workload_runs_deterministically_without_touching_the_view(name, sync):
    wl_rng, _ = spawn(make_rng(3), 2)
    wl = build_workload(
        "interval",
        "synthetic",
        WorkloadParams(jobs=4, machines=3, slots=6, extra={"sync": sync}),
        wl_rng,
    )
    runs = []
    for _ in range(2):
        sched = make_scheduler("interval", name, **({"eps": 0.1} if name == "smd" else {}))
        sched.reset(wl.capacity, wl.resources, make_rng(1))
        view = IntervalView(wl.jobs, wl.capacity, wl.resources)
        before = copy.deepcopy(view)
        sched.decide(view)
        assert view.jobs == before.jobs and view.resources == before.resources
        assert np.array_equal(view.capacity, before.capacity)
        sched = make_scheduler("interval", name, **({"eps": 0.1} if name == "smd" else {}))
        runs.append(simulate("interval", wl, sched, make_rng(1)).metrics)
    assert runs[0] == runs[1]
    assert runs[0]["admitted_jobs"] >= 1


@pytest.mark.parametrize("sync", [False, True])
def test_no_scheduler_beats_the_brute_force_optimum_and_smd_is_close(sync):
    wl = build_workload(
        "interval",
        "synthetic",
        WorkloadParams(jobs=12, machines=1, extra={"sync": sync}),
        make_rng(5),
    )
    opt = interval_optimum(wl).total_utility
    got = {
        n: simulate("interval", wl, make_scheduler("interval", n), make_rng(0)).metrics
        for n in NAMES
    }
    for m in got.values():
        assert m["total_utility"] <= opt + 1e-6
    assert got["smd"]["total_utility"] >= 0.95 * opt


def test_esw_uses_equal_counts_at_the_largest_feasible_k():
    wl = build_workload("interval", "synthetic", WorkloadParams(jobs=5), make_rng(2))
    for job in wl.jobs:
        k = equal_bundle(job)
        lim = np.asarray(job.limit)
        assert np.all(job.usage(k, k) <= lim + 1e-9)
        assert np.any(job.usage(k + 1, k + 1) > lim + 1e-9)


def test_optimus_never_ends_slower_than_one_worker_one_ps_and_optimum_is_best():
    from dmlsched.model.speed.smd import completion_time

    wl = build_workload("interval", "synthetic", WorkloadParams(jobs=8), make_rng(4))
    for job in wl.jobs:
        w, p = optimus_allocation(job)
        bw, bp, _ = best_allocation(job)
        t = float(completion_time(job, w, p))
        assert t <= float(completion_time(job, 1, 1)) + 1e-12
        assert float(completion_time(job, bw, bp)) <= t + 1e-12


def test_smd_with_the_ptas_admits_a_feasible_set_no_better_than_the_exact_mkp():
    wl = build_workload("interval", "synthetic", WorkloadParams(jobs=10, machines=1), make_rng(6))
    exact = simulate("interval", wl, make_scheduler("interval", "smd", eps=0.1), make_rng(0))
    ptas = simulate(
        "interval", wl, make_scheduler("interval", "smd", eps=0.1, mkp="ptas", mkp_k=1), make_rng(0)
    )
    assert 0 < ptas.metrics["total_utility"] <= exact.metrics["total_utility"] + 1e-9


@pytest.mark.parametrize(
    ("param", "value"), [("eps", 0.0), ("m_delta", 1.5), ("attempts", 0), ("mkp", "greedy")]
)
def test_smd_rejects_bad_parameters_by_name(param, value):
    from dmlsched.errors import InvalidInput

    sched = make_scheduler("interval", "smd", **{param: value})
    with pytest.raises(InvalidInput, match=param):
        sched.reset(np.ones(4), ("gpu", "cpu", "mem", "storage"), make_rng(0))
