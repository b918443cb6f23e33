"""PD-ORS's fused kernels and incremental slot state equal the steps they replace, bit for bit.

Each compiled kernel of issue 16's last speed-up does in one call what a chain of
NumPy steps (still in the library, and the reference here) did: the machine
classes (:func:`group_machines` vs :func:`machine_classes` on the key matrix),
the DP in place (:func:`min_plus_rows` vs :func:`min_plus`), the rounding
(:func:`cheapest_round`, which tests each distinct draw once, vs every one of
the S draws trimmed and tested) and the disaggregation (:func:`fill_pair` vs
:func:`fill_classes`).  The
slot state's prices are recomputed only on the machines a reservation touched;
hypothesis checks that they equal prices recomputed from scratch after any
sequence of reservations and releases.  The machine classes are likewise
updated from a slot's previous state (:func:`regroup`, re-hashing only the
machines whose rows changed): hypothesis checks them against
:func:`group_machines` from scratch after any sequence of changes.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.model.cluster import Cluster, ClusterJob
from dmlsched.rng import make_rng
from dmlsched.schedulers._shared.kernels import (
    fill_pair,
    group_machines,
    min_plus,
    min_plus_rows,
    regroup,
    rounding_ok,
    trim_workers,
)
from dmlsched.schedulers._shared.machine_classes import fill_classes, machine_classes
from dmlsched.schedulers._shared.pricing import prices
from dmlsched.schedulers._shared.primal_dual import JobPlan
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.solvers.rounding import cheapest_round

_TOL = 1e-9
_SEEDS = st.integers(0, 2**32 - 1)


def _state(rng: np.random.Generator, H: int, R: int) -> tuple[np.ndarray, np.ndarray]:
    """Residual capacities and prices with many equal rows and a few round numbers."""
    kinds = int(rng.integers(1, 6))
    free = np.round(rng.uniform(-0.5, 8, (kinds, R)) * 4) / 4
    price = np.where(rng.random((kinds, R)) < 0.5, 1e-3, np.exp(rng.uniform(-3, 2, (kinds, R))))
    group = rng.integers(kinds, size=H)
    free, price = free[group], price[group]
    odd = rng.random(H) < 0.1  # a few machines of their own
    free[odd] += rng.random((int(odd.sum()), R))
    return np.ascontiguousarray(free), np.ascontiguousarray(price)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=_SEEDS)
def test_group_machines_equals_machine_classes_of_the_key_matrix(seed: int) -> None:
    rng = make_rng(seed)
    H, R = int(rng.integers(1, 300)), int(rng.integers(1, 5))
    free, price = _state(rng, H, R)
    used = rng.random(R) < 0.7
    used[int(rng.integers(R))] = True
    res, other = np.flatnonzero(used), np.flatnonzero(~used)
    # the key PD-ORS grouped by before: Ĉ and p on the job's resources, the fit elsewhere
    fit = np.all(free[:, other] >= -_TOL * np.maximum(1.0, free[:, other]), axis=1)
    key = np.column_stack([free[:, res], price[:, res], fit.astype(float)])
    want = machine_classes(key)
    got = group_machines(free.view(np.uint64), price.view(np.uint64), free, res, other, _TOL)
    for a, b in zip(got, (want.first, want.of, want.count, want.members, want.starts), strict=True):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=_SEEDS)
def test_regroup_from_the_previous_state_equals_group_machines_from_scratch(seed: int) -> None:
    rng = make_rng(seed)
    H, R = int(rng.integers(1, 120)), int(rng.integers(1, 5))
    free, price = _state(rng, H, R)
    used = rng.random(R) < 0.7
    used[int(rng.integers(R))] = True
    res, other = np.flatnonzero(used), np.flatnonzero(~used)
    lab = np.zeros(H, dtype=np.int64)
    table = np.full(4 * 256, -1, dtype=np.int64)
    # few spare labels now and then, so the "labels full: start afresh" path runs too
    reps = np.zeros((H + int(rng.integers(0, H + 1)), 1 + 2 * res.size), dtype=np.uint64)
    old_free, old_price, n_labels, fresh = free, price, 0, True
    for _ in range(8):
        args = (free, price, res, other, _TOL, old_free, old_price, lab, table, reps)
        out = regroup(*args, n_labels, fresh)
        if out[-1] < 0:
            out = regroup(*args, 0, True)
        *groups, free_c, price_c, room_c, count_f, n_labels = out
        want = group_machines(free.view(np.uint64), price.view(np.uint64), free, res, other, _TOL)
        for a, b in zip(groups, want, strict=True):
            np.testing.assert_array_equal(a, b)
        first = want[0]
        np.testing.assert_array_equal(free_c, free[first])
        np.testing.assert_array_equal(price_c, price[first])
        np.testing.assert_array_equal(room_c, free[first] + _TOL * np.maximum(1.0, free[first]))
        np.testing.assert_array_equal(count_f, want[2].astype(float))
        # the next state: a few machines change (to another machine's row or a new one),
        # sometimes every price (new price bounds), sometimes nothing
        old_free, old_price, fresh = free, price, False
        free, price = free.copy(), price.copy()
        for h in np.flatnonzero(rng.random(H) < float(rng.choice([0.0, 0.05, 0.3]))):
            if rng.random() < 0.5:
                src = int(rng.integers(H))
                free[h], price[h] = free[src], price[src]
            else:
                free[h] = np.round(rng.uniform(-0.5, 8, R) * 4) / 4
                price[h] = np.exp(rng.uniform(-3, 2, R))
        if rng.random() < 0.2:
            price = price * 1.5


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=_SEEDS)
def test_min_plus_rows_in_place_equals_min_plus(seed: int) -> None:
    rng = make_rng(seed)
    n, q1 = int(rng.integers(1, 8)), int(rng.integers(1, 40))
    theta = np.where(rng.random((n, q1)) < 0.3, np.inf, rng.uniform(0, 5, (n, q1)))
    theta[:, 0] = 0.0
    init = np.full(q1, np.inf)
    init[0] = 0.0
    want_phi, want_choice = min_plus(theta, init.copy())
    phi, choice = np.empty((n, q1)), np.zeros((n, q1), dtype=np.int64)
    cut = int(rng.integers(0, n + 1))  # rows added one by one, then the rest at once
    for s in range(cut):
        min_plus_rows(theta, phi, choice, s, s + 1, init)
    min_plus_rows(theta, phi, choice, cut, n, init)
    np.testing.assert_array_equal(phi, want_phi)
    np.testing.assert_array_equal(choice, want_choice)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=_SEEDS, sync=st.booleans())
def test_cheapest_round_is_the_cheapest_of_every_draw_trimmed_and_tested(
    seed: int, sync: bool
) -> None:
    rng = make_rng(seed)
    n, R = int(rng.integers(1, 8)), int(rng.integers(1, 4))
    x_bar = np.concatenate([rng.uniform(0, 6, n), rng.uniform(0, 3, n)])
    x_bar[rng.random(2 * n) < 0.2] = 0.0
    cost = np.round(rng.uniform(0.1, 2, 2 * n), 1)  # a few equal costs: ties happen
    a, b = rng.uniform(0.5, 2, R), rng.uniform(0.5, 2, R)
    ub_tol = rng.uniform(2, 12, (n, R))
    m = float(np.floor(x_bar[:n].sum()))
    gain, wmax = float(rng.uniform(0.5, 1.5)), float(rng.integers(1, 30))
    rules = (wmax, sync, float(rng.uniform(1, 4)), 1.0, 2.0, float(rng.uniform(2, 20)), _TOL)
    attempts = int(rng.integers(1, 80))
    order = np.argsort(-cost[:n], kind="stable")

    got = cheapest_round(
        x_bar, gain, make_rng(seed + 1), cost=cost, attempts=attempts,
        repair=lambda cand: trim_workers(cand, order, wmax),
        accept=lambda cand: rounding_ok(cand, m, a, b, ub_tol, *rules),
    )  # fmt: skip
    # the reference: every draw, in order, trimmed and tested
    xs = gain * x_bar
    lo = np.floor(xs + _TOL)
    frac = np.clip(xs - lo, 0.0, 1.0)
    frac[frac < _TOL] = 0.0
    var = np.flatnonzero(frac > 0)
    up = make_rng(seed + 1).random((attempts, var.size)) < frac[var]
    every = np.repeat(lo[None, :], attempts, axis=0)
    every[:, var] += up
    every = trim_workers(every, order, wmax)
    ok = np.flatnonzero(rounding_ok(every, m, a, b, ub_tol, *rules))
    if ok.size == 0:
        assert got.x is None and got.attempts == attempts
        return
    costs = every[ok] @ cost
    want = every[ok[int(np.argmin(costs))]]
    np.testing.assert_array_equal(got.x, want.astype(np.int64))
    assert got.cost == float(np.dot(cost, want.astype(np.int64)))
    assert got.attempts == int(ok[0]) + 1


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=_SEEDS, apart=st.booleans())
def test_fill_pair_equals_fill_classes(seed: int, apart: bool) -> None:
    rng = make_rng(seed)
    H, R = int(rng.integers(1, 60)), int(rng.integers(1, 4))
    free, price = _state(rng, H, R)
    classes = machine_classes(np.column_stack([free, price]))
    C = classes.n
    demand = rng.uniform(0.2, 2, (2, R))
    room = np.maximum(free[classes.first], 0.0)
    # class totals that fit their class rows (some classes idle)
    share = rng.uniform(0, 1, (C, 2)) * (rng.random((C, 1)) < 0.7)
    per_item = share @ demand
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.min(np.where(per_item > 0, classes.count[:, None] * room / per_item, np.inf), 1)
    amount = share * np.where(np.isfinite(scale), scale, 0.0)[:, None] * rng.uniform(0.3, 1.0)
    x = np.concatenate([amount[:, 0], amount[:, 1]])
    want = fill_classes(classes, amount, demand, room, apart=apart)
    flat, failed = fill_pair(
        x, demand, room, classes.count, classes.members, classes.starts, classes.first, apart, 1e-9
    )
    if not failed:  # a failed class is left to fill_classes's fallback (PD-ORS calls it)
        np.testing.assert_array_equal(flat, np.concatenate([want[:, 0], want[:, 1]]))


def _job(rng: np.random.Generator, jid: int) -> ClusterJob:
    w = rng.uniform(0.5, 3, 4).round(1)
    return ClusterJob(
        id=jid, arrival=0, epochs=1, samples=64, batch=8, grad_mb=1.0, tau=1e-3, gamma=1.0,
        worker_demand=tuple(w), ps_demand=tuple(w / 2), b_int=1.0, b_ext=1.0,
    )  # fmt: skip


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=_SEEDS, steps=st.integers(1, 12))
def test_incremental_slot_prices_equal_prices_from_scratch(seed: int, steps: int) -> None:
    """After any sequence of reservations and releases (touching some machines of some
    slots, the state looked at in between or not), the cached slot state equals Eq. (12)
    and Ĉ recomputed over all machines."""
    rng = make_rng(seed)
    H, T = int(rng.integers(2, 30)), 4
    cap = np.round(rng.uniform(4, 40, (H, 4)))
    cap[rng.random((H, 4)) < 0.05] = 0.0  # a resource some machines lack
    sched = make_scheduler("cluster", "pd-ors")
    sched.reset(Cluster(cap, ("gpu", "cpu", "mem", "storage")), T, make_rng(seed))
    held: list[tuple[ClusterJob, JobPlan]] = []
    jobs = [_job(rng, step) for step in range(steps)]
    sched.estimator_.observe(jobs[0])
    bounds = sched.estimator_.bounds()
    for step, job in enumerate(jobs):
        if step and rng.random() < 0.2:  # the price bounds change now and then
            sched.estimator_.observe(job)
            bounds = sched.estimator_.bounds()
        if held and rng.random() < 0.3:
            sched._release(held.pop(int(rng.integers(len(held))))[1], 0)
        else:
            slots = {}
            for t in np.flatnonzero(rng.random(T) < 0.6).tolist():
                hs = rng.choice(H, size=int(rng.integers(1, min(H, 4) + 1)), replace=False)
                hs.sort()
                counts = rng.integers(1, 3, hs.size)
                slots[t] = _placement(hs, counts)
            plan = JobPlan(job.id, slots, 0.0, 1.0, max(slots, default=0))
            sched.known_[job.id] = job
            sched._reserve(job, plan)
            held.append((job, plan))
        for t in range(T):
            if rng.random() < 0.5:  # look at some slots now, others only later
                _check_state(sched, t, bounds)
    bounds = sched.estimator_.bounds()
    for t in range(T):
        _check_state(sched, t, bounds)


def _placement(machines: np.ndarray, counts: np.ndarray):  # type: ignore[no-untyped-def]
    from dmlsched.model.cluster import Placement

    ids = tuple(int(h) for h in machines)
    return Placement(ids, tuple(int(c) for c in counts), (1,) * len(ids))


def _check_state(sched, t: int, bounds) -> None:  # type: ignore[no-untyped-def]
    price, free, key = sched.slot_state(t, bounds)
    rho = sched.rho_[t]
    np.testing.assert_array_equal(price, prices(rho, sched.capacity_, bounds))
    np.testing.assert_array_equal(free, sched.capacity_ - rho)
    assert key == free.tobytes()
