"""The growth benchmark's child reports its CPU and what the run had to do."""

from __future__ import annotations

import pytest

from dmlsched.bench.growth import SIZES, _run
from dmlsched.workloads.traces import default_trace_dir


@pytest.mark.parametrize("name", ["a-online", "mlbroker"])
def test_the_child_reports_cpu_and_the_runs_work(name: str) -> None:
    setting, _, warm = SIZES[name]
    if setting == "geo" and default_trace_dir("google") is None:
        pytest.skip("../shared/traces/google-2011 absent (mlBroker's instance takes its arrivals)")
    got = _run(name, setting, warm, warm)
    assert got["cpu"] > 0
    if setting == "edge-cloud":
        assert got["job_slots"] >= 30  # 30 jobs, each at least a slot in the system
    else:
        assert got["iterations"] >= 1  # the slots' P̃_ft solves
