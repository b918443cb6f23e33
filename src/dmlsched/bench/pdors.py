"""PD-ORS timing: per-job decision time and a 1,000 × 1,000 × 200 scale run.

* ``pdors_decision_ms_p50`` / ``_p99`` — wall time of one job's scheduling
  (Alg. 2–4: the DP over every completion time, internal and external cases,
  rounding) on H = 100 machines, T = 80 slots, 100 Sec. V jobs; median over
  ``repeats`` runs of each run's percentile.
* ``scale_pdors_s`` — one full engine run of PD-ORS on 1,000 jobs, 1,000
  machines, 200 slots (one run).  It took over 30 minutes with a
  per-machine external LP (4,000 packing rows); solving Problem (23) over
  classes of identical machines (see :mod:`dmlsched.schedulers.cluster.pdors`)
  brought it to 40–70 s on the shared 2-core machine (load 2–5), so it is
  part of the default set again.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from dmlsched.bench import benchmark
from dmlsched.rng import make_rng
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.synthetic import synthetic_cluster


def _timed_run(jobs: int, machines: int, slots: int, seed: int) -> tuple[float, list[float]]:
    wl = synthetic_cluster(jobs, machines, slots, make_rng(seed))
    sched = make_scheduler("cluster", "pd-ors")
    inner = sched.plan
    per_job: list[float] = []

    def plan(job, now):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        out = inner(job, now)
        per_job.append((time.perf_counter() - t0) * 1e3)
        return out

    sched.plan = plan  # type: ignore[method-assign]
    t0 = time.perf_counter()
    simulate("cluster", wl, sched, make_rng(seed + 1))
    return time.perf_counter() - t0, per_job


@benchmark("pdors")
def pdors_decision(repeats: int = 5) -> dict[str, float]:
    p50, p99 = [], []
    for r in range(repeats):
        _, ms = _timed_run(100, 100, 80, r)
        p50.append(float(np.percentile(ms, 50)))
        p99.append(float(np.percentile(ms, 99)))
    return {
        "pdors_decision_ms_p50": statistics.median(p50),
        "pdors_decision_ms_p99": statistics.median(p99),
    }


@benchmark("pdors-scale")
def pdors_scale() -> dict[str, float]:
    total, _ = _timed_run(1000, 1000, 200, 0)
    return {"scale_pdors_s": total}
