"""The compiled round-robin and packed placements and ``take`` against their NumPy originals.

The reference functions below are the NumPy code the kernels replaced (issue
16), kept here verbatim in behaviour: same placements, same pointer, same free
capacity bit for bit, on random clusters (fractional demands, partly used
machines, gangs that do not fit).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.model.cluster import Placement
from dmlsched.rng import make_rng
from dmlsched.schedulers._shared.placement import (
    machine_rows,
    place_packed,
    place_round_robin,
    take,
    task_order,
)
from dmlsched.workloads.synthetic import random_job

_EPS = 1e-9


def _next_fit_ref(free, left, d, h):  # type: ignore[no-untyped-def]
    H = free.shape[0]
    need = d - _EPS
    for k in range(min(8, H)):
        m = (h + k) % H
        if (left.get(m, free[m]) >= need).all():
            return m
    ok = (free >= need).all(axis=1)
    for m, row in left.items():
        ok[m] = (row >= need).all()
    fits = np.flatnonzero(ok)
    if fits.size == 0:
        return None
    return int(fits[int(np.searchsorted(fits, h)) % fits.size])


def _round_robin_ref(free, job, workers, ps, start):  # type: ignore[no-untyped-def]
    H = free.shape[0]
    left: dict[int, np.ndarray] = {}
    wd, pd = np.asarray(job.worker_demand), np.asarray(job.ps_demand)
    w_cnt: Counter[int] = Counter()
    s_cnt: Counter[int] = Counter()
    h = start % H
    for is_ps in task_order(workers, ps):
        d = pd if is_ps else wd
        m = _next_fit_ref(free, left, d, h)
        if m is None:
            return None
        left[m] = left.get(m, free[m]) - d
        (s_cnt if is_ps else w_cnt)[m] += 1
        h = (m + 1) % H
    return Placement.from_counts(w_cnt, s_cnt), h


def _packed_ref(free, job, workers, ps):  # type: ignore[no-untyped-def]
    left = free.copy()
    wd = np.asarray(job.worker_demand, dtype=float)
    pd = np.asarray(job.ps_demand, dtype=float)
    w_cnt: Counter[int] = Counter()
    s_cnt: Counter[int] = Counter()

    def fit_count(d):  # type: ignore[no-untyped-def]
        pos = d > _EPS
        if not pos.any():
            return np.full(left.shape[0], np.iinfo(np.int64).max // 4)
        return np.floor((left[:, pos] + _EPS) / d[pos]).min(axis=1).astype(np.int64)

    need = int(workers)
    while need > 0:
        fits = fit_count(wd)
        m = int(np.argmax(fits))
        if fits[m] <= 0:
            return None
        k = int(min(fits[m], need))
        left[m] -= k * wd
        w_cnt[m] += k
        need -= k
    for _ in range(int(ps)):
        fits = fit_count(pd)
        used = [m for m in sorted(w_cnt) if fits[m] > 0]
        if used:
            m = used[0]
        else:
            m = int(np.argmax(fits))
            if fits[m] <= 0:
                return None
        left[m] -= pd
        s_cnt[m] += 1
    return Placement.from_counts(w_cnt, s_cnt)


def _take_ref(free, job, p, sign=1.0):  # type: ignore[no-untyped-def]
    if p.machines:
        idx = np.asarray(p.machines, dtype=np.intp)
        free[idx] -= sign * (np.outer(p.workers, job.worker_demand) + np.outer(p.ps, job.ps_demand))


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    machines=st.integers(1, 40),
    workers=st.integers(0, 40),
    ps=st.integers(0, 12),
    start=st.integers(0, 100),
    fractional=st.booleans(),
)
def test_round_robin_and_take_match_numpy(seed, machines, workers, ps, start, fractional):  # type: ignore[no-untyped-def]
    rng = make_rng(seed)
    job = random_job(0, 0, rng, mode="sync")
    if fractional:
        scale = rng.uniform(0.05, 1.3, size=4)
        job = job.__class__(
            **{
                **job.__dict__,
                "worker_demand": tuple((np.asarray(job.worker_demand) * scale).tolist()),
                "ps_demand": tuple((np.asarray(job.ps_demand) * scale[::-1]).tolist()),
            }
        )
    free = rng.uniform(0.0, 60.0, size=(machines, 4))
    free[rng.random(machines) < 0.3] = 0.0  # full machines: scans and misses
    if rng.random() < 0.5:  # identical machines, some untouched (the reference rows' shortcut)
        free[rng.random(machines) < 0.5] = free[0]
    wrong = (machine_rows(free[::-1].copy())[0], np.zeros(machines, dtype=np.int64))
    for classes in (None, machine_rows(free), wrong):
        assert place_packed(free.copy(), job, workers, ps, classes) == _packed_ref(
            free.copy(), job, workers, ps
        )
    got = place_round_robin(free.copy(), job, workers, ps, start)
    want = _round_robin_ref(free.copy(), job, workers, ps, start)
    assert got == want
    if got is not None:
        p = got[0]
        for sign in (1.0, -1.0):
            a, b = free.copy(), free.copy()
            take(a, job, p, sign)
            _take_ref(b, job, p, sign)
            assert a.tobytes() == b.tobytes()
