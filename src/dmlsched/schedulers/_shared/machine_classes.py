"""Interchangeable machines: group identical rows, and split a class's bundle back.

Machines whose rows of a key matrix (e.g. residual capacity and price of the
resources a job uses) are equal are interchangeable in any per-machine
linear program whose per-machine rows and costs depend only on that key.
Such an LP can be solved with one variable per class and the class's rows
scaled by its size n_c (:class:`MachineClasses`); :func:`fill_classes`
(or the simpler :func:`split_bundles`) turns a class solution back into a
per-machine one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmlsched.numerics import matmat

__all__ = ["MachineClasses", "fill_classes", "machine_classes", "split_bundles"]


@dataclass(frozen=True)
class MachineClasses:
    """``of[h]`` = class of machine h; classes are numbered by their lowest machine id.

    ``first[c]`` is class c's lowest machine id (increasing in c), ``count[c]``
    its size.
    """

    first: np.ndarray
    of: np.ndarray
    count: np.ndarray
    members: np.ndarray  # machine ids grouped by class, ascending within a class
    starts: np.ndarray  # class c's members are members[starts[c] : starts[c + 1]]

    @property
    def n(self) -> int:
        return int(self.first.size)


def machine_classes(key: np.ndarray) -> MachineClasses:
    """Classes of equal rows of ``key`` (H × k, compared bit for bit)."""
    key = np.ascontiguousarray(key, dtype=float)
    H = key.shape[0]
    if H == 0:
        empty = np.zeros(0, dtype=np.int64)
        return MachineClasses(empty, empty, empty, empty, np.zeros(1, dtype=np.int64))
    from dmlsched.schedulers._shared.kernels import group_rows  # numba: imported when used

    # rows hashed from their bits (equal rows, equal hashes) and checked bit for bit,
    # in one compiled loop; a hash shared by different rows falls back to sorting rows
    first, of, count, members, starts, ok = group_rows(key.view(np.uint64))
    if ok:
        return MachineClasses(first, of, count, members, starts)
    rows = key.view(np.dtype((np.void, key.dtype.itemsize * key.shape[1]))).ravel()
    _, first, inv, count = np.unique(
        rows, return_index=True, return_inverse=True, return_counts=True
    )
    order = np.argsort(first, kind="stable")  # renumber classes by their lowest machine id
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    of = rank[inv.ravel()]
    count = count[order]
    starts = np.concatenate([[0], np.cumsum(count)])
    return MachineClasses(first[order], of, count, np.argsort(of, kind="stable"), starts)


def split_bundles(
    classes: MachineClasses, bundle: np.ndarray, use: np.ndarray, room: np.ndarray
) -> np.ndarray:
    """Per-machine amounts (H × k) from class amounts ``bundle`` (C × k).

    ``use`` (C × R) is the resource use of class c's whole bundle and ``room``
    (C × R) one machine's room.  Each class fills its machines in id order
    with the largest fraction f_c = min_r room/use (≤ 1) of its bundle that
    fits one machine, the last one taking the rest; if the class rows
    ``use ≤ n_c · room`` hold, every machine's ``f · use ≤ room`` does.  (If
    they hold only to a solver tolerance, f_c is raised to 1/n_c, i.e. an
    even split, violating each machine's rows by no more than the class's.)
    """
    use = np.asarray(use, dtype=float)
    room = np.maximum(np.asarray(room, dtype=float), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(use > 0, room / np.where(use > 0, use, 1.0), np.inf)
    share = np.minimum(ratio.min(axis=1, initial=np.inf), 1.0)
    share = np.maximum(share, 1.0 / classes.count)
    order = classes.members  # machines by class, then id
    cls = classes.of[order]
    j = np.arange(order.size) - classes.starts[cls]  # rank of the machine within its class
    left = 1.0 - j * share[cls]
    frac = np.clip(left, 0.0, share[cls])
    frac[left <= 1e-12] = 0.0
    out = np.zeros((order.size, bundle.shape[1]))
    out[order] = frac[:, None] * np.asarray(bundle, dtype=float)[cls]
    return out


def fill_classes(
    classes: MachineClasses,
    amount: np.ndarray,
    demand: np.ndarray,
    room: np.ndarray,
    apart: bool = False,
    tol: float = 1e-9,
) -> np.ndarray:
    """Per-machine amounts (H × k) of k item kinds from class totals ``amount`` (C × k).

    ``demand`` (k × R) is one item's use of each resource, ``room`` (C × R)
    one machine's room in each class.  Kind by kind, each class's items go
    on its machines in id order, each machine taking as many as its
    remaining room holds (first fit, fractional), so few machines hold items
    and most of them are full in some resource, as in a vertex of the
    per-machine LP.  With ``apart``, a kind goes to machines holding no items
    yet first and to the others' leftover room only when those run out.
    A class whose items do not all fit this way (possible with several
    binding resources even when ``amount @ demand ≤ n_c room``) falls back
    to :func:`split_bundles` for that class.
    """
    from dmlsched.schedulers._shared.kernels import fill_members  # numba: imported when used

    amount = np.ascontiguousarray(amount, dtype=float)
    demand = np.ascontiguousarray(demand, dtype=float)
    room = np.maximum(np.asarray(room, dtype=float), 0.0)
    # one compiled loop over the classes of several machines (tiny arrays)
    out, failed = fill_members(
        amount, demand, room, classes.count, classes.members, classes.starts, apart, tol
    )
    # a one-machine class's row is the machine's row: it takes the whole amount
    single = np.flatnonzero((classes.count == 1) & np.any(amount > 0, axis=1))
    out[classes.first[single]] = amount[single]
    fallback = np.flatnonzero(failed)
    if fallback.size:
        sub = np.zeros_like(amount)
        sub[fallback] = amount[fallback]
        per = split_bundles(classes, sub, matmat(sub, demand), room)
        rows = np.isin(classes.of, fallback)
        out[rows] = per[rows]
    return out
