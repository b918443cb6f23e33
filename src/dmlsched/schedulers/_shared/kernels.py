"""Compiled small-array kernels of PD-ORS (numba), imported only where used.

PD-ORS prices tens of thousands of (job, slot) cells, each a handful of
loops over tens of machine classes and a few workload bounds; as NumPy
array operations they cost more in call overhead than in arithmetic.  Each
kernel here is the plain loop its caller's docstring describes (run
without compiling under ``NUMBA_DISABLE_JIT=1``); ``cache=True`` keeps the
compiled code beside the module, so only the first run on a machine pays
for compiling (docs/benchmarks.md has how long it takes).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "class_fits",
    "class_rounding_ok",
    "cover_pass",
    "fill_members",
    "fill_pair",
    "group_machines",
    "group_rows",
    "internal_fit",
    "min_plus",
    "min_plus_rows",
    "regroup",
    "rounding_ok",
    "spread_counts",
    "trim_workers",
    "trim_workers_in_place",
]

_REL = 1e-9  # certificate: pass cost ≤ bound · (1 + _REL)
_FEAS = 1e-9


@njit(cache=True)
def _vertices(cap, a, b):
    """(W, S, valid) of the candidate vertices of {aW + bS ≤ cap_c, W, S ≥ 0} per class:
    the intersections of pairs of its R + 2 edges (two axes, one edge per resource)."""
    C, R = cap.shape
    E = R + 2
    V = E * (E - 1) // 2
    vw = np.zeros((C, V))
    vs = np.zeros((C, V))
    valid = np.zeros((C, V), dtype=np.bool_)
    p = np.zeros(E)
    q = np.zeros(E)
    p[0] = 1.0
    q[1] = 1.0
    p[2:] = a
    q[2:] = b
    for c in range(C):
        v = 0
        for i in range(E):
            ki = cap[c, i - 2] if i >= 2 else 0.0
            for j in range(i + 1, E):
                kj = cap[c, j - 2] if j >= 2 else 0.0
                det = p[i] * q[j] - p[j] * q[i]
                if abs(det) > 1e-12:
                    w = (ki * q[j] - kj * q[i]) / det
                    s = (p[i] * kj - p[j] * ki) / det
                    good = w >= -_FEAS and s >= -_FEAS
                    for r in range(R):
                        if good and w * a[r] + s * b[r] > cap[c, r] + _FEAS * max(1.0, cap[c, r]):
                            good = False
                    if good:
                        vw[c, v] = max(w, 0.0)
                        vs[c, v] = max(s, 0.0)
                        valid[c, v] = True
                v += 1
    return vw, vs, valid


@njit(cache=True)
def _order(cost, tie):
    """Indices by ``cost``, then ``tie``, then index (two stable sorts)."""
    by_tie = np.argsort(tie, kind="mergesort")
    return by_tie[np.argsort(cost[by_tie], kind="mergesort")]


@njit(cache=True)
def cover_pass(count, room, a, b, cost_w, cost_s, ms, ratio, sync, tie_w, tie_s):
    """:func:`~dmlsched.schedulers._shared.cover_lp.sorted_pass` on class capacities
    count_c · max(room_c, 0) (C × R; NumPy's ``maximum``: −0 and NaN kept)."""
    C, R = room.shape
    cap = np.empty((C, R))
    for c in range(C):
        for r in range(R):
            x = room[c, r]
            cap[c, r] = count[c] * (x if x >= 0.0 or x != x else 0.0)
    M = ms.size
    order_w = _order(cost_w, tie_w)
    order_s = _order(cost_s, tie_s)
    ok = np.zeros(M, dtype=np.bool_)
    obj = np.zeros(M)
    X = np.zeros((M, 2 * C))  # per bound: W_1..W_C, then S_1..S_C
    W = X[:, :C]
    S = X[:, C:]
    w_max = np.full(C, np.inf)
    for c in range(C):
        for r in range(R):
            if a[r] > 0:
                w_max[c] = min(w_max[c], cap[c, r] / a[r])
    vw, vs, valid = _vertices(cap, a, b)
    # the classes' part of the bound depends on (λ_w, μ) only, which change only where
    # the marginal worker or PS class does: computed once per pair in a row
    seen = False
    seen_w = 0.0
    seen_mu = 0.0
    seen_total = 0.0
    for k in range(M):
        m = ms[k]
        # workers, cheapest classes first; λ_w = the marginal worker's cost
        left = m
        lam_w = 0.0
        for t in range(C):
            if left <= 0.0:  # every later class would take 0
                break
            c = order_w[t]
            take = min(max(left, 0.0), w_max[c])
            if take > 0:
                W[k, c] = take
                left -= take
                lam_w = cost_w[c]
        if left > _FEAS * max(1.0, m):
            continue
        need = ratio * m
        one = False  # async: the "at least one PS" row binds instead of the ratio row
        if not sync:
            if need < 1.0:
                need = 1.0
                one = True
            if need > m + _FEAS * max(1.0, m):  # (3.5): ΣS ≤ ΣW
                continue
        # PSs in the room the workers left, cheapest first; μ = the marginal PS's cost
        left = need
        mu = 0.0
        for t in range(C):
            if left <= 0.0:  # every later class would take 0
                break
            c = order_s[t]
            s_max = np.inf
            for r in range(R):
                if b[r] > 0:
                    s_max = min(s_max, (cap[c, r] - W[k, c] * a[r]) / b[r])
            take = min(max(left, 0.0), max(s_max, 0.0))
            if take > 0:
                S[k, c] = take
                left -= take
                mu = cost_s[c]
        if left > _FEAS * max(1.0, need):
            continue
        o = 0.0
        for c in range(C):
            o += cost_w[c] * W[k, c] + cost_s[c] * S[k, c]
        obj[k] = o
        # the Lagrangian bound D(λ, μ) (module docstring)
        mu2 = 0.0 if one else mu
        mu1 = mu - mu2
        lam = lam_w + ratio * mu2
        if seen and lam_w == seen_w and mu == seen_mu:
            total = seen_total
        else:
            total = 0.0
            for c in range(C):
                u = lam_w - cost_w[c]  # λ − κμ₂ − cw_c
                v = mu - cost_s[c]  # μ₁ + μ₂ − cs_c
                best = -np.inf
                for j in range(vw.shape[1]):
                    if valid[c, j]:
                        best = max(best, u * vw[c, j] + v * vs[c, j])
                total += best
            seen, seen_w, seen_mu, seen_total = True, lam_w, mu, total
        bound = lam * m + mu1 - total
        ok[k] = o <= bound + _REL * max(abs(bound), 1e-300)
    return ok, obj, X


@njit(cache=True)
def min_plus(theta, prev):
    """Eq. (21) forward over the rows of ``theta`` from Φ₋₁ = ``prev``
    (:func:`~dmlsched.schedulers._shared.primal_dual.forward_dp`): Φ[s, k] =
    min over j ≤ k of θ[s, j] + Φ[s−1, k−j], and the first minimizing j (as
    ``np.argmin``); columns j beyond the last finite θ of any row are skipped."""
    n, q1 = theta.shape
    phi = np.empty((n, q1))
    choice = np.zeros((n, q1), dtype=np.int64)
    min_plus_rows(theta, phi, choice, 0, n, prev)
    return phi, choice


@njit(cache=True)
def min_plus_rows(theta, phi, choice, lo, hi, init):
    """:func:`min_plus` in place: rows ``lo`` … ``hi − 1`` of ``phi`` and ``choice`` from
    ``theta``'s, each from the row before it (``init`` before row 0) — the same
    sums in the same order, without allocating (PD-ORS's DP adds one slot at a time)."""
    q1 = theta.shape[1]
    band = 1
    for s in range(lo, hi):
        for j in range(q1):
            if np.isfinite(theta[s, j]) and j + 1 > band:
                band = j + 1
    for s in range(lo, hi):
        prev = phi[s - 1] if s > 0 else init
        for k in range(q1):
            best = np.inf
            arg = 0
            for j in range(min(k + 1, band)):
                v = theta[s, j] + prev[k - j]
                if v < best:
                    best = v
                    arg = j
            phi[s, k] = best
            choice[s, k] = arg


@njit(cache=True)
def trim_workers(cand, order, max_workers):
    """:meth:`~dmlsched.schedulers.cluster.pdors.PdorsOracle._trim`: in each row
    (w_1..w_n, s_1..s_n) with more than ``max_workers`` workers, drop the
    surplus from the machines in ``order`` (costliest first); a copy."""
    out = cand.copy()
    trim_workers_in_place(out, order, max_workers)
    return out


@njit(cache=True)
def trim_workers_in_place(cand, order, max_workers):
    """:func:`trim_workers` writing into ``cand`` itself (a batch nobody else holds);
    returns it."""
    n = cand.shape[1] // 2
    for i in range(cand.shape[0]):
        excess = -max_workers
        for h in range(n):
            excess += cand[i, h]
        for h in order:
            if excess <= 0:
                break
            cut = min(excess, cand[i, h])
            cand[i, h] -= cut
            excess -= cut
    return cand


@njit(cache=True)
def rounding_ok(cand, m, a, b, ub_tol, max_workers, sync, gamma, b_ext, b_int, ps_bw, tol):
    """:meth:`~dmlsched.schedulers.cluster.pdors.PdorsOracle._round`'s test of each
    row (w_1..w_n, s_1..s_n): the workload row (26), the packing rows (24)
    against ``ub_tol`` (n × R) and the engine's rules (Eq. (2)/(4); async
    (3.2), (3.4), (3.5))."""
    k, n2 = cand.shape
    n = n2 // 2
    R = a.size
    ok = np.zeros(k, dtype=np.bool_)
    for i in range(k):
        tw = 0.0
        ts = 0.0
        n_ps = 0
        for h in range(n):
            tw += cand[i, h]
            ts += cand[i, n + h]
            if cand[i, n + h] > 0:
                n_ps += 1
        if tw < m - tol or tw < 1 or tw > max_workers:
            continue
        good = True
        for h in range(n):
            for r in range(R):
                if cand[i, h] * a[r] + cand[i, n + h] * b[r] > ub_tol[h, r]:
                    good = False
        if not good:
            continue
        if sync:
            ok[i] = np.ceil(tw / gamma - tol) <= ts
            continue
        load = 0.0
        for h in range(n):
            per = n_ps * b_ext + (b_int - b_ext if cand[i, n + h] > 0 else 0.0)
            load += cand[i, h] * per
        ok[i] = ts >= 1 and ts <= tw and load <= ts * ps_bw * (1 + 1e-9)
    return ok


@njit(cache=True)
def class_fits(qw, rw, qs, rs, n, a, b, ub):
    """Whether class c's ``n`` machines (one machine's room ``ub``) can hold W workers
    and S PSs with ⌊W/n⌋ or ⌊W/n⌋ + 1 workers and ⌊S/n⌋ or ⌊S/n⌋ + 1 PSs each (⌊W/n⌋
    = ``qw``, W mod n = ``rw``, ⌊S/n⌋ = ``qs``, S mod n = ``rs``): 1 if in any
    arrangement (a machine with both extras fits), 0 if only with no machine
    carrying both (checked on the arrangement with the fewest such machines: extra
    workers first, extra PSs last), -1 if not at all."""
    R = a.size
    top_w = qw + (1 if rw > 0 else 0)
    top_s = qs + (1 if rs > 0 else 0)
    fits = True
    for r in range(R):
        if top_w * a[r] + top_s * b[r] > ub[r]:
            fits = False
            break
    if fits:
        return 1
    # apart: both extras only on max(0, rw + rs - n) machines; the other kinds
    # of machine are each present when their count is positive
    for kind in range(4):
        dw = kind & 1
        ds = kind >> 1
        if dw == 1 and ds == 1:
            present = rw + rs > n
        elif dw == 1:
            present = min(rw, n - rs) > 0
        elif ds == 1:
            present = min(rs, n - rw) > 0
        else:
            present = n - rw - rs > 0
        if not present:
            continue
        for r in range(R):
            if (qw + dw) * a[r] + (qs + ds) * b[r] > ub[r]:
                return -1
    return 0


@njit(cache=True)
def spread_counts(total, n):
    """(⌊total/n⌋, total mod n) of a class total held as a float."""
    t = int(total + 0.5)
    return t // n, t - (t // n) * n


@njit(cache=True)
def class_rounding_ok(cand, count, m, a, b, ub_tol, max_workers, gamma, tol):
    """:meth:`~dmlsched.schedulers.cluster.pdors.PdorsOracle._draw_classes`'s test
    of each row of class totals (W_1..W_g, S_1..S_g) of a sync job: the workload row
    (26), Eq. (2)/(4), and the packing rows (24) of every machine of class c
    (``count[c]`` machines, one machine's room ``ub_tol[c]``) in some arrangement of
    ⌊total/n⌋ or ⌊total/n⌋ + 1 per machine (:func:`class_fits`)."""
    k, g2 = cand.shape
    g = g2 // 2
    ok = np.zeros(k, dtype=np.bool_)
    for i in range(k):
        tw = 0.0
        ts = 0.0
        for c in range(g):
            tw += cand[i, c]
            ts += cand[i, g + c]
        if tw < m - tol or tw < 1 or tw > max_workers:
            continue
        if np.ceil(tw / gamma - tol) > ts:
            continue
        good = True
        for c in range(g):
            n = count[c]
            qw, rw = spread_counts(cand[i, c], n)
            qs, rs = spread_counts(cand[i, g + c], n)
            if class_fits(qw, rw, qs, rs, n, a, b, ub_tol[c]) < 0:
                good = False
                break
        ok[i] = good
    return ok


@njit(cache=True)
def internal_fit(dem, ok, room, price, first):
    """PD-ORS's internal case (Fact 1) for every quantum count: the cheapest class
    (first in class order among equals) whose one machine's ``room`` (C × R)
    holds ``dem[k]``, its first machine and cost ``dem[k] · price_c``; cost ∞
    where none fits or ``ok[k]`` is False."""
    q1, R = dem.shape
    C = room.shape[0]
    cost = np.full(q1, np.inf)
    machine = np.zeros(q1, dtype=np.int64)
    for k in range(q1):
        if not ok[k]:
            continue
        for c in range(C):
            fits = True
            for r in range(R):
                if dem[k, r] > room[c, r]:
                    fits = False
                    break
            if fits:
                v = 0.0
                for r in range(R):
                    v += dem[k, r] * price[c, r]
                if v < cost[k]:
                    cost[k] = v
                    machine[k] = first[c]
    return cost, machine


@njit(cache=True)
def _fill_used(x, n, kind, demand, room, left, done):
    """Put up to ``left`` items of ``kind`` in the leftover room of rows 0 … n−1 of ``x``."""
    if n == 0 or left <= done:
        return left
    K, R = demand.shape
    taken = 0.0
    before = 0.0
    for i in range(n):
        cap = np.inf
        for r in range(R):
            if demand[kind, r] > 0:
                used = 0.0
                for j in range(K):
                    used += x[i, j] * demand[j, r]
                cap = min(cap, max(room[r] - used, 0.0) / demand[kind, r])
        take = min(max(left - before, 0.0), cap)
        x[i, kind] += take
        taken += take
        before += cap
    return max(left - taken, 0.0)


@njit(cache=True)
def fill_members(amount, demand, room, count, members, starts, apart, tol):
    """:func:`~dmlsched.schedulers._shared.machine_classes.fill_classes` for the
    classes with more than one machine: (H × k amounts, classes whose items
    did not fit this way)."""
    C, K = amount.shape
    H = members.size
    out = np.zeros((H, K))
    failed = np.zeros(C, dtype=np.bool_)
    for c in range(C):
        if count[c] <= 1:
            continue
        busy = False
        for kind in range(K):
            if amount[c, kind] > 0:
                busy = True
        if not busy:
            continue
        ids = members[starts[c] : starts[c + 1]]
        n_ids = ids.size
        left = amount[c].copy()
        x = np.zeros((n_ids, K))
        n_used = 0
        for kind in range(K):
            done = tol * max(1.0, amount[c, kind])
            if left[kind] <= done:
                continue
            if not apart:
                left[kind] = _fill_used(x, n_used, kind, demand, room[c], left[kind], done)
            put = 0
            cap = np.inf
            for r in range(demand.shape[1]):
                if demand[kind, r] > 0:
                    cap = min(cap, room[c, r] / demand[kind, r])
            n_fresh = n_ids - n_used
            if left[kind] > done and cap > 0 and n_fresh > 0:
                full = min(n_fresh, int(left[kind] // cap)) if np.isfinite(cap) else 0
                for i in range(n_used, n_used + full):
                    x[i, kind] = cap
                left[kind] -= full * cap
                put = full
                if left[kind] > done and full < n_fresh:
                    x[n_used + full, kind] = left[kind]
                    left[kind] = 0.0
                    put += 1
                elif left[kind] <= done:
                    left[kind] = 0.0
            if apart:
                left[kind] = _fill_used(x, n_used, kind, demand, room[c], left[kind], done)
            n_used += put
        for kind in range(K):
            if left[kind] > tol * max(1.0, amount[c, kind]):
                failed[c] = True
        if not failed[c]:
            for i in range(n_ids):
                out[ids[i]] = x[i]
    return out, failed


@njit(cache=True)
def fill_pair(x, demand, room, count, members, starts, first, apart, tol):
    """:func:`~dmlsched.schedulers._shared.machine_classes.fill_classes` of workers and
    PSs given as one class vector ``x`` (W_1..W_C, S_1..S_C), ``room`` already
    clipped at 0: the per-machine vector (w_1..w_H, s_1..s_H) and whether some
    class did not fit (the caller then takes :func:`fill_classes`'s fallback)."""
    C = count.size
    amount = np.empty((C, 2))
    for c in range(C):
        amount[c, 0] = x[c]
        amount[c, 1] = x[C + c]
    out, failed = fill_members(amount, demand, room, count, members, starts, apart, tol)
    for c in range(C):  # a one-machine class's row is the machine's row
        if count[c] == 1 and (amount[c, 0] > 0 or amount[c, 1] > 0):
            out[first[c], 0] = amount[c, 0]
            out[first[c], 1] = amount[c, 1]
    H = out.shape[0]
    flat = np.empty(2 * H)
    for h in range(H):
        flat[h] = out[h, 0]
        flat[H + h] = out[h, 1]
    return flat, failed.any()


@njit(cache=True)
def group_rows(bits):
    """Classes of equal rows of ``bits`` (H × k, a float matrix's bit patterns), for
    :func:`~dmlsched.schedulers._shared.machine_classes.machine_classes`: rows
    are hashed, sorted by hash (stably) and each run of equal hashes checked
    row by row.  Returns (first, of, count, members, starts, ok) with classes
    numbered by lowest row; ``ok`` is False if two different rows share a hash
    (the caller then groups whole rows instead)."""
    H, k = bits.shape
    h = np.empty(H, dtype=np.uint64)
    for i in range(H):
        x = np.uint64(14695981039346656037)
        for j in range(k):
            x = (x ^ bits[i, j]) * np.uint64(1099511628211)
        h[i] = x
    order = np.argsort(h, kind="mergesort")  # equal hashes stay in row order
    label = np.empty(H, dtype=np.int64)
    firsts = np.empty(H, dtype=np.int64)
    n = 0
    for t in range(H):
        i = order[t]
        if t == 0 or h[i] != h[order[t - 1]]:
            firsts[n] = i  # the lowest row of its run
            n += 1
        else:
            f = firsts[n - 1]
            for j in range(k):
                if bits[i, j] != bits[f, j]:
                    return firsts[:0], label, firsts[:0], label, firsts[:0], False
        label[i] = n - 1
    rank = np.empty(n, dtype=np.int64)
    by_first = np.argsort(firsts[:n])
    for c in range(n):
        rank[by_first[c]] = c
    of = np.empty(H, dtype=np.int64)
    count = np.zeros(n, dtype=np.int64)
    for i in range(H):
        of[i] = rank[label[i]]
        count[of[i]] += 1
    members, starts = _members(of, count, n)
    first = firsts[:n][by_first]
    return first, of, count, members, starts, True


@njit(cache=True)
def _mix(x):
    """MurmurHash3's 64-bit finalizer (fmix64)."""
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xFF51AFD7ED558CCD)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xC4CEB9FE1A85EC53)
    x ^= x >> np.uint64(33)
    return x


@njit(cache=True)
def group_machines(fbits, pbits, free, res, other, tol):
    """PD-ORS's machine classes of one slot state
    (:meth:`~dmlsched.schedulers.cluster.pdors.PdorsOracle._classes`): machines
    equal bit for bit in residual capacity (``fbits``, ``free``'s bit patterns)
    and price (``pbits``) on the resources ``res``, and in whether ``free`` is
    ≥ −tol·max(1, free) on every resource of ``other`` (the internal case's fit
    on the resources the job does not use).  One pass in machine order with an
    open-addressing table of rows (no sort): a class is numbered when its
    lowest machine is met, so (first, of, count, members, starts) are those of
    :func:`group_rows` on the same key, whatever the hashes."""
    H = fbits.shape[0]
    n = res.size
    size = 1
    while size < 2 * H:
        size *= 2
    mask = np.uint64(size - 1)
    table = np.full(size, -1, dtype=np.int64)
    fit = np.empty(H, dtype=np.bool_)
    of = np.empty(H, dtype=np.int64)
    first = np.empty(H, dtype=np.int64)
    count = np.zeros(H, dtype=np.int64)
    nc = 0
    for i in range(H):
        ok = True
        for r in other:
            x = free[i, r]
            if not (x >= -tol * max(1.0, x)):
                ok = False
        fit[i] = ok
        # the words folded in by odd multipliers (each step a bijection), then mixed
        # once by MurmurHash3's 64-bit finalizer: round numbers (a float's low bits
        # are mostly 0) must still spread over the table's low bits (half the cost
        # of finalizing every word)
        x = np.uint64(1) if ok else np.uint64(0)
        for j in range(n):
            r = res[j]
            x = (x ^ fbits[i, r]) * np.uint64(0x9E3779B97F4A7C15)
            x = (x ^ pbits[i, r]) * np.uint64(0xC2B2AE3D27D4EB4F)
        slot = _mix(x) & mask
        while True:
            c = table[slot]
            if c < 0:  # a new row: its class is numbered now, at its lowest machine
                table[slot] = nc
                first[nc] = i
                of[i] = nc
                count[nc] = 1
                nc += 1
                break
            f = first[c]
            same = fit[f] == ok
            for j in range(n):
                if not same:
                    break
                r = res[j]
                same = fbits[i, r] == fbits[f, r] and pbits[i, r] == pbits[f, r]
            if same:
                of[i] = c
                count[c] += 1
                break
            slot = (slot + np.uint64(1)) & mask
    members, starts = _members(of, count, nc)
    return first[:nc].copy(), of, count[:nc].copy(), members, starts


@njit(cache=True)
def _members(of, count, n):
    """Each class's rows, listed class by class (ascending within a class, as rows
    are visited in order), and where each class's list starts (``n + 1`` offsets)."""
    starts = np.zeros(n + 1, dtype=np.int64)
    for c in range(n):
        starts[c + 1] = starts[c] + count[c]
    members = np.empty(of.size, dtype=np.int64)
    fill = starts[:n].copy()
    for i in range(of.size):
        members[fill[of[i]]] = i
        fill[of[i]] += 1
    return members, starts


@njit(cache=True)
def _class_rows(free, price, first, count, tol):
    """Each class's rows: its first machine's ``free`` and ``price``, ``room`` =
    free + tol · max(1, free) (element-wise, the same floats as NumPy's), and the
    class sizes as floats."""
    C = first.size
    R = free.shape[1]
    free_c = np.empty((C, R))
    price_c = np.empty((C, R))
    room_c = np.empty((C, R))
    count_f = np.empty(C)
    for c in range(C):
        h = first[c]
        for r in range(R):
            f = free[h, r]
            free_c[c, r] = f
            price_c[c, r] = price[h, r]
            room_c[c, r] = f + tol * (f if f >= 1.0 or f != f else 1.0)  # np.maximum(1, f)
        count_f[c] = float(count[c])
    return free_c, price_c, room_c, count_f


@njit(cache=True)
def regroup(free, price, res, other, tol, old_free, old_price, lab, table, reps, n_labels, fresh):
    """:func:`group_machines` of a slot state (``free``, ``price``), updated from the
    state (``old_free``, ``old_price``) it was last computed for, plus each class's
    rows (:func:`_class_rows`), for
    :meth:`~dmlsched.schedulers.cluster.pdors.PdorsOracle._classes`.

    ``lab[h]`` is machine h's label, one per distinct row content (the fit flag
    on ``other``, then Ĉ's and p's bit patterns on ``res``), kept in ``reps``
    (labels × (1 + 2·|res|) words) and found through the open-addressing
    ``table``; ``lab``, ``table`` and ``reps`` are updated in place.  Only the
    machines whose Ĉ (any resource) or p (on ``res``) changed bit-wise since
    the old state are hashed again (a reservation touches a few machines of a
    slot); ``fresh`` labels every machine from an empty table.  Classes are
    then numbered by their lowest machine in one pass over the labels, so the
    result is :func:`group_machines`'s on the same state.  Returns (first, of,
    count, members, starts, free_c, price_c, room_c, count_f, labels used);
    labels used is −1 (and nothing else meaningful) when ``reps`` is full: the
    caller starts again with ``fresh``."""
    H, R = free.shape
    n = res.size
    L = reps.shape[0]
    mask = np.uint64(table.size - 1)
    fb = free.view(np.uint64)
    pb = price.view(np.uint64)
    ofb = old_free.view(np.uint64)
    opb = old_price.view(np.uint64)
    empty = np.zeros(0, dtype=np.int64)
    if fresh:
        table[:] = -1
        n_labels = 0
    for i in range(H):
        if not fresh:
            same = True
            for r in range(R):
                if fb[i, r] != ofb[i, r]:
                    same = False
                    break
            if same:
                for j in range(n):
                    if pb[i, res[j]] != opb[i, res[j]]:
                        same = False
                        break
            if same:
                continue
        ok = True
        for r in other:
            x = free[i, r]
            if not (x >= -tol * max(1.0, x)):
                ok = False
        x = np.uint64(1) if ok else np.uint64(0)  # the same hash as group_machines
        for j in range(n):
            r = res[j]
            x = (x ^ fb[i, r]) * np.uint64(0x9E3779B97F4A7C15)
            x = (x ^ pb[i, r]) * np.uint64(0xC2B2AE3D27D4EB4F)
        slot = _mix(x) & mask
        flag = np.uint64(1) if ok else np.uint64(0)
        while True:
            lb = table[slot]
            if lb < 0:  # a row content not seen before: a new label
                if n_labels == L:
                    none = np.empty((0, R))
                    return empty, empty, empty, empty, empty, none, none, none, np.empty(0), -1
                table[slot] = n_labels
                reps[n_labels, 0] = flag
                for j in range(n):
                    reps[n_labels, 1 + 2 * j] = fb[i, res[j]]
                    reps[n_labels, 2 + 2 * j] = pb[i, res[j]]
                lab[i] = n_labels
                n_labels += 1
                break
            same = reps[lb, 0] == flag
            for j in range(n):
                if not same:
                    break
                r = res[j]
                same = reps[lb, 1 + 2 * j] == fb[i, r] and reps[lb, 2 + 2 * j] == pb[i, r]
            if same:
                lab[i] = lb
                break
            slot = (slot + np.uint64(1)) & mask
    # classes numbered by their lowest machine: labels ranked by first appearance
    rank = np.full(n_labels, -1, dtype=np.int64)
    first = np.empty(H, dtype=np.int64)
    of = np.empty(H, dtype=np.int64)
    count = np.zeros(H, dtype=np.int64)
    nc = 0
    for i in range(H):
        c = rank[lab[i]]
        if c < 0:
            c = nc
            rank[lab[i]] = c
            first[c] = i
            nc += 1
        of[i] = c
        count[c] += 1
    members, starts = _members(of, count, nc)
    first = first[:nc].copy()
    count = count[:nc].copy()
    free_c, price_c, room_c, count_f = _class_rows(free, price, first, count, tol)
    return first, of, count, members, starts, free_c, price_c, room_c, count_f, n_labels
