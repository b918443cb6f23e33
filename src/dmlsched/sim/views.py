"""Read-only views the engine hands to schedulers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dmlsched.model.cluster import Cluster, ClusterJob

__all__ = ["ClusterView"]


@dataclass(frozen=True)
class ClusterView:
    """What a ``cluster`` scheduler may see at slot ``slot``.

    * ``arrivals`` — jobs revealed this slot (online: never earlier);
    * ``pending`` — ids arrived but neither admitted nor rejected, by arrival;
    * ``active`` — ids admitted and unfinished, by admission;
    * ``remaining`` — work left (samples or mini-batches) per active job;
    * ``jobs`` — every revealed job by id;
    * ``finished`` — ids that completed (before this slot).

    Mappings are ``MappingProxyType`` and sequences tuples: nothing to mutate.
    """

    slot: int
    horizon: int
    cluster: Cluster
    arrivals: tuple[ClusterJob, ...]
    pending: tuple[int, ...]
    active: tuple[int, ...]
    remaining: Mapping[int, float]
    jobs: Mapping[int, ClusterJob]
    finished: frozenset[int]

    @property
    def capacity(self) -> np.ndarray:
        return self.cluster.capacity
