"""BatchSche (Zhang et al., MobiHoc 2020, [11]; Sec. V baseline).

[11] is non-preemptive: an online framework groups the unprocessed jobs
into a batch iteratively, and a batch algorithm configures each job of the
batch at least resource cost under resource prices that grow with
utilization (the compact-exponential pricing of [28]).  In this setting:

* **Batches.**  Every ``interval`` slots (from slot 0) all arrived,
  undispatched jobs form a batch; a job arriving between boundaries waits
  for the next one.  Decision: fixed-length batches — the geometric
  (doubling) intervals of the classic batching framework would make a job
  arriving late in a multi-day trace wait for days.
* **Order inside a batch.**  Smallest total work E_jD_jB_j first (the
  weighted-completion-time order of [11] with equal weights).
* **Configurations.**  Edge: D_j idle qualified edge workers (one chunk each,
  like the cloud; non-preemptive, so only workers holding no unfinished
  chunk), cheapest servers first; cost Σ_chunks price_s · ⌈E_jB_j/n_j⌉ with
  the ζ = 0 rate.  Cloud: cost ``cloud_price`` · D_j · ⌈E_jB_j/n_j⌉ with ζ = 1.
  The cheaper one wins.
* **Prices.**  price_s = L·(U/L)^{u_s} per worker-slot, u_s the busy share
  of server s's workers, L, U = ``edge_price`` (defaults 0.5 and 4 × the
  cloud's unit price 1): an idle edge is cheaper than the cloud, a busy one
  far dearer — "due to the low resource price of the cloud with unlimited
  capacities, BatchSche schedules jobs to the cloud with a very high
  probability" (Sec. V-C).
* Chunks train without preemption from data arrival to completion; PS by
  A_ps (:mod:`._ps`).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from dmlsched.model.edge_cloud import EdgeCloud, EdgeCloudDecision
from dmlsched.model.speed.aonline import chunk_slots
from dmlsched.model.views import EdgeCloudView
from dmlsched.schedulers.edge_cloud._ps import assign_ps, cloud_runs, ps_pools
from dmlsched.schedulers.protocols import register

__all__ = ["BatchSche"]


@register
class BatchSche:
    name: ClassVar[str] = "batchsche"
    setting: ClassVar[str] = "edge-cloud"

    def __init__(
        self,
        interval: int = 4,
        edge_price: tuple[float, float] = (0.5, 4.0),
        cloud_price: float = 1.0,
    ) -> None:
        self.interval = interval
        self.edge_price = edge_price
        self.cloud_price = cloud_price

    def reset(self, system: EdgeCloud, horizon: int, rng: np.random.Generator) -> None:
        if self.interval < 1:
            from dmlsched.errors import InvalidInput

            raise InvalidInput("interval", self.interval, ">= 1 slot", "batchsche")
        self.system_ = system
        self.rng_ = rng
        self.pools_ = ps_pools(system)
        self.by_type_: dict[int, list[int]] = {}
        for g, k in enumerate(system.worker_kind):
            self.by_type_.setdefault(int(k), []).append(g)
        sizes = np.array([len(r) for r in system.worker_types], dtype=float)
        self.size_ = np.maximum(sizes, 1.0)
        self.hosted_ = np.zeros(system.edge_workers, dtype=np.int64)
        self.edge_: dict[int, np.ndarray] = {}
        self.cloud_: dict[int, int] = {}
        self.ready_: dict[int, np.ndarray] = {}
        self.ps_type_: dict[int, int] = {}
        self.zeta_: dict[int, int] = {}

    def _prices(self) -> np.ndarray:
        lo, hi = self.edge_price
        busy = np.bincount(
            self.system_.worker_server[self.hosted_ > 0], minlength=self.system_.servers
        )
        return lo * (hi / lo) ** (busy / self.size_)

    def decide(self, view: EdgeCloudView) -> EdgeCloudDecision:
        t = view.slot
        system = self.system_
        S = system.servers
        sp = system.speedup
        for j in [j for j in self.edge_ if j in view.finished]:
            self.hosted_[self.edge_.pop(j)] = 0
            del self.ready_[j]
        for j in [j for j in self.cloud_ if j in view.finished]:
            del self.cloud_[j]
        for job in view.arrivals:
            self.ps_type_[job.id] = job.ps_type
        dispatch: dict[int, tuple[tuple[int, int], ...]] = {}
        if t % self.interval == 0 and view.pending:
            used = list(view.storage_used)
            batch = sorted(
                view.pending,
                key=lambda j: (
                    view.jobs[j].work_per_chunk * view.jobs[j].chunks,
                    view.jobs[j].arrival,
                    j,
                ),
            )
            for j in batch:
                job = view.jobs[j]
                D = job.chunks
                price = self._prices()
                cloud_cost = self.cloud_price * D * chunk_slots(job, 1, sp)
                idle = [g for g in self.by_type_.get(job.worker_type, ()) if self.hosted_[g] == 0]
                chosen: list[int] = []
                if len(idle) >= D:
                    srv = system.worker_server
                    idle.sort(key=lambda g: (price[int(srv[g])], g))
                    room = {s: system.storage_of(s) - used[s] for s in range(S)}
                    for g in idle:
                        s = int(srv[g])
                        if room[s] >= job.chunk_gb - 1e-12:
                            room[s] -= job.chunk_gb
                            chosen.append(g)
                            if len(chosen) == D:
                                break
                edge_cost = (
                    (
                        float(sum(price[int(system.worker_server[g])] for g in chosen))
                        * chunk_slots(job, 0, sp)
                    )
                    if len(chosen) == D
                    else np.inf
                )
                if edge_cost < cloud_cost:
                    arr = np.asarray(chosen, dtype=np.int64)
                    self.edge_[j] = arr
                    self.hosted_[arr] = 1
                    srv = system.worker_server[arr]
                    self.ready_[j] = t + np.asarray(job.delay)[srv]
                    for s in srv:
                        used[int(s)] += job.chunk_gb
                    dispatch[j] = tuple(
                        (int(s), int(g - system.worker_offset[s]))
                        for s, g in zip(srv, arr, strict=True)
                    )
                    self.zeta_[j] = 0
                else:
                    self.cloud_[j] = t + job.delay[S]
                    dispatch[j] = tuple((S, 0) for _ in range(D))
                    self.zeta_[j] = 1
        run: dict[int, tuple[int, ...]] = {}
        for j, ready in self.ready_.items():
            rem = view.remaining.get(j)
            ok = ready <= t if rem is None else (ready <= t) & (rem > 0)
            left = np.flatnonzero(ok)
            if len(left):
                run[j] = tuple(int(d) for d in left)
        run.update(cloud_runs(self.cloud_, view))
        ps = assign_ps(system, self.pools_, run, self.ps_type_, self.zeta_, view.last_ps, self.rng_)
        return EdgeCloudDecision(dispatch=dispatch, run=run, ps=ps)
