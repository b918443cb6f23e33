"""Pure priority logic of least-attained-service and shortest-remaining-time policies.

Shared by the ``cluster`` setting's ``tiresias`` and ``srtf``; written so the
edge-cloud Tiresias-L / SRTF (``_shared/priority.py``) can be unified with it
later — every function is pure, takes plain numbers and returns a number or
a sort key, and knows nothing about a setting's jobs or views.

Tiresias' *discretized two-dimensional LAS* (Gu et al., NSDI'19, Sec. 3.2):
a job's priority is its attained service in GPU-time (workers × time run,
the "2D" of space and time); service is discretized into K queues by
thresholds Q_1 < … < Q_{K−1}; a job starts in the highest-priority queue 0
and is demoted to queue k once its service reaches Q_k; within a queue jobs
run FIFO by the time they entered it; jobs may skip ahead of a head that does
not fit.  Starvation avoidance (Sec. 3.2): a job waiting in a lower queue for
at least ``STARVELIMIT`` × its last executed time is promoted back to queue 0
(its executed time restarts).  The Pollux artifact's Tiresias uses two
queues, Q_1 = 16 GPU-hours, and no promotion (factor 0), which are our
defaults.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Sequence

__all__ = [
    "las_key",
    "las_queue",
    "srtf_key",
    "starved",
    "threshold_slots",
]


def threshold_slots(gpu_hours: Sequence[float], slot_seconds: float) -> tuple[float, ...]:
    """Queue thresholds from GPU-hours to worker·slots (slots of ``slot_seconds``)."""
    out = tuple(float(h) * 3600.0 / float(slot_seconds) for h in gpu_hours)
    if any(b <= a for a, b in itertools.pairwise(out)) or any(t <= 0 for t in out):
        raise ValueError(f"thresholds must be positive and increasing: {tuple(gpu_hours)}")
    return out


def las_queue(attained: float, thresholds: Sequence[float]) -> int:
    """Queue index of a job with ``attained`` service: #thresholds ≤ attained."""
    return bisect_right(list(thresholds), attained)


def las_key(queue: int, entered: int, job: int) -> tuple[int, int, int]:
    """Sort key: lower queue first, then FIFO by the moment it entered the queue."""
    return (queue, entered, job)


def srtf_key(remaining_time: float, arrival: int, job: int) -> tuple[float, int, int]:
    """Sort key: least remaining time first, ties by arrival then id."""
    return (remaining_time, arrival, job)


def starved(waited: float, executed: float, factor: float) -> bool:
    """Tiresias' promotion test: waited ≥ factor × executed (off when factor ≤ 0)."""
    return factor > 0 and executed > 0 and waited >= factor * executed
