"""What a ``cluster`` scheduler returns for one slot (validated by the engine)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["ClusterDecision", "Placement"]


@dataclass(frozen=True)
class Placement:
    """One job's workers w_ih[t] and PSs s_ih[t] on the machines it uses.

    Parallel tuples; a machine appears at most once.
    """

    machines: tuple[int, ...]
    workers: tuple[int, ...]
    ps: tuple[int, ...]

    @property
    def total_workers(self) -> int:
        return sum(self.workers)

    @property
    def total_ps(self) -> int:
        return sum(self.ps)

    @classmethod
    def from_counts(cls, workers: Mapping[int, int], ps: Mapping[int, int]) -> Placement:
        """Merge per-machine dicts into sorted parallel tuples (zeros dropped)."""
        machines = sorted({m for m, v in workers.items() if v} | {m for m, v in ps.items() if v})
        return cls(
            tuple(machines),
            tuple(int(workers.get(m, 0)) for m in machines),
            tuple(int(ps.get(m, 0)) for m in machines),
        )


_EMPTY: Mapping[int, Placement] = MappingProxyType({})


@dataclass(frozen=True)
class ClusterDecision:
    """A slot's decision.

    * ``admit`` / ``reject``: ids of *pending* jobs (arrived, not yet decided).
      A rejected job can never run; allocating to a pending job admits it.
      Jobs may stay pending (queued) as long as the scheduler likes.
    * ``allocations``: job id → placement for this slot only.
    """

    allocations: Mapping[int, Placement] = field(default_factory=lambda: _EMPTY)
    admit: tuple[int, ...] = ()
    reject: tuple[int, ...] = ()
