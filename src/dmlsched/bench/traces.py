"""Scale benchmark (issue 3): FIFO on 10,000 Philly-arrival jobs, 1,000 machines, 1,000 slots.

``scale_fifo_s`` is the median wall time of 3 :func:`dmlsched.sim.engine.simulate`
runs (the workload is built once, outside the timing).  Without
``../shared/traces/philly-pollux`` the figure is left out.
"""

from __future__ import annotations

import statistics
import time

from dmlsched.bench import benchmark
from dmlsched.model.cluster import ClusterWorkload
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.traces import default_trace_dir, load_trace, trace_cluster

__all__ = ["JOBS", "MACHINES", "SLOTS", "scale_fifo", "scale_workload"]

JOBS, MACHINES, SLOTS = 10_000, 1_000, 1_000
_REPEATS = 3


def scale_workload(seed: int = 0) -> ClusterWorkload:
    """The benchmark's workload: Philly rows tiled to 10,000 jobs, scaled onto 1,000 slots."""
    return trace_cluster(load_trace("philly"), JOBS, MACHINES, SLOTS, make_rng(seed))


@benchmark("scale")
def scale_fifo() -> dict[str, float]:
    if default_trace_dir("philly") is None:
        return {}
    workload = scale_workload()
    times = []
    for _ in range(_REPEATS):
        _, sched_rng = spawn(make_rng(0), 2)
        start = time.perf_counter()
        simulate("cluster", workload, make_scheduler("cluster", "fifo"), sched_rng)
        times.append(time.perf_counter() - start)
    return {"scale_fifo_s": statistics.median(times)}
