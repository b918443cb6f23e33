"""Per-job arrays for the batch placement kernels (``fifo``, ``tiresias``, ``srtf``).

On 10,000 machines FIFO and the gang schedulers placed and released jobs one
compiled call at a time, each converting the job's demand tuples and its
placement's tuples to arrays; most of a decision was that overhead.  A
:class:`JobArrays` converts each job once, when it arrives (a row of
demands), and each placement once, when it is made (a segment of a shared
pool), so one call per decision (``placement_kernels.round_robin_run``,
``gang_pass``, ``take_segments``) can work through a whole queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat

import numpy as np

from dmlsched.model.cluster import ClusterJob, Placement, PlacementTable

__all__ = ["JobArrays"]


def _grown(a: np.ndarray, n: int) -> np.ndarray:
    """``a`` with room for at least ``n`` rows (doubling), its first rows kept."""
    if n <= a.shape[0]:
        return a
    out = np.empty((max(n, 2 * a.shape[0]), *a.shape[1:]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


class JobArrays:
    """Jobs' demands as rows (``wd``, ``pd``, ``need``) and placements as pool segments.

    ``gang`` is a job's (W, S) when given, ``need`` that gang's aggregate demand
    W·α + S·β (:func:`gang.gang_need`, the same floats).
    A placement's segment (``pool_m``/``pool_w``/``pool_s`` from its start) is
    recorded against the :class:`Placement` object, so a job placed anew gets a
    new one; the pool only grows (one segment per placement made in the run).
    ``held_start``/``held_len`` (by row) give each job's segment while it holds
    its placement (length 0 after :meth:`forget`), for the kernels to read.
    """

    def __init__(self, resources: int) -> None:
        self.row: dict[int, int] = {}
        self._new: list[tuple] = []  # added, rows not yet written: (wd, pd, gang)
        self._written = 0
        self.wd = np.empty((64, resources))
        self.pd = np.empty((64, resources))
        self.need = np.empty((64, resources))
        self.pool_m = np.empty(256, dtype=np.int64)
        self.pool_w = np.empty(256, dtype=np.int64)
        self.pool_s = np.empty(256, dtype=np.int64)
        self.used = 0  # pool entries in use
        self.segment_: dict[int, tuple[Placement | None, int, int]] = {}  # None: by hold()
        # by row: the pool segment of the job's placement held now (length 0: none)
        self.held_start = np.zeros(64, dtype=np.int64)
        self.held_len = np.zeros(64, dtype=np.int64)
        self.gang = np.zeros((64, 2), dtype=np.int64)  # (W, S) by row, when given

    def add(self, job: ClusterJob, gang: tuple[int, int] = (0, 0)) -> None:
        """Give ``job`` a row (once; written by the next :meth:`rows`, with the others
        added since: one conversion for all of them, not three NumPy calls a job)."""
        if job.id in self.row:
            return
        self.row[job.id] = len(self.row)
        self._new.append((job.worker_demand, job.ps_demand, gang))

    def _flush(self) -> None:
        new, self._new = self._new, []
        a, b = self._written, self._written + len(new)
        if b > self.wd.shape[0]:
            self.wd, self.pd, self.need = (_grown(x, b) for x in (self.wd, self.pd, self.need))
            self.held_start, self.held_len = _grown(self.held_start, b), _grown(self.held_len, b)
            self.gang = _grown(self.gang, b)
        self.held_len[a:b] = 0
        self.wd[a:b] = [x[0] for x in new]
        self.pd[a:b] = [x[1] for x in new]
        self.gang[a:b] = [x[2] for x in new]
        # gang_need's W·α + S·β, the same two products and sum per entry
        self.need[a:b] = self.gang[a:b, :1] * self.wd[a:b] + self.gang[a:b, 1:] * self.pd[a:b]
        self._written = b

    def rows(self, ids: Sequence[int]) -> np.ndarray:
        """The rows of jobs ``ids`` (all :meth:`add`-ed); read ``wd``/``pd``/``need`` after."""
        if self._new:
            self._flush()
        return np.fromiter(map(self.row.__getitem__, ids), dtype=np.int64, count=len(ids))

    def append(self, m: np.ndarray, w: np.ndarray, s: np.ndarray) -> int:
        """Copy placements laid back to back into the pool; returns where they start."""
        base, k = self.used, m.shape[0]
        if base + k > self.pool_m.shape[0]:
            self.pool_m = _grown(self.pool_m, base + k)
            self.pool_w = _grown(self.pool_w, base + k)
            self.pool_s = _grown(self.pool_s, base + k)
        self.pool_m[base : base + k] = m
        self.pool_w[base : base + k] = w
        self.pool_s[base : base + k] = s
        self.used = base + k
        return base

    def _hold(self, j: int, p: Placement, start: int, length: int) -> None:
        if self._new:
            self._flush()
        self.segment_[j] = (p, start, length)
        r = self.row[j]
        self.held_start[r] = start
        self.held_len[r] = length

    def segment(self, j: int, p: Placement | None) -> tuple[int, int]:
        """(start, length) of job ``j``'s placement ``p`` in the pool (copied in if new);
        ``p`` is held from now on.  ``None``: a job placed by :meth:`hold` (always held)."""
        got = self.segment_.get(j)
        if got is not None and got[0] is p:
            return got[1], got[2]
        assert p is not None, f"job {j} was placed by hold() and is no longer held"
        start = self.append(
            np.asarray(p.machines, dtype=np.int64),
            np.asarray(p.workers, dtype=np.int64),
            np.asarray(p.ps, dtype=np.int64),
        )
        self._hold(j, p, start, len(p.machines))
        return start, len(p.machines)

    def release(self, ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Jobs ``ids`` (each held) hold nothing any more: their (rows, start, length) in
        the pool, for ``take_segments`` to give back."""
        rows = self.rows(ids)
        start, length = self.held_start[rows], self.held_len[rows]
        self.held_len[rows] = 0
        pop = self.segment_.pop
        for j in ids:
            pop(j, None)
        return rows, start, length

    def forget(self, j: int) -> None:
        """Job ``j`` holds no placement any more."""
        if self.segment_.pop(j, None) is not None:
            self.held_len[self.row[j]] = 0

    def hold(
        self,
        ids: Sequence[int],
        m: np.ndarray,
        w: np.ndarray,
        s: np.ndarray,
        spans: Sequence[tuple[int, int]],
    ) -> None:
        """Job ``ids[k]`` holds ``[a, b) = spans[k]`` of the back-to-back arrays from now on
        (appended to the pool; no :class:`Placement` object: :meth:`table` reads them)."""
        base = self.append(m, w, s)
        segment = self.segment_
        for j, (a, b) in zip(ids, spans, strict=True):
            segment[j] = (None, base + a, b - a)
        rows = self.rows(ids)
        self.held_start[rows] = [base + a for a, _ in spans]
        self.held_len[rows] = [b - a for a, b in spans]

    def hold_run(
        self, ids: Sequence[int], rows: np.ndarray, m: np.ndarray, w: np.ndarray,
        s: np.ndarray, offsets: np.ndarray,
    ) -> None:  # fmt: skip
        """:meth:`hold` for the placements of a compiled pass: job ``ids[k]`` (row
        ``rows[k]``) holds ``[offsets[k], offsets[k + 1])`` of the back-to-back arrays."""
        base = self.append(m, w, s)
        start = base + offsets[:-1]
        length = offsets[1:] - offsets[:-1]
        spans = zip(repeat(None), start.tolist(), length.tolist())  # (None: by a pass)
        self.segment_.update(zip(ids, spans, strict=True))
        self.held_start[rows] = start
        self.held_len[rows] = length

    def placements(
        self,
        ids: Sequence[int],
        m: np.ndarray,
        w: np.ndarray,
        s: np.ndarray,
        spans: Sequence[tuple[int, int]],
    ) -> list[Placement]:
        """As :meth:`hold`, and the :class:`Placement` of each (recorded as its segment's,
        so releasing it copies nothing)."""
        self.hold(ids, m, w, s, spans)
        ml, wl, sl = m.tolist(), w.tolist(), s.tolist()
        out = []
        segment = self.segment_
        for j, (a, b) in zip(ids, spans, strict=True):
            p = Placement(tuple(ml[a:b]), tuple(wl[a:b]), tuple(sl[a:b]))
            segment[j] = (p, *segment[j][1:])
            out.append(p)
        return out

    def table(self, ids: Sequence[int]) -> PlacementTable:
        """The placements jobs ``ids`` hold (each held: :meth:`hold`, :meth:`segment`), in
        that order, as one :class:`PlacementTable` gathered from the pool."""
        rows = self.rows(ids)
        start, length = self.held_start[rows], self.held_len[rows]
        offsets = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(length, out=offsets[1:])
        # entry e of job k sits at start[k] + (e − offsets[k])
        at = np.arange(offsets[-1], dtype=np.int64) + np.repeat(start - offsets[:-1], length)
        return PlacementTable(
            np.fromiter(ids, dtype=np.int64, count=len(ids)),
            offsets,
            self.pool_m[at],
            self.pool_w[at],
            self.pool_s[at],
        )
