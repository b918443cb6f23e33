"""Gang allocation for priority schedulers (``tiresias``, ``srtf`` in ``cluster``).

As the peer simulators do it (the Pollux artifact's Tiresias): each slot,

1. *select* in priority order every job whose whole gang (W workers + S PSs)
   still fits the cluster's aggregate remaining capacity — a job that does not
   fit is skipped, lower-priority jobs may still run (no head-of-line
   blocking); preemption is implicit: a running job not selected stops;
2. *place*: a selected job that ran in the previous slot keeps its placement
   (no migration); the others are placed, in priority order, in the capacity
   left — consolidated (:func:`place_packed`, default) or round-robin; one
   that cannot be placed (fragmentation) waits this slot.

On a large cluster (more than ``placement.SMALL_MACHINES`` machines) with
consolidated placement and only sync jobs, :class:`GangPolicy` runs both steps
as one compiled call per decision (``placement_kernels.gang_pass``, the same
operations in the same order as :func:`gang_allocate`), and checks arriving
gangs against the empty cluster in one (``packed_fits_many``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import Cluster, ClusterDecision, ClusterJob, Placement
from dmlsched.model.reasons import Reason
from dmlsched.model.views import ClusterView
from dmlsched.schedulers._shared import placement
from dmlsched.schedulers._shared.batch import JobArrays
from dmlsched.schedulers._shared.placement import (
    BIG,
    EPS,
    bundle,
    kernels,
    machine_rows,
    packed_fits,
    place_packed,
    place_round_robin,
    take,
)
from dmlsched.schedulers._shared.reasons import shortfall, too_large

__all__ = ["GangPolicy", "fits_empty", "gang_allocate", "gang_need", "gang_sizes", "place"]


def place(
    free: np.ndarray,
    job: ClusterJob,
    w: int,
    s: int,
    how: str,
    pointer: int,
    classes: tuple[np.ndarray, np.ndarray] | None = None,
    below: bool = False,
) -> tuple[Placement, int] | None:
    """One gang on ``free``: ("packed" | "round-robin"); returns (placement, pointer).

    ``classes`` (:func:`machine_rows` of the cluster) only saves work for "packed";
    ``below``: ``free`` is the capacity less placements (see :func:`place_packed`)."""
    if how == "packed":
        p = place_packed(free, job, w, s, classes, below)
        return None if p is None else (p, pointer)
    return place_round_robin(free, job, w, s, pointer)


def fits_empty(
    capacity: np.ndarray,
    job: ClusterJob,
    w: int,
    s: int,
    how: str,
    classes: tuple[np.ndarray, np.ndarray] | None = None,
) -> bool:
    """Whether the gang can be placed on the empty cluster at all."""
    if w > 0 and how == "packed":
        return packed_fits(capacity, job, w, s, classes, below=True)
    return w > 0 and place(capacity, job, w, s, how, 0, classes, below=True) is not None


def gang_sizes(
    jobs: Sequence[ClusterJob],
    rng: np.random.Generator,
    lo: int = 1,
    hi: int = 30,
    use_requested: bool = True,
) -> list[tuple[int, int]]:
    """(W, S) per job, in order: the requested workers (if ``use_requested``), else
    FIFO's uniform [lo, hi] draw; S = ⌈W/γ⌉.

    The draws for all of ``jobs`` are one ``rng.integers`` call (a call per job
    costs a visible share of a large FIFO run); they are the same numbers, and leave
    the generator in the same state, as one call per job in order, because
    NumPy draws bounded 64-bit integers in this range from the bit generator's
    own buffered 32-bit stream (``tests/schedulers/test_gang_policies.py`` checks it).
    """
    want = [job.requested_workers if use_requested else None for job in jobs]
    k = want.count(None)
    draws = iter(rng.integers(lo, hi + 1, size=k).tolist() if k else ())
    sizes = [next(draws) if w is None else w for w in want]
    return [bundle(job, w) for job, w in zip(jobs, sizes, strict=True)]


def gang_need(job: ClusterJob, w: int, s: int) -> tuple[float, ...]:
    """Aggregate demand W·α + S·β of a gang, per resource."""
    return tuple(w * a + s * b for a, b in zip(job.worker_demand, job.ps_demand, strict=True))


def gang_allocate(
    order: Sequence[int],
    jobs: Mapping[int, ClusterJob],
    gangs: Mapping[int, tuple[int, int]],
    running: Mapping[int, Placement],
    capacity: np.ndarray,
    how: str = "packed",
    pointer: int = 0,
    needs: Mapping[int, tuple[float, ...]] | None = None,
    keep_order: bool = False,
    classes: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[dict[int, Placement], int]:
    """This slot's placements for jobs in priority ``order`` (see the module docstring).

    ``needs`` may carry precomputed :func:`gang_need` values (a hot path: it is
    called every slot).  ``classes``, if given, must be :func:`machine_rows` of
    ``capacity`` (placements then stop scanning early: see :func:`place_packed`).
    ``keep_order`` lists the jobs that keep running in ``running``'s order (then
    the newly placed ones) instead of priority order.
    """
    left = [float(x) for x in capacity.sum(axis=0)]
    selected = []
    for j in order:
        need = needs[j] if needs is not None else gang_need(jobs[j], *gangs[j])
        if all(n <= c + EPS for n, c in zip(need, left, strict=True)):
            left = [c - n for c, n in zip(left, need, strict=True)]
            selected.append(j)
    free = np.array(capacity, dtype=float)
    out: dict[int, Placement] = {}
    for j in selected:
        p = running.get(j)
        if p is not None and p.machines:
            out[j] = p
            take(free, jobs[j], p)
    for j in selected:
        if j in out:
            continue
        w, s = gangs[j]
        # free is the capacity less placements (take with sign +1 only): below it
        got = place(free, jobs[j], w, s, how, pointer, classes, below=True)
        if got is None:
            continue
        p, pointer = got
        out[j] = p
        take(free, jobs[j], p)
    if keep_order:
        out = {**{j: out[j] for j in running if j in out}, **out}
    return out, pointer


class GangPolicy:
    """The slot loop of a gang scheduler; subclasses only rank the jobs.

    On arrival a job gets its gang (:func:`gang_sizes`) or is rejected when the
    gang cannot be placed on the empty cluster (it would wait forever); each
    slot the ranked jobs go through :func:`gang_allocate`.
    """

    name: ClassVar[str]  # the registered name (each subclass)
    setting: ClassVar[str] = "cluster"
    # list running jobs in the order they started (not priority order): for a rule whose
    # ranking of running jobs drifts between events (SRTF), so a held decision is exact
    keep_order: ClassVar[bool] = False

    def __init__(self, placement: str = "packed") -> None:
        self.placement = placement

    def reset(self, cluster: Cluster, horizon: int, rng: np.random.Generator) -> None:
        if self.placement not in ("packed", "round-robin"):
            raise InvalidInput("placement", self.placement, "packed | round-robin")
        self.cluster_ = cluster
        self.horizon_ = horizon
        self.rng_ = rng
        self.gang_: dict[int, tuple[int, int]] = {}
        self.need_: dict[int, tuple[float, ...]] = {}
        self.running_: dict[int, Placement] = {}
        self.pointer_ = 0
        self.classes_ = machine_rows(cluster.capacity)
        self.fits_empty_: dict[tuple, bool] = {}
        H, R = cluster.capacity.shape
        big = self.placement == "packed" and H > placement.SMALL_MACHINES
        self.arrays_ = JobArrays(R) if big else None  # None: gang_allocate, job by job
        self.capacity_ = np.array(cluster.capacity, dtype=float)  # gang_allocate's free at start
        self.total_ = cluster.capacity.sum(axis=0).astype(float)  # and its left
        self.slot_of_ = np.full(H, -1, dtype=np.int64)  # the packed kernel's scratch
        self.rejected_: dict[int, tuple[int, int]] = {}  # rejected job -> its gang (explain)
        self.stopped_: set[int] = set()  # running before this decision, not in it
        self._reset()

    def _reset(self) -> None:
        """Per-run state of the ranking rule."""

    def _admit(self, job: ClusterJob, w: int, s: int) -> bool:
        """Bookkeeping for an arriving job whose gang fits; False rejects it."""
        return True

    def _order(self, candidates: list[int], view: ClusterView) -> list[int]:
        raise NotImplementedError

    def _until(self, view: ClusterView) -> int | None:
        """The first later slot at which the ranking can change with no arrival or
        completion (None: it may change next slot).  Asked only when this slot
        placed no new job, so the next decision keeps every placement in the
        same order (:func:`gang_allocate` lists running jobs first)."""
        return None

    def _fits_empty(self, job: ClusterJob, w: int, s: int) -> bool:
        # a sync gang's fit on the empty cluster depends only on its demands and size
        key = (job.worker_demand, job.ps_demand, w, s) if job.mode == "sync" else None
        fits = self.fits_empty_.get(key) if key is not None else None
        if fits is None:
            fits = fits_empty(self.cluster_.capacity, job, w, s, self.placement, self.classes_)
            if key is not None:
                self.fits_empty_[key] = fits
        return fits

    def _arrive(self, view: ClusterView) -> list[int]:
        """Sizes, empty-cluster fits and admission of this slot's arrivals; the rejected."""
        arrivals = view.arrivals
        sizes = gang_sizes(arrivals, self.rng_)
        sized = [(job, *g) for job, g in zip(arrivals, sizes, strict=True)]
        if self.arrays_ is not None and any(job.mode != "sync" for job, _, _ in sized):
            self.arrays_ = None  # (3.4) needs each placement: job by job from now on
            for j, (w, s) in self.gang_.items():
                self.need_[j] = gang_need(view.jobs[j], w, s)
        arrays = self.arrays_
        fits: list[bool | None] = [None] * len(sized)
        if arrays is not None:  # every fit in one compiled call (no cache: a lookup costs more)
            for job, w, s in sized:
                arrays.add(job, (w, s))
            ask = [i for i, (_, w, _) in enumerate(sized) if w > 0]
            fits = [False] * len(sized)  # no workers: fits_empty says no
            if ask:
                ref, cls = self.classes_
                rows = arrays.rows([sized[i][0].id for i in ask])  # first: may grow wd, pd
                got = kernels().packed_fits_many(
                    self.capacity_, ref, cls, arrays.wd, arrays.pd, rows,
                    arrays.gang[rows, 0], arrays.gang[rows, 1], EPS, BIG, True, self.slot_of_,
                ).tolist()  # fmt: skip
                for i, f in zip(ask, got, strict=True):
                    fits[i] = f
        reject = []
        for (job, w, s), fit in zip(sized, fits, strict=True):
            if fit is None:
                fit = self._fits_empty(job, w, s)
            if not fit or not self._admit(job, w, s):
                reject.append(job.id)
                self.rejected_[job.id] = (w, s)
                continue
            self.gang_[job.id] = (w, s)
            if arrays is None:  # else the kernel reads arrays.need
                self.need_[job.id] = gang_need(job, w, s)
        return reject

    def _allocate(self, order: list[int]) -> dict[int, Placement]:
        """:func:`gang_allocate` (packed) as one compiled call: the same placements."""
        arrays = self.arrays_
        assert arrays is not None
        rows = arrays.rows(order)
        ref, cls = self.classes_
        status, m, w, s, offsets = kernels().gang_pass(
            self.capacity_, self.total_, arrays.need, arrays.wd, arrays.pd, rows,
            arrays.gang[:, 0], arrays.gang[:, 1], arrays.held_start, arrays.held_len,
            arrays.pool_m, arrays.pool_w, arrays.pool_s, ref, cls, EPS, BIG, True,
            self.slot_of_,
        )  # fmt: skip
        out = {order[i]: self.running_[order[i]] for i in np.flatnonzero(status == 1).tolist()}
        new = np.flatnonzero(status == 2).tolist()
        if new:
            ol = offsets.tolist()
            ids = [order[i] for i in new]
            spans = [(ol[i], ol[i + 1]) for i in new]
            out.update(zip(ids, arrays.placements(ids, m, w, s, spans), strict=True))
        for j in self.running_:
            if j not in out:
                arrays.forget(j)
        if self.keep_order:
            out = {**{j: out[j] for j in self.running_ if j in out}, **out}
        return out

    def decide(self, view: ClusterView) -> ClusterDecision:
        reject = self._arrive(view)
        active = set(view.active)  # unfinished: a set lookup spares most Finished lookups
        for j in [j for j in self.running_ if j not in active and j in view.finished]:
            del self.running_[j]
            if self.arrays_ is not None:
                self.arrays_.forget(j)
        candidates = [j for j in (*view.active, *view.pending) if j in self.gang_]
        order = self._order(candidates, view)
        if self.arrays_ is not None:
            alloc = self._allocate(order)
        else:
            alloc, self.pointer_ = gang_allocate(
                order,
                view.jobs,
                self.gang_,
                self.running_,
                self.cluster_.capacity,
                self.placement,
                self.pointer_,
                self.need_,
                self.keep_order,
                self.classes_,
            )
        # a job placed this slot is listed among the running ones next slot: the
        # decision's order changes, so event-driven time starts a slot later
        steady = all(j in self.running_ for j in alloc)
        self.stopped_ = {j for j in self.running_ if j not in alloc}
        self.running_ = alloc
        until = self._until(view) if steady else None
        return ClusterDecision(allocations=dict(alloc), reject=tuple(reject), until=until)

    def explain(self, view: ClusterView, jobs: Sequence[int]) -> dict[int, Reason]:
        """Rejected: the gang fits no empty cluster; waiting or preempted: the gang does not
        fit what the jobs ranked above it left (which resource, need, free)."""
        free: np.ndarray | None = None
        out: dict[int, Reason] = {}
        for j in jobs:
            job = view.jobs[j]
            if j in self.rejected_:
                out[j] = too_large(job, *self.rejected_[j], self.cluster_.capacity)
                continue
            if j not in self.gang_:
                continue
            if free is None:  # what this slot's placements leave
                free = np.array(self.cluster_.capacity, dtype=float)
                for k, p in self.running_.items():
                    take(free, view.jobs[k], p)
            w, s = self.gang_[j]
            why = shortfall(job, w, s, free, one_machine=self.placement == "packed")
            if j in self.stopped_:
                out[j] = Reason(
                    "preempted", f"preempted by jobs {self.name} ranks higher: {why.text}"
                )
            else:
                out[j] = Reason("queued", f"waiting for jobs {self.name} ranks higher: {why.text}")
        return out
