"""DRF: dominant resource fairness by progressive filling (PD-ORS Sec. V baseline 2).

Every arrived job is admitted (YARN/Mesos style) and, each slot, the
cluster is re-divided from scratch among the active jobs: repeatedly give
one more worker — plus a PS whenever ⌈W/γ⌉ grows, so the job keeps its ratio
γ — to the job with the smallest *dominant share* max_r(used_r / C^r), placed
round-robin, until no job can grow (at its worker limit, Eq. (4), or nothing
fits).  Ties go to the earlier arrival.

Assumption: re-dividing every slot moves workers for free (the engine
charges no migration), as in the paper's comparison.

Event-driven time: a decision is a function of the jobs (active, then
pending, in the view's order), the cluster and the round-robin pointer,
which carries over from slot to slot.  When the pointer ends where it
started and no pending job got workers (so the lists stay the same), the
next slot's decision is this one again, so it holds until the next arrival
or completion; otherwise the pointer has moved and the next slot places
differently, so nothing is promised (holding would change DRF).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from dmlsched.model.cluster import Cluster, ClusterDecision, Placement
from dmlsched.model.reasons import Reason
from dmlsched.model.speed.pdors import ps_bandwidth_load
from dmlsched.model.views import ClusterView
from dmlsched.schedulers._shared.placement import bundle, place_round_robin, take
from dmlsched.schedulers._shared.reasons import shortfall
from dmlsched.schedulers.protocols import register

__all__ = ["Drf"]


@register
class Drf:
    name: ClassVar[str] = "drf"
    setting: ClassVar[str] = "cluster"

    def reset(self, cluster: Cluster, horizon: int, rng: np.random.Generator) -> None:
        self.cluster_ = cluster
        self.total_ = np.where(cluster.capacity.sum(axis=0) > 0, cluster.capacity.sum(axis=0), 1.0)
        self.pointer_ = 0
        self.horizon_ = horizon

    def decide(self, view: ClusterView) -> ClusterDecision:
        start = self.pointer_
        free = np.array(self.cluster_.capacity, dtype=float)
        jobs = list(view.active) + list(view.pending)
        w_cnt: dict[int, dict[int, int]] = {j: {} for j in jobs}
        s_cnt: dict[int, dict[int, int]] = {j: {} for j in jobs}
        size = dict.fromkeys(jobs, (0, 0))
        heap = [(0.0, k, j) for k, j in enumerate(jobs)]
        heapq.heapify(heap)
        while heap:
            _, k, j = heapq.heappop(heap)
            job = view.jobs[j]
            w0, s0 = size[j]
            w1, s1 = bundle(job, w0 + 1)
            if w1 <= w0:
                continue  # at its limit
            placed = place_round_robin(free, job, w1 - w0, s1 - s0, self.pointer_)
            if placed is None:
                continue  # cannot grow any more this slot
            p, pointer = placed
            w_new, s_new = dict(w_cnt[j]), dict(s_cnt[j])
            for m, w, s in zip(p.machines, p.workers, p.ps, strict=True):
                w_new[m] = w_new.get(m, 0) + w
                s_new[m] = s_new.get(m, 0) + s
            if job.mode == "async":  # the grown placement must keep (3.4)
                full = Placement.from_counts(w_new, s_new)
                load, cap = ps_bandwidth_load(job, full.machines, full.workers, full.ps)
                if load > cap * (1 + 1e-9):
                    continue
            self.pointer_ = pointer
            take(free, job, p)
            w_cnt[j], s_cnt[j] = w_new, s_new
            size[j] = (w1, s1)
            used = w1 * np.asarray(job.worker_demand) + s1 * np.asarray(job.ps_demand)
            heapq.heappush(heap, (float(np.max(used / self.total_)), k, j))
        alloc = {j: Placement.from_counts(w_cnt[j], s_cnt[j]) for j in jobs if size[j][0] > 0}
        self.free_ = free  # what progressive filling left (explain)
        active = set(view.active)
        steady = self.pointer_ == start and all(j in active for j in alloc)
        until = self.horizon_ if steady else None  # see the module docstring
        return ClusterDecision(allocations=alloc, until=until)

    def explain(self, view: ClusterView, jobs: Sequence[int]) -> dict[int, Reason]:
        """A job with no worker this slot: progressive filling left no room for one more
        of its bundles (1 worker, and a PS when ⌈W/γ⌉ grows)."""
        out: dict[int, Reason] = {}
        active = set(view.active)
        for j in jobs:
            job = view.jobs[j]
            why = shortfall(job, *bundle(job, 1), self.free_)
            code = "preempted" if j in active else "fair-share"
            out[j] = Reason(code, f"nothing left after the dominant-share division: {why.text}")
        return out
