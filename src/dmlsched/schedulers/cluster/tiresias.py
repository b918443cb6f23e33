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

The thresholds are converted from GPU-hours into worker·slots with the slot
length the view carries (``view.slot_seconds``: the workload's, 60 s for
``pollux:``/``gavel:`` replays, 3600 s for the papers' workloads), so the
scheduler is never told the slot length separately.  A job whose gang cannot
be placed even on the empty cluster is rejected when it arrives (it would
wait forever).

Differences from the peer simulator (documented, not modelled): no 30-s
restart delay after a (re)allocation, and a worker is a worker — the
engine's speed model, not the scheduler, decides what a placement is worth.
"""

from __future__ import annotations

import bisect
import math
from typing import ClassVar

from dmlsched.model.cluster import ClusterJob
from dmlsched.model.views import ClusterView
from dmlsched.schedulers._shared.gang import GangPolicy
from dmlsched.schedulers._shared.priority import las_key, starving, threshold_slots
from dmlsched.schedulers.protocols import register

__all__ = ["Tiresias"]


@register
class Tiresias(GangPolicy):
    name: ClassVar[str] = "tiresias"

    def __init__(
        self,
        thresholds_gpu_hours: tuple[float, ...] = (16.0,),
        starvation: float = 0.0,
        placement: str = "packed",
    ) -> None:
        super().__init__(placement)
        self.thresholds_gpu_hours = tuple(thresholds_gpu_hours)
        self.starvation = starvation

    def _reset(self) -> None:
        self.thresholds_: tuple[float, ...] | None = None  # from the first view's slot length
        self.executed_: dict[int, float] = {}  # worker·slots since (re)entering queue 0
        self.waited_: dict[int, float] = {}  # slots waiting since last run
        self.queue_: dict[int, int] = {}
        self.entered_: dict[int, int] = {}
        self.counter_ = 0
        self.last_slot_: int | None = None  # the slot of the previous decision

    def _enter(self, j: int, queue: int) -> None:
        self.queue_[j] = queue
        self.entered_[j] = self.counter_
        self.counter_ += 1

    def _admit(self, job: ClusterJob, w: int, s: int) -> bool:
        self.executed_[job.id] = 0.0
        self.waited_[job.id] = 0.0
        self._enter(job.id, 0)
        return True

    def _order(self, candidates: list[int], view: ClusterView) -> list[int]:
        if self.thresholds_ is None:
            self.thresholds_ = threshold_slots(self.thresholds_gpu_hours, view.slot_seconds)
        # slots since the previous decision: more than 1 after event-driven time held
        # it (then nothing was promoted in between: see _until)
        k = 1 if self.last_slot_ is None else view.slot - self.last_slot_
        self.last_slot_ = view.slot
        executed, waited, queue, gang = self.executed_, self.waited_, self.queue_, self.gang_
        thresholds = list(self.thresholds_)
        for j in candidates:
            if j in self.running_:  # ran during the previous k slots
                e, w = executed[j], gang[j][0]
                for _ in range(k):  # one slot at a time: the same floats as slot by slot
                    e += w
                executed[j] = e
                waited[j] = 0.0
            elif executed[j] > 0:
                for _ in range(k):
                    waited[j] += 1.0
                if queue[j] > 0 and starving(waited[j], executed[j] / gang[j][0], self.starvation):
                    executed[j] = 0.0
                    waited[j] = 0.0
                    self._enter(j, 0)
            # las_queue, less its check of the thresholds (threshold_slots made them increase)
            q = bisect.bisect_right(thresholds, executed[j])
            if q != queue[j]:
                self._enter(j, q)
        entered = self.entered_
        return sorted(candidates, key=lambda j: las_key(queue[j], entered[j], j))

    def _until(self, view: ClusterView) -> int | None:
        """The first slot at which a running job's attained service crosses its
        queue's threshold (its queue, so the order, changes then); with the
        starvation guard on, no promise (a waiting job may be promoted)."""
        if self.starvation > 0 or self.thresholds_ is None:
            return None
        until = self.horizon_
        for j in self.running_:
            q = self.queue_[j]
            if q >= len(self.thresholds_):
                continue  # the last queue: never demoted
            w, e, theta = self.gang_[j][0], self.executed_[j], self.thresholds_[q]
            n = max(1, math.ceil((theta - e) / w))  # slots until e + n·w ≥ θ, as _order adds
            while n > 1 and e + (n - 1) * w >= theta:
                n -= 1
            while e + n * w < theta:
                n += 1
            until = min(until, view.slot + n)
        return until
