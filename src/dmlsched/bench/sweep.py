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


#: experiments whose sweeps the per-worker overhead is measured on, with their seeds
OVERHEAD = {"aonline-fig7": 4, "pdors-fig7": 4}


def _sweep_cpu(exp: str, seeds: int, workers: int) -> tuple[float, float]:
    """(CPU of the whole process tree, wall) of ``dmlsched reproduce EXP --quick``."""
    import sys

    from dmlsched.bench.peer_sims import timed

    with tempfile.TemporaryDirectory() as d:
        cmd = [sys.executable, "-m", "dmlsched", "reproduce", exp, "--quick"]
        cmd += ["--seeds", str(seeds), "--workers", str(workers), "--out", f"{d}/out"]
        cpu, wall, _ = timed(cmd)
    return cpu, wall


@benchmark("sweep-workers", default=False)
def sweep_worker_overhead(pairs: int = 2) -> dict[str, float]:
    """``sweep_<exp>_cpu_w1_s`` / ``_w2_s`` and ``sweep_<exp>_cpu_growth`` = w2 ÷ w1: the
    CPU (parent and workers) of ``reproduce EXP --quick`` with one process and with a
    pool of two, alternating, medians of ``pairs``; what a second worker costs besides
    the cells (its imports, numba's loading, reference runs it repeats)."""
    out: dict[str, float] = {}
    for exp, seeds in OVERHEAD.items():
        one, two = [], []
        for _ in range(pairs):
            one.append(_sweep_cpu(exp, seeds, 1)[0])
            two.append(_sweep_cpu(exp, seeds, 2)[0])
        key = exp.replace("-", "_")
        out[f"sweep_{key}_cpu_w1_s"] = statistics.median(one)
        out[f"sweep_{key}_cpu_w2_s"] = statistics.median(two)
        out[f"sweep_{key}_cpu_growth"] = statistics.median(two) / statistics.median(one)
    return out
