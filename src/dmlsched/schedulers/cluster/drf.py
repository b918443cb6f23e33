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

On more than ``placement.SMALL_MACHINES`` machines, when every job is sync,
the filling runs as one compiled call
(:mod:`dmlsched.schedulers._shared.drf_kernel`): the same steps,
placements and pointer, bit for bit, returned as one
:class:`~dmlsched.model.cluster.PlacementTable` (the engine reads it without a
Python object per job); a decision of a few hundred bundles on a thousand
machines had been hundreds of small Python and NumPy calls per bundle.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from dmlsched.model.cluster import Cluster, ClusterDecision, Placement, PlacementTable
from dmlsched.model.reasons import Reason
from dmlsched.model.speed.pdors import ps_bandwidth_load
from dmlsched.model.views import ClusterView
from dmlsched.schedulers._shared import placement
from dmlsched.schedulers._shared.placement import EPS, bundle, place_round_robin, take
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
        jobs = list(view.active) + list(view.pending)
        alloc: Mapping[int, Placement]
        if self.cluster_.machines > placement.SMALL_MACHINES and all(
            view.jobs[j].mode == "sync" for j in jobs
        ):
            alloc = self._fill_compiled(view, jobs)
        else:
            alloc = self._fill(view, jobs)
        active = set(view.active)
        steady = self.pointer_ == start and all(j in active for j in alloc)
        until = self.horizon_ if steady else None  # see the module docstring
        return ClusterDecision(allocations=alloc, until=until)

    def _fill_compiled(self, view: ClusterView, jobs: list[int]) -> Mapping[int, Placement]:
        """:meth:`_fill` for sync jobs in one compiled call (``drf_kernel``): the same
        placements and pointer; the allocations as one table, jobs in the same order."""
        from dmlsched.schedulers._shared.drf_kernel import drf_fill  # numba: when used

        J = len(jobs)
        free = np.array(self.cluster_.capacity, dtype=float)
        self.free_ = free  # what progressive filling leaves (explain): filled in place
        if not J:
            return {}
        R = self.cluster_.capacity.shape[1]
        specs = [view.jobs[j] for j in jobs]
        wd = np.array([job.worker_demand for job in specs], dtype=float).reshape(J, R)
        pd = np.array([job.ps_demand for job in specs], dtype=float).reshape(J, R)
        rec_k, rec_m, rec_w, rec_s, w, _, self.pointer_ = drf_fill(
            free, wd, pd,
            np.array([job.max_workers for job in specs], dtype=np.int64),
            np.array([job.gamma for job in specs], dtype=float),
            self.total_, self.pointer_, EPS,
        )  # fmt: skip
        self.pointer_ = int(self.pointer_)
        # per job (in the decision's order) its machines ascending with summed counts
        H = self.cluster_.machines
        keys, where = np.unique(rec_k * H + rec_m, return_inverse=True)
        workers = np.bincount(where, weights=rec_w).astype(np.int64)
        ps = np.bincount(where, weights=rec_s).astype(np.int64)
        rows = keys // H
        placed = np.flatnonzero(w > 0)
        offsets = np.searchsorted(rows, np.arange(J + 1))
        keep = (
            np.concatenate([np.arange(offsets[k], offsets[k + 1]) for k in placed.tolist()])
            if placed.size
            else np.zeros(0, dtype=np.int64)
        )
        sizes = offsets[placed + 1] - offsets[placed]
        return PlacementTable(
            jobs=np.asarray(jobs, dtype=np.int64)[placed],
            offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            machines=(keys % H)[keep].astype(np.int64),
            workers=workers[keep],
            ps=ps[keep],
        )

    def _fill(self, view: ClusterView, jobs: list[int]) -> dict[int, Placement]:
        """Progressive filling one bundle at a time (module docstring)."""
        free = np.array(self.cluster_.capacity, dtype=float)
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
        self.free_ = free  # what progressive filling left (explain)
        return {j: Placement.from_counts(w_cnt[j], s_cnt[j]) for j in jobs if size[j][0] > 0}

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
