"""The checker's tiny workloads: one per setting and seed, short and still eventful."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dmlsched.model.cluster import ClusterWorkload
from dmlsched.model.edge_cloud import EdgeCloudWorkload
from dmlsched.rng import make_rng, spawn
from dmlsched.workloads.registry import WorkloadParams, build_workload

__all__ = ["run_rng", "tiny"]


def tiny(setting: str, seed: int = 3) -> Any:
    """The contract's tiny workload of each setting, cut so that runs are short and
    still eventful: cluster jobs train 1/40 of their epochs (some finish within the
    8 slots, some do not); edge-cloud jobs 1 epoch of ≤ 3 mini-batches (tens of
    slots instead of thousands)."""
    wl_rng, _ = spawn(make_rng(seed), 2)
    if setting == "cluster":
        wl = build_workload(
            setting, "synthetic", WorkloadParams(jobs=6, machines=3, slots=8), wl_rng
        )
        jobs = tuple(dataclasses.replace(j, epochs=max(1, j.epochs // 40)) for j in wl.jobs)
        return ClusterWorkload(jobs, wl.cluster, wl.horizon, wl.source, wl.notes)
    wl = build_workload(setting, "synthetic", WorkloadParams(jobs=4, machines=3, slots=6), wl_rng)
    if setting == "edge-cloud":
        jobs = tuple(
            dataclasses.replace(j, epochs=1, minibatches=min(j.minibatches, 3)) for j in wl.jobs
        )
        wl = EdgeCloudWorkload(jobs, wl.system, wl.horizon, wl.source, wl.notes)
    return wl


def run_rng(seed: int = 3) -> np.random.Generator:
    """The scheduler's generator of a run with ``seed`` (the runner's second child stream)."""
    return spawn(make_rng(seed), 2)[1]
