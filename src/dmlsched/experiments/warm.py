"""Compile the numba kernels once, at install (``make install-core``), not in a first run.

The kernels (:mod:`dmlsched.schedulers._shared.kernels` and
``placement_kernels``) are compiled on first call for the argument types of
that call and kept by numba's on-disk cache (``cache=True``: the
``__pycache__`` beside each module, inside the checkout or the environment).
A kernel is typed by its call site (dtype, layout, read-only or not), so the
sure way to compile what a run will use is a run: every registered ``cluster``
scheduler once on a small synchronous workload on more machines than
:data:`~dmlsched.schedulers._shared.placement.SMALL_MACHINES` (the compiled
placement path) and once on a small asynchronous one on a few machines (the
demo's).  ``python -m dmlsched.experiments.warm`` prints one line per run.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers._shared.placement import SMALL_MACHINES
from dmlsched.schedulers.protocols import make_scheduler, registry
from dmlsched.sim.engine import simulate
from dmlsched.workloads.synthetic import synthetic_cluster

__all__ = ["WORKLOADS", "main", "warm"]

#: (jobs, machines, slots, mode) of the runs that compile the kernels
WORKLOADS = ((40, SMALL_MACHINES + 16, 8, "sync"), (30, 4, 10, "async"))


def warm(say: Callable[[str], None] | None = None) -> int:
    """Run every cluster scheduler on :data:`WORKLOADS`; returns the number of runs."""
    runs = 0
    for jobs, machines, slots, mode in WORKLOADS:
        wl_rng, run_rng = spawn(make_rng(0), 2)
        wl = synthetic_cluster(jobs, machines, slots, wl_rng, mode=mode)
        for setting, name in registry():
            if setting != "cluster":
                continue
            start = time.monotonic()
            simulate(setting, wl, make_scheduler(setting, name), run_rng, record_events=False)
            runs += 1
            if say is not None:
                took = time.monotonic() - start
                say(f"  {name} on {jobs} {mode} jobs, {machines} machines: {took:.1f} s")
    return runs


def main() -> int:
    warm(lambda line: print(line, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
