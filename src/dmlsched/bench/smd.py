"""SMD timing: wall seconds for SMD (ε1 = 0.01, M_δ = 1, F = 10, exact MKP) on one
interval of 200 Sec. V jobs at 3 capacity units; median of 5 runs.

``smd_interval_s`` is the Async-SGD interval (Figs. 7/9), ``smd_interval_sync_s``
the Sync-SGD one (its inner problem has a 2-D grid, so it is slower).
"""

from __future__ import annotations

import statistics
import time

from dmlsched.bench import benchmark
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.interval import synthetic_interval

__all__ = ["smd_interval"]


def _median_seconds(sync: bool, runs: int = 5, jobs: int = 200) -> float:
    times = []
    for seed in range(runs):
        wl_rng, s_rng = spawn(make_rng(seed), 2)
        wl = synthetic_interval(jobs, 3.0, wl_rng, sync=sync)
        sched = make_scheduler("interval", "smd")
        t0 = time.perf_counter()
        simulate("interval", wl, sched, s_rng)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


@benchmark("smd")
def smd_interval() -> dict[str, float]:
    return {
        "smd_interval_s": _median_seconds(sync=False),
        "smd_interval_sync_s": _median_seconds(sync=True),
    }
