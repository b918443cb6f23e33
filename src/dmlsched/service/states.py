"""The states a job of the live service goes through (``JobState.state``).

``queued`` (submitted, not yet revealed to the scheduler) → ``pending`` (revealed,
waiting for admission) → ``admitted`` (no placement this slot) ⇄ ``running`` →
``completed``; or ``rejected`` by the scheduler, or ``cancelled`` by its owner or an
admin.  A :class:`~enum.StrEnum` whose member names are its values: each member is
the very string the API, the log and snapshots have always carried (it equals it,
hashes as it and serializes as it, by value or by name), so nothing written changes.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["FINISHED", "LIVE", "JobStatus"]


class JobStatus(StrEnum):
    queued = "queued"
    pending = "pending"
    running = "running"
    admitted = "admitted"
    completed = "completed"
    rejected = "rejected"
    cancelled = "cancelled"


#: states a job never leaves
FINISHED = frozenset((JobStatus.completed, JobStatus.rejected, JobStatus.cancelled))
#: states of a job the scheduler sees (revealed and not finished)
LIVE = frozenset((JobStatus.pending, JobStatus.running, JobStatus.admitted))
