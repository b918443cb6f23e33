"""Metrics of a ``cluster`` run that the figures need and the engine does not compute.

Pure functions of the workload and the run's event log (the engine's record
of what ran: ``complete`` at the completion slot t̃_i, one ``allocate`` per
job and slot it ran, :mod:`dmlsched.sim.cluster`):

* :func:`training_times` — t̃_i − a_i for finished jobs, and for the others
  one of two rules: ``"T"``, PD-ORS Fig. 9 as printed ("we simply set its
  training time to T (i.e., 80) if the job cannot be finished within the
  scheduling time span T"), or ``"T-a"``, the time the job was in the system
  by the end of the span (what the engine's ``median_training_time`` uses);
* :func:`run_metrics` — ``median_training_time_t`` (rule T),
  ``completion_rate`` (finished ÷ all jobs, reported beside every median:
  with most jobs unfinished, a median is T whatever the scheduler does) and
  ``single_machine_share`` (of the (job, slot) allocations that ran, the
  share with every worker and PS on one machine: Fact 1's internal case, the
  co-location PD-ORS is about; NaN when nothing ran).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import numpy as np

from dmlsched.model.cluster import ClusterWorkload
from dmlsched.sim.events import Event

__all__ = ["RULES", "run_metrics", "single_machine_share", "training_times"]

#: unfinished-job rules of :func:`training_times`
RULES = ("T", "T-a")
_MACHINES = re.compile(r"(?:^| )machines=(\d+)(?: |$)")


def training_times(workload: ClusterWorkload, events: Iterable[Event], rule: str) -> np.ndarray:
    """Per job, in workload order: t̃_i − a_i if it finished, else ``rule``'s value."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    T = workload.horizon
    done = {e.job: e.slot for e in events if e.kind == "complete"}
    out = []
    for job in workload.jobs:
        if job.id in done:
            out.append(done[job.id] - job.arrival)
        else:
            out.append(T if rule == "T" else T - job.arrival)
    return np.asarray(out, dtype=float)


def single_machine_share(events: Iterable[Event]) -> float:
    """Share of ``allocate`` events whose placement is on one machine (NaN if none)."""
    total = single = 0
    for e in events:
        if e.kind != "allocate":
            continue
        found = _MACHINES.search(e.detail)
        if found is None:  # the engine's record changed: say so rather than guess
            raise ValueError(f"allocate event without machines=N: {e.detail!r}")
        total += 1
        single += found.group(1) == "1"
    return single / total if total else math.nan


def run_metrics(workload: ClusterWorkload, events: Iterable[Event]) -> dict[str, float]:
    """``median_training_time_t``, ``completion_rate``, ``single_machine_share``."""
    events = list(events)
    times = training_times(workload, events, "T")
    n = len(workload.jobs)
    finished = sum(1 for e in events if e.kind == "complete")
    return {
        "median_training_time_t": float(np.median(times)) if n else 0.0,
        "completion_rate": finished / n if n else 0.0,
        "single_machine_share": single_machine_share(events),
    }
