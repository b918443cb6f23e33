"""A_online dispatch timing: per-job A_greedy time, 100 edge servers, 300 jobs.

The Sec. V instance (:func:`dmlsched.workloads.edge_cloud.edge_cloud_workload`,
300 jobs over 300 slots) is simulated to completion; the time A_greedy (Alg. 2)
spends on each arriving job is recorded.  Figures: the median per-job
dispatch time of each run, then the median over ``repeats`` runs
(``aonline_dispatch_ms_p50``), and the run's whole wall time
(``aonline_run_s``).
"""

from __future__ import annotations

import statistics
import time

from dmlsched.bench import benchmark
from dmlsched.rng import make_rng
from dmlsched.schedulers.edge_cloud.aonline import AOnline
from dmlsched.sim.edge_cloud import simulate_edge_cloud
from dmlsched.workloads.edge_cloud import edge_cloud_workload


def _timed_run(seed: int) -> tuple[list[float], float]:
    wl = edge_cloud_workload(300, 100, 300, make_rng(seed))
    sched = AOnline()
    inner = sched._greedy
    per_job: list[float] = []

    def greedy(*args, **kw):
        t0 = time.perf_counter()
        out = inner(*args, **kw)
        per_job.append((time.perf_counter() - t0) * 1e3)
        return out

    sched._greedy = greedy  # type: ignore[method-assign]  # the timing wrapper replaces the method on this instance
    t0 = time.perf_counter()
    simulate_edge_cloud(wl, sched, make_rng(seed + 1000), record_events=False)
    return per_job, time.perf_counter() - t0


@benchmark("aonline")
def aonline_dispatch(repeats: int = 5) -> dict[str, float]:
    p50, wall = [], []
    for r in range(repeats):
        per_job, secs = _timed_run(r)
        p50.append(statistics.median(per_job))
        wall.append(secs)
    return {
        "aonline_dispatch_ms_p50": statistics.median(p50),
        "aonline_run_s": statistics.median(wall),
    }
