"""Peer replay timing: Tiresias on the Pollux artifact's workload-6 (160 jobs, 60-s slots).

Each repetition imports the CSV (the parsed profiles are cached after the
first) and simulates; median of 3.  The Pollux simulator takes 22.6 s wall
for the same replay (issue 8).  Skipped (no figure) when ``../shared/peers``
is absent.
"""

from __future__ import annotations

import statistics
import time

from dmlsched.bench import benchmark
from dmlsched.rng import make_rng
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate


@benchmark("peers")
def peer_replay_tiresias(repeats: int = 3) -> dict[str, float]:
    from dmlsched.experiments.defs.peers import pollux_workload
    from dmlsched.workloads.peers import load_pollux

    path = pollux_workload(6)
    if not path.is_file():
        return {}
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        wl = load_pollux(path, slot_seconds=60.0)
        simulate("cluster", wl, make_scheduler("cluster", "tiresias"), make_rng(1))
        times.append(time.perf_counter() - t0)
    return {"peer_replay_tiresias_s": statistics.median(times)}
