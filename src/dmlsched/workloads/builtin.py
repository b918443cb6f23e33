"""Registers the built-in workloads of every setting (imported by the registry): the
cluster's synthetic one here, the others by importing their modules."""

from __future__ import annotations

import numpy as np

# each registers its own workloads on import
import dmlsched.workloads.edge_cloud
import dmlsched.workloads.geo
import dmlsched.workloads.interval
import dmlsched.workloads.peers
import dmlsched.workloads.traces  # noqa: F401
from dmlsched.model.cluster import ClusterWorkload
from dmlsched.workloads.builders import WorkloadParams, register_workload
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
