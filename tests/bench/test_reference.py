"""The compiled FIFO reference loop is the engine's run: the same JCTs, job for job."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dmlsched.bench.reference import fifo_inputs, run_fifo
from dmlsched.model.cluster import Cluster, ClusterWorkload
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.synthetic import synthetic_cluster
from dmlsched.workloads.traces import default_trace_dir, load_trace, trace_cluster


def _both(wl: ClusterWorkload, seed: int) -> tuple[np.ndarray, np.ndarray, dict]:
    _, for_engine = spawn(make_rng(seed), 2)
    _, for_loop = spawn(make_rng(seed), 2)
    res = simulate("cluster", wl, make_scheduler("cluster", "fifo"), for_engine)
    inputs = fifo_inputs(wl, for_loop)
    jct, state = run_fifo(inputs)
    pos = {j.id: i for i, j in enumerate(wl.jobs)}
    mine = np.full(len(wl.jobs), np.nan)
    mine[[pos[j] for j in inputs.ids.tolist()]] = jct
    return mine, state, res.metrics | {"jct": res.series["jct"]}


@pytest.mark.parametrize(
    ("jobs", "machines", "slots", "seed"),
    [(60, 4, 30, 0), (300, 20, 50, 1), (400, 80, 60, 2)],  # ≤ 64 machines: NumPy path; 80: kernels
)
def test_the_loop_gives_the_engines_jcts_on_synthetic_jobs(
    jobs: int, machines: int, slots: int, seed: int
) -> None:
    wl = synthetic_cluster(jobs, machines, slots, make_rng(seed))
    mine, _, eng = _both(wl, seed)
    assert np.array_equal(mine, eng["jct"], equal_nan=True)


def test_a_job_that_fits_no_empty_machine_set_is_rejected_by_both() -> None:
    wl = synthetic_cluster(40, 3, 30, make_rng(3))
    # the first job: at the head with nothing running, so rejected if its gang (W ≥ 4
    # of seed 3's draws) does not fit
    huge = dataclasses.replace(wl.jobs[0], worker_demand=(70.0, 170.0, 500.0, 170.0), batch=200)
    tiny = Cluster(np.tile([80.0, 200.0, 600.0, 200.0], (3, 1)))  # one huge worker a machine
    wl = dataclasses.replace(wl, jobs=(huge, *wl.jobs[1:]), cluster=tiny)
    mine, state, eng = _both(wl, 3)
    assert np.array_equal(mine, eng["jct"], equal_nan=True)
    assert int((state == 3).sum()) == eng["rejected_jobs"] == 1


@pytest.mark.skipif(default_trace_dir("philly") is None, reason="../shared/traces absent")
def test_the_loop_gives_the_engines_jcts_on_philly_jobs() -> None:
    wl = trace_cluster(load_trace("philly"), 3000, 200, 300, make_rng(4))
    mine, _, eng = _both(wl, 4)
    assert np.array_equal(mine, eng["jct"], equal_nan=True)
    assert np.isfinite(mine).sum() == eng["completed_jobs"]


# ---------------------------------------------------------------- edge-cloud SRTF


@pytest.mark.parametrize(
    ("jobs", "servers", "slots", "seed", "storage"),
    [
        (60, 10, 100, 0, None),  # few servers: gangs rarely fit, most jobs in the cloud
        (300, 100, 300, 1, None),  # the paper's instance
        (150, 100, 200, 2, 0.005),  # storage (7b) binds: some gangs fit, some do not
        (150, 100, 200, 3, 0.01),
    ],
)
def test_the_edge_cloud_loop_gives_srtfs_completion_slots(
    jobs: int, servers: int, slots: int, seed: int, storage: float | None
) -> None:
    from dmlsched.bench.reference import srtf_inputs, srtf_loop
    from dmlsched.workloads.edge_cloud import edge_cloud_workload

    wl = edge_cloud_workload(jobs, servers, slots, make_rng(seed), storage_gb=storage)
    res = simulate("edge-cloud", wl, make_scheduler("edge-cloud", "srtf"), make_rng(seed))
    done = {e.job: e.slot for e in res.events if e.kind == "complete"}
    went = {e.job: e.slot for e in res.events if e.kind == "dispatch"}
    i = srtf_inputs(wl)
    ends, starts, _ = srtf_loop(
        i.arrival, i.chunks, i.wtype, i.delay, i.work, i.chunk_gb, i.rate_edge, i.rate_cloud,
        i.p_edge, i.wserver, i.type_ptr, i.type_workers, i.storage, i.horizon,
    )  # fmt: skip
    for k, j in enumerate(i.ids.tolist()):
        assert (int(starts[k]), int(ends[k])) == (went.get(j, -1), done.get(j, -1)), j
