"""``oasis-geo`` baseline (mlBroker Sec. 6.3 i, after OASiS, Bao et al. 2018).

OASiS prices resources and lets each arriving job take the placement that
minimizes its payment at the current unit prices.  In the geo setting there
is no capacity to price, so the unit prices are the providers' volume-discount
unit prices at the current aggregate usage: a_k^r while h_k^r < l_k^r, b_k^r
once the threshold is reached (h includes the jobs already placed this slot;
jobs are handled in arrival order, every slot).

Each job chooses among 2R schemes — all workers and the PS in one DC r
("central at r", data moved there), or workers where the data are with the
PS at r ("local, PS at r") — the one with the lowest payment: transfer +
unit price × demand + deployment on new DCs + worker–PS traffic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from dmlsched.model.geo import GeoDecision, GeoSites
from dmlsched.schedulers._shared.geo_placement import (
    central_placement,
    cheapest_per_job,
    local_placement,
)
from dmlsched.schedulers.protocols import register

if TYPE_CHECKING:
    from dmlsched.model.views import GeoView

__all__ = ["OasisGeo"]


@register
class OasisGeo:
    name: ClassVar[str] = "oasis-geo"
    setting: ClassVar[str] = "geo"

    def reset(self, sites: GeoSites, horizon: int, rng: np.random.Generator) -> None:
        self.sites_ = sites

    def decide(self, view: GeoView) -> GeoDecision:
        return cheapest_per_job(
            view,
            self.sites_,
            lambda D, P, r: (central_placement(D, P, r), local_placement(D, P, r)),
            linear_prices=True,
        )
