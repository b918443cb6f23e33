"""Sweep throughput: cells per second of a process-pool run (all cores)."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from dmlsched.bench import benchmark
from dmlsched.experiments.catalogue import get
from dmlsched.experiments.runner import RunConfig, run_experiment


@benchmark("sweep")
def sweep_cells_per_s(repeats: int = 3, seeds: int = 6) -> dict[str, float]:
    """``cluster-baselines --quick`` (2 points × 2 schedulers × ``seeds``) on a pool."""
    exp = get("cluster-baselines")
    cells = len(exp.quick_points) * len(exp.schedulers) * seeds
    rates = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            run_experiment(exp, Path(d), RunConfig(seeds=seeds, quick=True, workers=os.cpu_count()))
            rates.append(cells / (time.perf_counter() - t0))
    return {"sweep_cells_per_s": statistics.median(rates)}
