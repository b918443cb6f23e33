"""Growth: how a scheduler's run time scales from the paper's size to ten times it.

``growth`` (opt-in: ``--only growth``, several minutes): for each scheduler, one
run at its paper size and one at ten times (jobs and machines/servers ×10, the
horizon unchanged; mlBroker: jobs ×10 over the same 15 DCs and 50 slots), each in
a fresh process after a small warm-up run in it (imports, numba's loading and
compiled kernels are not what grows).  Figures: CPU seconds ``growth_<name>_1x_s``,
``growth_<name>_10x_s`` and the exponent ``growth_<name>_exponent`` =
log10(t₁₀ₓ / t₁ₓ) — 1 is linear growth, 2 quadratic.

Beside them, how much more the 10× run had to do, whatever the code:
``growth_<name>_job_slots_ratio`` (edge-cloud, when every job completes) —
the slots jobs spent in the system, Σ (completion − arrival), at 10× over 1×:
an engine or scheduler that touches every job in the system once a slot grows
at least by this much — and ``growth_<name>_iterations_ratio`` (mlBroker) —
the interior-point iterations of all its P̃_ft solves (Alg. 1 line 4), each of
which handles every active job's variables.  (The cluster runs have no such
figure: their rejected and unfinished jobs are not in the system.)

=============  =====================================  =============================
scheduler      paper size (1×)                        workload
=============  =====================================  =============================
``drf``        1,000 jobs, 100 machines, 1,000 slots  Philly arrivals (``trace_cluster``)
``pd-ors+``    the same                               the same
``a-online``   300 jobs, 100 servers, 300 slots       Sec. V (``edge_cloud_workload``)
``mlbroker``   100 jobs, 15 DCs, 50 slots, 500 GB     Sec. 6.1 (``mlbroker-fig8``'s)
=============  =====================================  =============================
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

from dmlsched.bench import benchmark

__all__ = ["SIZES", "growth"]

#: scheduler -> (setting, 1× size, warm-up size); sizes as the child's ``build`` reads them
SIZES: dict[str, tuple[str, tuple[int, ...], tuple[int, ...]]] = {
    "drf": ("cluster", (1000, 100, 1000), (60, 70, 20)),
    "pd-ors+": ("cluster", (1000, 100, 1000), (40, 70, 20)),
    "a-online": ("edge-cloud", (300, 100, 300), (30, 10, 40)),
    "mlbroker": ("geo", (100, 15, 50), (6, 3, 5)),
}

_CHILD = """
import json, sys, time
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
name, setting = sys.argv[1], sys.argv[2]
size, warm = json.loads(sys.argv[3]), json.loads(sys.argv[4])
def build(n, m, t):
    if setting == "cluster":
        from dmlsched.workloads.traces import load_trace, trace_cluster
        return trace_cluster(load_trace("philly"), n, m, t, make_rng(0))
    if setting == "edge-cloud":
        from dmlsched.workloads.edge_cloud import edge_cloud_workload
        return edge_cloud_workload(n, m, t, make_rng(0))
    from dmlsched.experiments.defs.mlbroker import _instance
    return _instance(0, m, t, n, data_gb=500.0)
def run(wl):
    _, rng = spawn(make_rng(0), 2)
    sched = make_scheduler(setting, name)
    c = time.process_time()
    res = simulate(setting, wl, sched, rng, record_events=False)
    cpu = time.process_time() - c
    m = res.metrics
    out = {"cpu": cpu}
    if "total_jct" in m and m.get("completed_jobs") == len(wl.jobs):  # edge-cloud
        out["job_slots"] = m["total_jct"]
    if hasattr(sched, "solver_iterations_"):
        out["iterations"] = sum(sched.solver_iterations_)
    return out
run(build(*warm))
print(json.dumps(run(build(*size))))
"""


def _run(name: str, setting: str, size: tuple[int, ...], warm: tuple[int, ...]) -> dict[str, float]:
    """One run in a fresh process: its CPU seconds and what it did (``_CHILD``)."""
    cmd = [sys.executable, "-c", _CHILD, name, setting, json.dumps(size), json.dumps(warm)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {k: float(v) for k, v in json.loads(out).items()}


def _tenfold(setting: str, size: tuple[int, ...]) -> tuple[int, ...]:
    if setting == "geo":  # jobs ×10 over the same DCs and slots
        return (size[0] * 10, *size[1:])
    return (size[0] * 10, size[1] * 10, size[2])  # jobs and machines ×10, same horizon


@benchmark("growth", default=False)
def growth() -> dict[str, float]:
    from dmlsched.workloads.traces import default_trace_dir

    out: dict[str, float] = {}
    for name, (setting, size, warm) in SIZES.items():
        trace = {"cluster": "philly", "geo": "google"}.get(setting)  # arrivals the build reads
        if trace is not None and default_trace_dir(trace) is None:
            continue
        one = _run(name, setting, size, warm)
        ten = _run(name, setting, _tenfold(setting, size), warm)
        key = name.replace("-", "_").replace("+", "_plus")
        out[f"growth_{key}_1x_s"] = one["cpu"]
        out[f"growth_{key}_10x_s"] = ten["cpu"]
        out[f"growth_{key}_exponent"] = math.log10(ten["cpu"] / one["cpu"])
        for what in ("job_slots", "iterations"):
            if one.get(what):
                out[f"growth_{key}_{what}_ratio"] = ten[what] / one[what]
    return out
