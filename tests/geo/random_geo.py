"""A seeded random ``geo`` decision maker: valid placements, or ones that break one rule."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dmlsched.model.geo import GeoDecision, GeoPlacement, GeoSites


class RandomGeo:
    """Valid unless a slot draws one of ``KINDS`` (with ``p_bad``); :meth:`valid` is a valid
    decision for the same view."""

    name: ClassVar[str] = "random-geo"
    setting: ClassVar[str] = "geo"
    KINDS = (
        "negative-q",
        "unmoved",
        "over-capacity",
        "ps-site",
        "fractional",
        "missing-job",
        "ghost-job",
        "shape",
        "few-workers",
        "near-capacity",
    )

    def __init__(self, seed: int, p_bad: float = 0.0) -> None:
        self.seed = seed
        self.p_bad = p_bad

    def reset(self, sites: GeoSites, horizon: int, rng: np.random.Generator) -> None:
        self.r = np.random.default_rng(self.seed)
        self.R = sites.dcs

    def decide(self, view: Any) -> GeoDecision:
        kind = (
            self.KINDS[self.r.integers(len(self.KINDS))] if self.r.random() < self.p_bad else None
        )
        return self.make(view, kind)

    def valid(self, view: Any) -> GeoDecision:
        return self.make(view, None)

    def make(self, view: Any, kind: str | None) -> GeoDecision:
        r, R = self.r, self.R
        out: dict[int, Any] = {}
        for j in view.active:
            D = np.asarray(view.data[j], dtype=float)
            P = view.jobs[j].capacity
            q = np.zeros((R, R))
            q[np.arange(R), r.integers(R, size=R)] = D
            inflow = q.sum(axis=0)
            y = [math.ceil(x / P - 1e-9) if x > 0 else 0 for x in inflow]
            y = [w + int(r.integers(0, 2)) for w in y]
            if sum(y) == 0 and D.sum() > 0:
                y[int(np.argmax(inflow))] = 1
            out[j] = GeoPlacement(tuple(y), int(r.integers(R)), q)
        if kind is not None and view.active:
            self._break(view, kind, out)
        return GeoDecision(out)

    def _break(self, view: Any, kind: str, out: dict[int, Any]) -> None:
        r, R = self.r, self.R
        j = view.active[int(r.integers(len(view.active)))]
        p = out[j]
        q = np.array(p.transfers)
        y = list(p.workers)
        if kind == "negative-q":
            q[0, 0] -= 1.0
            q[0, R - 1] += 1.0
        elif kind == "unmoved":
            q *= 0.5
        elif kind == "over-capacity":  # one worker short where most data goes
            inflow = q.sum(axis=0)
            k = int(np.argmax(inflow))
            y[k] = max(0, math.ceil(inflow[k] / view.jobs[j].capacity - 1e-9) - 1)
        elif kind == "near-capacity":  # fill the tightest DC to within (8a)'s tolerance
            P, D = view.jobs[j].capacity, np.asarray(view.data[j])
            inflow = q.sum(axis=0)
            k = int(np.argmax(inflow))
            y[k] = math.ceil(inflow[k] / P - 1e-9)
            rel = (-0.5e-6, 0.5e-6, 2e-6, 1e-3)[int(r.integers(4))]
            eps = P * y[k] - inflow[k] + rel * max(1.0, float(D.sum()))
            src = [(a, b) for a in range(R) for b in range(R) if b != k and q[a, b] >= eps]
            if src and eps > 0:
                a, b = src[0]
                q[a, b] -= eps
                q[a, k] += eps
        elif kind == "few-workers":
            y = [0] * R
        elif kind == "ps-site":
            out[j] = GeoPlacement(tuple(y), R, q)
            return
        elif kind == "fractional":
            out[j] = GeoPlacement((*y[:-1], 0.5), p.ps, q)  # type: ignore[arg-type]
            return
        elif kind == "missing-job":
            del out[j]
            return
        elif kind == "ghost-job":
            out[10_000] = p
            return
        elif kind == "shape":
            q = np.zeros((R, R + 1))
        out[j] = GeoPlacement(tuple(y), p.ps, q)
