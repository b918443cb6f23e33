"""SRTF: preemptive shortest-remaining-time-first with gang allocation.

The peer simulators' SRTF baseline (Tiresias' and Gavel's simulators): every
slot, jobs are ranked by predicted remaining time and whole gangs are
selected and placed as in Tiresias
(:func:`~dmlsched.schedulers._shared.gang.gang_allocate`: preemptive,
skip-ahead, no migration of a job that keeps running, consolidated placement).

* Gang: the requested workers (``ClusterJob.requested_workers``) + ⌈W/γ⌉ PSs;
  without a request, FIFO's W uniform in [1, 30] from the run's generator.
* Remaining time = remaining work (``view.remaining``; the full E·K before a
  job first runs) ÷ the gang's predicted rate, Eq. (1) with the internal
  bandwidth when the consolidated gang fits one machine, else external (the
  scheduler does not see the engine's speed model, e.g. a measured one).
* Ties by arrival then id (:func:`~dmlsched.schedulers._shared.priority.srtf_key`).
* A job whose gang cannot be placed on the empty cluster (consolidated, and
  with ``placement``) is rejected on arrival
  (:class:`~dmlsched.schedulers._shared.gang.GangPolicy`).
* Event-driven time: once a slot places no new job, the decision holds until
  the next arrival or completion.  Between those, a waiting job's remaining
  time is constant and a running job's only falls, so running jobs only move
  up past waiting ones: the greedy selection of
  :func:`~dmlsched.schedulers._shared.gang.gang_allocate` keeps the same set
  (every job selected before still fits, as a subset of a set that fit; every
  job skipped before has at least the same jobs ahead of it), and running
  jobs keep their placements.  Only the order among running jobs may drift
  (their rates differ), so SRTF lists running jobs in the order they started
  (``keep_order``) — the same allocations, in the same order, every slot.
"""

from __future__ import annotations

from typing import ClassVar

from dmlsched.model.cluster import ClusterJob
from dmlsched.model.speed.pdors import sync_rate, worker_rate
from dmlsched.model.views import ClusterView
from dmlsched.schedulers._shared.gang import GangPolicy, place
from dmlsched.schedulers._shared.priority import srtf_key
from dmlsched.schedulers.protocols import register

__all__ = ["Srtf"]


@register
class Srtf(GangPolicy):
    name: ClassVar[str] = "srtf"
    keep_order: ClassVar[bool] = True

    def _reset(self) -> None:
        self.rate_: dict[int, float] = {}

    def _admit(self, job: ClusterJob, w: int, s: int) -> bool:
        got = place(self.cluster_.capacity, job, w, s, "packed", 0)
        if got is None:
            return False
        internal = len(got[0].machines) == 1
        rate = (
            sync_rate(job, w, s, internal) if job.mode == "sync" else w * worker_rate(job, internal)
        )
        self.rate_[job.id] = max(rate, 1e-300)
        return True

    def _order(self, candidates: list[int], view: ClusterView) -> list[int]:
        def key(j: int) -> tuple[float, float, int]:
            job = view.jobs[j]
            left = view.remaining.get(j, job.total_work)
            return srtf_key(left / self.rate_[j], job.arrival, j)

        return sorted(candidates, key=key)

    def _until(self, view: ClusterView) -> int | None:
        """Hold until the next arrival or completion (module docstring)."""
        return self.horizon_
