"""Job-level preemptive gang scheduling in the edge-cloud setting (SRTF, Tiresias-L).

Both cited baselines are cluster schedulers that suspend or resume a *whole*
job (all-or-nothing).  Adapting them to this setting needs decisions the
A_online paper does not spell out; ours:

* **Gang size.**  A job asks for one worker per chunk (D_j workers, the
  maximum (2c) allows) — the "non-elastic job requirement" Sec. V-C blames
  for their under-utilization.
* **Dispatch.**  Every slot the scheduler walks active edge jobs and pending
  jobs in its priority order.  A pending job is dispatched to its gang of
  qualified edge workers not yet claimed this slot by a higher-priority job
  (idle ones first, then those of lower-priority jobs, which it will
  preempt), chosen by the subclass's placement rule, if there are enough
  such workers with storage room.  The placement is then fixed (no data
  migration).
* **Running.**  A dispatched edge job trains in a slot only when all of its
  data has arrived and none of its workers that still hold an unfinished
  chunk is claimed by a higher-priority job (all-or-nothing); each of those
  workers then trains its lowest-numbered unfinished chunk.  Otherwise the
  job is suspended.  Cloud jobs run without preemption.
* **PS.**  A_ps (Alg. 5), shared with A_online.

**Two readings of "edge or cloud"** (the paper does not say; option
``cloud_overflow``, see ``docs/aonline-claims.md``):

* ``True`` (default): an edge-cloud-agnostic scheduler that finds no gang of
  D_j workers on the edge sees the cloud as the only place with room and
  dispatches the whole job there (ζ_j = 1).
* ``False`` (edge-only, as Sec. V-C's text suggests — "in their category",
  Fig. 8's trends, Fig. 11's "non-elastic" under-utilization): the cloud is
  never used.  A job with more chunks than there are qualified edge workers
  of its type could never get D_j of them, so its gang is min(D_j, that
  count) workers, chunk d on the (d mod gang)-th; a job waits (pending)
  until its gang is free.  A job whose worker type has no edge worker at all
  never runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.edge_cloud import EdgeCloud, EdgeCloudDecision, EdgeJob
from dmlsched.model.speed.aonline import chunk_slots, processing_capacity
from dmlsched.model.views import EdgeCloudView
from dmlsched.schedulers.edge_cloud._ps import assign_ps, cloud_runs, ps_pools

__all__ = ["JobLevelGang"]


@dataclass(frozen=True)
class _Unfinished:
    """A dispatched edge job's unfinished chunks, derived from one ``view.remaining`` array."""

    rem: np.ndarray  # the view's read-only array they were derived from
    workers: np.ndarray  # the worker of each unfinished chunk
    worker_set: frozenset[int]  # … as a set
    run: tuple[int, ...]  # the lowest-numbered unfinished chunk on each of those workers
    most: float  # the most mini-batches left on one of its workers


class JobLevelGang:
    """Shared machinery; subclasses define ``order`` and ``choose_workers``.

    Subclasses store ``cloud_overflow`` (module docstring) in their constructor.
    """

    setting: ClassVar[str] = "edge-cloud"
    cloud_overflow: bool = True

    def reset(self, system: EdgeCloud, horizon: int, rng: np.random.Generator) -> None:
        if not isinstance(self.cloud_overflow, bool):
            raise InvalidInput("cloud_overflow", self.cloud_overflow, "true | false", self.name)
        self.system_ = system
        self.rng_ = rng
        self.pools_ = ps_pools(system)
        by_type: dict[int, list[int]] = {}
        for g, k in enumerate(system.worker_kind):
            by_type.setdefault(int(k), []).append(g)
        self.type_workers_ = {k: np.asarray(v, dtype=np.int64) for k, v in by_type.items()}
        # every edge server's capacity (inf without a storage limit), for the room test (7b)
        self.storage_ = np.array([system.storage_of(s) for s in range(system.servers)], dtype=float)
        self.pending_slots_: dict[int, float] = {}  # job -> remaining_slots before it is dispatched
        self.unfinished_: dict[int, _Unfinished] = {}
        self.hosted_ = np.zeros(system.edge_workers, dtype=np.int64)  # unfinished chunks held
        self.edge_: dict[int, np.ndarray] = {}  # job -> worker gid per chunk
        self.ready_: dict[int, int] = {}  # job -> slot all its data is on its workers
        self.cloud_: dict[int, int] = {}  # job -> ready slot
        self.ps_type_: dict[int, int] = {}
        self.zeta_: dict[int, int] = {}
        self.arrival_: dict[int, int] = {}
        self.on_reset()

    def on_reset(self) -> None:
        """Subclass state."""

    def observe(self, view: EdgeCloudView) -> None:
        """Subclass hook, called first in every slot."""

    def order(self, view: EdgeCloudView, ids: list[int]) -> list[int]:
        raise NotImplementedError

    def choose_workers(self, job: EdgeJob, avail: list[int], gang: int) -> list[int]:
        """``gang`` of the available qualified workers ``avail`` (≥ ``gang`` of them)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers
    def gang(self, job: EdgeJob) -> int:
        """Workers the job asks for: D_j, or (edge-only) at most the qualified edge workers."""
        if self.cloud_overflow:
            return job.chunks
        return min(job.chunks, len(self.type_workers_.get(job.worker_type, ())))

    def remaining_slots(self, view: EdgeCloudView, j: int) -> float:
        """Slots of training left for the gang (its workers in parallel)."""
        job = view.jobs[j]
        sp = self.system_.speedup
        if j in view.remaining:
            rate = processing_capacity(job, view.zeta[j], sp)
            rem = view.remaining[j]
            if j not in self.edge_:
                return float(rem.max()) / rate
            return self._unfinished(j, rem).most / rate
        if j not in self.pending_slots_:
            g = max(self.gang(job), 1)
            self.pending_slots_[j] = float(math.ceil(job.chunks / g) * chunk_slots(job, 0, sp))
        return self.pending_slots_[j]

    def _release(self, view: EdgeCloudView) -> None:
        for j in [j for j in self.edge_ if j in view.finished]:
            np.subtract.at(self.hosted_, self.edge_.pop(j), 1)
            self.ready_.pop(j)
            self.unfinished_.pop(j, None)
        for j in [j for j in self.cloud_ if j in view.finished]:
            del self.cloud_[j]

    # ------------------------------------------------------------------ per slot
    def decide(self, view: EdgeCloudView) -> EdgeCloudDecision:
        t = view.slot
        system = self.system_
        S = system.servers
        self._release(view)
        for job in view.arrivals:
            self.ps_type_[job.id] = job.ps_type
            self.arrival_[job.id] = job.arrival
        self.observe(view)
        claimed = np.zeros(system.edge_workers, dtype=bool)
        taken: set[int] = set()  # the same workers, for set tests
        used = np.array(view.storage_used, dtype=float)
        # ``_available``'s answer by (worker type, chunk size) while claimed and used stand
        avail_of: dict[tuple[int, float], list[int]] = {}
        dispatch: dict[int, tuple[tuple[int, int], ...]] = {}
        run: dict[int, tuple[int, ...]] = {}
        ids = [j for j in view.active if j in self.edge_] + list(view.pending)
        for j in self.order(view, ids):
            job = view.jobs[j]
            if j in self.edge_:
                if self.ready_[j] <= t:
                    u = self._unfinished(j, view.remaining[j])
                    if taken.isdisjoint(u.worker_set):
                        claimed[u.workers] = True
                        taken.update(u.worker_set)
                        avail_of.clear()
                        run[j] = u.run
                continue
            gang = self.gang(job)
            key = (job.worker_type, job.chunk_gb)
            avail = avail_of.get(key)
            if avail is None:
                avail = avail_of[key] = self._available(job, claimed, used)
            chosen = self.choose_workers(job, avail, gang) if gang and len(avail) >= gang else []
            # chunk d on the (d mod gang)-th worker (gang = D_j: one chunk each)
            chosen = [chosen[d % len(chosen)] for d in range(job.chunks)] if chosen else []
            chosen = self._fit_storage(job, chosen, used)
            if not chosen and not self.cloud_overflow:
                continue  # edge-only: wait for the gang
            self.pending_slots_.pop(j, None)
            if chosen:
                avail_of.clear()
                arr = np.asarray(chosen, dtype=np.int64)
                self.edge_[j] = arr
                np.add.at(self.hosted_, arr, 1)
                srv = system.worker_server[arr]
                self.ready_[j] = t + int(max(job.delay[int(s)] for s in set(srv.tolist())))
                places = tuple(
                    (int(s), int(g - system.worker_offset[s]))
                    for s, g in zip(srv, arr, strict=True)
                )
                for s in srv:
                    used[int(s)] += job.chunk_gb
                self.zeta_[j] = 0
                if self.ready_[j] <= t:
                    claimed[arr] = True
                    taken.update(chosen)
                    _, first = np.unique(arr, return_index=True)
                    run[j] = tuple(sorted(int(d) for d in first))
            else:
                places = tuple((S, 0) for _ in range(job.chunks))
                self.cloud_[j] = t + job.delay[S]
                self.zeta_[j] = 1
            dispatch[j] = places
        run.update(cloud_runs(self.cloud_, view))
        ps = assign_ps(system, self.pools_, run, self.ps_type_, self.zeta_, view.last_ps, self.rng_)
        return EdgeCloudDecision(dispatch=dispatch, run=run, ps=ps)

    def _unfinished(self, j: int, rem: np.ndarray) -> _Unfinished:
        """Job ``j``'s unfinished chunks, derived again only when its remaining work changed
        (the engine shows a new read-only array then)."""
        u = self.unfinished_.get(j)
        if u is None or u.rem is not rem:
            left = np.flatnonzero(rem > 0)
            if u is not None and len(left) == len(u.workers):
                # chunks only ever finish: as many unfinished ones are the same ones
                workers, ws, run = u.workers, u.worker_set, u.run
            else:
                workers = self.edge_[j][left]
                ws = frozenset(workers.tolist())
                # one chunk per worker: the lowest-numbered unfinished one
                _, first = np.unique(workers, return_index=True)
                run = tuple(sorted(left[first].tolist()))
            # each worker's chunks summed in chunk order (rem ≥ 0: unused workers add 0)
            most = float(np.bincount(self.edge_[j], weights=np.asarray(rem, dtype=float)).max())
            u = self.unfinished_[j] = _Unfinished(rem, workers, ws, run, most)
        return u

    def _available(self, job: EdgeJob, claimed: np.ndarray, used: np.ndarray) -> list[int]:
        """Qualified edge workers not claimed this slot whose server has room for a chunk (7b)."""
        workers = self.type_workers_.get(job.worker_type)
        if workers is None:
            return []
        srv = self.system_.worker_server[workers]
        room = self.storage_[srv] - used[srv] >= job.chunk_gb - 1e-12
        return workers[~claimed[workers] & room].tolist()

    def _fit_storage(self, job: EdgeJob, chosen: list[int], used: np.ndarray) -> list[int]:
        """Drop the choice (one worker per chunk) if one server's chunks exceed its room (7b)."""
        if not chosen or job.chunk_gb == 0:
            return chosen
        need: dict[int, float] = {}
        for g in chosen:
            s = int(self.system_.worker_server[g])
            need[s] = need.get(s, 0.0) + job.chunk_gb
        ok = all(self.system_.storage_of(s) - used[s] >= v - 1e-12 for s, v in need.items())
        return chosen if ok else []
