"""``local`` baseline (mlBroker Sec. 6.3 ii): train every dataset where it is collected.

Each job runs ⌈D_i^r(t)/P_i⌉ workers in every DC r holding data, q^{rr} =
D_i^r(t) (so C_1 = 0), and its PS in a DC drawn uniformly at random.
Assumption: the PS site is drawn once, when the job first appears, and kept
(re-drawing it every slot would add deployment cost the policy never asks for).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from dmlsched.model.geo import GeoDecision, GeoSites
from dmlsched.schedulers._shared.geo_placement import local_placement
from dmlsched.schedulers.protocols import register

if TYPE_CHECKING:
    from dmlsched.model.views import GeoView

__all__ = ["Local"]


@register
class Local:
    name: ClassVar[str] = "local"
    setting: ClassVar[str] = "geo"

    def reset(self, sites: GeoSites, horizon: int, rng: np.random.Generator) -> None:
        self.sites_ = sites
        self.rng_ = rng
        self.ps_: dict[int, int] = {}

    def decide(self, view: GeoView) -> GeoDecision:
        out = {}
        for j in view.active:
            if j not in self.ps_:
                self.ps_[j] = int(self.rng_.integers(self.sites_.dcs))
            out[j] = local_placement(np.asarray(view.data[j]), view.jobs[j].capacity, self.ps_[j])
        return GeoDecision(out)
