"""Tiresias-L (Gu et al., NSDI 2019; Sec. V baseline [13]).

Discretized two-dimensional Least-Attained-Service: a job's attained
service is the sum over slots of the workers it trained on (#GPUs × time,
Tiresias Sec. 3.2); K = len(thresholds) + 1 priority queues split by
``thresholds`` (worker-slots); a lower queue is served first; FIFO by arrival
within a queue; a job that has waited (while suspended) at least
``promote_knob`` × its executed time is promoted to the highest queue until
it runs again (Tiresias's starvation guard).  All-or-nothing gang
allocation and the edge/cloud mechanics: :mod:`._joblevel`.

Placement: Tiresias consolidates placement-sensitive jobs; we pack a gang on
the fewest servers (servers with the most available qualified workers
first, idle workers first inside a server).

Option ``cloud_overflow``: the two readings of where a job goes without an
edge gang (:mod:`._joblevel`).

Assumed defaults (Tiresias tunes them per cluster): thresholds (1000, 4000)
worker-slots — about the attained service of a small and a median job of
Sec. V — and promote_knob 8.
"""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

from dmlsched.model.edge_cloud import EdgeJob
from dmlsched.model.views import EdgeCloudView
from dmlsched.schedulers._shared.priority import las_order, starving
from dmlsched.schedulers.edge_cloud._joblevel import JobLevelGang
from dmlsched.schedulers.protocols import register

__all__ = ["TiresiasL"]


@register
class TiresiasL(JobLevelGang):
    name: ClassVar[str] = "tiresias-l"

    def __init__(
        self,
        thresholds: tuple[float, ...] = (1000.0, 4000.0),
        promote_knob: float | None = 8.0,
        cloud_overflow: bool = True,
    ) -> None:
        self.thresholds = tuple(thresholds)
        self.promote_knob = promote_knob
        self.cloud_overflow = cloud_overflow

    def on_reset(self) -> None:
        self.attained_: dict[int, float] = {}
        self.executed_: dict[int, int] = {}
        self.waited_: dict[int, int] = {}
        self.promoted_: set[int] = set()

    def observe(self, view: EdgeCloudView) -> None:
        for job in view.arrivals:
            self.attained_[job.id] = 0.0
            self.executed_[job.id] = 0
            self.waited_[job.id] = 0
        if view.slot == 0:
            return
        for j in self.edge_:
            if j in view.finished:
                continue
            ran = view.last_run.get(j)
            if ran:
                self.attained_[j] += len(ran)
                self.executed_[j] += 1
                self.waited_[j] = 0
                self.promoted_.discard(j)
            else:
                self.waited_[j] += 1
                if starving(self.waited_[j], self.executed_[j], self.promote_knob):
                    self.promoted_.add(j)

    def order(self, view: EdgeCloudView, ids: list[int]) -> list[int]:
        att = {j: self.attained_.get(j, 0.0) for j in ids}
        return las_order(ids, att, self.arrival_, self.thresholds, self.promoted_)

    def choose_workers(self, job: EdgeJob, avail: list[int], gang: int) -> list[int]:
        srv = self.system_.worker_server
        per_server = Counter(int(srv[g]) for g in avail)
        ranked = sorted(
            avail, key=lambda g: (-per_server[int(srv[g])], int(srv[g]), self.hosted_[g] > 0, g)
        )
        return ranked[:gang]
