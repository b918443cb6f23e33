"""Priority rules shared by preemptive schedulers, as pure functions.

* :func:`srtf_order` — Shortest Remaining Time First (Schrage & Miller 1966).
* :func:`las_queue` / :func:`las_order` — Tiresias's discretized two-dimensional
  Least-Attained-Service (Gu et al., NSDI 2019, Sec. 3.2): a job's attained
  service is #workers × time it has run (2D); K queues split by thresholds;
  lower queue index = higher priority; FIFO (by arrival) inside a queue; a job
  that has waited longer than ``knob`` × its executed time is promoted to the
  highest queue (Tiresias's PROMOTEKNOB starvation guard, :func:`starving`).
* :func:`haprf_key` — A_online's Highest Average Processing Rate First
  (Wang et al., Sec. IV-C): γ_jd = n_jsw / (E_j D_j B_j), ties FIFO.

Nothing here knows a setting: inputs are plain ids and numbers, so the
``cluster`` setting reuses them.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Mapping, Sequence

from dmlsched.errors import InvalidInput

__all__ = [
    "haprf_key",
    "las_key",
    "las_order",
    "las_queue",
    "srtf_key",
    "srtf_order",
    "starving",
    "threshold_slots",
]


def threshold_slots(gpu_hours: Sequence[float], slot_seconds: float) -> tuple[float, ...]:
    """LAS queue thresholds from GPU-hours to worker·slots (slots of ``slot_seconds``)."""
    out = tuple(float(h) * 3600.0 / float(slot_seconds) for h in gpu_hours)
    if any(b <= a for a, b in itertools.pairwise(out)) or any(t <= 0 for t in out):
        raise InvalidInput("thresholds_gpu_hours", tuple(gpu_hours), "> 0 and increasing")
    return out


def srtf_key(remaining_time: float, arrival: float, job: int) -> tuple[float, float, int]:
    """SRTF sort key: least remaining time first, ties by arrival then id."""
    return (remaining_time, arrival, job)


def las_key(queue: int, entered: float, job: int) -> tuple[int, float, int]:
    """2D-LAS sort key: lower queue first, then FIFO by when the job entered it."""
    return (queue, entered, job)


def srtf_order(
    ids: Sequence[int], remaining: Mapping[int, float], arrival: Mapping[int, float]
) -> list[int]:
    """Ids by remaining time, then arrival, then id (ascending = higher priority)."""
    return sorted(ids, key=lambda j: srtf_key(remaining[j], arrival[j], j))


def las_queue(attained: float, thresholds: Sequence[float]) -> int:
    """Queue index of a job with 2D attained service ``attained`` (0 = highest).

    ``thresholds`` ascending: queue k holds attained ∈ [θ_{k-1}, θ_k).
    """
    return bisect.bisect_right(_increasing(thresholds), attained)


def _increasing(thresholds: Sequence[float]) -> list[float]:
    if any(b <= a for a, b in itertools.pairwise(thresholds)):
        raise ValueError(f"thresholds must increase, got {list(thresholds)}")
    return list(thresholds)


def starving(waited: float, executed: float, knob: float | None) -> bool:
    """Tiresias promotion: waited ≥ knob × executed (off with knob None or ≤ 0)."""
    if knob is None or knob <= 0 or executed <= 0:
        return False
    return waited >= knob * executed


def las_order(
    ids: Sequence[int],
    attained: Mapping[int, float],
    arrival: Mapping[int, float],
    thresholds: Sequence[float],
    promoted: frozenset[int] | set[int] = frozenset(),
) -> list[int]:
    """Ids by (queue, arrival, id); ``promoted`` jobs sit in queue 0 (queues: :func:`las_queue`)."""
    bounds = _increasing(thresholds)

    def key(j: int) -> tuple[int, float, int]:
        queue = 0 if j in promoted else bisect.bisect_right(bounds, attained[j])
        return las_key(queue, arrival[j], j)

    return sorted(ids, key=key)


def haprf_key(rate: float, work: float, seq: int) -> tuple[float, int]:
    """Sort key (ascending) for HAPRF: highest γ = rate / work first, then FIFO.

    ``work`` is E_j D_j B_j (all mini-batches of the job), ``rate`` n_jsw.
    """
    if not (work > 0 and rate > 0 and math.isfinite(rate)):
        raise ValueError(f"rate and work must be > 0, got {rate!r}, {work!r}")
    return (-rate / work, seq)
