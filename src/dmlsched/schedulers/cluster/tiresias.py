"""Tiresias: discretized 2D-LAS with gang allocation (Gu et al., NSDI'19).

As the Pollux artifact's simulator implements it (``simulator/tiresias.py``):

* a job's gang is fixed — the workers its owner requested
  (``ClusterJob.requested_workers``, e.g. a peer trace's ``num_replicas``),
  plus ⌈W/γ⌉ PSs (Eq. (2)); a job without a request gets FIFO's convention, W
  uniform in [1, 30] drawn from the run's generator at arrival (capped at F);
* each slot, every job's attained service (workers × slots run) sets its
  queue (:func:`~dmlsched.schedulers._shared.priority.las_queue`; default two
  queues split at 16 GPU-hours), queues are served in order, FIFO within a
  queue by the slot the job entered it
  (:func:`~dmlsched.schedulers._shared.priority.las_key`);
* whole gangs are selected and placed by
  :func:`~dmlsched.schedulers._shared.gang.gang_allocate`: preemptive,
  skip-ahead, running jobs keep their placement, new ones consolidated;
* starvation promotion (``starvation`` = STARVELIMIT) is off by default, as in
  the Pollux artifact (``_solve_starvation = 0``).

``slot_seconds`` converts the thresholds from GPU-hours into worker·slots:
pass the workload's slot length (60 for ``pollux:``/``gavel:`` replays;
default 3600, the cluster model's slot).  A job whose gang cannot be placed
even on the empty cluster is rejected when it arrives (it would wait forever).

Differences from the peer simulator (documented, not modelled): no 30-s
restart delay after a (re)allocation, and a worker is a worker — the
engine's speed model, not the scheduler, decides what a placement is worth.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from dmlsched.model.cluster import SLOT_SECONDS, Cluster
from dmlsched.model.decisions import ClusterDecision, Placement
from dmlsched.schedulers._shared.gang import fits_empty, gang_allocate, gang_need
from dmlsched.schedulers._shared.placement import bundle
from dmlsched.schedulers._shared.priority import las_key, las_queue, starving, threshold_slots
from dmlsched.schedulers.protocols import register
from dmlsched.sim.views import ClusterView

__all__ = ["Tiresias", "gang_size"]


def gang_size(job, rng: np.random.Generator, lo: int = 1, hi: int = 30) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(W, S): the requested workers, else FIFO's uniform [lo, hi] draw; S = ⌈W/γ⌉."""
    w = job.requested_workers
    if w is None:
        w = int(rng.integers(lo, hi + 1))
    return bundle(job, w)


@register
class Tiresias:
    name: ClassVar[str] = "tiresias"
    setting: ClassVar[str] = "cluster"

    def __init__(
        self,
        thresholds_gpu_hours: tuple[float, ...] = (16.0,),
        slot_seconds: float = SLOT_SECONDS,
        starvation: float = 0.0,
        placement: str = "packed",
    ) -> None:
        self.thresholds_gpu_hours = tuple(thresholds_gpu_hours)
        self.slot_seconds = slot_seconds
        self.starvation = starvation
        self.placement = placement

    def reset(self, cluster: Cluster, horizon: int, rng: np.random.Generator) -> None:
        if self.placement not in ("packed", "round-robin"):
            raise ValueError(f"placement must be packed | round-robin, not {self.placement!r}")
        self.cluster_ = cluster
        self.rng_ = rng
        self.thresholds_ = threshold_slots(self.thresholds_gpu_hours, self.slot_seconds)
        self.gang_: dict[int, tuple[int, int]] = {}
        self.need_: dict[int, tuple[float, ...]] = {}
        self.executed_: dict[int, float] = {}  # worker·slots since (re)entering queue 0
        self.waited_: dict[int, float] = {}  # slots waiting since last run
        self.queue_: dict[int, int] = {}
        self.entered_: dict[int, int] = {}
        self.counter_ = 0
        self.running_: dict[int, Placement] = {}
        self.pointer_ = 0

    def _enter(self, j: int, queue: int) -> None:
        self.queue_[j] = queue
        self.entered_[j] = self.counter_
        self.counter_ += 1

    def decide(self, view: ClusterView) -> ClusterDecision:
        cap = self.cluster_.capacity
        reject = []
        for job in view.arrivals:
            w, s = gang_size(job, self.rng_)
            if not fits_empty(cap, job, w, s, self.placement):
                reject.append(job.id)
                continue
            self.gang_[job.id] = (w, s)
            self.need_[job.id] = gang_need(job, w, s)
            self.executed_[job.id] = 0.0
            self.waited_[job.id] = 0.0
            self._enter(job.id, 0)
        for j in list(self.running_):
            if j in view.finished:
                del self.running_[j]
        candidates = [j for j in (*view.active, *view.pending) if j in self.gang_]
        for j in candidates:
            if j in self.running_:  # ran during the previous slot
                self.executed_[j] += self.gang_[j][0]
                self.waited_[j] = 0.0
            elif self.executed_[j] > 0:
                self.waited_[j] += 1.0
                if self.queue_[j] > 0 and starving(
                    self.waited_[j], self.executed_[j] / self.gang_[j][0], self.starvation
                ):
                    self.executed_[j] = 0.0
                    self.waited_[j] = 0.0
                    self._enter(j, 0)
            q = las_queue(self.executed_[j], self.thresholds_)
            if q != self.queue_[j]:
                self._enter(j, q)
        order = sorted(candidates, key=lambda j: las_key(self.queue_[j], self.entered_[j], j))
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
