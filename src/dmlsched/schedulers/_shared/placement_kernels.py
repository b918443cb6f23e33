"""Compiled kernels of gang placement (numba): round-robin next fit and ``take``.

FIFO places 100,000 gangs task by task on 10,000 machines; as NumPy calls on
one machine row at a time (a probe per task, a fancy-indexed update per
placement) the call overhead was most of its run.  Each kernel is the plain
loop its caller's docstring describes, with the same float operations in the
same order (so the same placements and the same free capacity, bit for bit;
``tests/schedulers/test_placement_kernels.py`` checks them against the NumPy
versions); ``cache=True`` keeps the compiled code beside the module.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["packed_fit", "round_robin_fit", "take_rows"]


@njit(cache=True)
def _task_order(workers, ps):  # type: ignore[no-untyped-def]
    """``placement.task_order`` as a boolean array (True = PS)."""
    order = np.empty(workers + ps, dtype=np.bool_)
    n = 0
    placed = 0
    for k in range(workers):
        while placed < ps and placed * workers <= k * ps:
            order[n] = True
            n += 1
            placed += 1
        order[n] = False
        n += 1
    while placed < ps:
        order[n] = True
        n += 1
        placed += 1
    return order


@njit(cache=True)
def round_robin_fit(free, wd, pd, workers, ps, start, eps):  # type: ignore[no-untyped-def]
    """Round-robin placement of ``workers`` + ``ps`` tasks from pointer ``start``.

    Tasks go in ``task_order`` (PSs interleaved among workers); a task goes to
    the first machine at or after the pointer (cyclically) whose room —
    ``free``'s row, less what earlier tasks of this gang took there — is at
    least its demand less ``eps`` in every resource; the pointer moves past
    it.  Returns (ok, machines in increasing order, workers and PSs on each,
    pointer); ``ok`` is False when some task fits nowhere.  ``free`` is not
    modified.
    """
    H, R = free.shape
    order = _task_order(workers, ps)
    n = order.shape[0]
    used = np.empty(n, dtype=np.int64)  # machines this gang touched, in first-use order
    left = np.empty((n, R))  # their room left
    wcnt = np.zeros(n, dtype=np.int64)
    scnt = np.zeros(n, dtype=np.int64)
    n_used = 0
    need_w = wd - eps
    need_p = pd - eps
    h = start % H
    for t in range(n):
        need = need_p if order[t] else need_w
        d = pd if order[t] else wd
        found = -1
        slot = -1
        for k in range(H):
            m = (h + k) % H
            u = -1
            for i in range(n_used):
                if used[i] == m:
                    u = i
                    break
            ok = True
            for r in range(R):
                room = left[u, r] if u >= 0 else free[m, r]
                if not room >= need[r]:
                    ok = False
                    break
            if ok:
                found = m
                slot = u
                break
        if found < 0:
            return False, used[:0], wcnt[:0], scnt[:0], h
        if slot < 0:
            slot = n_used
            used[slot] = found
            for r in range(R):
                left[slot, r] = free[found, r]
            n_used += 1
        for r in range(R):
            left[slot, r] = left[slot, r] - d[r]
        if order[t]:
            scnt[slot] += 1
        else:
            wcnt[slot] += 1
        h = (found + 1) % H
    rank = np.argsort(used[:n_used], kind="mergesort")
    return True, used[:n_used][rank], wcnt[:n_used][rank], scnt[:n_used][rank], h


@njit(cache=True)
def take_rows(free, machines, workers, ps, wd, pd, sign):  # type: ignore[no-untyped-def]
    """``free[m] -= sign · (w_m·wd + s_m·pd)`` for each machine of a placement, in place."""
    R = free.shape[1]
    for i in range(machines.shape[0]):
        m = machines[i]
        for r in range(R):
            free[m, r] = free[m, r] - sign * (workers[i] * wd[r] + ps[i] * pd[r])


@njit(cache=True)
def _fit_row(free, left, slot, m, d, eps, big):  # type: ignore[no-untyped-def]
    """How many tasks of demand ``d`` machine ``m`` still fits: min over the resources
    ``d`` needs of ⌊(room + eps) / d⌋ (``big`` when it needs none)."""
    best = np.inf
    pos = False
    for r in range(d.shape[0]):
        if d[r] > eps:
            room = left[slot, r] if slot >= 0 else free[m, r]
            v = np.floor((room + eps) / d[r])
            pos = True
            if v < best:
                best = v
    if not pos:
        return big
    return np.int64(best)


@njit(cache=True)
def _first_most(free, left, slot_of, ref, cls, d, eps, big, below):  # type: ignore[no-untyped-def]
    """(machine, count): the first machine that fits the most tasks of demand ``d``
    (``np.argmax`` of every machine's :func:`_fit_row`).  A machine is skipped as soon
    as one resource shows it cannot beat the best so far; an untouched machine whose
    row equals its reference row bit for bit reuses the reference row's count.  With
    ``below`` (every row of ``free`` ≤ its reference row), no machine fits more than
    the best reference row, so the scan stops at the first machine that does."""
    H, R = free.shape
    C = ref.shape[0]
    ref_fit = np.empty(C, dtype=np.int64)
    top = np.int64(-1)
    for c in range(C):
        ref_fit[c] = _fit_row(ref, left, -1, c, d, eps, big)
        if ref_fit[c] > top:
            top = ref_fit[c]
    stop = below and C > 0
    best_m = -1
    best = np.int64(0)
    for m in range(H):
        s = slot_of[m]
        if s < 0 and C > 0:
            c = cls[m]
            same = True
            for r in range(R):
                if free[m, r] != ref[c, r]:
                    same = False
                    break
            if same:
                f = ref_fit[c]
                if best_m < 0 or f > best:
                    best_m = m
                    best = f
                    if stop and best >= top:
                        break
                continue
        if best_m < 0:
            best_m = m
            best = _fit_row(free, left, s, m, d, eps, big)
            if stop and best >= top:
                break
            continue
        low = False  # some resource caps this machine at ≤ best: it cannot win
        for r in range(R):
            if d[r] > eps:
                room = left[s, r] if s >= 0 else free[m, r]
                if np.floor((room + eps) / d[r]) <= best:
                    low = True
                    break
        if not low:
            f = _fit_row(free, left, s, m, d, eps, big)
            if f > best:
                best_m = m
                best = f
                if stop and best >= top:
                    break
    return best_m, best


@njit(cache=True)
def _slot(free, left, slot_of, machine, m, used):  # type: ignore[no-untyped-def]
    """Machine ``m``'s slot in the placement, opened (its free row copied) on first use."""
    s = slot_of[m]
    if s < 0:
        s = used
        slot_of[m] = s
        machine[s] = m
        left[s, :] = free[m, :]
        used += 1
    return s, used


@njit(cache=True)
def packed_fit(free, ref, cls, wd, pd, workers, ps, eps, big, below):  # type: ignore[no-untyped-def]
    """Consolidated placement of ``workers`` + ``ps`` tasks (see ``place_packed``).

    Workers go, a batch at a time, to the first machine that fits the most of
    them; each PS to the lowest-numbered machine holding workers that still
    fits one, else to the first machine that fits the most.  ``free`` is not
    modified.  ``ref``/``cls`` (C × R reference rows, each machine's row index;
    C = 0: none) only save work: an untouched machine equal to its reference
    row has its count; ``below`` (every row of ``free`` ≤ its reference row)
    lets a scan stop at the first machine that fits as many as the best
    reference row.  Returns (ok, machines, workers per machine, PSs per
    machine) over the machines used, in first-use order.
    """
    H, R = free.shape
    n = workers + ps
    slot_of = np.full(H, -1, dtype=np.int64)
    machine = np.empty(n + 1, dtype=np.int64)
    left = np.empty((n + 1, R))
    wcnt = np.zeros(n + 1, dtype=np.int64)
    scnt = np.zeros(n + 1, dtype=np.int64)
    used = 0
    need = workers
    while need > 0:
        m, f = _first_most(free, left, slot_of, ref, cls, wd, eps, big, below)
        if m < 0 or f <= 0:
            return False, machine[:0], wcnt[:0], scnt[:0]
        k = min(f, need)
        s, used = _slot(free, left, slot_of, machine, m, used)
        for r in range(R):
            left[s, r] = left[s, r] - k * wd[r]
        wcnt[s] += k
        need -= k
    for _ in range(ps):
        chosen = -1
        for s in range(used):
            lower = wcnt[s] > 0 and (chosen < 0 or machine[s] < chosen)
            if lower and _fit_row(free, left, s, machine[s], pd, eps, big) > 0:
                chosen = machine[s]
        if chosen < 0:
            chosen, f = _first_most(free, left, slot_of, ref, cls, pd, eps, big, below)
            if chosen < 0 or f <= 0:
                return False, machine[:0], wcnt[:0], scnt[:0]
        s, used = _slot(free, left, slot_of, machine, chosen, used)
        for r in range(R):
            left[s, r] = left[s, r] - pd[r]
        scnt[s] += 1
    return True, machine[:used], wcnt[:used], scnt[:used]
