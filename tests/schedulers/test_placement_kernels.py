"""The compiled round-robin and packed placements and ``take`` against the NumPy path.

Clusters of at most ``SMALL_MACHINES`` machines are placed by the NumPy code
(``round_robin_numpy``, ``packed_numpy``), which the kernels replaced for
large ones (issue 16): here the kernels are forced on small random clusters
(fractional demands, partly used machines, gangs that do not fit) and must
give the same placements, the same pointer and the same free capacity bit for
bit as the NumPy path.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.rng import make_rng
from dmlsched.schedulers._shared import placement
from dmlsched.schedulers._shared.placement import (
    machine_rows,
    packed_numpy,
    place_packed,
    place_round_robin,
    round_robin_numpy,
    take,
)
from dmlsched.workloads.synthetic import random_job


def _packed_ref(free, job, workers, ps):  # type: ignore[no-untyped-def]
    wd, pd = np.asarray(job.worker_demand, dtype=float), np.asarray(job.ps_demand, dtype=float)
    return packed_numpy(free, wd, pd, workers, ps)


def _round_robin_ref(free, job, workers, ps, start):  # type: ignore[no-untyped-def]
    wd, pd = np.asarray(job.worker_demand, dtype=float), np.asarray(job.ps_demand, dtype=float)
    return round_robin_numpy(free, wd, pd, workers, ps, start % free.shape[0])


def _take_ref(free, job, p, sign=1.0):  # type: ignore[no-untyped-def]
    with mock.patch.object(placement, "SMALL_MACHINES", free.shape[0]):
        take(free, job, p, sign)


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
    with mock.patch.object(placement, "SMALL_MACHINES", 0):
        _check(seed, machines, workers, ps, start, fractional)


def _check(seed, machines, workers, ps, start, fractional):  # type: ignore[no-untyped-def]
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
    # capacity less placements (no row above its class's row): the scan may stop early
    cap = np.maximum(free, rng.uniform(0.0, 60.0, size=(machines, 4)).round())
    if rng.random() < 0.5:
        cap[rng.random(machines) < 0.7] = cap[0]
    less = np.minimum(free, cap)
    assert place_packed(less.copy(), job, workers, ps, machine_rows(cap), True) == _packed_ref(
        less.copy(), job, workers, ps
    )
    assert place_packed(cap.copy(), job, workers, ps, machine_rows(cap), True) == _packed_ref(
        cap.copy(), job, workers, ps
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
