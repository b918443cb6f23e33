"""SRTF (Schrage & Miller 1966; Sec. V baseline [16]) with job-level preemption.

Jobs are served in non-decreasing order of remaining training time (slots
the gang still needs, :meth:`JobLevelGang.remaining_slots`; a pending job's
is ⌈E_jB_j/n_j⌉ at the edge rate), ties by arrival.  Gang mechanics, edge /
cloud choice and PS assignment: :mod:`._joblevel`.  Placement: among
available qualified edge workers, idle ones first, then lowest transfer
delay Δ_js (data locality), then server and worker index.  Option
``cloud_overflow``: the two readings of where a job goes without an edge
gang (:mod:`._joblevel`).
"""

from __future__ import annotations

from typing import ClassVar

from dmlsched.model.edge_cloud import EdgeJob
from dmlsched.model.views import EdgeCloudView
from dmlsched.schedulers._shared.priority import srtf_order
from dmlsched.schedulers.edge_cloud._joblevel import JobLevelGang
from dmlsched.schedulers.protocols import register

__all__ = ["Srtf"]


@register
class Srtf(JobLevelGang):
    name: ClassVar[str] = "srtf"

    def __init__(self, cloud_overflow: bool = True) -> None:
        self.cloud_overflow = cloud_overflow

    def order(self, view: EdgeCloudView, ids: list[int]) -> list[int]:
        rem = {j: self.remaining_slots(view, j) for j in ids}
        return srtf_order(ids, rem, self.arrival_)

    def choose_workers(self, job: EdgeJob, avail: list[int], gang: int) -> list[int]:
        srv = self.system_.worker_server
        ranked = sorted(avail, key=lambda g: (self.hosted_[g] > 0, job.delay[int(srv[g])], g))
        return ranked[:gang]
