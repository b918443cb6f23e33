"""Sec. V workload ranges and a quick smoke run of every SMD experiment."""

from __future__ import annotations

import numpy as np
import pytest

from dmlsched.errors import InvalidInput
from dmlsched.experiments.catalogue import get
from dmlsched.rng import make_rng
from dmlsched.workloads.interval import CAPACITY_UNIT, INSTANCE, synthetic_interval
from dmlsched.workloads.registry import WorkloadParams, build_workload


def test_synthetic_jobs_stay_in_the_sec_v_ranges():
    wl = synthetic_interval(40, 2, make_rng(0), sync=True)
    np.testing.assert_allclose(wl.capacity, 2 * np.asarray(CAPACITY_UNIT))
    for j in wl.jobs:
        assert 50 <= j.iterations <= 200 and 10 <= j.minibatch <= 100
        assert j.global_batch % j.minibatch == 0 and 1 <= j.global_batch // j.minibatch <= 100
        assert 10 <= j.layers <= 100 and 30 <= j.grad_mb <= 575 and 5 <= j.ps_bandwidth <= 20
        assert min(j.comm_ms) >= 80 and max(j.fp_ms) <= 500 and max(j.bp_ms) <= 300
        assert 3 <= j.beta1 <= 4 and 0 <= j.beta2 <= 0.01 and 0 <= j.alpha <= 1
        assert j.worker_demand[0] <= 4 and j.ps_demand[0] == 0
        k = max(v / i for v, i in zip(j.limit, INSTANCE, strict=True))
        assert 1 <= k <= 20  # ϑ instances
        assert 1 <= j.utility.theta1 <= 100 and 4 <= j.utility.theta2 <= 6
        assert j.mode == "sync" and j.time_unit_s == 3600.0


def test_registered_synthetic_builds_tiny_and_rejects_bad_params():
    wl = build_workload(
        "interval", "synthetic", WorkloadParams(jobs=4, machines=3, slots=6), make_rng(1)
    )
    assert len(wl.jobs) == 4 and wl.jobs[0].mode == "async"
    with pytest.raises(InvalidInput, match="sync"):
        build_workload("interval", "synthetic", WorkloadParams(extra={"sync": "yes"}), make_rng(1))
    with pytest.raises(InvalidInput, match="machines"):
        synthetic_interval(3, 0, make_rng(1))


@pytest.mark.parametrize("exp_id", ["smd-fig7", "smd-fig9", "smd-fig11", "smd-fig12"])
def test_experiment_quick_cell_runs(exp_id):
    exp = get(exp_id)
    point = exp.quick_points[0]
    m = exp.run_cell(exp.schedulers[0], point, 0, True)
    for metric in exp.metrics:
        assert metric in m and np.isfinite(m[metric])
    if "approx_ratio" in m:
        assert 0 < m["approx_ratio"] <= 1 + 1e-9


@pytest.mark.slow
@pytest.mark.parametrize("exp_id", ["smd-fig8", "smd-fig10"])
def test_sync_experiment_quick_cell_runs(exp_id):
    exp = get(exp_id)
    for s in exp.schedulers:
        m = exp.run_cell(s, exp.quick_points[0], 0, True)
        assert m["total_utility"] >= 0
