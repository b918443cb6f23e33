"""Engine timing: FIFO on 1,000 synthetic jobs, 100 machines, 200 slots."""

from __future__ import annotations

import statistics
import time

from dmlsched.bench import benchmark
from dmlsched.rng import make_rng
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.synthetic import synthetic_cluster


@benchmark("engine")
def engine_fifo(repeats: int = 5) -> dict[str, float]:
    wl = synthetic_cluster(1000, 100, 200, make_rng(0))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        simulate("cluster", wl, make_scheduler("cluster", "fifo"), make_rng(1))
        times.append(time.perf_counter() - t0)
    return {"engine_fifo_s": statistics.median(times)}
