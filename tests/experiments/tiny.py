"""A tiny cluster experiment for tests of the runner and the reports: FIFO and DRF on a
few synthetic jobs, seconds a sweep."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

from dmlsched.experiments.catalogue import Experiment
from dmlsched.rng import make_rng, spawn
from dmlsched.workloads.synthetic import synthetic_cluster


def build(point: object, seed: int, quick: bool, machines: int = 4):
    """``point`` synthetic jobs on ``machines`` machines, 6 slots (the workload of ``seed``)."""
    wl_rng, _ = spawn(make_rng(seed), 2)
    return synthetic_cluster(int(point), machines, 6, wl_rng)  # type: ignore[call-overload]


TINY = Experiment(
    id="test-tiny",
    setting="cluster",
    title="t",
    param="jobs",
    points=(3,),
    quick_points=(3,),
    schedulers=("fifo", "drf"),
    metrics=("total_utility",),
    build=partial(build, machines=4),
)


def tiny(exp_id: str, **changes: Any) -> Experiment:
    """:data:`TINY` under another id, with ``changes`` to its fields."""
    return replace(TINY, id=exp_id, **changes)
