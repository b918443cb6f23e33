"""The "could finish alone" count bounds every scheduler: no job a scheduler completes
is one the diagnosis says could not finish even alone on the empty cluster."""

from __future__ import annotations

import numpy as np
import pytest

from dmlsched.experiments.diagnose import workload_diagnosis
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers._shared.alone import alone_rate
from dmlsched.schedulers.protocols import make_scheduler, registry
from dmlsched.sim.engine import simulate
from dmlsched.workloads.synthetic import synthetic_cluster


@pytest.mark.parametrize(
    ("mode", "jobs", "machines", "slots", "seed"),
    [("async", 30, 3, 12, 0), ("async", 40, 10, 20, 1), ("sync", 30, 10, 20, 2)],
)
def test_no_scheduler_completes_a_job_that_could_not_finish_alone(
    mode: str, jobs: int, machines: int, slots: int, seed: int
) -> None:
    wl_rng, run_rng = spawn(make_rng(seed), 2)
    wl = synthetic_cluster(jobs, machines, slots, wl_rng, mode=mode)
    could = {
        j.id
        for j in wl.jobs
        if (r := alone_rate(j, wl)[0]) > 0 and j.total_work / r <= wl.horizon - j.arrival + 1e-9
    }
    assert workload_diagnosis(wl)["workload_finishable_alone"] == len(could)
    for setting, name in registry():
        if setting != "cluster":
            continue
        res = simulate(setting, wl, make_scheduler(setting, name), run_rng, record_events=False)
        done = {j.id for j, t in zip(wl.jobs, res.series["jct"], strict=True) if np.isfinite(t)}
        assert done <= could, (name, sorted(done - could))
