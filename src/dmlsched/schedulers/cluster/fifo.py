"""FIFO (PD-ORS Sec. V baseline 1; Hadoop/Spark's default).

Jobs run in arrival order.  Each job gets a *fixed* number of workers drawn
uniformly from [1, 30] with the run's generator when it arrives (capped by
F, Eq. (4)), PSs by its ratio γ (⌈W/γ⌉), placed round-robin.  The head of
the queue waits until it fits (head-of-line blocking: no job overtakes it);
once placed a job keeps the same placement until it completes.  Nothing is
rejected, except a job that cannot be placed even on an empty cluster
(it would block the queue forever): it is rejected when it reaches the head
with nothing running.  Jobs still queued at T count as unadmitted.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from dmlsched.model.cluster import Cluster, ClusterDecision, Placement
from dmlsched.model.views import ClusterView
from dmlsched.schedulers._shared.placement import bundle, place_round_robin, take
from dmlsched.schedulers.protocols import register

__all__ = ["Fifo"]


@register
class Fifo:
    name: ClassVar[str] = "fifo"
    setting: ClassVar[str] = "cluster"

    def __init__(self, min_workers: int = 1, max_workers: int = 30) -> None:
        self.min_workers = min_workers
        self.max_workers = max_workers

    def reset(self, cluster: Cluster, horizon: int, rng: np.random.Generator) -> None:
        self.cluster_ = cluster
        self.rng_ = rng
        self.size_: dict[int, tuple[int, int]] = {}
        self.running_: dict[int, Placement] = {}
        self.free_ = np.array(cluster.capacity, dtype=float)
        self.pointer_ = 0

    def decide(self, view: ClusterView) -> ClusterDecision:
        for job in view.arrivals:  # drawn at arrival so the stream is order-stable
            w = int(self.rng_.integers(self.min_workers, self.max_workers + 1))
            self.size_[job.id] = bundle(job, w)
        for j in [j for j in self.running_ if j in view.finished]:
            take(self.free_, view.jobs[j], self.running_.pop(j), sign=-1.0)
        reject: list[int] = []
        for j in view.pending:  # arrival order; stop at the first that does not fit
            job = view.jobs[j]
            w, s = self.size_[j]
            placed = place_round_robin(self.free_, job, w, s, self.pointer_) if w else None
            if placed is None:
                if self.running_:
                    break
                reject.append(j)
                continue
            p, self.pointer_ = placed
            take(self.free_, job, p)
            self.running_[j] = p
        return ClusterDecision(allocations=dict(self.running_), reject=tuple(reject))
