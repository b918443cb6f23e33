"""Trace loaders, arrival scaling and trace workloads, on ../shared/traces read in place.

Corrupted inputs are *copies* written to ``tmp_path``; no trace data is kept in
the repository.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import SLOT_SECONDS
from dmlsched.model.speed.pdors import sync_rate
from dmlsched.rng import make_rng
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads import traces
from dmlsched.workloads.registry import WorkloadParams, build_workload, workload_names
from dmlsched.workloads.traces import (
    Trace,
    TraceRow,
    default_trace_dir,
    load_trace,
    scale_arrivals,
    trace_arrivals,
    trace_cluster,
)

ARRIVALS = ("philly", "google", "alibaba")


def _needs(kind: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        default_trace_dir(kind) is None, reason=f"../shared/traces/{traces.KINDS[kind]} absent"
    )


needs_all = pytest.mark.skipif(
    any(default_trace_dir(k) is None for k in traces.KINDS), reason="../shared/traces absent"
)


# ---------------------------------------------------------------- loaders on the samples


@_needs("philly")
def test_philly_sample_loads_every_row_sorted_with_gpus_and_run_time() -> None:
    t = load_trace("philly")
    assert len(t.rows) == 4801 and t.skipped == 0
    a = t.arrivals()
    assert a[0] == 0.0 and np.all(np.diff(a) >= 0)
    assert a[-1] < 3 * 86400  # three calendar days
    gpus = np.bincount([r.workers for r in t.rows])
    # README: num_gpus 1 → 4,548; 2 → 175; 4 → 41; 8 → 28; 16 → 9
    assert (gpus[1], gpus[2], gpus[4], gpus[8], gpus[16]) == (4548, 175, 41, 28, 9)
    assert np.median([r.runtime_s for r in t.rows]) == 2190
    assert t.fields == ("arrival", "workers", "runtime")


@_needs("google")
def test_google_sample_has_one_row_per_submitted_job() -> None:
    t = load_trace("google")
    assert len(t.rows) == 1380 and t.skipped == 0  # README: 1,380 SUBMIT events
    a = t.arrivals()
    assert np.all(np.diff(a) >= 0) and a[0] >= 600 and a[-1] < 7800
    with_tasks = [r.workers for r in t.rows if r.workers is not None]
    assert 0 < len(with_tasks) < len(t.rows) and max(with_tasks) <= 1050
    assert all(r.runtime_s is None or r.runtime_s >= 0 for r in t.rows)


@_needs("alibaba")
def test_alibaba_sample_has_pods_requests_and_the_node_list() -> None:
    t = load_trace("alibaba")
    assert len(t.rows) == 2208 and len(t.nodes) == 1213 and t.skipped == 0
    gpus = np.bincount([r.workers for r in t.rows])
    # README: num_gpu 0 → 330, 1 → 1,866, 2 → 1, 4 → 1, 8 → 10
    assert (gpus[0], gpus[1], gpus[2], gpus[4], gpus[8]) == (330, 1866, 1, 1, 10)
    assert sorted({n[0] for n in t.nodes}) == [1, 2, 4, 8]
    first = t.rows[0]  # openb-pod-0000: 12000 milli-CPU, 16384 MiB, 1 whole GPU
    assert (first.cpu, first.mem_gb, first.gpu_share) == (12.0, 16.0, 1.0)
    # Pending pods (no scheduled_time) and censored ones have no run time
    assert sum(r.runtime_s is None for r in t.rows) >= 176


@_needs("pai")
def test_pai_sample_gives_straggler_factors_of_at_least_one() -> None:
    t = load_trace("pai")
    s = np.asarray(t.stragglers)
    assert t.rows == () and len(s) > 500 and t.fields == ("straggler",)
    assert np.all(s >= 1.0) and np.median(s) > 1.0 and s.max() < 10


def test_unknown_trace_kind_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="trace kind"):
        load_trace("borg")
    with pytest.raises(InvalidInput, match="trace kind"):
        trace_arrivals("pai", 10, 10, make_rng(0))


def test_missing_trace_folder_is_invalid_input_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(InvalidInput, match=str(missing)):
        load_trace("philly", missing)
    with pytest.raises(InvalidInput, match="philly"):
        load_trace("philly", tmp_path)  # folder without the CSV


# ---------------------------------------------------------------- corrupted copies


def _copy(kind: str, tmp_path: Path) -> Path:
    src = default_trace_dir(kind)
    assert src is not None
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    for f in dst.iterdir():
        f.chmod(0o644)
    return dst


def _edit_line(path: Path, line: int, fn) -> None:  # type: ignore[no-untyped-def]
    lines = path.read_text().split("\n")
    lines[line - 1] = fn(lines[line - 1])
    path.write_text("\n".join(lines))


@_needs("philly")
def test_truncated_philly_file_names_file_line_and_field(tmp_path: Path) -> None:
    d = _copy("philly", tmp_path)
    f = next(d.glob("philly*.csv"))
    lines = f.read_text().rstrip("\n").split("\n")
    last = lines[-1]
    f.write_text("\n".join(lines[:-1]) + "\n" + last[: last.index(",") + 3])  # "ts,du" then EOF
    with pytest.raises(InvalidInput) as e:
        load_trace("philly", d)
    assert e.value.where == f"{f}:{len(lines)}"
    assert e.value.field == "num_gpus"  # the first field the cut row lacks
    assert str(f) in str(e.value) and e.value.field in str(e.value)
    t = load_trace("philly", d, skip_bad_rows=True)
    assert (len(t.rows), t.skipped) == (4800, 1)


@_needs("philly")
def test_corrupted_philly_number_names_the_field_and_skip_counts_it(tmp_path: Path) -> None:
    d = _copy("philly", tmp_path)
    f = next(d.glob("philly*.csv"))
    _edit_line(
        f, 10, lambda s: ",".join(p if i != 2 else "two" for i, p in enumerate(s.split(",")))
    )
    _edit_line(f, 20, lambda s: s.replace(",", ",9", 1))  # duration no longer = gpu_time / gpus
    with pytest.raises(InvalidInput) as e:
        load_trace("philly", f)
    assert (e.value.field, e.value.where, e.value.value) == ("num_gpus", f"{f}:10", "two")
    t = load_trace("philly", d, skip_bad_rows=True)
    assert (len(t.rows), t.skipped) == (4799, 2)
    assert {10, 20}.isdisjoint(r.line for r in t.rows)


@_needs("google")
def test_corrupted_google_event_names_file_line_and_field(tmp_path: Path) -> None:
    d = _copy("google", tmp_path)
    f = next(d.glob("job_events*.csv"))
    _edit_line(f, 5, lambda s: ",".join(p if i != 3 else "99" for i, p in enumerate(s.split(","))))
    with pytest.raises(InvalidInput) as e:
        load_trace("google", d)
    assert (e.value.field, e.value.where) == ("event_type", f"{f}:5")
    assert load_trace("google", d, skip_bad_rows=True).skipped == 1
    tf = next(d.glob("task_events*.csv"))
    _edit_line(tf, 3, lambda s: s[:12])  # truncated task row
    with pytest.raises(InvalidInput) as e:
        load_trace("google", d, skip_bad_rows=False)
    assert e.value.where in (f"{f}:5", f"{tf}:3")


@_needs("alibaba")
def test_corrupted_alibaba_rows_name_file_line_and_field(tmp_path: Path) -> None:
    d = _copy("alibaba", tmp_path)
    f = next(d.glob("openb_pod_list*.csv"))
    _edit_line(f, 7, lambda s: s.replace(",", ",-", 1))  # negative cpu_milli
    with pytest.raises(InvalidInput) as e:
        load_trace("alibaba", d)
    assert (e.value.field, e.value.where) == ("cpu_milli", f"{f}:7")
    nf = next(d.glob("openb_node_list*.csv"))
    _edit_line(nf, 3, lambda s: s.replace(",2,", ",2.5,"))  # fractional GPU count
    t = load_trace("alibaba", d, skip_bad_rows=True)
    assert (len(t.rows), len(t.nodes), t.skipped) == (2207, 1212, 2)


@_needs("pai")
def test_corrupted_pai_row_names_file_line_and_field(tmp_path: Path) -> None:
    d = _copy("pai", tmp_path)
    f = d / "job_2_norm.csv"
    _edit_line(f, 4, lambda s: s.rsplit(",", 1)[0] + ",1e9")
    with pytest.raises(InvalidInput) as e:
        load_trace("pai", d)
    assert (e.value.field, e.value.where) == ("batch_time_norm", f"{f}:4")
    assert load_trace("pai", d, skip_bad_rows=True).skipped == 1


@_needs("philly")
def test_wrong_header_is_invalid_input_on_line_one(tmp_path: Path) -> None:
    d = _copy("philly", tmp_path)
    f = next(d.glob("philly*.csv"))
    _edit_line(f, 1, lambda s: s.replace("num_gpus", "gpus"))
    with pytest.raises(InvalidInput) as e:
        load_trace("philly", d, skip_bad_rows=True)
    assert (e.value.field, e.value.where) == ("header", f"{f}:1")


# ---------------------------------------------------------------- arrival scaling


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(0, 1e7), min_size=1, max_size=200),
    st.integers(1, 500),
    st.integers(1, 200),
    st.integers(0, 2**32 - 1),
)
def test_scaled_arrivals_are_sorted_ints_within_the_horizon(
    secs: list[float], n: int, slots: int, seed: int
) -> None:
    a = scale_arrivals(np.array(secs), n, slots, make_rng(seed))
    assert a.dtype.kind == "i" and len(a) == n
    assert np.all(np.diff(a) >= 0) and a.min() >= 0 and a.max() < slots


def test_scaling_maps_the_trace_span_linearly_onto_the_slots() -> None:
    secs = np.array([100.0, 0.0, 50.0, 99.0, 25.0])
    # all rows sampled: 0→0, 25→2, 50→5, 99→9, 100→capped at T-1
    assert scale_arrivals(secs, 5, 10, make_rng(0)).tolist() == [0, 2, 5, 9, 9]
    # twice the rows: every row twice
    assert scale_arrivals(secs, 10, 10, make_rng(0)).tolist() == [0, 0, 2, 2, 5, 5, 9, 9, 9, 9]
    assert scale_arrivals(np.array([7.0]), 3, 4, make_rng(0)).tolist() == [0, 0, 0]


@pytest.mark.parametrize("n,slots", [(0, 10), (5, 0), (2.5, 10)])
def test_bad_job_or_slot_counts_are_invalid_input(n: float, slots: int) -> None:
    with pytest.raises(InvalidInput):
        scale_arrivals(np.arange(5.0), n, slots, make_rng(0))  # type: ignore[arg-type]


@needs_all
@pytest.mark.parametrize("kind", ARRIVALS)
def test_trace_arrivals_are_deterministic_sorted_and_within_the_horizon(kind: str) -> None:
    a = trace_arrivals(kind, 300, 80, make_rng(5))
    assert np.array_equal(a, trace_arrivals(kind, 300, 80, make_rng(5)))
    assert not np.array_equal(a, trace_arrivals(kind, 300, 80, make_rng(6)))
    assert np.all(np.diff(a) >= 0) and a.min() >= 0 and a.max() < 80
    assert len(np.unique(a)) > 10  # spread over the horizon, not squeezed into a corner


@_needs("alibaba")
def test_alibaba_warm_up_pods_are_left_out_of_the_arrivals() -> None:
    rows = traces.arrival_rows(load_trace("alibaba"))
    assert len(rows) == 2208 - 27  # README: 27 pods before day 115
    assert all(r.arrival_s >= 115 * 86400 for r in rows)


# ---------------------------------------------------------------- cluster workloads


def _tiny_trace() -> Trace:
    rows = (TraceRow(0.0, 4, 7200.0, 2), TraceRow(3600.0, 2, None, 3), TraceRow(7200.0, 1, 90.0, 4))
    return Trace("philly", Path("tiny.csv"), rows, 0, ("arrival", "workers", "runtime"))


def test_run_time_becomes_work_through_the_speed_model() -> None:
    w = trace_cluster(_tiny_trace(), 3, 5, 10, make_rng(1))
    j0, j1, j2 = w.jobs
    assert [j.arrival for j in w.jobs] == [0, 5, 9]
    assert j0.batch >= 4 and j1.batch >= 2
    # 2 h on 4 workers and ⌈4/γ⌉ PSs (fits one machine → internal, Fact 1)
    want = 7200 / SLOT_SECONDS * sync_rate(j0, 4, j0.min_ps(4), internal=True)
    assert j0.total_work == pytest.approx(want, rel=1 / j0.samples + 1e-9)
    assert 50 <= j1.epochs <= 200 and 20000 <= j1.samples <= 500000  # no run time: drawn
    want2 = 90 / SLOT_SECONDS * sync_rate(j2, 1, 1, internal=True)
    assert j2.total_work == pytest.approx(max(1.0, want2), rel=0.5)


def test_trace_jobs_without_a_worker_count_resample_the_traces_counts() -> None:
    rows = tuple(TraceRow(float(i), 7 if i == 0 else None, 60.0, i + 2) for i in range(20))
    w = trace_cluster(Trace("google", Path("g.csv"), rows, 0, ()), 20, 3, 5, make_rng(0))
    assert all(j.batch >= 7 for j in w.jobs)
    assert "workers (1/20" in w.notes[1]


def test_straggler_factors_are_drawn_from_the_pai_factors() -> None:
    pai = Trace("pai", Path("pai"), (), 0, ("straggler",), stragglers=(1.25, 1.5))
    w = trace_cluster(_tiny_trace(), 30, 5, 10, make_rng(2), stragglers=pai)
    assert {j.straggler for j in w.jobs} == {1.25, 1.5}
    assert any("straggler" in n for n in w.notes)


@needs_all
def test_cluster_trace_workloads_are_registered() -> None:
    assert set(ARRIVALS) <= set(workload_names("cluster"))


@needs_all
@pytest.mark.parametrize("kind", ARRIVALS)
def test_trace_workload_is_deterministic_and_says_where_fields_came_from(kind: str) -> None:
    p = WorkloadParams(jobs=40, slots=30, machines=12, extra={"straggler": True})
    w = build_workload("cluster", kind, p, make_rng(3))
    again = build_workload("cluster", kind, p, make_rng(3))
    assert w.jobs == again.jobs and w.notes == again.notes
    assert np.array_equal(w.cluster.capacity, again.cluster.capacity)
    assert w.jobs != build_workload("cluster", kind, p, make_rng(4)).jobs
    assert len(w.jobs) == 40 and w.horizon == 30 and w.cluster.machines == 12
    assert all(0 <= j.arrival < 30 for j in w.jobs)
    assert [j.arrival for j in w.jobs] == sorted(j.arrival for j in w.jobs)
    assert w.source == f"trace-{kind}" and any(j.straggler > 1 for j in w.jobs)
    text = "\n".join(w.notes)
    assert "from the trace: arrival" in text and "0 bad rows skipped" in text
    r = simulate("cluster", w, make_scheduler("cluster", "fifo"), make_rng(1))
    assert r.metrics["completed_jobs"] > 0


@_needs("alibaba")
def test_alibaba_workload_uses_the_node_list_and_pod_requests() -> None:
    w = build_workload("cluster", "alibaba", WorkloadParams(jobs=50), make_rng(0))
    assert w.cluster.machines == 1213
    t = load_trace("alibaba")
    assert {tuple(c[:3]) for c in w.cluster.capacity} == set(t.nodes)
    pods = {(r.gpu_share, r.cpu, r.mem_gb) for r in t.rows}
    assert all(j.worker_demand[:3] in pods for j in w.jobs)


@_needs("philly")
def test_skip_bad_rows_reaches_the_workload_notes(tmp_path: Path) -> None:
    d = _copy("philly", tmp_path)
    f = next(d.glob("philly*.csv"))
    _edit_line(f, 30, lambda s: s.replace(",", ",x", 1))
    p = WorkloadParams(jobs=10, trace=d)
    with pytest.raises(InvalidInput, match=f"{f}:30"):
        build_workload("cluster", "philly", p, make_rng(0))
    w = build_workload(
        "cluster",
        "philly",
        WorkloadParams(jobs=10, trace=d, extra={"skip_bad_rows": True}),
        make_rng(0),
    )
    assert "1 bad rows skipped" in w.notes[0]


def test_trace_workloads_are_sync_only() -> None:
    with pytest.raises(InvalidInput, match="mode"):
        build_workload("cluster", "philly", WorkloadParams(extra={"mode": "async"}), make_rng(0))


def test_all_lists_public_names() -> None:
    assert all(hasattr(traces, n) for n in traces.__all__)


@_needs("alibaba")
def test_a_trace_file_of_any_name_or_a_companion_file_can_be_given(tmp_path: Path) -> None:
    d = _copy("alibaba", tmp_path)
    pods = next(d.glob("openb_pod_list*.csv"))
    renamed = pods.rename(d / "pods.csv")
    assert len(load_trace("alibaba", renamed).rows) == 2208
    node_list = next(d.glob("openb_node_list*.csv"))
    with pytest.raises(InvalidInput, match="openb_pod_list"):  # main file no longer there
        load_trace("alibaba", node_list)


@_needs("philly")
def test_undecodable_bytes_spoil_only_their_row(tmp_path: Path) -> None:
    d = _copy("philly", tmp_path)
    f = next(d.glob("philly*.csv"))
    data = f.read_bytes().split(b"\n")
    data[41] = b"\xff\xfe" + data[41]  # line 42
    f.write_bytes(b"\n".join(data))
    with pytest.raises(InvalidInput) as e:
        load_trace("philly", d)
    assert (e.value.where, e.value.field) == (f"{f}:42", "timestamp")
    t = load_trace("philly", d, skip_bad_rows=True)
    assert (len(t.rows), t.skipped) == (4800, 1)
