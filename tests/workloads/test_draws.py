"""Bulk draws give random_job's numbers and leave the generator where it would be."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.model.cluster import ClusterJob
from dmlsched.rng import make_rng
from dmlsched.workloads import draws, traces
from dmlsched.workloads.draws import sync_job_draws
from dmlsched.workloads.synthetic import DEFAULT_MIX, random_job
from dmlsched.workloads.traces import Trace, TraceRow, trace_cluster

MIXES = [DEFAULT_MIX, (0.3, 0.69, 0.01), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 2.0)]


def _fields(j: ClusterJob) -> tuple:
    u = j.utility
    return (j.b_ext, j.worker_demand, j.ps_demand, j.epochs, j.samples, j.batch, j.grad_mb,
            j.tau, j.gamma, u.theta1, u.theta2, u.theta3)  # fmt: skip


def _drawn(d: draws.SyncDraws, i: int) -> tuple:
    return (d.b_ext[i], tuple(d.worker[i].tolist()), tuple(d.ps[i].tolist()), int(d.epochs[i]),
            int(d.samples[i]), int(d.batch[i]), d.grad_mb[i], d.tau[i], d.gamma[i],
            d.theta1[i], d.theta2[i], d.theta3[i])  # fmt: skip


def _same_as_one_by_one(n: int, seed: int, mix: tuple, pre: int = 0) -> None:
    one, bulk = make_rng(seed), make_rng(seed)
    for r in (one, bulk):  # an odd count of 32-bit draws leaves a half buffered
        for _ in range(pre):
            r.integers(0, 7)
    want = [_fields(random_job(i, 0, one, mix=mix)) for i in range(n)]
    d = sync_job_draws(n, bulk, mix)
    assert d is not None
    assert [_drawn(d, i) for i in range(n)] == want
    assert bulk.bit_generator.state == one.bit_generator.state
    assert bulk.integers(0, 1000, 9).tolist() == one.integers(0, 1000, 9).tolist()
    assert bulk.random() == one.random()


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 60),
    seed=st.integers(0, 2**32 - 1),
    mix=st.sampled_from(MIXES),
    pre=st.integers(0, 3),
)
def test_bulk_draws_are_random_jobs_draws_and_leave_the_same_state(
    n: int, seed: int, mix: tuple, pre: int
) -> None:
    _same_as_one_by_one(n, seed, mix, pre)


@pytest.mark.parametrize("seed", [125, 225])  # two rejected integer draws in 1,500 jobs each
def test_rejected_integer_draws_are_redrawn_as_numpy_does(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    one_job = draws._one_job

    def spy(*a, **kw):  # type: ignore[no-untyped-def]
        calls.append(1)
        return one_job(*a, **kw)

    monkeypatch.setattr(draws, "_one_job", spy)
    _same_as_one_by_one(1500, seed, DEFAULT_MIX)
    assert len(calls) == 2


def test_chunk_boundaries_and_rejections_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(draws, "_CHUNK", 7)
    _same_as_one_by_one(1500, 125, DEFAULT_MIX, pre=1)


def test_other_bit_generators_are_left_to_the_caller() -> None:
    rng = np.random.Generator(np.random.MT19937(3))
    twin = np.random.Generator(np.random.MT19937(3))
    assert sync_job_draws(5, rng, DEFAULT_MIX) is None
    assert rng.random() == twin.random()


def _rows(n: int, runtime: bool = True) -> tuple[TraceRow, ...]:
    return tuple(
        TraceRow(float(60 * i), 1 + (i * 7) % 16, 90.0 * (1 + i % 50) if runtime else None, i + 2)
        for i in range(n)
    )


@pytest.mark.parametrize(
    "rows",
    [
        _rows(200),
        _rows(50, runtime=False),
        # one huge and one zero run time: E = 1 and K = 1 branches of the split
        (*_rows(30), TraceRow(1e4, 3, 0.0, 40), TraceRow(2e4, 200, 3e8, 41)),
    ],
)
def test_trace_jobs_from_bulk_draws_equal_the_jobs_drawn_one_by_one(
    rows: tuple[TraceRow, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = Trace("philly", Path("t.csv"), rows, 0, ("arrival", "workers", "runtime"))
    bulk_rng, one_rng = make_rng(4), make_rng(4)
    bulk = trace_cluster(trace, 3 * len(rows) + 1, 7, 40, bulk_rng)
    monkeypatch.setattr(traces, "sync_job_draws", lambda *a: None)
    one = trace_cluster(trace, 3 * len(rows) + 1, 7, 40, one_rng)
    assert bulk.jobs == one.jobs and bulk.notes == one.notes
    assert [j.__dict__ for j in bulk.jobs] == [j.__dict__ for j in one.jobs]  # types too
    assert bulk_rng.bit_generator.state == one_rng.bit_generator.state


def test_alibaba_like_rows_keep_pod_requests_in_bulk(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = tuple(
        TraceRow(1e7 + i, 1 + i % 4, 600.0, i + 2, cpu=4.0 + i % 3, mem_gb=8.0, gpu_share=0.5)
        for i in range(40)
    )
    nodes = ((8.0, 96.0, 512.0), (2.0, 32.0, 64.0), (0.0, 8.0, 16.0))
    trace = Trace(
        "alibaba", Path("a.csv"), rows, 0, ("arrival",), nodes=nodes, files=(Path("n.csv"),)
    )
    bulk = trace_cluster(trace, 90, None, 30, make_rng(8))
    monkeypatch.setattr(traces, "sync_job_draws", lambda *a: None)
    assert [j.__dict__ for j in bulk.jobs] == [
        j.__dict__ for j in trace_cluster(trace, 90, None, 30, make_rng(8)).jobs
    ]
