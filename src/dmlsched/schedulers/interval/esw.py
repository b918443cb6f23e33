"""ESW — equal server–worker allocation (SMD Sec. V baseline (1), [38]).

Workers:PSs = 1:1 (the PaddlePaddle-on-Kubernetes default): each admitted
job gets w = p = k with k the largest integer such that Eq. (3),
(O^r + G^r) k ≤ v^r, holds — as much of the user's limit as the ratio
allows.  Admission: first fit in submission order
(:func:`dmlsched.schedulers._shared.interval.first_fit`).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from dmlsched.model.interval import IntervalDecision, IntervalJob
from dmlsched.model.views import IntervalView
from dmlsched.schedulers._shared.interval import first_fit
from dmlsched.schedulers.protocols import register

__all__ = ["Esw", "equal_bundle"]


def equal_bundle(job: IntervalJob) -> int:
    """Largest k with (O^r + G^r) k ≤ v^r for all r (≥ 1 by job validation)."""
    per = np.asarray(job.worker_demand) + np.asarray(job.ps_demand)
    v = np.asarray(job.limit)
    return max(1, min(math.floor(v[r] / per[r] + 1e-9) for r in range(v.size) if per[r] > 0))


@register
class Esw:
    name: ClassVar[str] = "esw"
    setting: ClassVar[str] = "interval"

    def reset(
        self, capacity: np.ndarray, resources: tuple[str, ...], rng: np.random.Generator
    ) -> None:
        self.capacity_ = np.array(capacity, dtype=float)

    def decide(self, view: IntervalView) -> IntervalDecision:
        by_id = {j.id: j for j in view.jobs}
        alloc = {}
        for jid in first_fit(view.jobs, view.capacity):
            k = equal_bundle(by_id[jid])
            alloc[jid] = (k, k)
        return IntervalDecision(allocations=alloc)
