"""The batch placement kernels (one compiled call per decision) against the NumPy path.

``round_robin_run`` (FIFO's queue pass), ``gang_pass`` (``gang_allocate`` with
consolidated placement), ``packed_fits_many`` and ``take_segments`` replace
per-job calls on large clusters (issue 16).  On hypothesis-generated clusters
(fractional demands, heterogeneous and partly used machines, gangs that do
not fit) each must give what the plain NumPy code gives job by job: the same
placements in the same order, the same pointer and the same free capacity,
bit for bit.  Then whole runs of ``fifo``, ``tiresias`` and ``srtf`` with the
batch path forced must make the same decisions as with the NumPy path.
"""

from __future__ import annotations

import dataclasses
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.model.cluster import Cluster, ClusterWorkload
from dmlsched.rng import make_rng
from dmlsched.schedulers._shared import placement
from dmlsched.schedulers._shared import placement_kernels as K
from dmlsched.schedulers._shared.batch import JobArrays
from dmlsched.schedulers._shared.gang import gang_allocate, gang_need
from dmlsched.schedulers._shared.placement import (
    BIG,
    EPS,
    machine_rows,
    packed_numpy,
    round_robin_numpy,
    take,
)
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.synthetic import random_job, synthetic_cluster

_NUMPY = mock.patch.object(placement, "SMALL_MACHINES", 10**9)  # every cluster: NumPy
_KERNELS = mock.patch.object(placement, "SMALL_MACHINES", 0)  # every cluster: kernels


def _jobs(rng: np.random.Generator, n: int, fractional: bool) -> list:  # type: ignore[type-arg]
    out = []
    for i in range(n):
        job = random_job(i, 0, rng, mode="sync")
        if fractional:
            scale = rng.uniform(0.05, 1.3, size=4)
            job = job.__class__(
                **{
                    **job.__dict__,
                    "worker_demand": tuple((np.asarray(job.worker_demand) * scale).tolist()),
                    "ps_demand": tuple((np.asarray(job.ps_demand) * scale[::-1]).tolist()),
                }
            )
        out.append(job)
    return out


def _cluster(rng: np.random.Generator, machines: int) -> np.ndarray:
    """Capacity rows from a few classes (the reference rows' shortcuts), some repeated."""
    classes = rng.uniform(5.0, 60.0, size=(int(rng.integers(1, 4)), 4)).round()
    return np.ascontiguousarray(classes[rng.integers(0, classes.shape[0], size=machines)])


def _demands(jobs: list) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[type-arg]
    wd = np.array([j.worker_demand for j in jobs], dtype=float)
    pd = np.array([j.ps_demand for j in jobs], dtype=float)
    return wd, pd


def _demand(job) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[no-untyped-def]
    return np.asarray(job.worker_demand, dtype=float), np.asarray(job.ps_demand, dtype=float)


def _numpy_take(free: np.ndarray, job, p, sign: float = 1.0) -> None:  # type: ignore[no-untyped-def]
    with _NUMPY:
        take(free, job, p, sign)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    machines=st.integers(1, 30),
    n=st.integers(1, 12),
    start=st.integers(0, 100),
    fractional=st.booleans(),
)
def test_round_robin_run_matches_numpy_one_by_one(seed, machines, n, start, fractional):  # type: ignore[no-untyped-def]
    rng = make_rng(seed)
    jobs = _jobs(rng, n, fractional)
    free = _cluster(rng, machines)
    free[rng.random(machines) < 0.3] *= rng.uniform(0.0, 1.0)  # partly used machines
    ws = rng.integers(0, 12, size=n)
    ss = rng.integers(0, 4, size=n)
    want_free, h, want = free.copy(), start, []
    for job, w, s in zip(jobs, ws.tolist(), ss.tolist(), strict=True):  # FIFO, job by job
        got = round_robin_numpy(want_free, *_demand(job), w, s, h % machines) if w else None
        if got is None:
            break
        p, h = got
        p = p.__class__(*(tuple(x) for x in (p.machines, p.workers, p.ps)))
        _numpy_take(want_free, job, p)
        want.append(p)
    wd, pd = _demands(jobs)
    rows = np.arange(n, dtype=np.int64)
    done, m, w, s, off, h_got = K.round_robin_run(free, wd, pd, rows, ws, ss, start, EPS)
    got = [
        (tuple(m[a:b].tolist()), tuple(w[a:b].tolist()), tuple(s[a:b].tolist()))
        for a, b in zip(off[:done].tolist(), off[1 : done + 1].tolist(), strict=True)
    ]
    assert got == [(p.machines, p.workers, p.ps) for p in want]
    assert free.tobytes() == want_free.tobytes()
    if want:
        assert h_got == h


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    machines=st.integers(1, 30),
    n=st.integers(1, 12),
    keep_order=st.booleans(),
    fractional=st.booleans(),
)
def test_gang_pass_matches_gang_allocate_on_numpy(seed, machines, n, keep_order, fractional):  # type: ignore[no-untyped-def]
    rng = make_rng(seed)
    jobs = _jobs(rng, n, fractional)
    by_id = {j.id: j for j in jobs}
    cap = _cluster(rng, machines)
    gangs = {j.id: (int(rng.integers(1, 10)), int(rng.integers(0, 3))) for j in jobs}
    needs = {j.id: gang_need(j, *gangs[j.id]) for j in jobs}
    classes = machine_rows(cap)
    # some jobs already run: placed (NumPy) one after the other on the capacity
    running, free = {}, cap.copy()
    for j in jobs:
        if rng.random() < 0.4:
            p = packed_numpy(free, *_demand(j), *gangs[j.id])
            if p is not None:
                running[j.id] = p
                _numpy_take(free, j, p)
    order = [int(x) for x in rng.permutation(n)]
    with _NUMPY:
        want, _ = gang_allocate(order, by_id, gangs, running, cap, "packed", 0, needs,
                                keep_order, classes)  # fmt: skip
    arrays = JobArrays(4)
    for j in jobs:
        arrays.add(j, gangs[j.id])
    rows = arrays.rows(order)
    for j, p in running.items():
        arrays.segment(j, p)
    status, m, w, s, off = K.gang_pass(
        cap, cap.sum(axis=0), arrays.need, arrays.wd, arrays.pd, rows, arrays.gang[:, 0],
        arrays.gang[:, 1], arrays.held_start, arrays.held_len, arrays.pool_m, arrays.pool_w,
        arrays.pool_s, classes[0], classes[1], EPS, BIG, True, np.full(machines, -1),
    )  # fmt: skip
    got = {order[i]: running[order[i]] for i in np.flatnonzero(status == 1).tolist()}
    for i in np.flatnonzero(status == 2).tolist():
        a, b = int(off[i]), int(off[i + 1])
        got[order[i]] = want[order[i]].__class__(
            tuple(m[a:b].tolist()), tuple(w[a:b].tolist()), tuple(s[a:b].tolist())
        )
    if keep_order:
        got = {**{j: got[j] for j in running if j in got}, **got}
    assert list(got.items()) == list(want.items())
    assert np.array_equal(arrays.need[: len(jobs)], np.array([needs[j.id] for j in jobs]))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), machines=st.integers(1, 30), n=st.integers(1, 10))
def test_packed_fits_many_and_take_segments_match_numpy(seed, machines, n):  # type: ignore[no-untyped-def]
    rng = make_rng(seed)
    jobs = _jobs(rng, n, fractional=bool(rng.random() < 0.5))
    cap = _cluster(rng, machines)
    wd, pd = _demands(jobs)
    ws, ss = rng.integers(1, 40, size=n), rng.integers(0, 6, size=n)
    rows = np.arange(n, dtype=np.int64)
    ref, cls = machine_rows(cap)
    slot_of = np.full(machines, -1)
    got = K.packed_fits_many(cap, ref, cls, wd, pd, rows, ws, ss, EPS, BIG, True, slot_of)
    want = [packed_numpy(cap, wd[i], pd[i], int(ws[i]), int(ss[i])) is not None for i in range(n)]
    assert got.tolist() == want
    assert (slot_of == -1).all()  # the scratch is left as found
    # placements released in bulk, in order, as one by one
    arrays = JobArrays(4)
    free, placed = cap.copy(), []
    for i, j in enumerate(jobs):
        arrays.add(j)
        p = packed_numpy(free, wd[i], pd[i], int(ws[i]), int(ss[i]))
        if p is not None:
            _numpy_take(free, j, p)
            placed.append((j, p))
    a, b = free.copy(), free.copy()
    ids = [j.id for j, _ in placed]
    r = arrays.rows(ids)
    spans = [arrays.segment(j.id, p) for j, p in placed]
    starts = np.array([x for x, _ in spans], dtype=np.int64)
    lens = np.array([y for _, y in spans], dtype=np.int64)
    K.take_segments(a, arrays.pool_m, arrays.pool_w, arrays.pool_s, starts, lens, arrays.wd,
                    arrays.pd, r, -1.0)  # fmt: skip
    for j, p in placed:
        _numpy_take(b, j, p, -1.0)
    assert a.tobytes() == b.tobytes()


def _decisions(wl: ClusterWorkload, name: str, patch: mock._patch) -> tuple:  # type: ignore[type-arg]
    sched = make_scheduler("cluster", name)
    seen = []
    decide = sched.decide

    def spy(view):  # type: ignore[no-untyped-def]
        d = decide(view)
        seen.append((view.slot, list(d.allocations.items()), d.reject, d.until))
        return d

    sched.decide = spy  # type: ignore[method-assign]
    with patch:
        res = simulate("cluster", wl, sched, make_rng(1), record_events=False)
    return seen, repr(sorted(res.metrics.items()))  # repr: nan equals nan


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    name=st.sampled_from(["fifo", "tiresias", "srtf"]),
    mode=st.sampled_from(["sync", "sync", "async"]),
)
def test_schedulers_decide_the_same_on_the_batch_path(seed, name, mode):  # type: ignore[no-untyped-def]
    rng = make_rng(seed)
    wl = synthetic_cluster(40, 6, 30, rng, mode=mode, capacity_factor=4.0)
    if rng.random() < 0.5:  # heterogeneous machines
        cap = wl.cluster.capacity * rng.choice([0.5, 1.0, 2.0], size=(6, 1))
        wl = dataclasses.replace(wl, cluster=Cluster(cap))
    assert _decisions(wl, name, _KERNELS) == _decisions(wl, name, _NUMPY)
