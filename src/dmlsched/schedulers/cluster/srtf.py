"""SRTF: preemptive shortest-remaining-time-first with gang allocation.

The peer simulators' SRTF baseline (Tiresias' and Gavel's simulators): every
slot, jobs are ranked by predicted remaining time and whole gangs are
selected and placed as in Tiresias
(:func:`~dmlsched.schedulers._shared.gang.gang_allocate`: preemptive,
skip-ahead, no migration of a job that keeps running, consolidated placement).

* Gang: the requested workers (``ClusterJob.requested_workers``) + ⌈W/γ⌉ PSs;
  without a request, FIFO's W uniform in [1, 30] from the run's generator.
* Remaining time = remaining work (``view.remaining``; the full E·K before a
  job first runs) ÷ the gang's predicted rate, Eq. (1) with the internal
  bandwidth when the consolidated gang fits one machine, else external (the
  scheduler does not see the engine's speed model, e.g. a measured one).
* Ties by arrival then id (:func:`~dmlsched.schedulers._shared.priority.srtf_key`).
* A job whose gang cannot be placed on the empty cluster is rejected on arrival.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from dmlsched.model.cluster import Cluster
from dmlsched.model.decisions import ClusterDecision, Placement
from dmlsched.model.speed.pdors import sync_rate, worker_rate
from dmlsched.schedulers._shared.gang import gang_allocate, gang_need, place
from dmlsched.schedulers._shared.priority import srtf_key
from dmlsched.schedulers.cluster.tiresias import gang_size
from dmlsched.schedulers.protocols import register
from dmlsched.sim.views import ClusterView

__all__ = ["Srtf"]


@register
class Srtf:
    name: ClassVar[str] = "srtf"
    setting: ClassVar[str] = "cluster"

    def __init__(self, placement: str = "packed") -> None:
        self.placement = placement

    def reset(self, cluster: Cluster, horizon: int, rng: np.random.Generator) -> None:
        if self.placement not in ("packed", "round-robin"):
            raise ValueError(f"placement must be packed | round-robin, not {self.placement!r}")
        self.cluster_ = cluster
        self.rng_ = rng
        self.gang_: dict[int, tuple[int, int]] = {}
        self.need_: dict[int, tuple[float, ...]] = {}
        self.rate_: dict[int, float] = {}
        self.running_: dict[int, Placement] = {}
        self.pointer_ = 0

    def decide(self, view: ClusterView) -> ClusterDecision:
        cap = self.cluster_.capacity
        reject = []
        for job in view.arrivals:
            w, s = gang_size(job, self.rng_)
            got = place(cap, job, w, s, "packed", 0) if w > 0 else None
            if got is None or place(cap, job, w, s, self.placement, 0) is None:
                reject.append(job.id)
                continue
            self.gang_[job.id] = (w, s)
            self.need_[job.id] = gang_need(job, w, s)
            internal = len(got[0].machines) == 1
            if job.mode == "sync":
                rate = sync_rate(job, w, s, internal)
            else:
                rate = w * worker_rate(job, internal)
            self.rate_[job.id] = max(rate, 1e-300)
        for j in list(self.running_):
            if j in view.finished:
                del self.running_[j]
        candidates = [j for j in (*view.active, *view.pending) if j in self.gang_]

        def key(j: int) -> tuple[float, int, int]:
            job = view.jobs[j]
            left = view.remaining.get(j, job.total_work)
            return srtf_key(left / self.rate_[j], job.arrival, j)

        order = sorted(candidates, key=key)
        alloc, self.pointer_ = gang_allocate(
            order,
            view.jobs,
            self.gang_,
            self.running_,
            cap,
            self.placement,
            self.pointer_,
            self.need_,
        )
        self.running_ = alloc
        return ClusterDecision(allocations=dict(alloc), reject=tuple(reject))
