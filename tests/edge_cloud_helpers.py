"""Hand-made ``edge-cloud`` instances with easy numbers (n_j = 1 mini-batch per slot)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from dmlsched.model.edge_cloud import EdgeCloud, EdgeCloudDecision, EdgeCloudWorkload, EdgeJob


def ec_job(i: int = 0, **kw: Any) -> EdgeJob:
    """m = 1 slot per mini-batch, G = q = 0: n_j = 1 at ζ = 0 and ζ = 1, so p = E·B."""
    spec: dict[str, Any] = dict(
        id=i,
        arrival=0,
        chunks=1,
        minibatches=4,
        epochs=1,
        m=1.0,
        G=0.0,
        q_mb=0.0,
        b_mbps=100.0,
        worker_type=0,
        ps_type=0,
        delay=(1, 100),
    )
    spec.update(kw)
    return EdgeJob(**spec)


def one_worker_system(
    workers: tuple[int, ...] = (0,),
    ps: tuple[int, ...] = (0,),
    storage: tuple[float, ...] | None = None,
) -> EdgeCloud:
    return EdgeCloud((workers,), (ps,), 2, storage)


def workload(
    jobs: tuple[EdgeJob, ...], system: EdgeCloud | None = None, horizon: int = 60
) -> EdgeCloudWorkload:
    return EdgeCloudWorkload(jobs, system or one_worker_system(), horizon)


class Scripted:
    """A scheduler that replays decisions by slot (empty decision otherwise)."""

    name: ClassVar[str] = "scripted"
    setting: ClassVar[str] = "edge-cloud"

    def __init__(self, script: dict[int, EdgeCloudDecision]) -> None:
        self.script = script

    def reset(self, system: EdgeCloud, horizon: int, rng: np.random.Generator) -> None:
        pass

    def decide(self, view: Any) -> EdgeCloudDecision:
        return self.script.get(view.slot, EdgeCloudDecision())
