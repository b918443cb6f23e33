"""The scale benchmark is registered; its workload has the size issue 3 names."""

from __future__ import annotations

import numpy as np
import pytest

from dmlsched.bench import load
from dmlsched.bench.traces import JOBS, MACHINES, SLOTS, scale_workload
from dmlsched.workloads.traces import default_trace_dir


def test_scale_benchmark_is_registered() -> None:
    assert "scale" in load()


@pytest.mark.bench
@pytest.mark.skipif(default_trace_dir("philly") is None, reason="../shared/traces absent")
def test_scale_workload_has_ten_thousand_philly_jobs_on_a_thousand_machines() -> None:
    w = scale_workload()
    arrivals = np.array([j.arrival for j in w.jobs])
    assert (len(w.jobs), w.cluster.machines, w.horizon) == (JOBS, MACHINES, SLOTS)
    assert arrivals.min() >= 0 and arrivals.max() < SLOTS and np.all(np.diff(arrivals) >= 0)
