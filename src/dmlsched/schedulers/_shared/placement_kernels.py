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

__all__ = [
    "gang_pass",
    "packed_fit",
    "packed_fits_many",
    "round_robin_fit",
    "round_robin_run",
    "take_rows",
    "take_segments",
]


@njit(cache=True)
def _task_order(workers, ps):
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
def round_robin_fit(free, wd, pd, workers, ps, start, eps):
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
def take_rows(free, machines, workers, ps, wd, pd, sign):
    """``free[m] -= sign · (w_m·wd + s_m·pd)`` for each machine of a placement, in place."""
    _take_one(free, machines, workers, ps, wd, pd, sign)


@njit(cache=True)
def _fit_row(free, left, slot, m, d, eps, big):
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
def _first_most(free, left, slot_of, ref, cls, d, eps, big, below):
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
def _slot(free, left, slot_of, machine, m, used):
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
def packed_fit(free, ref, cls, wd, pd, workers, ps, eps, big, below):
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
    slot_of = np.full(free.shape[0], -1, dtype=np.int64)
    return _packed(free, ref, cls, wd, pd, workers, ps, eps, big, below, slot_of)


@njit(cache=True)
def _packed(free, ref, cls, wd, pd, workers, ps, eps, big, below, slot_of):
    """:func:`packed_fit` with its per-machine scratch ``slot_of`` (all -1) passed in:
    filling 10,000 entries cost more than placing a gang on an empty cluster.  Every
    entry it sets is -1 again on return."""
    R = free.shape[1]
    n = workers + ps
    machine = np.empty(n + 1, dtype=np.int64)
    left = np.empty((n + 1, R))
    wcnt = np.zeros(n + 1, dtype=np.int64)
    scnt = np.zeros(n + 1, dtype=np.int64)
    used = 0
    need = workers
    ok = True
    while need > 0:
        m, f = _first_most(free, left, slot_of, ref, cls, wd, eps, big, below)
        if m < 0 or f <= 0:
            ok = False
            break
        k = min(f, need)
        s, used = _slot(free, left, slot_of, machine, m, used)
        for r in range(R):
            left[s, r] = left[s, r] - k * wd[r]
        wcnt[s] += k
        need -= k
    for _ in range(ps if ok else 0):
        chosen = -1
        for s in range(used):
            lower = wcnt[s] > 0 and (chosen < 0 or machine[s] < chosen)
            if lower and _fit_row(free, left, s, machine[s], pd, eps, big) > 0:
                chosen = machine[s]
        if chosen < 0:
            chosen, f = _first_most(free, left, slot_of, ref, cls, pd, eps, big, below)
            if chosen < 0 or f <= 0:
                ok = False
                break
        s, used = _slot(free, left, slot_of, machine, chosen, used)
        for r in range(R):
            left[s, r] = left[s, r] - pd[r]
        scnt[s] += 1
    for s in range(used):
        slot_of[machine[s]] = -1
    if not ok:
        return False, machine[:0], wcnt[:0], scnt[:0]
    return True, machine[:used], wcnt[:used], scnt[:used]


# ------------------------------------------------------------------ batches
# One call per decision instead of one (or two) per job: a compiled call costs
# about a microsecond to dispatch and box, as much as placing a small gang.


@njit(cache=True)
def _take_one(free, machines, workers, ps, wd, pd, sign):
    """The loop of :func:`take_rows` and of the batch kernels (inlined into each)."""
    R = free.shape[1]
    for i in range(machines.shape[0]):
        m = machines[i]
        for r in range(R):
            free[m, r] = free[m, r] - sign * (workers[i] * wd[r] + ps[i] * pd[r])


@njit(cache=True)
def take_segments(free, pool_m, pool_w, pool_s, starts, lens, wd, pd, rows, sign):
    """:func:`take_rows` for several placements in turn: placement ``i`` is
    ``pool_*[starts[i]:starts[i] + lens[i]]`` with demands ``wd[rows[i]]``, ``pd[rows[i]]``."""
    for i in range(starts.shape[0]):
        a = starts[i]
        b = a + lens[i]
        _take_one(free, pool_m[a:b], pool_w[a:b], pool_s[a:b], wd[rows[i]], pd[rows[i]], sign)


@njit(cache=True)
def packed_fits_many(free, ref, cls, wd, pd, rows, ws, ss, eps, big, below, slot_of):
    """Whether :func:`packed_fit` places each gang ``i`` (``ws[i]`` workers, ``ss[i]``
    PSs, demands ``wd[rows[i]]``, ``pd[rows[i]]``) on ``free``, each on its own."""
    n = rows.shape[0]
    out = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        r = rows[i]
        out[i] = _packed(free, ref, cls, wd[r], pd[r], ws[i], ss[i], eps, big, below, slot_of)[0]
    return out


@njit(cache=True)
def round_robin_run(free, wd, pd, rows, ws, ss, start, eps):
    """FIFO's queue pass: gangs ``i = 0, 1, …`` in turn, each placed by
    :func:`round_robin_fit` from the pointer the previous one left and taken from
    ``free`` (in place, as :func:`take_rows`), until one has no workers or does not
    fit.  Returns (how many were placed, their machines, workers and PSs back to
    back, each gang's offset into them (n + 1 entries), the pointer)."""
    n = rows.shape[0]
    total = 0
    for i in range(n):
        total += ws[i] + ss[i]
    out_m = np.empty(total, dtype=np.int64)
    out_w = np.empty(total, dtype=np.int64)
    out_s = np.empty(total, dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    h = start
    done = 0
    for i in range(n):
        if ws[i] <= 0:
            break
        a = wd[rows[i]]
        b = pd[rows[i]]
        ok, machines, w_cnt, s_cnt, nh = round_robin_fit(free, a, b, ws[i], ss[i], h, eps)
        if not ok:
            break
        _take_one(free, machines, w_cnt, s_cnt, a, b, 1.0)
        o = offsets[i]
        k = machines.shape[0]
        out_m[o : o + k] = machines
        out_w[o : o + k] = w_cnt
        out_s[o : o + k] = s_cnt
        offsets[i + 1] = o + k
        h = nh
        done += 1
    return done, out_m, out_w, out_s, offsets, h


@njit(cache=True)
def gang_pass(
    capacity, total, need, wd, pd, rows, ws, ss, kept_start, kept_len,
    pool_m, pool_w, pool_s, ref, cls, eps, big, below, slot_of,
):  # fmt: skip
    """``gang.gang_allocate`` for consolidated placement, candidates in priority order.

    Candidate ``i`` (per-job arrays at ``rows[i]``: aggregate demand ``need``,
    demands ``wd``/``pd``, gang of ``ws`` workers + ``ss`` PSs) is selected when its need
    fits what earlier selected ones left of ``total`` (the cluster's aggregate
    capacity, within ``eps``); ``free`` starts as ``capacity``; selected
    candidates with a placement to keep (``kept_len[rows[i]]`` > 0: ``pool_*``
    from ``kept_start[rows[i]]``) are taken from it first, in order, then the other
    selected ones are placed by :func:`packed_fit` (with ``slot_of``, as
    :func:`_packed`) and taken, in order.  Returns (status per candidate: 0 not
    selected, 1 kept, 2 placed, 3 selected but not placed; the new placements'
    machines (increasing), workers and PSs back to back; each candidate's offset
    into them (n + 1 entries)).
    """
    n = rows.shape[0]
    R = capacity.shape[1]
    left = total.copy()
    status = np.zeros(n, dtype=np.int8)
    for i in range(n):
        nd = need[rows[i]]
        fits = True
        for r in range(R):
            if not nd[r] <= left[r] + eps:
                fits = False
                break
        if fits:
            for r in range(R):
                left[r] = left[r] - nd[r]
            status[i] = 3
    free = capacity.copy()
    for i in range(n):
        if status[i] == 3 and kept_len[rows[i]] > 0:
            a = kept_start[rows[i]]
            b = a + kept_len[rows[i]]
            _take_one(free, pool_m[a:b], pool_w[a:b], pool_s[a:b], wd[rows[i]], pd[rows[i]], 1.0)
            status[i] = 1
    total_tasks = 0
    for i in range(n):
        if status[i] == 3:
            total_tasks += ws[rows[i]] + ss[rows[i]]
    out_m = np.empty(total_tasks, dtype=np.int64)
    out_w = np.empty(total_tasks, dtype=np.int64)
    out_s = np.empty(total_tasks, dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    o = 0
    for i in range(n):
        offsets[i] = o
        if status[i] != 3:
            continue
        a = wd[rows[i]]
        b = pd[rows[i]]
        ok, machines, w_cnt, s_cnt = _packed(
            free, ref, cls, a, b, ws[rows[i]], ss[rows[i]], eps, big, below, slot_of
        )
        if not ok:
            continue
        rank = np.argsort(machines, kind="mergesort")
        machines = machines[rank]
        w_cnt = w_cnt[rank]
        s_cnt = s_cnt[rank]
        _take_one(free, machines, w_cnt, s_cnt, a, b, 1.0)
        k = machines.shape[0]
        out_m[o : o + k] = machines
        out_w[o : o + k] = w_cnt
        out_s[o : o + k] = s_cnt
        o += k
        status[i] = 2
    offsets[n] = o
    return status, out_m[:o], out_w[:o], out_s[:o], offsets
