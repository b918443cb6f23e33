"""FIFO (PD-ORS Sec. V baseline 1; Hadoop/Spark's default; the peers' FIFO).

Jobs run in arrival order.  Each job gets a *fixed* number of workers when it
arrives: the gang its owner asked for (``ClusterJob.requested_workers`` — a
Pollux row's ``num_replicas``, a Gavel line's scale factor), else, as PD-ORS
Sec. V's baseline, a count drawn uniformly from [1, 30] with the run's
generator (capped by F, Eq. (4)); PSs by its ratio γ (⌈W/γ⌉).  The head of
the queue waits until it fits (head-of-line blocking: no job overtakes it);
once placed a job keeps the same placement until it completes.  Nothing is
rejected, except a job that cannot be placed even on an empty cluster
(it would block the queue forever): it is rejected when it reaches the head
with nothing running.  Jobs still queued at T count as unadmitted.

Why honouring the request is the default rather than a separate scheduler:
a peer job list fixes each job's GPUs, and the peers' FIFO gives exactly
those (Gavel's ``policies/fifo.py`` at commit c4fa400 allocates each job its
``scale_factor`` workers in arrival order, stops at the first job that does
not fit, and never preempts — this policy), so ``fifo`` on a ``gavel:`` or
``pollux:`` workload *is* the peer's FIFO.  PD-ORS's synthetic jobs carry
no request, so its baseline is unchanged.  ``use_requested=False`` ignores
requests (PD-ORS's random draw for every job).

Placement (``placement``): ``"auto"`` (default) places a job with a
requested gang ``"packed"`` — on the fewest machines, as Gavel assigns a
job's workers ("in a strided fashion to minimize the number of servers
used", ``scheduler.py``) and Pollux's Tiresias consolidates — and any other
job ``"round-robin"`` (PD-ORS Sec. V); either can be forced.

On a large cluster (more than ``placement.SMALL_MACHINES`` machines) a run of
round-robin sync gangs at the head of the queue is placed by one compiled call
(``placement_kernels.round_robin_run``) and finished jobs are released by one
(``take_segments``): the same placements, pointer and free capacity, bit for
bit, as placing and releasing them one by one.  There the decision's
allocations are one :class:`~dmlsched.model.cluster.PlacementTable` gathered
from the placements' arrays (no tuple per job or machine, for FIFO or the
engine); elsewhere a dict of :class:`~dmlsched.model.cluster.Placement` s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar, cast

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import Cluster, ClusterDecision, ClusterJob, Placement
from dmlsched.model.reasons import Reason
from dmlsched.model.views import ClusterView
from dmlsched.schedulers._shared import placement
from dmlsched.schedulers._shared.batch import JobArrays
from dmlsched.schedulers._shared.gang import gang_sizes, place
from dmlsched.schedulers._shared.placement import EPS, kernels, machine_rows, take, use_of
from dmlsched.schedulers._shared.reasons import shortfall, too_large
from dmlsched.schedulers.protocols import register

__all__ = ["Fifo"]

_FIRST_RUN = 32  # gangs handed to the first compiled call of a queue pass (then doubling)


@register
class Fifo:
    name: ClassVar[str] = "fifo"
    setting: ClassVar[str] = "cluster"

    def __init__(
        self,
        min_workers: int = 1,
        max_workers: int = 30,
        use_requested: bool = True,
        placement: str = "auto",
    ) -> None:
        self.min_workers = min_workers
        self.max_workers = max_workers
        self.use_requested = use_requested
        self.placement = placement

    def reset(self, cluster: Cluster, horizon: int, rng: np.random.Generator) -> None:
        if self.placement not in ("auto", "packed", "round-robin"):
            raise InvalidInput("placement", self.placement, "auto | packed | round-robin")
        self.cluster_ = cluster
        self.horizon_ = horizon
        self.rng_ = rng
        self.size_: dict[int, tuple[int, int]] = {}
        # job -> its placement (None: held only as arrays, placed by the compiled pass)
        self.running_: dict[int, Placement | None] = {}
        self.free_ = np.array(cluster.capacity, dtype=float)
        self.pointer_ = 0
        big = self.free_.shape[0] > placement.SMALL_MACHINES
        # (the machine classes only save the compiled kernels work)
        self.classes_ = machine_rows(cluster.capacity) if big else None
        self.arrays_ = JobArrays(self.free_.shape[1]) if big else None
        self.batchable_: dict[int, bool] = {}  # job -> _batchable (with arrays_)
        self.use_: dict[int, np.ndarray | None] = {}  # job -> use_of its placement (no arrays_)
        self.finished_ = 0  # len(view.finished) at the previous decision

    def _how(self, job: ClusterJob) -> str:
        if self.placement != "auto":
            return self.placement
        return "packed" if job.requested_workers and self.use_requested else "round-robin"

    def _batchable(self, job: ClusterJob, workers: int) -> bool:
        """Whether the compiled queue pass places ``job`` (round-robin sync, workers > 0)."""
        return workers > 0 and job.mode == "sync" and self._how(job) == "round-robin"

    def _release(self, done: list[int], view: ClusterView) -> None:
        """Give finished jobs' placements back to ``free_``, in ``done``'s order."""
        arrays = self.arrays_
        if arrays is None:
            for j in done:
                p = self.running_.pop(j)
                assert p is not None  # without arrays_ every running job holds a Placement
                # what take subtracted, added back (x − (−u) is x + u, bit for bit)
                use = self.use_.pop(j)
                if use is not None:
                    self.free_[p.machines,] += use
            return
        running = self.running_
        for j in done:
            del running[j]
        # every running job's placement is held in the pool (hold or segment)
        rows, start, length = arrays.release(done)
        kernels().take_segments(
            self.free_, arrays.pool_m, arrays.pool_w, arrays.pool_s, start, length,
            arrays.wd, arrays.pd, rows, -1.0,
        )  # fmt: skip

    def _run(self, view: ClusterView, pending: tuple[int, ...], i: int) -> tuple[int, bool]:
        """Place the run of batchable gangs from ``pending[i]`` in compiled calls; returns
        (how many were placed, whether the pass stopped at one that does not fit)."""
        arrays = self.arrays_
        assert arrays is not None
        batchable, placed, chunk = self.batchable_, 0, _FIRST_RUN
        while True:
            k = i + placed
            ids = pending[k : k + chunk]
            flags = list(map(batchable.__getitem__, ids))
            if not all(flags):  # the run stops at the first job placed one by one
                ids = ids[: flags.index(False)]
            if not ids:
                return placed, False
            rows = arrays.rows(ids)
            done, m, w, s, offsets, h = kernels().round_robin_run(
                self.free_, arrays.wd, arrays.pd, rows, arrays.gang[rows, 0],
                arrays.gang[rows, 1], self.pointer_, EPS,
            )  # fmt: skip
            if done:
                got = ids[:done]
                arrays.hold_run(got, rows[:done], m, w, s, offsets[: done + 1])
                self.running_.update(dict.fromkeys(got))
                self.pointer_ = int(h)
            placed += done
            if done < len(ids):
                return placed, True
            chunk *= 2

    def decide(self, view: ClusterView) -> ClusterDecision:
        arrivals = view.arrivals  # sized at arrival so the stream is order-stable
        sizes = gang_sizes(
            arrivals, self.rng_, self.min_workers, self.max_workers, self.use_requested
        )
        for job, size in zip(arrivals, sizes, strict=True):
            self.size_[job.id] = size
            if self.arrays_ is not None:
                self.arrays_.add(job, size)  # its gang: what the compiled pass places
                self.batchable_[job.id] = self._batchable(job, size[0])
        # completions only add to view.finished: none new, no running job finished
        if len(view.finished) != self.finished_:
            self.finished_ = len(view.finished)
            # (active jobs are unfinished: a set lookup spares most Finished lookups)
            active = set(view.active)
            done = [j for j in self.running_ if j not in active and j in view.finished]
            if done:
                self._release(done, view)
        reject: list[int] = []
        self.head_: int | None = None  # the job at the head that did not fit (explain)
        pending = view.pending
        i = 0
        while i < len(pending):  # arrival order; stop at the first that does not fit
            j = pending[i]
            job = view.jobs[j]
            w, s = self.size_[j]
            if self.arrays_ is not None and self._batchable(job, w):
                k, stuck = self._run(view, pending, i)
                i += k
                if not stuck:
                    continue
                j = pending[i]
                placed = None
            elif w:
                placed = place(self.free_, job, w, s, self._how(job), self.pointer_, self.classes_)
            else:
                placed = None
            if placed is None:
                if self.running_:
                    self.head_ = j
                    break
                reject.append(j)
                i += 1
                continue
            p, self.pointer_ = placed
            if self.arrays_ is None:  # (kept to be given back as it was taken)
                use = self.use_[j] = use_of(job, p) if p.machines else None
                if use is not None:
                    self.free_[p.machines,] -= use
            else:
                take(self.free_, job, p)
            self.running_[j] = p
            if self.arrays_ is not None:
                self.arrays_.segment(j, p)  # held as arrays too, for the table
            i += 1
        # nothing changes until a job arrives or completes: the head that did not fit
        # still does not, and running jobs keep their placements (event-driven time)
        if self.arrays_ is None:  # every job holds a Placement
            allocations: Mapping[int, Placement] = dict(cast("dict[int, Placement]", self.running_))
        else:
            allocations = self.arrays_.table(list(self.running_))
        return ClusterDecision(
            allocations=allocations,
            reject=tuple(reject),
            until=self.horizon_,
        )

    def explain(self, view: ClusterView, jobs: Sequence[int]) -> dict[int, Reason]:
        """The head of the queue waits for capacity (which, how much); the jobs behind it
        wait in arrival order; a rejected job's gang fits no empty cluster."""
        out: dict[int, Reason] = {}
        # one reason for the whole queue (no job id: the text stays while the queue moves)
        queued = Reason(
            "queued", "queued behind earlier arrivals: FIFO lets no job overtake the head"
        )
        for j in jobs:
            if j in self.running_:
                continue
            if self.head_ is not None and j != self.head_:
                out[j] = queued
                continue
            job = view.jobs[j]
            w, s = self.size_[j]
            if j == self.head_:
                out[j] = shortfall(job, w, s, self.free_, one_machine=self._how(job) == "packed")
            else:
                out[j] = too_large(job, w, s, self.cluster_.capacity)
        return out
