"""``central`` baseline (mlBroker Sec. 6.3 iii): one DC per job, all data moved there.

Each job's PS and ⌈Σ_r D_i^r(t)/P_i⌉ workers go to the single DC with the
lowest cost for that job: data transfer (Eq. (1)) + the exact increase of
the volume-discount bill (Eq. (2)) given the jobs already placed this slot
+ deployment if the job was not there in t−1 (Eq. (5)); no worker–PS
traffic crosses DCs (C_4 = 0).  Jobs are placed one after another in
arrival order, re-deciding every slot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from dmlsched.model.geo import GeoDecision, GeoSites
from dmlsched.schedulers._shared.geo_placement import central_placement, cheapest_per_job
from dmlsched.schedulers.protocols import register

if TYPE_CHECKING:
    from dmlsched.model.views import GeoView

__all__ = ["Central"]


@register
class Central:
    name: ClassVar[str] = "central"
    setting: ClassVar[str] = "geo"

    def reset(self, sites: GeoSites, horizon: int, rng: np.random.Generator) -> None:
        self.sites_ = sites

    def decide(self, view: GeoView) -> GeoDecision:
        return cheapest_per_job(
            view, self.sites_, lambda D, P, r: (central_placement(D, P, r),), linear_prices=False
        )
