"""The read-only views the engines hand to schedulers, one per setting.

A view is all a scheduler may know when it decides: what the online model
has revealed so far and nothing else (no future arrivals, no future data).
Every engine builds its view from its *own* copies (:mod:`dmlsched.sim`):
mappings are ``MappingProxyType``, sequences tuples, arrays read-only and
backed by immutable buffers, and the jobs and systems in a view are copies
the engine never computes from — whatever a scheduler does to what it was
shown cannot reach the run's physics or a later run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING

import numpy as np

from dmlsched.model.cluster import SLOT_SECONDS, Cluster, ClusterJob

if TYPE_CHECKING:  # annotations only: a run imports only its own setting's model
    from dmlsched.model.edge_cloud import EdgeCloud, EdgeJob, Slot
    from dmlsched.model.geo import GeoJob, GeoSites
    from dmlsched.model.interval import IntervalJob

__all__ = ["ClusterView", "EdgeCloudView", "Finished", "GeoView", "IntervalView"]


class Finished(Set[int]):
    """The ids completed so far, as an immutable set taken in O(1).

    Completions only ever grow, so every snapshot shares one append-only
    record (``order``: id → its place in completion order) and sees the first
    ``n`` entries of it: later completions are not in an earlier snapshot.
    The record belongs to the views (the engine keeps its own), so changing
    it changes nothing but what the scheduler itself is told.
    """

    __slots__ = ("_n", "_order")

    def __init__(self, order: Mapping[int, int] | None = None, n: int | None = None) -> None:
        self._order: Mapping[int, int] = {} if order is None else order
        self._n = len(self._order) if n is None else n

    def __contains__(self, j: object) -> bool:
        i = self._order.get(j)  # type: ignore[call-overload]  # any object may be asked for; a non-int is simply absent
        return i is not None and i < self._n

    def __iter__(self) -> Iterator[int]:
        return islice(iter(self._order), self._n)

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        return f"Finished({sorted(self)})"

    __hash__ = Set._hash


@dataclass(frozen=True)
class ClusterView:
    """What a ``cluster`` scheduler may see at slot ``slot``.

    * ``arrivals`` — jobs revealed this slot (online: never earlier);
    * ``pending`` — ids arrived but neither admitted nor rejected, by arrival;
    * ``active`` — ids admitted and unfinished, by admission;
    * ``remaining`` — work left (samples or mini-batches) per active job;
    * ``jobs`` — every revealed job by id;
    * ``finished`` — ids that completed (before this slot): a set (the
      engine's is a :class:`Finished`, the testbed's and service's a frozenset);
    * ``slot_seconds`` — how long one slot is (the workload's
      :attr:`~dmlsched.model.cluster.ClusterWorkload.slot_seconds`), for
      schedulers whose parameters are in seconds or hours.
    """

    slot: int
    horizon: int
    cluster: Cluster
    arrivals: tuple[ClusterJob, ...]
    pending: tuple[int, ...]
    active: tuple[int, ...]
    remaining: Mapping[int, float]
    jobs: Mapping[int, ClusterJob]
    finished: Set[int]
    slot_seconds: float = SLOT_SECONDS

    @property
    def capacity(self) -> np.ndarray:
        return self.cluster.capacity


@dataclass(frozen=True)
class IntervalView:
    """What an ``interval`` scheduler sees: the interval's jobs and C^r."""

    jobs: tuple[IntervalJob, ...]
    capacity: np.ndarray
    resources: tuple[str, ...]


@dataclass(frozen=True)
class EdgeCloudView:
    """What an ``edge-cloud`` scheduler may see at slot ``slot``.

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


@dataclass(frozen=True)
class GeoView:
    """What a ``geo`` scheduler may see at slot ``slot``.

    * ``active`` — ids of I_t, by arrival then id;
    * ``arrivals`` — ids revealed this slot;
    * ``jobs`` — every revealed job, its ``data`` cut to the rows revealed so
      far (D_i(t_i) … D_i(t); online: neither future data nor the job's
      lifetime is shown, so ``duration`` counts revealed slots);
    * ``data`` — D_i^r(t) per active job (read-only arrays);
    * ``deployed`` — v_i^r(t−1) per active job (zeros for new jobs).
    """

    slot: int
    horizon: int
    sites: GeoSites
    active: tuple[int, ...]
    arrivals: tuple[int, ...]
    jobs: Mapping[int, GeoJob]
    data: Mapping[int, np.ndarray]
    deployed: Mapping[int, np.ndarray]
