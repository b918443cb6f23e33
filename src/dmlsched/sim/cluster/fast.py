"""The ``cluster`` engine's fast reads: the referee's answer without reading everything.

Each path below gives exactly what :mod:`.referee` gives — the same
accepted placements, the same floats, or the same refusal with the same
message — and is property-tested against it (``tests/sim/test_referee.py``,
``test_batch_read.py``, ``test_placement_table.py``,
``test_unchanged_placements.py``):

* **unchanged placements** (:func:`unchanged`) — a placement whose three
  field tuples are the very objects the engine last read and checked for
  its job is not read again (by identity: the engine keeps those tuples
  alive, so no other object can have their ids, and a tuple cannot change);
* **unchanged table entries** (:func:`table_unchanged`) — a
  :class:`PlacementTable` 's placement equal, entry for entry, to the one the
  engine last read for its job from a table (against the engine's own copy
  of those entries, :class:`EntryPool`);
* **the batch** (:func:`read_batch`, :func:`read_table_batch`) — many
  changed placements read, checked (:func:`check_batch`) and rated at once
  with NumPy; whatever the batch cannot certainly accept goes the one-by-one
  way (:func:`~.referee.read_placement`, :func:`~.referee.check_placement`),
  which refuses with its own message or reads it.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain
from operator import attrgetter
from typing import NamedTuple

import numpy as np

from dmlsched.model.cluster import ClusterJob, Placement
from dmlsched.model.speed.pdors import sync_worker_rates
from dmlsched.sim.boundary import PLAIN_INT
from dmlsched.sim.cluster.referee import MAX_COUNT, Table

__all__ = [
    "BATCH_MIN",
    "NO_IDS",
    "NO_SOURCE",
    "Batch",
    "EntryPool",
    "JobColumns",
    "TablePlacements",
    "changed",
    "check_batch",
    "indices",
    "job_columns",
    "read_batch",
    "read_table_batch",
    "sources",
    "table_unchanged",
    "unchanged",
]

#: Fewer changed placements than this are read one by one (the batch's fixed cost of
#: some thirty NumPy calls is more than reading a few placements in Python).
BATCH_MIN = 8

_FEW = 16  # up to this many placements, changed() compares in Python
NO_SOURCE = (object(),) * 3  # matches no placement's fields (by identity)
NO_IDS = (0, 0, 0)  # no object has id 0
_FIELDS = attrgetter("machines", "workers", "ps")
_ONLY_PLACEMENT = frozenset({Placement})
_ONLY_TUPLE = frozenset({tuple})


def indices(index: dict[int, int], ids: Iterable[int], n: int) -> np.ndarray:
    """The engine's indices of ``n`` job ids."""
    return np.fromiter(map(index.__getitem__, ids), dtype=np.intp, count=n)


def sources(p: object) -> tuple:
    """The placement's field objects when all are exact tuples (immutable, so reusable)."""
    fields = tuple(getattr(p, f, None) for f in ("machines", "workers", "ps"))
    return fields if all(type(f) is tuple for f in fields) else NO_SOURCE


def unchanged(placements: list[object], read: np.ndarray) -> np.ndarray:
    """Which placements hold the very field tuples the engine last read and checked
    for their job (``read``: those tuples' ids, 0 if none).

    By identity: the engine keeps those tuples alive, so no other object can
    have their ids, and a tuple cannot change.  A placement changed with
    ``object.__setattr__`` holds another object; anything but an exact
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


def changed(placements: list[object], read: np.ndarray) -> list[int]:
    """Positions of the placements that are not :func:`unchanged` (to be read again);
    a few compared in Python ints (NumPy's calls cost more than the comparisons)."""
    n = len(placements)
    if n > _FEW or not _ONLY_PLACEMENT.issuperset(map(type, placements)):
        return (~unchanged(placements, read)).nonzero()[0].tolist()
    try:
        fields = list(map(_FIELDS, placements))
    except AttributeError:  # a field deleted with object.__delattr__
        return list(range(n))
    return [
        i
        for i, (f, ids) in enumerate(zip(fields, read.tolist(), strict=True))
        if [id(f[0]), id(f[1]), id(f[2])] != ids
    ]


class JobColumns(NamedTuple):
    """What the batched read needs of every job, as arrays by the engine's job index."""

    arrival: np.ndarray
    max_workers: np.ndarray  # Eq. (4): F (sync jobs only are batched)
    sync: np.ndarray
    gamma: np.ndarray
    rate_int: np.ndarray  # worker_rate(job, internal=True), sync jobs
    rate_ext: np.ndarray  # worker_rate(job, internal=False)
    alpha: np.ndarray  # N × R worker demands
    beta: np.ndarray  # N × R PS demands

    def extend(self, more: JobColumns) -> JobColumns:
        """These columns followed by ``more``'s (jobs registered later)."""
        return JobColumns(*(np.concatenate((a, b)) for a, b in zip(self, more, strict=True)))


_COLUMNS = attrgetter("arrival", "batch", "gamma", "grad_mb", "tau", "straggler", "b_int", "b_ext")


def job_columns(jobs: list[ClusterJob], resources: int) -> JobColumns | None:
    """The jobs' columns (None if some job's demands are not R long)."""
    n = len(jobs)
    alpha = list(map(attrgetter("worker_demand"), jobs))
    beta = list(map(attrgetter("ps_demand"), jobs))
    if any(len(a) != resources for a in chain(alpha, beta)):
        return None
    flat = chain.from_iterable(map(_COLUMNS, jobs))  # fromiter: no per-row Python objects
    cols = np.fromiter(flat, dtype=float, count=8 * n).reshape(n, 8)
    arrival, batch, gamma, grad_mb, tau, straggler, b_int, b_ext = cols.T
    return JobColumns(
        arrival=arrival.astype(np.int64),  # whole numbers below 2^53: exact as floats
        max_workers=batch.astype(np.int64),
        sync=np.array(list(map(attrgetter("mode"), jobs))) == "sync",
        gamma=gamma,
        rate_int=sync_worker_rates(gamma, batch, grad_mb, tau, straggler, b_int),
        rate_ext=sync_worker_rates(gamma, batch, grad_mb, tau, straggler, b_ext),
        alpha=np.fromiter(chain.from_iterable(alpha), float, n * resources).reshape(n, resources),
        beta=np.fromiter(chain.from_iterable(beta), float, n * resources).reshape(n, resources),
    )


class Batch(NamedTuple):
    """Placements read at once (``fast``: the positions read; the rest go one by one)."""

    fast: list[int]
    sources: list[tuple]  # per fast placement: its field objects (see unchanged)
    counts: list  # per fast placement: its field tuples, or None (from a table)
    lo: list[int]  # its rows in ``machines``/``demand``: lo[k]:hi[k]
    hi: list[int]
    total_w: list[int]
    total_s: list[int]
    rates: np.ndarray
    ids: np.ndarray  # fast × 3: ids of its field tuples (see unchanged; 0 for a table)
    machines: np.ndarray
    demand: np.ndarray


def read_batch(
    t: int, H: int, sel: list[int], placements: list[object], d: np.ndarray, ja: JobColumns
) -> tuple[Batch | None, list[int]]:
    """Read, check and rate the placements at positions ``sel`` together, as
    :func:`~.referee.read_placement`, :func:`~.referee.check_placement` and
    :func:`~dmlsched.model.speed.pdors.job_rate` would one by one (``d``: their
    jobs' indices).

    Returns (the batch, positions left to the one-by-one path).  Only exact
    :class:`Placement` s of exact tuples of ``int`` are read here, and of those only
    what :func:`check_batch` certainly accepts; anything else goes the one-by-one way,
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
    got = check_batch(t, H, m, w, s, lm, d, ja)
    if got is None:
        return None, sel
    fields = [fields[k] for k in got.fast.tolist()]
    ids = np.fromiter(map(id, flat), dtype=np.uint64, count=3 * n).reshape(n, 3)[got.fast]
    # exact tuples of ints stand for their Counts (equal as tuples; made Counts when kept)
    return _batch(sel, got, fields, fields, ids, m, w, s, lm, ja)


def read_table_batch(
    t: int, H: int, sel: list[int], table: Table, d: np.ndarray, ja: JobColumns, entries: tuple
) -> tuple[Batch | None, list[int]]:
    """:func:`read_batch` for the placements at positions ``sel`` of a table (``entries``:
    theirs, :meth:`~.referee.Table.entries`): the same checks and floats, from the arrays
    (no Python object per job or machine)."""
    lm = table.lens[sel]
    m, w, s = entries
    got = check_batch(t, H, m, w, s, lm, d, ja)
    if got is None:
        return None, sel
    k = len(got.fast)
    # no tuples: the Counts are made when asked for (ClusterState._counts)
    ids = np.zeros((k, 3), dtype=np.uint64)
    return _batch(sel, got, [NO_SOURCE] * k, [None] * k, ids, m, w, s, lm, ja)


class BatchCheck(NamedTuple):
    """What :func:`check_batch` found (``fast``: the positions accepted)."""

    ok: np.ndarray
    fast: np.ndarray
    rows: np.ndarray  # the accepted placements' entries
    row_jobs: np.ndarray  # the job index of each of those entries
    total_w: np.ndarray
    total_s: np.ndarray
    rates: np.ndarray


def check_batch(
    t: int,
    H: int,
    m: np.ndarray,
    w: np.ndarray,
    s: np.ndarray,
    lm: np.ndarray,
    d: np.ndarray,
    ja: JobColumns,
) -> BatchCheck | None:
    """The checks of :func:`~.referee.read_placement` and :func:`~.referee.check_placement`
    and the rate of :func:`~dmlsched.model.speed.pdors.job_rate`, over placements laid
    back to back (``lm``: their lengths; ``d``: their jobs' indices), for sync jobs rated
    by the γ-form (Eq. (1) with S ≥ W/γ, :func:`~dmlsched.model.speed.pdors.sync_rate`'s
    first branch).

    Returns None if none is accepted.  The same floats:
    :func:`~dmlsched.model.speed.pdors.sync_worker_rates` repeats
    :func:`~dmlsched.model.speed.pdors.worker_rate`'s operations
    (``tests/sim/test_batch_read.py``).
    """
    n = len(lm)
    seg = np.repeat(np.arange(n), lm)
    bad = np.zeros(n, dtype=bool)
    out = (m < 0) | (m >= H) | (w < 0) | (w > MAX_COUNT) | (s < 0) | (s > MAX_COUNT)
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
    return BatchCheck(ok, fast, rows, d[seg[rows]], tw, ts, rates)


def _batch(
    sel: list[int],
    got: BatchCheck,
    srcs: list[tuple],
    counts: list,
    ids: np.ndarray,
    m: np.ndarray,
    w: np.ndarray,
    s: np.ndarray,
    lm: np.ndarray,
    ja: JobColumns,
) -> tuple[Batch, list[int]]:
    """The records of the placements :func:`check_batch` accepted (per accepted one:
    ``srcs``, ``counts``, ``ids``); returns them and the positions left."""
    ok, fast, rows = got.ok, got.fast, got.rows
    mf = m[rows].astype(np.intp, copy=False)
    demand = w[rows].astype(float)[:, None] * ja.alpha[got.row_jobs]
    demand += s[rows].astype(float)[:, None] * ja.beta[got.row_jobs]
    hi_f = np.cumsum(lm[fast])
    lo_f = hi_f - lm[fast]
    batch = Batch(
        fast=[sel[k] for k in fast.tolist()],
        sources=srcs,
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


def table_unchanged(
    table: Table, at: np.ndarray, start: np.ndarray, length: np.ndarray, own: tuple
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


class TablePlacements:
    """A table's placements by position, each a :class:`Placement` built when asked for."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __getitem__(self, k: int) -> Placement:
        return self.table.placement(k)


class EntryPool:
    """The engine's copy of the entries it last read from a table, per job index
    (``start``/``length``; length −1: its last read was not from a table, or the job
    ended).  Full, it keeps only the entries of jobs that hold them (:meth:`_compact`)."""

    def __init__(self, n: int) -> None:
        self.start = np.zeros(n, dtype=np.int64)
        self.length = np.full(n, -1, dtype=np.int64)
        self.arrays: tuple = (np.zeros(0, dtype=np.int64),) * 3
        self.used = 0  # entries of ``arrays`` in use
        self.ever = False  # whether a table's entries were ever kept (else every length is −1)

    def grow(self, n: int) -> None:
        """Room for ``n`` job indices."""
        more = n - len(self.start)
        if more > 0:
            self.start = np.concatenate((self.start, np.zeros(more, dtype=np.int64)))
            self.length = np.concatenate((self.length, np.full(more, -1, dtype=np.int64)))

    def drop(self, at: np.ndarray) -> None:
        """No table entry stands for the jobs at indices ``at`` any more."""
        if self.ever:  # (else none ever did)
            self.length[at] = -1

    def keep(self, table: Table, changed: list[int], entries: tuple, at: np.ndarray) -> None:
        """Append the entries of the table's placements at positions ``changed`` (``entries``:
        :meth:`~.referee.Table.entries`) and point their jobs at them."""
        m, w, s = entries
        k = m.shape[0]
        self.ever = True
        if self.used + k > self.arrays[0].shape[0]:
            self._compact(k)
        used = self.used
        for a, b in zip(self.arrays, (m, w, s), strict=True):
            a[used : used + k] = b
        lens = table.lens[changed]
        d = at[changed]
        self.start[d] = used + np.cumsum(lens) - lens
        self.length[d] = lens
        self.used = used + k

    def _compact(self, k: int) -> None:
        """Room for ``k`` more entries: the entries of jobs that still hold theirs moved to
        the front (those of ended or re-read jobs are dropped), in arrays grown only when
        they would be more than half full."""
        live = np.flatnonzero(self.length > 0)
        lens = self.length[live]
        at = np.zeros(len(live), dtype=np.int64)
        np.cumsum(lens[:-1], out=at[1:])
        kept = int(at[-1] + lens[-1]) if len(live) else 0
        take = np.arange(kept, dtype=np.int64) + np.repeat(self.start[live] - at, lens)
        if 2 * (kept + k) <= self.arrays[0].shape[0]:
            for a in self.arrays:
                a[:kept] = a[take]  # (the gather is made before it is written)
        else:
            size = max(2 * (kept + k), 1024)
            moved = []
            for a in self.arrays:
                b = np.empty(size, dtype=np.int64)
                b[:kept] = a[take]
                moved.append(b)
            self.arrays = tuple(moved)
        self.start[live] = at
        self.used = kept

    def counts(self, d: int) -> tuple[tuple[int, ...], ...]:
        """(machines, workers, ps) of job index ``d``'s kept entries, as tuples."""
        a = int(self.start[d])
        b = a + int(self.length[d])
        return tuple(tuple(x[a:b].tolist()) for x in self.arrays)
