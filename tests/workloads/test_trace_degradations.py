"""Traces never degrade silently: each mis-windowed or odd trace gets an error or a stated fallback.

The trace files here are small synthetic files written by each test into
``tmp_path``, in the schemas of ``../shared/traces/*/README.md`` (test inputs
only: no trace data is kept in the repository or used as a workload).
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from dmlsched.cli import main
from dmlsched.errors import InvalidInput
from dmlsched.rng import make_rng
from dmlsched.workloads.registry import WorkloadParams, build_workload
from dmlsched.workloads.traces import load_trace, trace_root

W0 = 600_000_000  # µs: the Google 2011 window opens at 600 s


def _cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out):
        rc = main(args)
    return rc, out.getvalue(), err.getvalue()


# ------------------------------------------------------------------ file writers


def _job_event(t: int, job: int, ev: int) -> str:
    return f"{t},,{job},{ev},user,1,name,logical\n"


def _task_event(t: int, job: int, task: int, ev: int) -> str:
    return f"{t},,{job},{task},,{ev},user,0,2,0.1,0.1,0.001,0\n"


def google(d: Path, *, overlap: bool = True, scale: int = 1, parts: int = 1) -> Path:
    """Six jobs submitted, scheduled and finished over 20 minutes; tasks for jobs 0-2
    in the first 5 minutes (``overlap``) or for unknown jobs long after (not)."""
    d.mkdir(parents=True, exist_ok=True)
    lines = []
    for j in range(6):
        t = W0 + j * 200_000_000
        lines += [
            _job_event(t, j, 0),
            _job_event(t + 1_000_000, j, 1),
            _job_event(t + 61_000_000 * (j + 1), j, 4),
        ]
    lines = [ln.replace(ln.split(",")[0], str(int(ln.split(",")[0]) // scale), 1) for ln in lines]
    per = len(lines) // parts
    for p in range(parts):
        chunk = lines[p * per : (p + 1) * per if p < parts - 1 else None]
        (d / f"job_events_part{p}.csv").write_text("".join(chunk))
    if overlap:
        tasks = [_task_event(W0 + 10 + k, j, k, 0) for j in range(3) for k in range(j + 2)]
    else:
        tasks = [_task_event(9_000_000_000 + k, 99, k, 0) for k in range(3)]
    (d / "task_events_part0.csv").write_text("".join(tasks))
    return d


PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"


def philly(f: Path, n: int = 8, bad_line: int | None = None) -> Path:
    f.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(n):
        dur, gpus = 60 * (i + 1), 1 + i % 2
        rows.append(f"2017-10-09 {i // 60:02d}:{i % 60:02d}:00,{dur}.0,{gpus},{dur * gpus}.0,c\n")
    if bad_line is not None:
        rows[bad_line - 2] = rows[bad_line - 2].replace(",", ",x", 1)
    f.write_text(PHILLY_HEADER + "".join(rows))
    return f


POD_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
)
NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
DAY = 86400


def alibaba_pods(f: Path) -> Path:
    f.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        f"pod-{i},{4000 + 1000 * i},8192,1,1000,,LS,Succeeded,"
        f"{116 * DAY + 3600 * i},{116 * DAY + 3600 * i + 1800},{116 * DAY + 3600 * i + 60}\n"
        for i in range(6)
    ]
    f.write_text(POD_HEADER + "".join(rows))
    return f


def alibaba_nodes(f: Path) -> Path:
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(NODE_HEADER + "".join(f"node-{i},64000,262144,{2 + 2 * i},T4\n" for i in range(3)))
    return f


PAI_HEADER = ",worker,gpu,time,batch_time_norm\n"


def pai(f: Path) -> Path:
    f.parent.mkdir(parents=True, exist_ok=True)
    rows = [f"{k},{k % 2},25,{1 + k // 2},{500 + 40 * (k % 2)}\n" for k in range(8)]
    f.write_text(PAI_HEADER + "".join(rows))
    return f


# ------------------------------------------------------------------ Google


def test_google_without_task_overlap_keeps_run_times_with_one_worker_and_warns(
    tmp_path: Path,
) -> None:
    d = google(tmp_path / "g", overlap=False)
    t = load_trace("google", d)
    assert all(r.workers is None for r in t.rows)
    assert any(n.startswith("WARNING: ") and "task_events cover 9000-9000 s" in n for n in t.notes)
    wl = build_workload("cluster", "google", WorkloadParams(jobs=6, slots=10, trace=d), make_rng(0))
    text = "\n".join(wl.notes)
    assert "workers (0/6; 6 set to 1)" in text and "run time -> E*K (6/6" in text
    assert "W = 1 worker (their trace run times are kept)" in text
    assert "resampled" not in text  # the old note claimed a resampling that never happened


def test_google_fallback_is_on_stderr_in_config_json_and_in_summary(tmp_path: Path) -> None:
    d = google(tmp_path / "g", overlap=False)
    out = tmp_path / "o"
    args = ["compare", "--schedulers", "fifo", "--workload", "google", "--trace", str(d)]
    rc, _, err = _cli(
        [*args, "--jobs", "6", "--slots", "10", "--seeds", "1", "--workers", "1", "--out", str(out)]
    )
    assert rc == 0, err
    warnings = [ln for ln in err.splitlines() if ln.startswith("dmlsched: WARNING: ")]
    assert len(warnings) == 2
    notes = json.loads((out / "config.json").read_text())["notes"]
    assert sum(n.startswith("WARNING: ") for n in notes) == 2
    summary = (out / "summary.md").read_text()
    assert "## Workload" in summary and "W = 1 worker" in summary


def test_google_with_overlap_counts_tasks_and_resamples_the_rest(tmp_path: Path) -> None:
    t = load_trace("google", google(tmp_path / "g"))
    assert [r.workers for r in t.rows] == [2, 3, 4, None, None, None]
    assert not t.notes


def test_google_times_in_seconds_are_refused_even_when_skipping_bad_rows(tmp_path: Path) -> None:
    d = google(tmp_path / "g", scale=1_000_000)
    for skip in (False, True):
        with pytest.raises(InvalidInput) as e:
            load_trace("google", d, skip_bad_rows=skip)
        assert e.value.field == "time" and e.value.where == f"{d / 'job_events_part0.csv'}:1"
        assert "seconds or milliseconds" in str(e.value)


def test_google_parts_of_a_folder_are_all_read(tmp_path: Path) -> None:
    one = load_trace("google", google(tmp_path / "one"))
    three = load_trace("google", google(tmp_path / "three", parts=3))
    assert len(three.files) == 4  # 3 job parts + 1 task part
    assert [(r.arrival_s, r.workers, r.runtime_s) for r in three.rows] == [
        (r.arrival_s, r.workers, r.runtime_s) for r in one.rows
    ]
    assert len(three.rows) == 6


def test_skip_bad_rows_reaches_geo_google_arrivals(tmp_path: Path) -> None:
    d = google(tmp_path / "g")
    f = d / "job_events_part0.csv"
    lines = f.read_text().splitlines(keepends=True)
    lines[4] = "garbage,row\n"
    f.write_text("".join(lines))
    p = WorkloadParams(jobs=6, machines=3, slots=5, trace=d)
    with pytest.raises(InvalidInput, match=f"{f}:5"):
        build_workload("geo", "google", p, make_rng(0))
    skip = WorkloadParams(jobs=6, machines=3, slots=5, trace=d, extra={"skip_bad_rows": True})
    wl = build_workload("geo", "google", skip, make_rng(0))
    assert any("1 bad rows skipped" in n for n in wl.notes)


# ------------------------------------------------------------------ Philly


def test_several_philly_files_in_a_folder_are_refused_by_name(tmp_path: Path) -> None:
    philly(tmp_path / "p" / "philly_a.csv")
    philly(tmp_path / "p" / "philly_b.csv")
    with pytest.raises(InvalidInput) as e:
        load_trace("philly", tmp_path / "p")
    assert "philly_a.csv, philly_b.csv" in str(e.value) and "--trace FILE" in str(e.value)
    assert len(load_trace("philly", tmp_path / "p" / "philly_b.csv").rows) == 8


def test_skip_bad_rows_reaches_edge_cloud_philly_arrivals(tmp_path: Path) -> None:
    f = philly(tmp_path / "p" / "philly.csv", bad_line=3)
    p = WorkloadParams(jobs=5, machines=3, slots=10, trace=f)
    with pytest.raises(InvalidInput, match=f"{f}:3"):
        build_workload("edge-cloud", "philly", p, make_rng(0))
    skip = WorkloadParams(jobs=5, machines=3, slots=10, trace=f, extra={"skip_bad_rows": True})
    wl = build_workload("edge-cloud", "philly", skip, make_rng(0))
    assert any("1 bad rows skipped" in n for n in wl.notes)


def test_run_takes_skip_bad_rows_in_every_setting(tmp_path: Path) -> None:
    f = philly(tmp_path / "p" / "philly.csv", bad_line=3)
    base = ["run", "--workload", "philly", "--trace", str(f), "--jobs", "4", "--slots", "6"]
    for setting, sched in (("cluster", "fifo"), ("edge-cloud", "srtf")):
        args = [*base, "--setting", setting, "--scheduler", sched, "--machines", "3"]
        assert _cli(args)[0] == 2
        rc, _, err = _cli([*args, "--skip-bad-rows"])
        assert rc == 0, err


# ------------------------------------------------------------------ Alibaba


def test_alibaba_pods_without_a_node_list_ask_for_nodes(tmp_path: Path) -> None:
    pods = alibaba_pods(tmp_path / "pods" / "openb_pod_list_x.csv")
    with pytest.raises(InvalidInput, match="--nodes PATH"):
        load_trace("alibaba", pods.parent)
    nodes = alibaba_nodes(tmp_path / "elsewhere" / "my_nodes.csv")
    for where in (nodes, nodes.parent / "openb_node_list_x.csv"):
        if where != nodes:
            nodes.rename(where)
            nodes = where
        t = load_trace(
            "alibaba", pods, nodes=where if where.name == "my_nodes.csv" else where.parent
        )
        assert len(t.rows) == 6 and len(t.nodes) == 3


def test_cli_nodes_flag_reaches_the_alibaba_workload(tmp_path: Path) -> None:
    pods = alibaba_pods(tmp_path / "pods" / "pods.csv")
    nodes = alibaba_nodes(tmp_path / "n" / "nodes.csv")
    args = ["run", "--scheduler", "fifo", "--workload", "alibaba", "--trace", str(pods)]
    rc, _, err = _cli([*args, "--jobs", "4", "--slots", "6"])
    assert rc == 2 and "--nodes" in err
    rc, _, err = _cli([*args, "--jobs", "4", "--slots", "6", "--nodes", str(nodes)])
    assert rc == 0, err


def test_nodes_is_refused_where_no_node_list_is_read(tmp_path: Path) -> None:
    nodes = alibaba_nodes(tmp_path / "n" / "nodes.csv")
    for args in (
        ["--setting", "cluster", "--scheduler", "fifo"],
        ["--setting", "interval", "--scheduler", "smd"],
    ):
        rc, _, err = _cli(["run", *args, "--jobs", "3", "--slots", "4", "--nodes", str(nodes)])
        assert rc == 2 and "nodes" in err, err
    edge = ["run", "--setting", "edge-cloud", "--scheduler", "srtf", "--jobs", "3"]
    rc, _, err = _cli([*edge, "--machines", "2", "--slots", "4", "--nodes", str(nodes)])
    assert rc == 0, err


def test_edge_cloud_servers_come_from_the_named_node_list(tmp_path: Path) -> None:
    nodes = alibaba_nodes(tmp_path / "n" / "nodes.csv")
    p = WorkloadParams(jobs=4, machines=5, slots=6, extra={"nodes": nodes})
    wl = build_workload("edge-cloud", "synthetic", p, make_rng(0))
    assert any(str(nodes) in n for n in wl.notes)
    assert {len(w) for w in wl.system.worker_types} <= {2, 4, 6}


def test_several_node_lists_are_refused_by_name(tmp_path: Path) -> None:
    pods = alibaba_pods(tmp_path / "a" / "openb_pod_list_x.csv")
    alibaba_nodes(tmp_path / "a" / "openb_node_list_1.csv")
    alibaba_nodes(tmp_path / "a" / "openb_node_list_2.csv")
    with pytest.raises(InvalidInput, match=r"openb_node_list_1\.csv, openb_node_list_2\.csv"):
        load_trace("alibaba", pods)


# ------------------------------------------------------------------ PAI


def test_pai_files_are_recognised_by_header_not_name(tmp_path: Path) -> None:
    d = tmp_path / "pai"
    pai(d / "worker_times_a.csv")
    pai(d / "job_7_norm.csv")
    (d / "coefficient_variation.csv").write_text(",0,1,2\n0,0.1,0.2,0.3\n")
    t = load_trace("pai", d)
    assert [f.name for f in t.files] == ["job_7_norm.csv", "worker_times_a.csv"]
    assert len(t.stragglers) == 8  # 4 iterations × 2 files


def test_a_folder_without_pai_files_is_refused_listing_what_it_holds(tmp_path: Path) -> None:
    d = tmp_path / "pai"
    d.mkdir()
    (d / "other.csv").write_text("a,b\n1,2\n")
    with pytest.raises(InvalidInput, match=r"found: other\.csv"):
        load_trace("pai", d)


# ------------------------------------------------------------------ A_online and --traces


def test_aonline_figures_fail_loudly_without_their_philly_trace(tmp_path: Path) -> None:
    from dmlsched.experiments.catalogue import get

    exp = get("aonline-fig12")
    with trace_root(tmp_path), pytest.raises(InvalidInput) as e:
        exp.build(exp.quick_points[0], 0, True)
    assert str(tmp_path / "philly-pollux") in str(e.value)


def test_reproduce_traces_dir_reaches_every_build(tmp_path: Path) -> None:
    out = tmp_path / "o"
    args = ["reproduce", "aonline-fig12", "--quick", "--seeds", "1", "--workers", "1"]
    rc, _, err = _cli([*args, "--traces", str(tmp_path), "--out", str(out)])
    assert rc == 2 and str(tmp_path / "philly-pollux") in err
    assert not (out / "results.csv").exists()
    rc, _, err = _cli([*args, "--traces", str(tmp_path / "nope"), "--out", str(out)])
    assert rc == 2 and "nope" in err


def test_a_trace_set_elsewhere_is_used_and_recorded(tmp_path: Path) -> None:
    from dmlsched.experiments.catalogue import get
    from dmlsched.experiments.runner import RunConfig, run_experiment, workload_notes

    root = tmp_path / "traces"
    philly(root / "philly-pollux" / "philly_mine.csv", n=40)
    alibaba_nodes(root / "alibaba-gpu-v2023" / "openb_node_list_mine.csv")
    notes = workload_notes(get("aonline-fig12"), True, root)
    assert any("philly_mine.csv" in n for n in notes)
    assert any("openb_node_list_mine.csv" in n for n in notes)
    exp = get("cluster-baselines")
    run_experiment(exp, tmp_path / "o", RunConfig(seeds=1, workers=1, quick=True, traces=root))
    assert json.loads((tmp_path / "o" / "config.json").read_text())["traces"] == str(root)


def test_default_trace_folders_follow_the_trace_root(tmp_path: Path) -> None:
    from dmlsched.workloads.traces import default_trace_dir

    (tmp_path / "philly-pollux").mkdir()
    with trace_root(tmp_path):
        assert default_trace_dir("philly") == (tmp_path / "philly-pollux").resolve()
        assert default_trace_dir("google") is None
    assert default_trace_dir("philly") != tmp_path / "philly-pollux"
