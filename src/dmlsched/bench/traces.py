"""Scale benchmarks on Philly arrivals.

* ``scale_fifo_s`` — FIFO on 10,000 Philly-arrival jobs, 1,000 machines, 1,000
  slots: median wall time of 3 :func:`dmlsched.sim.engine.simulate` runs (the
  workload is built once, outside the timing).
* ``scale_100k_fifo_s``, ``scale_100k_tiresias_s`` (opt-in: ``--only scale-100k``)
  — FIFO and Tiresias on 100,000 jobs, 10,000 machines, 1,000 slots, one run
  each in a fresh process (so ``scale_100k_*_rss_mb``, its peak resident
  memory, is the run's own); wall time of the simulation, workload built
  outside the timing.  Beside them, ``scale_10k_*_5e2d4bc_s``: the same at
  10,000 jobs on 1,000 machines at the reference commit 5e2d4bc (constants here,
  measured as :data:`BASE_10K_S` says).
  ``scale_100k_*_warm_s``: the same run after a small one in the same process
  has loaded numba and the compiled kernels, which a fresh run loads lazily
  during the timed simulation.

* ``philly_100k_build_s`` (``build``) — CPU of building that 100,000-job workload from
  the trace in a fresh process (the engine's runs above time the simulation only).

Without ``../shared/traces/philly-pollux`` the figures are left out.
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

__all__ = [
    "JOBS",
    "MACHINES",
    "SLOTS",
    "philly_100k_build",
    "scale_100k",
    "scale_fifo",
    "scale_workload",
]

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


#: 10,000 jobs × 1,000 machines × 1,000 slots at the reference commit 5e2d4bc (wall
#: seconds of the simulation on a quiet machine, load ≤ 1.1, fresh processes alternating
#: with the 100k runs: FIFO the median of 16, Tiresias of 5; on a busy machine compare
#: in one run instead, docs/benchmarks.md)
BASE_10K_S = {"fifo": 2.285, "tiresias": 3.13}

_CHILD = """
import json, resource, sys, time
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.traces import load_trace, trace_cluster
name, jobs, machines, slots, warm = sys.argv[1], *map(int, sys.argv[2:6])
if warm:  # load what a first run loads lazily (numba, its cached kernels) before timing
    small = trace_cluster(load_trace("philly"), 300, 100, 50, make_rng(1))
    simulate("cluster", small, make_scheduler("cluster", name), make_rng(1), record_events=False)
wl = trace_cluster(load_trace("philly"), jobs, machines, slots, make_rng(0))
_, rng = spawn(make_rng(0), 2)
t0 = time.perf_counter()
simulate("cluster", wl, make_scheduler("cluster", name), rng, record_events=False)
wall = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"wall": wall, "rss_mb": rss}))
"""


@benchmark("scale-100k", default=False)
def scale_100k() -> dict[str, float]:
    import json
    import subprocess
    import sys

    if default_trace_dir("philly") is None:
        return {}
    out: dict[str, float] = {}

    def child(name: str, warm: bool) -> dict[str, float]:
        cmd = [sys.executable, "-c", _CHILD, name, "100000", "10000", str(SLOTS), str(int(warm))]
        return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)

    for name in ("fifo", "tiresias"):
        got = child(name, warm=False)
        out[f"scale_100k_{name}_s"] = got["wall"]
        out[f"scale_100k_{name}_rss_mb"] = got["rss_mb"]
        out[f"scale_10k_{name}_5e2d4bc_s"] = BASE_10K_S[name]
        out[f"scale_100k_{name}_ratio"] = got["wall"] / BASE_10K_S[name]
        # the same after a small run has loaded numba and the compiled kernels (the base
        # commit loaded nothing during its run: its modules were imported before timing)
        out[f"scale_100k_{name}_warm_s"] = child(name, warm=True)["wall"]
    return out


_BUILD = """
import json, time
from dmlsched.rng import make_rng
from dmlsched.workloads.traces import load_trace, trace_cluster
c, w = time.process_time(), time.perf_counter()
trace_cluster(load_trace("philly"), 100_000, 10_000, 1_000, make_rng(0))
print(json.dumps({"cpu": time.process_time() - c, "wall": time.perf_counter() - w}))
"""


@benchmark("build")
def philly_100k_build(repeats: int = 3) -> dict[str, float]:
    """``philly_100k_build_s`` (CPU) and ``_wall_s``: reading the Philly trace and building
    the 100,000-job × 10,000-machine workload in a fresh process (imports not timed),
    median of ``repeats`` processes."""
    import json
    import subprocess
    import sys

    if default_trace_dir("philly") is None:
        return {}
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", _BUILD], check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(repeats)
    ]
    return {
        "philly_100k_build_s": statistics.median(r["cpu"] for r in runs),
        "philly_100k_build_wall_s": statistics.median(r["wall"] for r in runs),
    }
