"""``mlbroker_slot_s_p50``: seconds per mlBroker slot with 15 DCs and 50 active jobs.

One slot = A_fractional (build + Clarabel solve of P̃_ft (10)) + A_round
(rounding + transfer LP); median of 5 slots on the same instance (all 50 jobs
active in every slot).
"""

from __future__ import annotations

import statistics
import time

from dmlsched.bench import benchmark
from dmlsched.rng import make_rng
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.geo import synthetic_geo

__all__ = ["mlbroker_slot"]


@benchmark("mlbroker")
def mlbroker_slot() -> dict[str, float]:
    import numpy as np

    slots = 5
    wl = synthetic_geo(
        50, 15, slots, make_rng(0), arrivals=np.zeros(50, dtype=int), duration=(slots, slots)
    )
    sched = make_scheduler("geo", "mlbroker")
    times: list[float] = []
    inner = sched.decide

    def timed(view):
        t0 = time.perf_counter()
        out = inner(view)
        times.append(time.perf_counter() - t0)
        return out

    sched.decide = timed
    simulate("geo", wl, sched, make_rng(1))
    return {"mlbroker_slot_s_p50": statistics.median(times)}
