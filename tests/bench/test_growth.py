"""The growth benchmark's child reports its CPU and what the run had to do."""

from __future__ import annotations

import pytest

from dmlsched.bench.growth import SIZES, _run


@pytest.mark.parametrize("name", ["a-online", "mlbroker"])
def test_the_child_reports_cpu_and_the_runs_work(name: str) -> None:
    setting, _, warm = SIZES[name]
    got = _run(name, setting, warm, warm)
    assert got["cpu"] > 0
    if setting == "edge-cloud":
        assert got["job_slots"] >= 30  # 30 jobs, each at least a slot in the system
    else:
        assert got["iterations"] >= 1  # the slots' P̃_ft solves
