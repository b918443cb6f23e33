"""FIFO (PD-ORS Sec. V baseline 1; Hadoop/Spark's default; the peers' FIFO).

Jobs run in arrival order.  Each job gets a *fixed* number of workers when it
arrives: the gang its owner asked for (``ClusterJob.requested_workers`` — a
Pollux row's ``num_replicas``, a Gavel line's scale factor), else, as PD-ORS
Sec. V's baseline, a count drawn uniformly from [1, 30] with the run's
generator (capped by F, Eq. (4)); PSs by its ratio γ (⌈W/γ⌉).  The head of
the queue waits until it fits (head-of-line blocking: no job overtakes it);
once placed a job keeps the same placement until it completes.  Nothing is
rejected, except a job that cannot be placed even on an empty cluster
(it would block the queue forever): it is rejected when it reaches the head
with nothing running.  Jobs still queued at T count as unadmitted.

Why honouring the request is the default rather than a separate scheduler:
a peer job list fixes each job's GPUs, and the peers' FIFO gives exactly
those (Gavel's ``policies/fifo.py`` at commit c4fa400 allocates each job its
``scale_factor`` workers in arrival order, stops at the first job that does
not fit, and never preempts — this policy), so ``fifo`` on a ``gavel:`` or
``pollux:`` workload *is* the peer's FIFO.  PD-ORS's synthetic jobs carry
no request, so its baseline is unchanged.  ``use_requested=False`` ignores
requests (PD-ORS's random draw for every job).

Placement (``placement``): ``"auto"`` (default) places a job with a
requested gang ``"packed"`` — on the fewest machines, as Gavel assigns a
job's workers ("in a strided fashion to minimize the number of servers
used", ``scheduler.py``) and Pollux's Tiresias consolidates — and any other
job ``"round-robin"`` (PD-ORS Sec. V); either can be forced.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from dmlsched.model.cluster import Cluster, ClusterDecision, Placement
from dmlsched.model.views import ClusterView
from dmlsched.schedulers._shared.gang import gang_size, place
from dmlsched.schedulers._shared.placement import bundle, machine_rows, take
from dmlsched.schedulers.protocols import register

__all__ = ["Fifo"]


@register
class Fifo:
    name: ClassVar[str] = "fifo"
    setting: ClassVar[str] = "cluster"

    def __init__(
        self,
        min_workers: int = 1,
        max_workers: int = 30,
        use_requested: bool = True,
        placement: str = "auto",
    ) -> None:
        self.min_workers = min_workers
        self.max_workers = max_workers
        self.use_requested = use_requested
        self.placement = placement

    def reset(self, cluster: Cluster, horizon: int, rng: np.random.Generator) -> None:
        if self.placement not in ("auto", "packed", "round-robin"):
            raise ValueError(
                f"placement must be auto | packed | round-robin, not {self.placement!r}"
            )
        self.cluster_ = cluster
        self.horizon_ = horizon
        self.rng_ = rng
        self.size_: dict[int, tuple[int, int]] = {}
        self.running_: dict[int, Placement] = {}
        self.free_ = np.array(cluster.capacity, dtype=float)
        self.pointer_ = 0
        self.classes_ = machine_rows(cluster.capacity)

    def decide(self, view: ClusterView) -> ClusterDecision:
        for job in view.arrivals:  # drawn at arrival so the stream is order-stable
            if self.use_requested:
                self.size_[job.id] = gang_size(job, self.rng_, self.min_workers, self.max_workers)
            else:
                w = int(self.rng_.integers(self.min_workers, self.max_workers + 1))
                self.size_[job.id] = bundle(job, w)
        for j in [j for j in self.running_ if j in view.finished]:
            take(self.free_, view.jobs[j], self.running_.pop(j), sign=-1.0)
        reject: list[int] = []
        for j in view.pending:  # arrival order; stop at the first that does not fit
            job = view.jobs[j]
            w, s = self.size_[j]
            how = self.placement
            if how == "auto":
                how = "packed" if job.requested_workers and self.use_requested else "round-robin"
            placed = place(self.free_, job, w, s, how, self.pointer_, self.classes_) if w else None
            if placed is None:
                if self.running_:
                    break
                reject.append(j)
                continue
            p, self.pointer_ = placed
            take(self.free_, job, p)
            self.running_[j] = p
        # nothing changes until a job arrives or completes: the head that did not fit
        # still does not, and running jobs keep their placements (event-driven time)
        return ClusterDecision(
            allocations=dict(self.running_), reject=tuple(reject), until=self.horizon_
        )
