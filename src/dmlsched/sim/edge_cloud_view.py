"""The read-only view an ``edge-cloud`` scheduler gets each slot."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dmlsched.model.edge_cloud import EdgeCloud, EdgeJob, Slot

__all__ = ["EdgeCloudView"]


@dataclass(frozen=True)
class EdgeCloudView:
    """What a scheduler may see at slot ``slot`` (nothing about future arrivals).

    * ``arrivals`` — jobs revealed this slot; ``jobs`` — every revealed job;
    * ``pending`` — arrived, not yet dispatched (by arrival);
    * ``active`` — dispatched and unfinished (by dispatch);
    * ``placement`` — job → ``(server, worker)`` per chunk (fixed);
    * ``dispatched_at`` — job → slot its chunks were sent (training on server
      s may start at ``dispatched_at + Δ_js``, (2i));
    * ``remaining`` — job → read-only array of mini-batches left per chunk;
    * ``zeta`` — job → ζ_j fixed at dispatch (1 iff all chunks in the cloud);
    * ``last_run`` — job → chunks trained in the previous slot;
    * ``last_ps`` — job → its PS in the previous slot (if it ran);
    * ``storage_used`` — GB held on each edge server (Sec. VI);
    * ``finished`` — job → completion slot c_j.

    Mappings are ``MappingProxyType``, sequences tuples, arrays read-only.
    """

    slot: int
    horizon: int
    system: EdgeCloud
    arrivals: tuple[EdgeJob, ...]
    jobs: Mapping[int, EdgeJob]
    pending: tuple[int, ...]
    active: tuple[int, ...]
    placement: Mapping[int, tuple[Slot, ...]]
    dispatched_at: Mapping[int, int]
    remaining: Mapping[int, np.ndarray]
    zeta: Mapping[int, int]
    last_run: Mapping[int, tuple[int, ...]]
    last_ps: Mapping[int, Slot]
    storage_used: tuple[float, ...]
    finished: Mapping[int, int]
