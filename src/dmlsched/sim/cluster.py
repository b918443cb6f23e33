"""The ``cluster``-setting engine: a time-slotted loop over T slots.

Per slot t:

1. reveal the jobs with arrival a_i = t (online: never earlier);
2. ask the scheduler for the slot's :class:`ClusterDecision` through a
   read-only :class:`ClusterView` built from the scheduler's own per-run
   copies (:mod:`dmlsched.sim.boundary`);
3. read the decision once into plain tuples (:func:`read_decision`,
   :func:`read_placement`: exact ``ClusterDecision``/``Placement`` types,
   exact integers, a job named twice is refused, totals recomputed from the
   per-machine counts) and check it (:func:`check_placement`,
   :func:`check_capacity`): pending-only admit/reject, nothing for rejected,
   finished or unarrived jobs, Eq. (2), (4), (5), (7) and, for async jobs,
   (3.2), (3.4), (3.5);
4. advance each allocated job by the engine's own speed model
   (:func:`dmlsched.model.speed.pdors.job_rate` on the actual counts and
   locality, Fact 1 — or ``workload.speed.rate`` when the workload carries a
   measured speed model, same signature); a job completes in the slot its
   work reaches E·K (sync) or E·K·M (async).

Once every job has arrived and none is pending or active, the remaining
slots cannot change anything (no decision can touch a finished or rejected
job), so the loop stops early; their utilization rows stay 0, so every
metric equals that of the full loop.  This keeps long horizons (peer
replays, 60-s slots) cheap.

The engine computes from its own copies of the jobs and the cluster, made
at the start of the run; a placement's checks, demand and rate are computed
once per distinct placement of a job and reused while the scheduler keeps
returning it (the same immutable tuples are recognised by identity, equal
ones by value).  Only placements whose field tuples are not the very ones
last read for their job are read at all (:func:`_unchanged`, over all
allocations at once: with thousands of running jobs a decision changes a
few); machine usage, progress and completion are kept over per-job arrays.
When many placements change at once (a FIFO or Tiresias decision on a
large cluster places hundreds of jobs), they are read, checked and rated
together with NumPy (:func:`_read_batch`): the same checks and the same
floats, and whatever the batch cannot certainly accept is read one by one,
so the refusals and their messages are unchanged (``tests/sim/test_batch_read.py``).
A decision's allocations may also be one :class:`PlacementTable` (FIFO's on a
large cluster): the engine copies its arrays (:func:`read_table`), skips the
placements equal, entry for entry, to those it last read from a table for
their jobs (:func:`_table_unchanged`, against its own copies), and reads the
rest with the same batched checks straight from the arrays
(:func:`_read_table_batch`) — or one by one as :class:`Placement` s, with the
same messages (``tests/sim/test_placement_table.py``).

Completion and utility follow the paper: t̃_i is the completion slot and the
job earns u_i(t̃_i − a_i) (Eq. (6), DMLRS objective), so a job that finishes in
its arrival slot has training time 0.  Unfinished or rejected jobs earn
nothing and count T − a_i as training time (PD-ORS Fig. 9).

Metrics: ``total_utility``, ``median_training_time``, ``mean_training_time``,
``completed_jobs``, ``admitted_jobs``, ``rejected_jobs``, ``mean_jct`` (completed
jobs only, in slots from the start of the arrival slot to the moment the work
ran out, progress being linear within a slot; NaN when none completed),
``mean_jct_s`` (the same in seconds: × ``workload.slot_seconds``),
``mean_progress`` (fraction of its work each admitted job got through by T,
1 for completed ones, averaged; 0 when none was admitted),
``mean_workers`` (workers per job per slot it ran, averaged over those
job-slots; 0 when nothing ran), ``mean_utilization`` (over resources) and
``mean_utilization_<resource>`` (per-slot used ÷ capacity summed over
machines, averaged over slots).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Collection, Iterable
from itertools import chain
from operator import attrgetter
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from dmlsched.errors import InvalidDecision
from dmlsched.model.cluster import (
    Cluster,
    ClusterDecision,
    ClusterJob,
    ClusterWorkload,
    Placement,
    PlacementTable,
)
from dmlsched.model.speed.pdors import job_rate, ps_bandwidth_load, sync_worker_rates
from dmlsched.model.views import ClusterView, Finished
from dmlsched.schedulers.protocols import ClusterScheduler
from dmlsched.sim.boundary import (
    PLAIN_INT,
    expect_type,
    private_copy,
    read_int,
    read_ints,
    read_mapping,
    refuse,
    shown,
)
from dmlsched.sim.engine import Progress, RunResult, register_engine
from dmlsched.sim.events import Event

__all__ = [
    "Counts",
    "check_admissions",
    "check_capacity",
    "check_placement",
    "read_decision",
    "read_placement",
    "read_table",
    "read_until",
    "simulate_cluster",
]

_DONE_TOL = 1e-9
_EPS = 1e-9
# Larger counts are refused outright: no cluster holds 2^31 workers, and the
# float arithmetic of the checks stays exact below it.
_MAX_COUNT = 2**31


class Counts(NamedTuple):
    """The engine's copy of one placement: machines, w_h, s_h as tuples of ``int``."""

    machines: tuple[int, ...]
    workers: tuple[int, ...]
    ps: tuple[int, ...]


# ---------------------------------------------------------------- boundary: read the decision


def read_decision(
    sched: str, slot: int, decision: object, limit: int
) -> tuple[dict[int, object], tuple[int, ...], tuple[int, ...]]:
    """(allocations by job, admit, reject) read once from an exact ``ClusterDecision``.

    ``limit`` bounds the allocations (the pending and active jobs); the
    placements are returned as given, for :func:`read_placement`.
    """
    d = expect_type(sched, slot, decision, ClusterDecision)
    alloc = read_mapping(sched, slot, "allocations", d.allocations, limit)
    admit = read_ints(sched, slot, None, "admit", d.admit)
    reject = read_ints(sched, slot, None, "reject", d.reject)
    return alloc, admit, reject


def read_until(sched: str, slot: int, decision: ClusterDecision) -> int:
    """The first slot to ask again, read once from a decision's ``until`` (slot + 1 for ``None``).

    Only the engine's event-driven loop reads it; the testbed and the service
    run in real time and ask every slot.
    """
    raw = getattr(decision, "until", None)
    if raw is None:
        return slot + 1
    until = read_int(raw)
    if until is None or until <= slot:
        refuse(sched, None, slot, f"until={shown(raw)} is not an integer slot > {slot}")
    return until


def read_placement(sched: str, slot: int, job: int, p: object, n_machines: int) -> Counts:
    """Copy an exact :class:`Placement` into :class:`Counts` (machine ids and integer counts)."""
    expect_type(sched, slot, p, Placement, job)
    machines = read_ints(sched, slot, job, "machines", getattr(p, "machines", None))
    workers, ps = (getattr(p, f, None) for f in ("workers", "ps"))
    counts = [
        read_ints(sched, slot, job, f, v, "a non-negative integer")
        for f, v in (("workers", workers), ("ps", ps))
    ]
    if not (len(machines) == len(counts[0]) == len(counts[1])):
        refuse(sched, job, slot, "machines/workers/ps lengths differ")
    if len(set(machines)) != len(machines):
        refuse(sched, job, slot, f"machine listed twice in {machines}")
    w_all, s_all = counts
    if not machines or (
        min(machines) >= 0
        and max(machines) < n_machines
        and min(w_all) >= 0
        and max(w_all) <= _MAX_COUNT
        and min(s_all) >= 0
        and max(s_all) <= _MAX_COUNT
    ):
        return Counts(machines, w_all, s_all)  # all in range: the loop below names the first not
    for m, w, s in zip(machines, *counts, strict=True):
        if not 0 <= m < n_machines:
            refuse(sched, job, slot, f"no machine {shown(m)}")
        for name, v in (("workers", w), ("ps", s)):
            if not 0 <= v <= _MAX_COUNT:
                refuse(
                    sched,
                    job,
                    slot,
                    f"{name}={shown(v)} is not a non-negative integer <= 2^31",
                    machine=m,
                )
    return Counts(machines, counts[0], counts[1])


_NO_SOURCE = (object(),) * 3  # matches no placement's fields (by identity)


def _sources(p: object) -> tuple:
    """The placement's field objects when all are exact tuples (immutable, so reusable)."""
    fields = tuple(getattr(p, f, None) for f in ("machines", "workers", "ps"))
    return fields if all(type(f) is tuple for f in fields) else _NO_SOURCE


# ---------------------------------------------------------------- checks (PD-ORS constraints)


def check_admissions(
    sched: str,
    slot: int,
    allocations: Iterable[int],
    admit: Iterable[int],
    reject: Iterable[int],
    pending: Collection[int],
    active: Collection[int],
    rejected: Collection[int],
    finished: Collection[int],
) -> tuple[list[int], list[int], list[int]]:
    """Admission rules of a ``cluster`` decision (as read by :func:`read_decision`).

    Rejects first (each must be pending), then admits (pending after the
    rejects), then allocations (a pending job is admitted by its allocation;
    any other must be active).  Returns (rejected, admitted, admitted by
    allocation); raises :class:`InvalidDecision` on the first violation.
    Shared with the testbed and the service, which apply decisions for real.
    """
    still = dict.fromkeys(pending)
    rej: list[int] = []
    adm: list[int] = []
    by_alloc: list[int] = []
    for j in reject:
        if j not in still:
            refuse(sched, j, slot, "rejected a job that is not pending")
        del still[j]
        rej.append(j)
    for j in admit:
        if j not in still:
            refuse(sched, j, slot, "admitted a job that is not pending")
        del still[j]
        adm.append(j)
    now_active = set(active) | set(adm)
    for j in allocations:
        if j in still:
            del still[j]
            by_alloc.append(j)
            now_active.add(j)
        elif j not in now_active:
            why = (
                "rejected"
                if j in rejected or j in rej
                else "finished"
                if j in finished
                else "unknown"
            )
            refuse(sched, j, slot, f"allocation for a {why} job")
    return rej, adm, by_alloc


def check_placement(sched: str, job: ClusterJob, c: Counts, slot: int) -> None:
    """Eq. (7), Eq. (4)/(3.2), Eq. (2) or (3.4)–(3.5) on the engine's copy of a placement."""
    if slot < job.arrival:  # Eq. (7)
        refuse(sched, job.id, slot, f"allocated before arrival {job.arrival}")
    total_w, total_s = sum(c.workers), sum(c.ps)
    if total_w > job.max_workers:  # Eq. (4) / (3.2)
        refuse(sched, job.id, slot, f"{total_w} workers > limit {job.max_workers} (Eq. 4)")
    if total_w == 0 and total_s > 0:
        refuse(sched, job.id, slot, f"{total_s} PSs without workers (Eq. 2)")
    if job.mode == "sync":
        need = job.min_ps(total_w)
        if total_s < need:  # Eq. (2) as ⌈W/γ⌉
            refuse(sched, job.id, slot, f"{total_s} PSs < ceil({total_w}/γ={job.gamma:g}) = {need}")
    else:
        if total_w > 0 and total_s < 1:
            refuse(sched, job.id, slot, "workers without a PS")
        if total_s > total_w:  # (3.5)
            refuse(sched, job.id, slot, f"{total_s} PSs > {total_w} workers (3.5)")
        load, cap = ps_bandwidth_load(job, c.machines, c.workers, c.ps)
        if load > cap * (1 + 1e-9):  # (3.4)
            refuse(
                sched,
                job.id,
                slot,
                f"worker traffic {load:g} Gbps > PS bandwidth {total_s}×{job.ps_bandwidth:g} (3.4)",
            )


def check_capacity(
    sched: str, cluster: Cluster, usage: np.ndarray, slot: int, owners: dict[int, list[int]]
) -> None:
    """Eq. (5): Σ_i α^r w_ih + β^r s_ih ≤ C_h^r for every machine and resource."""
    over = usage > cluster.capacity + _EPS * np.maximum(1.0, cluster.capacity)
    if over.any():
        h, r = (int(x) for x in np.argwhere(over)[0])
        jobs = owners.get(h, [])
        raise InvalidDecision(
            sched,
            jobs[-1] if jobs else None,
            slot,
            f"uses {usage[h, r]:g} > capacity {cluster.capacity[h, r]:g} (Eq. 5); "
            f"jobs on machine: {jobs}",
            machine=h,
            resource=cluster.resources[r],
        )


# ---------------------------------------------------------------- the loop

# Below this every partial sum of integer-valued floats is an exact integer.
_EXACT_BOUND = 2.0**50
_EXACT_DEMAND = 2.0**20


def integral_usage(jobs: Iterable[ClusterJob], cluster: Cluster) -> bool:
    """Whether machine usage can be kept incrementally with the same floats as recomputed.

    True when every demand is a non-negative whole number ≤ 2^20 and every
    capacity is finite and < 2^50 (as in the Philly workload: GPUs, CPUs,
    memory, bandwidth in whole units).  Then every usage row the engine
    accepts is a sum of whole numbers below 2^53, exact in any order, so
    adding a changed placement's demand and subtracting the old one gives the
    bits that summing every allocation afresh gives.  (A usage over capacity
    is recomputed afresh before it is reported.)  When each resource's total
    capacity is below 2^50 too, the per-resource totals of usage (the
    utilization series) are kept the same way: every partial sum of an
    accepted usage is then a whole number below 2^53.
    """
    cap = np.asarray(cluster.capacity, dtype=float)
    if cap.size and not (np.isfinite(cap).all() and cap.max() < _EXACT_BOUND):
        return False
    a = np.fromiter(
        chain.from_iterable(chain(j.worker_demand, j.ps_demand) for j in jobs), dtype=float
    )
    return bool(((a >= 0) & (a <= _EXACT_DEMAND) & (np.floor(a) == a)).all())


def _recomputed_usage(H: int, R: int, parts: Iterable[tuple]) -> np.ndarray:
    """Σ demand over the given (machine rows, demand) parts, in their order, from zeros."""
    usage = np.zeros((H, R))
    parts = list(parts)
    if parts:  # one unbuffered add in allocation order: the same sums as job by job
        np.add.at(
            usage, np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
        )
    return usage


# Columns of held slots credited at once (bounds the memory of a long hold).
_BLOCK = 1 << 20


def _advance(
    done: np.ndarray, thr: np.ndarray, run: np.ndarray, rates: np.ndarray, slots: int
) -> tuple[int, np.ndarray, np.ndarray]:
    """Credit the running jobs (indices ``run`` into ``done``, ``rates`` per slot) for
    up to ``slots`` slots, stopping after the first slot in which one completes.

    Returns (slots credited k, which of ``run`` completed in slot k, their work
    before slot k).  Work is accumulated slot by slot — ``np.cumsum`` along a
    row is a sequential sum, the same floats as adding the rate once per slot
    — so bulk and step-by-step runs agree bit for bit.
    """
    if not run.size:
        return slots, np.zeros(0, dtype=bool), np.zeros(0)
    cur, lim = done[run], thr[run]
    held = 0
    while True:
        b = min(slots - held, max(1, _BLOCK // run.size))
        path = np.empty((run.size, b + 1))
        path[:, 0] = cur
        path[:, 1:] = rates[:, None]
        path = np.cumsum(path, axis=1)
        hits = path[:, 1:] >= lim[:, None]
        col = np.flatnonzero(hits.any(axis=0))
        if col.size:
            c = int(col[0]) + 1
            done[run] = path[:, c]
            return held + c, hits[:, c - 1], path[:, c - 1]
        held += b
        cur = path[:, b]
        if held == slots:
            done[run] = cur
            return slots, np.zeros(run.size, dtype=bool), cur


_FIELDS = attrgetter("machines", "workers", "ps")
_ONLY_PLACEMENT = frozenset({Placement})
_NO_IDS = (0, 0, 0)  # no object has id 0


def _unchanged(placements: list[object], read: np.ndarray) -> np.ndarray:
    """Which placements hold the very field tuples the engine last read and checked
    for their job (``read``: those tuples' ids, 0 if none).

    By identity: the engine keeps those tuples alive (``checked``), so no other
    object can have their ids, and a tuple cannot change.  A placement changed
    with ``object.__setattr__`` holds another object; anything but an exact
    :class:`Placement` is read again (and refused there).
    """
    n = len(placements)
    if not n or not _ONLY_PLACEMENT.issuperset(map(type, placements)):
        return np.zeros(n, dtype=bool)
    try:
        fields = list(map(_FIELDS, placements))
    except AttributeError:  # a field deleted with object.__delattr__
        return np.zeros(n, dtype=bool)
    ids = np.fromiter(map(id, chain.from_iterable(fields)), dtype=np.uint64, count=3 * n)
    return (ids.reshape(n, 3) == read).all(axis=1)


class _JobArrays(NamedTuple):
    """What the batched read (:func:`_read_batch`) needs of every job, as arrays by index."""

    arrival: np.ndarray
    max_workers: np.ndarray  # Eq. (4): F (sync jobs only are batched)
    sync: np.ndarray
    gamma: np.ndarray
    rate_int: np.ndarray  # worker_rate(job, internal=True), sync jobs
    rate_ext: np.ndarray  # worker_rate(job, internal=False)
    alpha: np.ndarray  # N × R worker demands
    beta: np.ndarray  # N × R PS demands


_COLUMNS = attrgetter("arrival", "batch", "gamma", "grad_mb", "tau", "straggler", "b_int", "b_ext")


def _job_arrays(jobs: list[ClusterJob], resources: int) -> _JobArrays | None:
    """The jobs' columns (None if some job's demands are not R long)."""
    n = len(jobs)
    alpha = list(map(attrgetter("worker_demand"), jobs))
    beta = list(map(attrgetter("ps_demand"), jobs))
    if any(len(a) != resources for a in chain(alpha, beta)):
        return None
    flat = chain.from_iterable(map(_COLUMNS, jobs))  # fromiter: no per-row Python objects
    cols = np.fromiter(flat, dtype=float, count=8 * n).reshape(n, 8)
    arrival, batch, gamma, grad_mb, tau, straggler, b_int, b_ext = cols.T
    return _JobArrays(
        arrival=arrival.astype(np.int64),  # whole numbers below 2^53: exact as floats
        max_workers=batch.astype(np.int64),
        sync=np.array(list(map(attrgetter("mode"), jobs))) == "sync",
        gamma=gamma,
        rate_int=sync_worker_rates(gamma, batch, grad_mb, tau, straggler, b_int),
        rate_ext=sync_worker_rates(gamma, batch, grad_mb, tau, straggler, b_ext),
        alpha=np.fromiter(chain.from_iterable(alpha), float, n * resources).reshape(n, resources),
        beta=np.fromiter(chain.from_iterable(beta), float, n * resources).reshape(n, resources),
    )


# Fewer changed placements than this are read one by one (the batch's fixed cost of
# some thirty NumPy calls is more than reading a few placements in Python).
_BATCH_MIN = 8
_ONLY_TUPLE = frozenset({tuple})


class _Batch(NamedTuple):
    """Placements read at once (``fast``: the positions read; the rest go one by one)."""

    fast: list[int]
    sources: list[tuple]  # per fast placement: its field objects (see _unchanged)
    counts: list  # per fast placement: its field tuples, or None (from a table)
    lo: list[int]  # its rows in ``machines``/``demand``: lo[k]:hi[k]
    hi: list[int]
    total_w: list[int]
    total_s: list[int]
    rates: np.ndarray
    ids: np.ndarray  # fast × 3: ids of its field tuples (see _unchanged; 0 for a table)
    machines: np.ndarray
    demand: np.ndarray


def _read_batch(
    t: int, H: int, sel: list[int], placements: list[object], d: np.ndarray, ja: _JobArrays
) -> tuple[_Batch | None, list[int]]:
    """Read, check and rate the placements at positions ``sel`` together, as
    :func:`read_placement`, :func:`check_placement` and :func:`job_rate` would one by one
    (``d``: their jobs' indices).

    Returns (the batch, positions left to the one-by-one path).  Only exact
    :class:`Placement` s of exact tuples of ``int`` are read here, and of those only
    what :func:`_check_batch` certainly accepts; anything else goes the one-by-one way,
    which refuses with its own message or reads it.
    """
    ps = [placements[i] for i in sel]
    n = len(ps)
    if not _ONLY_PLACEMENT.issuperset(map(type, ps)):
        return None, sel
    try:
        fields = list(map(_FIELDS, ps))
    except AttributeError:  # a field deleted with object.__delattr__
        return None, sel
    flat = list(chain.from_iterable(fields))
    if not _ONLY_TUPLE.issuperset(map(type, flat)):
        return None, sel
    if not PLAIN_INT.issuperset(map(type, chain.from_iterable(flat))):
        return None, sel
    lens = np.fromiter(map(len, flat), dtype=np.intp, count=3 * n).reshape(n, 3)
    lm = lens[:, 0]
    if not ((lens[:, 1] == lm) & (lens[:, 2] == lm)).all():
        return None, sel
    size = int(lm.sum())
    try:
        m, w, s = (
            np.fromiter(chain.from_iterable(flat[k::3]), dtype=np.int64, count=size)
            for k in range(3)
        )
    except OverflowError:  # beyond int64: certainly refused, by the one-by-one path
        return None, sel
    got = _check_batch(t, H, m, w, s, lm, d, ja)
    if got is None:
        return None, sel
    fields = [fields[k] for k in got.fast.tolist()]
    ids = np.fromiter(map(id, flat), dtype=np.uint64, count=3 * n).reshape(n, 3)[got.fast]
    # exact tuples of ints stand for their Counts (equal as tuples; made Counts when kept)
    return _batch(sel, got, fields, fields, ids, m, w, s, lm, ja)


def _read_table_batch(
    t: int, H: int, sel: list[int], table: _Table, d: np.ndarray, ja: _JobArrays, entries: tuple
) -> tuple[_Batch | None, list[int]]:
    """:func:`_read_batch` for the placements at positions ``sel`` of a table (``entries``:
    theirs, :meth:`_Table.entries`): the same checks and floats, from the arrays (no
    Python object per job or machine)."""
    lm = table.lens[sel]
    m, w, s = entries
    got = _check_batch(t, H, m, w, s, lm, d, ja)
    if got is None:
        return None, sel
    k = len(got.fast)
    # no tuples: the Counts are made when asked for (``counts_of`` in simulate_cluster)
    ids = np.zeros((k, 3), dtype=np.uint64)
    return _batch(sel, got, [_NO_SOURCE] * k, [None] * k, ids, m, w, s, lm, ja)


class _Checked(NamedTuple):
    """What :func:`_check_batch` found (``fast``: the positions accepted)."""

    ok: np.ndarray
    fast: np.ndarray
    rows: np.ndarray  # the accepted placements' entries
    row_jobs: np.ndarray  # the job index of each of those entries
    total_w: np.ndarray
    total_s: np.ndarray
    rates: np.ndarray


def _check_batch(
    t: int,
    H: int,
    m: np.ndarray,
    w: np.ndarray,
    s: np.ndarray,
    lm: np.ndarray,
    d: np.ndarray,
    ja: _JobArrays,
) -> _Checked | None:
    """The checks of :func:`read_placement` and :func:`check_placement` and the rate of
    :func:`job_rate`, over placements laid back to back (``lm``: their lengths; ``d``:
    their jobs' indices), for sync jobs rated by the γ-form (Eq. (1) with S ≥ W/γ,
    :func:`~dmlsched.model.speed.pdors.sync_rate`'s first branch).

    Returns None if none is accepted.  The same floats:
    :func:`~dmlsched.model.speed.pdors.sync_worker_rates` repeats
    :func:`~dmlsched.model.speed.pdors.worker_rate`'s operations
    (``tests/sim/test_batch_read.py``).
    """
    n = len(lm)
    seg = np.repeat(np.arange(n), lm)
    bad = np.zeros(n, dtype=bool)
    out = (m < 0) | (m >= H) | (w < 0) | (w > _MAX_COUNT) | (s < 0) | (s > _MAX_COUNT)
    bad[seg[out]] = True
    # a machine twice in one placement: equal neighbours once sorted by (placement, machine)
    order = np.lexsort((m, seg))
    ms, ss = m[order], seg[order]
    bad[ss[1:][(ms[1:] == ms[:-1]) & (ss[1:] == ss[:-1])]] = True
    hi = np.cumsum(lm)
    lo = hi - lm
    cw = np.concatenate(([0], np.cumsum(w)))  # int64 (wraps only for refused counts)
    cs = np.concatenate(([0], np.cumsum(s)))
    tw, ts = cw[hi] - cw[lo], cs[hi] - cs[lo]
    gamma = ja.gamma[d]
    ok = ~bad & ja.sync[d] & (ja.arrival[d] <= t) & (tw <= ja.max_workers[d])  # Eq. (7), (4)
    with np.errstate(invalid="ignore", over="ignore"):
        need = np.maximum(1.0, np.ceil(tw / gamma - 1e-9))  # JobSpec.min_ps, Eq. (2)
        ok &= np.where(tw == 0, ts == 0, ts >= need)
        # Fact 1: internal iff exactly one machine holds a worker or a PS (machines distinct)
        used = np.bincount(seg, weights=(w > 0) | (s > 0), minlength=n)
        per_worker = np.where(used == 1, ja.rate_int[d], ja.rate_ext[d])
        idle = (tw <= 0) | (ts <= 0)
        ok &= idle | (ts * gamma >= tw)  # else job_rate's other branch: one by one
        rates = np.where(idle, 0.0, tw * per_worker)
    fast = np.flatnonzero(ok)
    if not fast.size:
        return None
    rows = ok[seg]
    return _Checked(ok, fast, rows, d[seg[rows]], tw, ts, rates)


def _batch(
    sel: list[int],
    got: _Checked,
    sources: list[tuple],
    counts: list,
    ids: np.ndarray,
    m: np.ndarray,
    w: np.ndarray,
    s: np.ndarray,
    lm: np.ndarray,
    ja: _JobArrays,
) -> tuple[_Batch, list[int]]:
    """The records of the placements :func:`_check_batch` accepted (per accepted one:
    ``sources``, ``counts``, ``ids``); returns them and the positions left."""
    ok, fast, rows = got.ok, got.fast, got.rows
    mf = m[rows].astype(np.intp, copy=False)
    demand = w[rows].astype(float)[:, None] * ja.alpha[got.row_jobs]
    demand += s[rows].astype(float)[:, None] * ja.beta[got.row_jobs]
    hi_f = np.cumsum(lm[fast])
    lo_f = hi_f - lm[fast]
    batch = _Batch(
        fast=[sel[k] for k in fast.tolist()],
        sources=sources,
        counts=counts,
        lo=lo_f.tolist(),
        hi=hi_f.tolist(),
        total_w=got.total_w[fast].tolist(),
        total_s=got.total_s[fast].tolist(),
        rates=got.rates[fast],
        ids=ids,
        machines=mf,
        demand=demand,
    )
    return batch, [sel[k] for k in np.flatnonzero(~ok).tolist()]


class _Table(NamedTuple):
    """The engine's copy of a :class:`PlacementTable` (read by :func:`read_table`)."""

    jobs: list[int]
    offsets: np.ndarray
    lens: np.ndarray
    seg: np.ndarray  # each entry's position in ``jobs``
    machines: np.ndarray
    workers: np.ndarray
    ps: np.ndarray

    def entries(self, sel: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(machines, workers, ps) of the placements at positions ``sel`` (ascending),
        back to back."""
        if len(sel) == len(self.jobs):
            return self.machines, self.workers, self.ps
        mask = np.zeros(len(self.jobs), dtype=bool)
        mask[sel] = True
        rows = mask[self.seg]
        return self.machines[rows], self.workers[rows], self.ps[rows]

    def placement(self, k: int) -> Placement:
        """The ``k``-th placement as a :class:`Placement` (for the one-by-one read)."""
        a, b = int(self.offsets[k]), int(self.offsets[k + 1])
        return Placement(
            tuple(self.machines[a:b].tolist()),
            tuple(self.workers[a:b].tolist()),
            tuple(self.ps[a:b].tolist()),
        )


_TABLE_FIELDS = ("jobs", "offsets", "machines", "workers", "ps")


def read_table(sched: str, slot: int, raw: object, limit: int) -> _Table | None:
    """The engine's copy of ``allocations`` when it is an exact :class:`PlacementTable`
    (else None: :func:`read_decision` reads it as a mapping).

    Each array is copied and must be 1-D ``int64`` (whatever was done to the table
    after it was built); offsets rise from 0 to the entries, one more than the jobs;
    more jobs than ``limit`` + 1 or a job named twice is refused as
    :func:`~dmlsched.sim.boundary.read_mapping` refuses them.  The placements
    themselves are read as every placement is (:func:`_read_table_batch`, or one by
    one as :class:`Placement` s).
    """
    if type(raw) is not PlacementTable:
        return None
    got = []
    for f in _TABLE_FIELDS:
        a = getattr(raw, f, None)
        if type(a) is not np.ndarray or a.ndim != 1 or a.dtype != np.int64:
            refuse(sched, None, slot, f"allocations table: {f} is not a 1-D int64 array")
        got.append(np.array(a))  # ours: whatever happens to theirs
    jobs, offsets, m, w, s = got
    n = len(jobs)
    if not (
        len(offsets) == n + 1
        and offsets[0] == 0
        and offsets[-1] == len(m) == len(w) == len(s)
        and (np.diff(offsets) >= 0).all()
    ):
        refuse(sched, None, slot, "allocations table: offsets do not fit its arrays")
    if n > limit + 1:
        refuse(sched, None, slot, f"allocations names more than the {limit} jobs it may")
    keys = jobs.tolist()
    if len(set(keys)) != n:
        seen: set[int] = set()
        for j in keys:
            if j in seen:
                refuse(sched, j, slot, "allocations names the job twice")
            seen.add(j)
    lens = np.diff(offsets)
    return _Table(keys, offsets, lens, np.repeat(np.arange(n), lens), m, w, s)


def _table_unchanged(
    table: _Table, at: np.ndarray, start: np.ndarray, length: np.ndarray, own: tuple
) -> np.ndarray:
    """Which of the table's placements equal, entry for entry, the one the engine last
    read and checked for their job from a table (``own``: its copies, by ``start`` and
    ``length`` per job index; length −1 if its last read was not from a table)."""
    same = length[at] == table.lens
    if not same.any():
        return same
    seg = table.seg
    inside = same[seg]
    pos = np.arange(len(seg)) - table.offsets[seg] + start[at][seg]
    pos = np.where(inside, pos, 0)
    om, ow, os_ = own
    if not om.size:
        return same & (table.lens == 0)
    diff = inside & (
        (om[pos] != table.machines) | (ow[pos] != table.workers) | (os_[pos] != table.ps)
    )
    return same & (np.bincount(seg[diff], minlength=len(at)) == 0)


class _TablePlacements:
    """A table's placements by position, each a :class:`Placement` built when asked for."""

    def __init__(self, table: _Table) -> None:
        self.table = table

    def __getitem__(self, k: int) -> Placement:
        return self.table.placement(k)


def _kept_entries(
    pool: tuple,
    used: int,
    table: _Table,
    changed: list[int],
    entries: tuple,
    at: np.ndarray,
    start: np.ndarray,
    length: np.ndarray,
) -> tuple[tuple, int]:
    """Append the entries of the table's placements at positions ``changed`` (``entries``:
    :meth:`_Table.entries`) to the engine's pool and point their jobs at them;
    returns (pool, entries in use)."""
    m, w, s = entries
    k = m.shape[0]
    if used + k > pool[0].shape[0]:
        size = max(used + k, 2 * pool[0].shape[0], 1024)
        grown = []
        for a in pool:
            b = np.empty(size, dtype=np.int64)
            b[:used] = a[:used]
            grown.append(b)
        pool = tuple(grown)
    for a, b in zip(pool, (m, w, s), strict=True):
        a[used : used + k] = b
    lens = table.lens[changed]
    d = at[changed]
    start[d] = used + np.cumsum(lens) - lens
    length[d] = lens
    return pool, used + k


def _indices(index: dict[int, int], ids: Iterable[int], n: int) -> np.ndarray:
    return np.fromiter(map(index.__getitem__, ids), dtype=np.intp, count=n)


@register_engine("cluster")
def simulate_cluster(
    workload: ClusterWorkload,
    scheduler: ClusterScheduler,
    rng: np.random.Generator,
    *,
    record_events: bool = True,
    progress: Progress | None = None,
    event_driven: bool = True,
) -> RunResult:
    """Run ``scheduler`` on ``workload``; the engine owns progress and metrics.

    ``progress`` hears (slot, horizon, admitted, completed) after every
    decision; ``event_driven=False`` ignores decisions' ``until`` and asks
    every slot (the reference the event-driven path is tested against).
    """
    name = type(scheduler).name
    # The engine's own copies: nothing a scheduler is shown aliases them.
    cluster = private_copy(workload.cluster)
    all_jobs = [private_copy(j) for j in workload.jobs]
    T = workload.horizon
    H = cluster.machines
    by_slot: dict[int, list[ClusterJob]] = defaultdict(list)
    for job in sorted(all_jobs, key=lambda j: (j.arrival, j.id)):
        by_slot[job.arrival].append(job)

    shown_cluster = private_copy(cluster)
    scheduler.reset(shown_cluster, T, rng)

    jobs: dict[int, ClusterJob] = {}
    shown_jobs: dict[int, ClusterJob] = {}  # the scheduler's copies; never read by the engine
    pending: dict[int, None] = {}  # insertion-ordered set
    active: dict[int, None] = {}
    rejected: set[int] = set()
    finished: dict[int, int] = {}  # id -> completion slot
    admitted: list[int] = []  # in admission order
    events: list[Event] = []
    cap_total = cluster.capacity.sum(axis=0)
    limit = cluster.capacity + _EPS * np.maximum(1.0, cluster.capacity)  # as check_capacity
    util = np.zeros((T, len(cluster.resources)))
    jobs_view = MappingProxyType(shown_jobs)
    shown_finished: dict[int, int] = {}  # for the views' Finished; never read by the engine
    finished_fs = Finished(shown_finished, 0)
    jct: dict[int, float] = {}
    # job -> (3 source tuples, Counts, machine index, demand, rate, ΣW, ΣS) of its checked placement
    checked: dict[int, tuple] = {}
    # per-job state over arrays, by the job's index in the workload
    index = {job.id: i for i, job in enumerate(all_jobs)}
    id_of = [job.id for job in all_jobs]  # job id by index
    N = len(all_jobs)
    total = np.array([job.total_work for job in all_jobs], dtype=float)
    thr = total * (1 - _DONE_TOL)  # done at or above this: complete
    arrival_of = np.fromiter(map(attrgetter("arrival"), all_jobs), dtype=np.int64, count=N)
    done = np.zeros(N)  # work done
    rate_of_job = np.zeros(N)  # rate of the checked placement
    workers_of = np.zeros(N, dtype=np.int64)  # its ΣW
    placed = np.zeros(N, dtype=bool)  # it uses a machine
    read = np.zeros((N, 3), dtype=np.uint64)  # ids of its source tuples (see _unchanged)
    rate_of = workload.speed.rate if workload.speed is not None else job_rate
    # the batched read rates by Eq. (1) itself: not for a workload's own speed model
    job_arrays = _job_arrays(all_jobs, len(cluster.resources)) if workload.speed is None else None
    joint = getattr(workload.speed, "slot_rates", None)
    last_arrival = max(by_slot, default=-1)
    arrival_slots = sorted(by_slot)
    worker_slots = job_slots = 0  # for mean_workers: workers per job per slot it ran
    R = len(cluster.resources)
    # usage kept across decisions (only changed placements re-added) when exact
    incremental = integral_usage(all_jobs, cluster)
    kept = np.zeros((H, R))
    # and its column sums, when every sum of accepted usage is exact too (see _EXACT_BOUND)
    kept_sum = np.zeros(R) if incremental and cap_total.max(initial=0.0) < _EXACT_BOUND else None
    in_kept: dict[int, tuple] = {}  # job -> (machine rows, demand) counted in ``kept``
    was_running = np.zeros(N, dtype=bool)
    # the entries of each job's placement last read from a PlacementTable (length −1: none)
    own_start = np.zeros(N, dtype=np.int64)
    own_len = np.full(N, -1, dtype=np.int64)
    own_pool: tuple = (np.zeros(0, dtype=np.int64),) * 3
    used = 0  # entries of own_pool in use

    def counts_of(j: int) -> Counts:
        """The :class:`Counts` of job ``j``'s checked placement (made from the engine's
        copy of its table entries the first time one read from a table is asked for)."""
        hit = checked[j]
        if hit[3] is None:
            a = int(own_start[index[j]])
            b = a + int(own_len[index[j]])
            c = Counts(*(tuple(x[a:b].tolist()) for x in own_pool))
            checked[j] = hit = (*hit[:3], c, *hit[4:])
        return hit[3]

    prev_run = np.zeros(0, dtype=np.intp)

    t = -1
    while t + 1 < T:
        t += 1
        if t > last_arrival and not pending and not active:
            break  # nothing left that a decision could change (see module docstring)
        arrivals = []
        for job in by_slot.get(t, ()):
            jobs[job.id] = job
            pending[job.id] = None
            seen = shown_jobs[job.id] = private_copy(job)
            arrivals.append(seen)
            if record_events:
                events.append(Event(t, "arrive", job.id))
        act = tuple(active)
        at = _indices(index, act, len(act))
        view = ClusterView(
            slot=t,
            horizon=T,
            cluster=shown_cluster,
            arrivals=tuple(arrivals),
            pending=tuple(pending),
            active=act,
            remaining=MappingProxyType(
                dict(zip(act, (total[at] - done[at]).tolist(), strict=True))
            ),
            jobs=jobs_view,
            finished=finished_fs,
            slot_seconds=workload.slot_seconds,
        )
        decision = expect_type(name, t, scheduler.decide(view), ClusterDecision)
        table = read_table(name, t, decision.allocations, len(pending) + len(active))
        if table is None:
            allocations, admit, reject = read_decision(
                name, t, decision, len(pending) + len(active)
            )
        else:
            allocations = dict.fromkeys(table.jobs)
            admit = read_ints(name, t, None, "admit", decision.admit)
            reject = read_ints(name, t, None, "reject", decision.reject)
        until = read_until(name, t, decision)

        rej_now, adm_now, by_alloc = check_admissions(
            name, t, allocations, admit, reject, pending, active, rejected, finished
        )
        for j in rej_now:
            del pending[j]
            rejected.add(j)
            if record_events:
                events.append(Event(t, "reject", j))
        for j in adm_now:
            del pending[j]
            active[j] = None
            admitted.append(j)
            if record_events:
                events.append(Event(t, "admit", j))
        for j in by_alloc:  # an allocation admits implicitly
            del pending[j]
            active[j] = None
            admitted.append(j)

        keys = list(allocations)
        at = _indices(index, keys, len(keys))
        if table is None:
            placements: list[object] | _TablePlacements = list(allocations.values())
            changed = np.flatnonzero(~_unchanged(placements, read[at])).tolist()
            own_len[at[changed]] = -1  # read from placements: no table entry stands for them
        else:
            placements = _TablePlacements(table)
            same = _table_unchanged(table, at, own_start, own_len, own_pool)
            changed = np.flatnonzero(~same).tolist()
            read[at[changed]] = 0  # (_NO_IDS) read from a table: no tuple stands for them
        one_by_one = changed
        entries = None  # a table's changed placements' entries, once gathered
        if job_arrays is not None and len(changed) >= _BATCH_MIN:
            if table is None:
                got = _read_batch(t, H, changed, placements, at[changed], job_arrays)  # type: ignore[arg-type]
            else:
                entries = table.entries(changed)
                got = _read_table_batch(t, H, changed, table, at[changed], job_arrays, entries)
            batch, one_by_one = got
            if batch is not None:
                for i, src, c, lo, hi, rate, total_w, total_s in zip(
                    batch.fast,
                    batch.sources,
                    batch.counts,
                    batch.lo,
                    batch.hi,
                    batch.rates.tolist(),
                    batch.total_w,
                    batch.total_s,
                    strict=True,
                ):
                    j = keys[i]
                    hit = checked.get(j)
                    if c is not None and hit is not None and hit[3] == c:
                        checked[j] = (*src, *hit[3:])  # as checked before: keep its arrays
                    else:  # exact tuples of ints are their own Counts (read_placement)
                        idx, demand = batch.machines[lo:hi], batch.demand[lo:hi]
                        c = None if c is None else Counts(*c)  # None: see counts_of
                        checked[j] = (*src, c, idx, demand, rate, total_w, total_s)
                d = at[batch.fast]
                rate_of_job[d] = batch.rates
                workers_of[d] = batch.total_w
                placed[d] = np.asarray(batch.hi) > np.asarray(batch.lo)
                read[d] = batch.ids
        for i in one_by_one:  # read, and check what was not checked for this job before
            j, p, d = keys[i], placements[i], int(at[i])
            job = jobs[j]
            hit = checked.get(j)
            c = read_placement(name, t, j, p, H)
            if hit is None or c != hit[3]:
                # a placement already validated for this job is valid again: the checks
                # depend only on the job and the placement (capacity is checked below)
                check_placement(name, job, c, t)
                # w_h·α + s_h·β per machine (the products and sum of np.outer, without its calls)
                demand = np.asarray(c.workers, dtype=float)[:, None] * job.worker_demand
                demand += np.asarray(c.ps, dtype=float)[:, None] * job.ps_demand
                idx = np.asarray(c.machines, dtype=np.intp)
                rate = rate_of(job, *c)
                hit = (*_sources(p), c, idx, demand, rate, sum(c.workers), sum(c.ps))
                rate_of_job[d] = rate
                workers_of[d] = hit[7]
                placed[d] = bool(c.machines)
            else:
                hit = (*_sources(p), *hit[3:])
            checked[j] = hit
            if table is None:
                read[d] = _NO_IDS if hit[0] is _NO_SOURCE[0] else tuple(map(id, hit[:3]))
        if table is not None and changed:
            # the table's entries now checked for these jobs: the next table is compared with them
            if entries is None:
                entries = table.entries(changed)
            own_pool, used = _kept_entries(
                own_pool, used, table, changed, entries, at, own_start, own_len
            )
        on = placed[at]
        run_at = np.flatnonzero(on)  # the running jobs' places in the allocations
        run = at[run_at]
        running = [keys[i] for i in run_at.tolist()]
        details: list[tuple[int, str]] = []
        if record_events:
            by_alloc_set = set(by_alloc)
            for j, is_on in zip(keys, on.tolist(), strict=True):
                if j in by_alloc_set:
                    events.append(Event(t, "admit", j))
                if is_on:
                    _, _, _, _, idx, _, rate, total_w, total_s = checked[j]
                    detail = f"workers={total_w} ps={total_s} machines={len(idx)} rate={rate:.6g}"
                    details.append((j, detail))
                    events.append(Event(t, "allocate", j, detail))
        if incremental:
            # only jobs that stopped, started or were read again can have changed
            now_running = np.zeros(N, dtype=bool)
            now_running[run] = True
            moved = np.unique(  # each once, in index order (the adds are exact in any order)
                np.concatenate(
                    (prev_run[~now_running[prev_run]], run[~was_running[run]], at[changed])
                )
            )
            rows, delta = [], []  # one unbuffered add: exact in any order (integral_usage)
            for d, is_on in zip(moved.tolist(), now_running[moved].tolist(), strict=True):
                j = id_of[d]
                had = in_kept.get(j)
                now = checked[j][4:6] if is_on else None
                if had is not None and (now is None or had[1] is not now[1]):
                    rows.append(had[0])
                    delta.append(-had[1])
                    del in_kept[j]
                if now is not None and (had is None or had[1] is not now[1]):
                    rows.append(now[0])
                    delta.append(now[1])
                    in_kept[j] = now
            if rows:  # integral (see integral_usage): the sums are exact in any order
                at_rows, by = np.concatenate(rows), np.concatenate(delta)
                if kept_sum is not None:
                    kept_sum += by.sum(axis=0)
                if at_rows.size * 4 < H:
                    np.add.at(kept, at_rows, by)
                else:  # many rows: bincount's pass over H machines is cheaper than np.add.at
                    for r in range(R):
                        kept[:, r] += np.bincount(at_rows, weights=by[:, r], minlength=H)
            was_running, prev_run = now_running, run
            usage = kept
        else:
            usage = _recomputed_usage(H, R, (checked[j][4:6] for j in running))
        if (usage > limit).any():
            usage = _recomputed_usage(H, R, (checked[j][4:6] for j in running))  # afresh
            owners: dict[int, list[int]] = defaultdict(list)  # for the message only
            for j in running:
                for m in counts_of(j).machines:
                    owners[m].append(j)
            check_capacity(name, cluster, usage, t, owners)
        util[t] = np.divide(
            usage.sum(axis=0) if kept_sum is None else kept_sum,
            cap_total,
            out=np.zeros_like(cap_total),
            where=cap_total > 0,
        )
        rates = rate_of_job[run]
        if joint is not None and len(running) > 1:
            # a speed model that knows what jobs running at once do to each other (shared
            # links): the same set runs in every held slot, so the rates hold with it
            got = joint([(jobs[j], Placement(*counts_of(j))) for j in running])
            rates = np.array([float(x) for _, x in zip(running, got, strict=True)])
        # event-driven time: the same allocations stand until ``until``, the next
        # arrival or the first completion, whichever comes first
        end = min(until, T) if event_driven else t + 1
        nxt = bisect_right(arrival_slots, t)
        if nxt < len(arrival_slots):
            end = min(end, arrival_slots[nxt])
        k, completed, before = _advance(done, thr, run, rates, max(end - t, 1))
        if k > 1:
            util[t + 1 : t + k] = util[t]
        worker_slots += k * sum(workers_of[run].tolist())
        job_slots += k * len(running)
        if record_events:
            for s in range(t + 1, t + k):
                events.extend(Event(s, "allocate", j, detail) for j, detail in details)
        t += k - 1
        ends = np.flatnonzero(completed)
        if ends.size:
            ended = [running[f] for f in ends.tolist()]
            e = run[ends]
            read[e] = 0  # (_NO_IDS) their tuples may be freed: their ids may come again
            own_len[e] = -1
            # JCT counts whole slots from the start of the arrival slot to the moment
            # within slot t when the work ran out (linear progress within a slot);
            # elementwise, the floats of t − a_i + min(1, max(0, E·K − before) / rate)
            left = np.maximum(0.0, total[e] - before[ends])
            took = (t - arrival_of[e]) + np.minimum(1.0, left / rates[ends])
            jct.update(zip(ended, took.tolist(), strict=True))
            for j in ended:
                del active[j]
                checked.pop(j, None)
                finished[j] = t
                shown_finished[j] = len(shown_finished)
                if record_events:
                    events.append(Event(t, "complete", j))
        if completed.any():
            finished_fs = Finished(shown_finished, len(shown_finished))
        if progress is not None:
            progress(t + 1, T, len(active) + len(finished), len(finished))

    if progress is not None:  # the slots left (if the loop stopped early) change nothing
        progress(T, T, len(active) + len(finished), len(finished))
    mean_workers = worker_slots / job_slots if job_slots else 0.0
    adm = _indices(index, admitted, len(admitted))
    jct_of = np.full(N, np.nan)  # per job in workload order, NaN if unfinished
    jct_of[_indices(index, jct, len(jct))] = list(jct.values())
    return RunResult(
        metrics=_metrics(
            all_jobs,
            index,
            arrival_of,
            cluster,
            T,
            workload.slot_seconds,
            finished,
            jct,
            active,
            rejected,
            util,
            np.minimum(1.0, done[adm] / total[adm]),  # elementwise: min(1, done / E·K)
            mean_workers,
        ),
        events=tuple(events),
        # per-job JCT (workload order, NaN if unfinished): the testbed compares it with reality
        series={"utilization": util, "jct": jct_of},
    )


def _metrics(
    all_jobs: list[ClusterJob],
    index: dict[int, int],
    arrival: np.ndarray,
    cluster: Cluster,
    T: int,
    slot_seconds: float,
    finished: dict[int, int],
    jct: dict[int, float],
    active: dict[int, None],
    rejected: set[int],
    util: np.ndarray,
    progress: np.ndarray,
    mean_workers: float,
) -> dict[str, float]:
    """The run's metrics (module docstring); ``progress``: each admitted job's fraction
    of its work done, in admission order."""
    fin = _indices(index, finished, len(finished))
    ended = np.full(len(all_jobs), T, dtype=np.int64)  # the completion slot, else T
    ended[fin] = list(finished.values())
    times = ended - arrival  # training times: unfinished jobs count T − a_i
    utility = 0.0
    for d in np.sort(fin).tolist():  # in workload order, as ever
        utility += all_jobs[d].utility(int(times[d]))
    admitted = len(finished) + len(active)
    out = {
        "total_utility": utility,
        "median_training_time": float(np.median(times)) if times.size else 0.0,
        "mean_training_time": float(np.mean(times)) if times.size else 0.0,
        "completed_jobs": float(len(finished)),
        "admitted_jobs": float(admitted),
        "rejected_jobs": float(len(rejected)),
        "mean_utilization": float(util.mean()) if util.size else 0.0,
        "mean_jct": float(np.mean(list(jct.values()))) if jct else float("nan"),
        "mean_jct_s": (float(np.mean(list(jct.values()))) * slot_seconds if jct else float("nan")),
        "mean_progress": float(np.mean(progress)) if progress.size else 0.0,
        "mean_workers": mean_workers,
    }
    for r, res in enumerate(cluster.resources):
        out[f"mean_utilization_{res}"] = float(util[:, r].mean())
    return out
