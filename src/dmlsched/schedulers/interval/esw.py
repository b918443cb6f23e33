"""ESW — equal server–worker allocation (SMD Sec. V baseline (1), [38]).

Workers:PSs = 1:1 (the PaddlePaddle-on-Kubernetes default): each admitted
job gets w = p = k with k the largest integer such that Eq. (3),
(O^r + G^r) k ≤ v^r, holds — as much of the user's limit as the ratio
allows.  Admission, option ``admission`` (the paper leaves it open,
:mod:`dmlsched.schedulers._shared.interval`): ``"first-fit"`` (default,
submission order) or ``"knapsack"`` (SMD's MKP (16) over ESW's utilities).
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from dmlsched.model.interval import IntervalJob
from dmlsched.schedulers._shared.interval import AdmittingBaseline
from dmlsched.schedulers.protocols import register

__all__ = ["Esw", "equal_bundle"]


def equal_bundle(job: IntervalJob) -> int:
    """Largest k with (O^r + G^r) k ≤ v^r for all r (≥ 1 by job validation)."""
    per = np.asarray(job.worker_demand) + np.asarray(job.ps_demand)
    v = np.asarray(job.limit)
    return max(1, min(math.floor(v[r] / per[r] + 1e-9) for r in range(v.size) if per[r] > 0))


@register
class Esw(AdmittingBaseline):
    name: ClassVar[str] = "esw"

    def allocation(self, job: IntervalJob) -> tuple[int, int]:
        k = equal_bundle(job)
        return k, k
