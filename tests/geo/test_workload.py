"""``geo`` workloads: Sec. 6.1 ranges, tiny sizes, Google arrivals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dmlsched.errors import InvalidInput
from dmlsched.rng import make_rng
from dmlsched.workloads.geo import MODELS, synthetic_geo
from dmlsched.workloads.registry import WorkloadParams, build_workload

GOOGLE = Path(__file__).resolve().parents[2].parent / "shared" / "traces" / "google-2011"


def test_synthetic_jobs_follow_the_section_6_1_ranges() -> None:
    wl = synthetic_geo(40, 15, 20, make_rng(0), data_gb=500.0)
    s = wl.sites
    assert s.dcs == 15 and s.kinds == 4
    assert np.all((s.a[:, 0] >= 0.6) & (s.a[:, 0] <= 4.8))  # [1.2, 9.6] USD/day × 0.5 day
    assert np.all((s.b >= 0.7 * s.a - 1e-12) & (s.b <= 0.8 * s.a + 1e-12))
    assert np.all((s.d[~np.eye(15, dtype=bool)] >= 0.01) & (s.d[~np.eye(15, dtype=bool)] <= 0.02))
    for j in wl.jobs:
        assert 16 <= j.capacity <= 66 and 4.32 <= j.exchange_gb <= 82.8
        # c_i = [0.05, 0.1] USD per GB of the job's data per slot (500 GB here)
        assert 0.05 * 500 <= j.deploy_cost <= 0.1 * 500 and 1 <= j.duration <= 8
        assert np.all((j.data.sum(axis=1) >= 400 - 1e-9) & (j.data.sum(axis=1) <= 600 + 1e-9))
        assert 1 <= int((j.data.sum(axis=0) > 0).sum()) <= 3
        assert j.worker_demand[0] in (0, 1, 2, 3, 4) and j.ps_demand[0] == 0


def test_the_deployment_cost_readings_share_every_other_draw() -> None:
    per_gb = synthetic_geo(10, 5, 8, make_rng(3), data_gb=300.0)
    flat = synthetic_geo(10, 5, 8, make_rng(3), data_gb=300.0, deploy="per-deployment")
    model = synthetic_geo(10, 5, 8, make_rng(3), data_gb=300.0, deploy="per-gb-model")
    for a, b, c in zip(per_gb.jobs, flat.jobs, model.jobs, strict=True):
        assert a.deploy_cost == pytest.approx(300.0 * b.deploy_cost)
        assert c.deploy_cost == pytest.approx(b.deploy_cost * b.exchange_gb / 144.0)
        assert np.array_equal(a.data, b.data) and a.capacity == b.capacity
    with pytest.raises(InvalidInput, match="deploy"):
        synthetic_geo(2, 3, 4, make_rng(0), deploy="per-byte")


def test_tiny_synthetic_workload_builds() -> None:
    wl = build_workload(
        "geo", "synthetic", WorkloadParams(jobs=4, machines=3, slots=6), make_rng(1)
    )
    assert len(wl.jobs) == 4 and wl.sites.dcs == 3 and wl.horizon == 6


def test_table3_models_set_capacity_and_exchange_size() -> None:
    wl = synthetic_geo(10, 3, 10, make_rng(2), models=True)
    names = {m.name: m for m in MODELS}
    for j in wl.jobs:
        assert j.capacity == names[j.model].capacity_gb
        assert j.exchange_gb == pytest.approx(names[j.model].params_m * 4e-3 * 144)


def test_unknown_extra_option_is_rejected_naming_it() -> None:
    with pytest.raises(InvalidInput, match="extra"):
        build_workload("geo", "synthetic", WorkloadParams(extra={"colour": 1}), make_rng(0))


def test_google_workload_uses_trace_arrivals() -> None:
    pytest.importorskip("dmlsched.workloads.traces", reason="trace loader not merged yet")
    if not GOOGLE.exists():
        pytest.skip("../shared/traces/google-2011 absent")
    wl = build_workload("geo", "google", WorkloadParams(jobs=12, machines=3, slots=8), make_rng(3))
    arr = [j.arrival for j in wl.jobs]
    assert arr == sorted(arr) and min(arr) >= 0 and max(arr) < 8
