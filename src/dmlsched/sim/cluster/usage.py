"""Machine usage (Eq. (5)'s left-hand side), summed afresh or kept across decisions.

:func:`recomputed_usage` sums the running placements' demands in the
decision's order — the floats of :func:`~.referee.machine_usage`.  When
every sum is exact (:func:`integral_usage`), :class:`KeptUsage` keeps usage
across decisions and re-adds only the placements that changed: the same
bits in any order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from typing import NamedTuple, Protocol

import numpy as np

from dmlsched.model.cluster import Cluster, ClusterJob

__all__ = ["Demand", "KeptUsage", "UsageChange", "integral_usage", "recomputed_usage"]

# Below this every partial sum of integer-valued floats is an exact integer.
EXACT_BOUND = 2.0**50
_EXACT_DEMAND = 2.0**20


class Demand(Protocol):
    """One placement's demand: its machines' rows and w_h·α + s_h·β per row."""

    @property
    def machines(self) -> np.ndarray: ...

    @property
    def demand(self) -> np.ndarray: ...


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
    if cap.size and not (np.isfinite(cap).all() and cap.max() < EXACT_BOUND):
        return False
    a = np.fromiter(
        chain.from_iterable(chain(j.worker_demand, j.ps_demand) for j in jobs), dtype=float
    )
    return bool(((a >= 0) & (a <= _EXACT_DEMAND) & (np.floor(a) == a)).all())


def recomputed_usage(H: int, R: int, parts: Iterable[Demand]) -> np.ndarray:
    """Σ demand over the given parts, in their order, from zeros."""
    usage = np.zeros((H, R))
    parts = list(parts)
    if parts:  # one unbuffered add in allocation order: the same sums as job by job
        np.add.at(
            usage,
            np.concatenate([p.machines for p in parts]),
            np.concatenate([p.demand for p in parts]),
        )
    return usage


class UsageChange(NamedTuple):
    """What one decision changed in :class:`KeptUsage` (:meth:`KeptUsage.undo` takes it back)."""

    rows: np.ndarray | None  # machine rows of the changed demands (None: nothing changed)
    delta: np.ndarray | None  # +demand for placements that start, −demand for those that end
    before: list[tuple[int, Demand | None]]  # job → what was counted for it before
    was_running: np.ndarray  # job index → ran before the decision
    prev_run: np.ndarray  # the indices that ran before it


class KeptUsage:
    """Usage kept across decisions when it is exact (:func:`integral_usage`).

    Only jobs that stopped, started or were read again can change it; their
    old demand is subtracted and the new one added (one unbuffered add:
    exact in any order).  ``total`` keeps the per-resource sums the same way
    when every partial sum of an accepted usage is exact too (None otherwise).
    """

    def __init__(self, cluster: Cluster, n_jobs: int) -> None:
        H, R = cluster.capacity.shape
        self.usage = np.zeros((H, R))
        cap_total = cluster.capacity.sum(axis=0)
        self.total: np.ndarray | None = (
            np.zeros(R) if cap_total.max(initial=0.0) < EXACT_BOUND else None
        )
        self.counted: dict[int, Demand] = {}  # job -> the demand counted in ``usage``
        self.was_running = np.zeros(n_jobs, dtype=bool)
        self.prev_run = np.zeros(0, dtype=np.intp)

    def grow(self, n_jobs: int) -> None:
        more = n_jobs - len(self.was_running)
        if more > 0:
            self.was_running = np.concatenate((self.was_running, np.zeros(more, dtype=bool)))

    def apply(
        self,
        run: np.ndarray,
        read: np.ndarray,
        id_of: Sequence[int],
        new: Mapping[int, Demand],
        old: Mapping[int, Demand],
    ) -> UsageChange:
        """Count what running ``run`` (job indices) uses; ``read``: the indices read again
        this decision; a running job's demand is ``new[j]``, else ``old[j]``."""
        prev = self.prev_run
        if not read.size and run.shape == prev.shape and run.tobytes() == prev.tobytes():
            # the same jobs run as before and none was read again: nothing moved
            # (``was_running`` marks exactly ``prev``), so nothing is counted anew
            self.prev_run = run
            return UsageChange(None, None, [], self.was_running, prev)
        now_running = np.zeros(len(self.was_running), dtype=bool)
        now_running[run] = True
        moved = np.unique(  # each once, in index order (the adds are exact in any order)
            np.concatenate((prev[~now_running[prev]], run[~self.was_running[run]], read))
        )
        rows: list[np.ndarray] = []
        parts: list[np.ndarray] = []  # demands, negated below where ``minus``
        minus: list[bool] = []
        before: list[tuple[int, Demand | None]] = []
        counted = self.counted
        for d, is_on in zip(moved.tolist(), now_running[moved].tolist(), strict=True):
            j = id_of[d]
            had = counted.get(j)
            now = (new[j] if j in new else old[j]) if is_on else None
            if had is None:
                if now is not None:
                    rows.append(now.machines)
                    parts.append(now.demand)
                    minus.append(False)
                    before.append((j, None))
                    counted[j] = now
            elif now is None or had.demand is not now.demand:
                rows.append(had.machines)
                parts.append(had.demand)
                minus.append(True)
                before.append((j, had))
                if now is None:
                    del counted[j]
                else:
                    rows.append(now.machines)
                    parts.append(now.demand)
                    minus.append(False)
                    counted[j] = now
        if rows:
            at_rows, by = np.concatenate(rows), np.concatenate(parts)
            if any(minus):  # −demand for what stopped: one negation over their rows
                neg = np.repeat(minus, [len(r) for r in rows])
                np.negative(by, out=by, where=neg[:, None])
            self._add(at_rows, by)
            change = UsageChange(at_rows, by, before, self.was_running, prev)
        else:
            change = UsageChange(None, None, before, self.was_running, prev)
        self.was_running, self.prev_run = now_running, run
        return change

    def undo(self, ch: UsageChange) -> None:
        """Take back what :meth:`apply` did (exactly: the sums are integral)."""
        if ch.rows is not None:
            self._add(ch.rows, -ch.delta)  # type: ignore[operator]  # set with rows
        for j, had in reversed(ch.before):
            if had is None:
                del self.counted[j]
            else:
                self.counted[j] = had
        self.was_running, self.prev_run = ch.was_running, ch.prev_run

    def _add(self, rows: np.ndarray, by: np.ndarray) -> None:
        if self.total is not None:
            # exact in any order (integral): einsum's pass, not sum(axis=0)'s strided one
            self.total += np.einsum("ij->j", by)
        H, R = self.usage.shape
        if rows.size * 2 < H:  # on the flat array: np.add.at's fast 1-d path (exact anyway)
            cells = (rows[:, None] * R + np.arange(R)).ravel()
            np.add.at(self.usage.reshape(-1), cells, by.ravel())
        else:  # many rows: bincount's pass over H machines is cheaper than np.add.at
            for r in range(R):
                self.usage[:, r] += np.bincount(rows, weights=by[:, r], minlength=H)
