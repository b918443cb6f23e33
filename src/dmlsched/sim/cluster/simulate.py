"""``simulate`` for the ``cluster`` setting: the event-driven driver of :class:`ClusterState`.

Each decision stands until its ``until``, the next arrival or the first
completion, whichever comes first (``event_driven=False``: one slot, asking
every slot — the reference the event-driven path is tested against).  Once
every job has arrived and none is pending or active, the remaining slots
cannot change anything, so the run stops (:attr:`ClusterState.over`).
"""

from __future__ import annotations

import numpy as np

from dmlsched.model.cluster import ClusterWorkload
from dmlsched.schedulers.protocols import ClusterScheduler
from dmlsched.sim.cluster.state import ClusterState
from dmlsched.sim.run import Progress, RunResult

__all__ = ["simulate_cluster"]


def simulate_cluster(
    workload: ClusterWorkload,
    scheduler: ClusterScheduler,
    rng: np.random.Generator,
    *,
    record_events: bool = True,
    progress: Progress | None = None,
    event_driven: bool = True,
    fast: bool = True,
) -> RunResult:
    """Run ``scheduler`` on ``workload``; the engine owns progress and metrics.

    ``progress`` hears (slot, horizon, admitted, completed) after every
    decision; ``fast=False`` accepts every decision through the referee alone
    (:mod:`dmlsched.sim.cluster.referee`).
    """
    state = ClusterState(workload, type(scheduler).name, record_events=record_events, fast=fast)
    T = workload.horizon
    scheduler.reset(state.shown_cluster, T, rng)
    while not state.over:
        accepted = state.accept(scheduler.decide(state.reveal()))
        state.credit(until=accepted.until if event_driven else None)
        if progress is not None:
            progress(state.slot, T, state.admitted_count, state.completed_count)
    if progress is not None:  # the slots left (if the run stopped early) change nothing
        progress(T, T, state.admitted_count, state.completed_count)
    return state.result()
