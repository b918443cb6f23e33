"""Registers the built-in workloads of every setting (imported by the registry)."""

from __future__ import annotations

from importlib import import_module

import numpy as np

from dmlsched.model.cluster import ClusterWorkload
from dmlsched.workloads.registry import WorkloadParams, register_workload
from dmlsched.workloads.synthetic import DEFAULT_MIX, synthetic_cluster


@register_workload("cluster", "synthetic")
def _cluster_synthetic(p: WorkloadParams, rng: np.random.Generator) -> ClusterWorkload:
    return synthetic_cluster(
        p.jobs or 50,
        p.machines or 30,
        p.slots or 20,
        rng,
        mix=p.extra.get("mix", DEFAULT_MIX),
        mode=p.extra.get("mode", "sync"),
    )


# Settings and trace loaders register their own workloads in these modules.
for _mod in ("interval", "edge_cloud", "geo", "traces", "peers"):
    try:
        import_module(f"dmlsched.workloads.{_mod}")
    except ModuleNotFoundError as e:
        if e.name != f"dmlsched.workloads.{_mod}":
            raise
