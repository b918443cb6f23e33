"""Peer workloads: Pollux CSV and Gavel .trace imports, mappings and bad lines."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dmlsched.cli import main
from dmlsched.errors import InvalidInput
from dmlsched.model.speed.measured import MeasuredSpeed
from dmlsched.rng import make_rng
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.peers import (
    B_EXT_GBPS,
    PeerRow,
    build_gavel_workload,
    build_pollux_workload,
    load_gavel,
    load_pollux,
    read_gavel,
    read_pollux,
)
from dmlsched.workloads.profiles import APPLICATIONS, default_profile_dir
from dmlsched.workloads.registry import WorkloadParams, build_workload
from tests.conftest import PEERS
from tests.model.test_measured_speed import toy_profile

# <repo>/../shared/peers (CI), else the nearest ancestor's shared/peers (a worktree)
_found = default_profile_dir()
_ROOT = PEERS if PEERS.exists() or _found is None else _found.parents[1]
POLLUX = _ROOT / "pollux-osdi21"
GAVEL = _ROOT / "gavel" / "traces"
needs_peers = pytest.mark.skipif(not POLLUX.exists(), reason="../shared/peers absent")
HEADER = "name,time,application,num_replicas,batch_size\n"
TOY = {a: toy_profile() for a in APPLICATIONS}


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_pollux_row_maps_time_gpus_batch_and_application(tmp_path: Path) -> None:
    p = write(tmp_path, "w.csv", HEADER + "a,150,cifar10,4,80\nb,59,bert,1,12\n")
    wl = build_pollux_workload(read_pollux(p), source="t", slot_seconds=60.0, profiles=TOY)
    a, b = sorted(wl.jobs, key=lambda j: j.id)
    assert (a.arrival, b.arrival) == (2, 0)  # ⌊150/60⌋, ⌊59/60⌋
    assert a.requested_workers == 4 and a.batch == 80 and a.gamma == 4.0
    app = APPLICATIONS["cifar10"]
    assert (a.epochs, a.samples) == (app.epochs, app.samples)
    assert a.grad_mb == pytest.approx(4 * 11.17)
    # local batch 20 on one GPU: (2 − 0.2) s / 20 samples, in 60-s slots
    assert a.tau == pytest.approx(1.8 / 20 / 60)
    assert a.b_ext == pytest.approx(B_EXT_GBPS * 60 / 3600)  # stored for comm_slots' 3600-s slot


def test_bandwidth_scaling_makes_eq1_transfer_last_the_right_number_of_slots() -> None:
    from dmlsched.model.speed.pdors import comm_slots

    rows = [PeerRow(0.0, "bert", 1, 12, 1, 100)]
    wl = build_pollux_workload(rows, source="t", slot_seconds=60.0, profiles=TOY)
    job = wl.jobs[0]
    seconds = 2 * job.grad_mb * 8e-3 / B_EXT_GBPS
    assert comm_slots(2 * job.grad_mb, job.b_ext) == pytest.approx(seconds / 60)


def test_gavel_line_maps_scale_factor_steps_and_model(tmp_path: Path) -> None:
    line = "ResNet-50 (batch size 64)\tcmd %s\t--num_minibatches\t1\t1000\t7200.5\t8\n"
    line += "A3C\tcmd\t--max-steps\t0\t10\t0\t1\n"
    rows = read_gavel(write(tmp_path, "t.trace", line))
    # a Gavel step is one worker's step of b = 64 samples: 1000 steps = 64,000 samples
    assert rows[0] == PeerRow(
        7200.5, "imagenet", 8, 512, 1, 1000 * 64, "ResNet-50 (batch size 64)", 1
    )
    assert rows[1].application == "cifar10" and rows[1].batch == 4  # A3C: default batch 4


def test_gavel_jobs_keep_gavels_sizes_under_its_table(tmp_path: Path) -> None:
    from dmlsched.model.speed.gavel import GavelSpeed

    line = "Transformer (batch size 128)\tc\t-step\t1\t3000\t0\t4\n"
    line += "Transformer (batch size 128)\tc\t-step\t1\t3000\t0\t2\n"
    table = {
        ("Transformer (batch size 128)", s): thr for s, thr in ((1, 5.0), (2, 10.0), (4, 15.0))
    }
    rows = read_gavel(write(tmp_path, "t.trace", line))
    wl = build_gavel_workload(rows, source="t", slot_seconds=60.0, table=table, speed="measured")
    assert isinstance(wl.speed, GavelSpeed)
    a, b = sorted(wl.jobs, key=lambda j: j.id)
    # alone on its 4 GPUs: 3000 steps at 15 steps/s = 200 s = 10/3 slots
    assert a.total_work / wl.speed.rate(a, [0], [4], [1]) == pytest.approx(200 / 60)
    # surplus workers idle: 3 workers run at the 2-GPU throughput
    assert wl.speed.rate(b, [0], [3], [1]) == wl.speed.rate(b, [0], [2], [1])
    # Eq. (1)'s τ: one GPU, 5 steps/s of 128 samples
    assert a.tau * 60.0 == pytest.approx(1 / (5.0 * 128))
    assert wl.kinds[a.id] == "Transformer (batch size 128)"


def test_gavel_lines_missing_from_the_table_are_left_out_and_noted(tmp_path: Path) -> None:
    line = "CycleGAN\tc\t--n_steps\t1\t10\t0\t8\nA3C\tc\t--max-steps\t0\t10\t5\t1\n"
    table = {("A3C", 1): 7.0, ("CycleGAN", 1): 4.0}
    wl = build_gavel_workload(read_gavel(write(tmp_path, "t.trace", line)), source="t", table=table)
    assert len(wl.jobs) == 1 and wl.kinds[0] == "A3C"
    assert any("line 1 (CycleGAN on 8 GPUs)" in n for n in wl.notes)
    with pytest.raises(InvalidInput, match="jobs"):
        build_gavel_workload(read_gavel(write(tmp_path, "u.trace", line)), source="t", table={})


@pytest.mark.parametrize(
    ("text", "field", "line"),
    [
        (HEADER + "a,1,cifar10,4,80\nb,x,cifar10,4,80\n", "time", 3),
        (HEADER + "a,1,resnet,4,80\n", "application", 2),
        (HEADER + "a,1,cifar10,0,80\n", "num_replicas", 2),
        (HEADER + "a,1,cifar10,4,2\n", "batch_size", 2),
        (HEADER + "a,1,cifar10,4\n", "columns", 2),
        ("name,when\n", "header", 1),
    ],
)
def test_malformed_pollux_line_names_file_line_and_field(
    tmp_path: Path, text: str, field: str, line: int
) -> None:
    p = write(tmp_path, "bad.csv", text)
    with pytest.raises(InvalidInput) as e:
        read_pollux(p)
    assert e.value.field == field and e.value.where == f"{p}:{line}"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("ResNet-18 (batch size 32)\tc\t-n\t1\t10\t0\n", "fields"),
        ("ResNet-18 (batch size 32)\tc\td\t-n\t1\t10\t1\tx\t-1\t0\n", "priority_weight"),
        ("Banana (batch size 32)\tc\t-n\t1\t10\t0\t1\n", "job_type"),
        ("ResNet-18 (batch size 32)\tc\t-n\t1\tten\t0\t1\n", "total_steps"),
        ("ResNet-18 (batch size 32)\tc\t-n\t1\t10\t-5\t1\n", "arrival_time"),
        ("ResNet-18 (batch size 32)\tc\t-n\t1\t10\t0\t1.5\n", "scale_factor"),
    ],
)
def test_malformed_gavel_line_names_file_line_and_field(
    tmp_path: Path, text: str, field: str
) -> None:
    p = write(tmp_path, "bad.trace", "A3C\tc\t--max-steps\t0\t10\t0\t1\n" + text)
    with pytest.raises(InvalidInput) as e:
        read_gavel(p)
    assert e.value.field == field and e.value.where == f"{p}:2"


@needs_peers
def test_corrupted_line_exits_2_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = (POLLUX / "workloads" / "workload-6.csv").read_text().splitlines()
    lines[5] = lines[5].replace(",", ";", 1)
    p = write(tmp_path, "corrupt.csv", "\n".join(lines) + "\n")
    code = main(
        [
            "compare",
            "--schedulers",
            "tiresias",
            "--workload",
            f"pollux:{p}",
            "--out",
            str(tmp_path / "o"),
            "--seeds",
            "1",
            "--workers",
            "1",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and f"{p}:6" in err and "columns" in err
    assert err.count("\n") == 1


@needs_peers
def test_registry_dispatches_kind_path_names_with_slot_seconds() -> None:
    path = POLLUX / "workloads" / "workload-6.csv"
    params = WorkloadParams(extra={"slot_seconds": 120.0, "speed": "measured"})
    wl = build_workload("cluster", f"pollux:{path}", params, make_rng(0))
    assert len(wl.jobs) == 160 and isinstance(wl.speed, MeasuredSpeed)
    assert "slot_seconds=120" in wl.notes
    first = min(wl.jobs, key=lambda j: j.id)
    assert first.arrival == math.floor(53 / 120)
    with pytest.raises(InvalidInput):
        build_workload("cluster", "pollux:", WorkloadParams(), make_rng(0))


@needs_peers
def test_workload6_replayed_with_tiresias_completes_all_160_jobs() -> None:
    wl = load_pollux(POLLUX / "workloads" / "workload-6.csv", slot_seconds=60.0)
    m = simulate("cluster", wl, make_scheduler("cluster", "tiresias"), make_rng(1)).metrics
    assert m["completed_jobs"] == 160.0
    assert np.isfinite(m["mean_jct"]) and m["mean_jct"] > 0
    assert m["mean_jct_s"] == pytest.approx(m["mean_jct"] * 60.0)


@needs_peers
def test_tiresias_reads_the_slot_length_from_the_workload() -> None:
    # thresholds of 16 GPU-hours are 16 x 60 worker-slots at 60 s, 16 at 3600 s: the same
    # workload replayed with each slot length gives different queues, each taken from the view
    path = POLLUX / "workloads" / "workload-6.csv"
    jct = {}
    for secs in (60.0, 3600.0):
        wl = load_pollux(path, slot_seconds=secs)
        assert wl.slot_seconds == secs
        m = simulate("cluster", wl, make_scheduler("cluster", "tiresias"), make_rng(1)).metrics
        jct[secs] = m["mean_jct_s"]
    assert jct[60.0] < jct[3600.0]


@needs_peers
@pytest.mark.parametrize("name", ["msr-seed0-23dbec", "msr-seed0-2869ce", "msr-seed0-51b7ef"])
def test_gavel_traces_load(name: str) -> None:
    wl = load_gavel(GAVEL / f"{name}.trace", slot_seconds=3600.0)
    lines = len((GAVEL / f"{name}.trace").read_text().splitlines())
    left = sum(int(n.split()[2]) for n in wl.notes if n.startswith("left out"))
    assert len(wl.jobs) + left == lines
    assert all(j.requested_workers and j.requested_workers >= 1 for j in wl.jobs)


@needs_peers
def test_fifo_on_gavel_51b7ef_gives_each_job_its_gpus_at_gavels_sizes() -> None:
    """Issue 17: 389,338 s before (nearest Pollux application, random gangs)."""
    wl = load_gavel(GAVEL / "msr-seed0-51b7ef.trace", speed="measured")
    assert len(wl.jobs) == 17  # CycleGAN on 8 GPUs is not in Gavel's table
    res = simulate("cluster", wl, make_scheduler("cluster", "fifo"), make_rng(0))
    m = res.metrics
    assert m["completed_jobs"] == 17.0
    # no job waits on 64 GPUs: the mean JCT is the mean of steps / throughput, 14,779 s
    assert m["mean_jct_s"] == pytest.approx(14778.6, abs=1.0)
    allocated = {e.job: e.detail for e in res.events if e.kind == "allocate"}
    for j in wl.jobs:
        assert f"workers={j.requested_workers} " in allocated[j.id]


@needs_peers
@pytest.mark.parametrize("name", ["msr-seed0-23dbec", "msr-seed0-51b7ef"])
@pytest.mark.parametrize("sched", ["tiresias", "srtf"])
def test_small_gavel_traces_run_to_completion(name: str, sched: str) -> None:
    wl = load_gavel(GAVEL / f"{name}.trace", slot_seconds=3600.0, speed="measured")
    m = simulate("cluster", wl, make_scheduler("cluster", sched), make_rng(0)).metrics
    assert m["completed_jobs"] == len(wl.jobs)


@needs_peers
def test_large_gavel_trace_runs_to_completion_with_day_slots() -> None:
    wl = load_gavel(GAVEL / "msr-seed0-2869ce.trace", slot_seconds=86400.0)
    m = simulate("cluster", wl, make_scheduler("cluster", "srtf"), make_rng(0)).metrics
    assert m["completed_jobs"] == len(wl.jobs)


@needs_peers
def test_compare_replays_a_pollux_file_with_slot_seconds(tmp_path: Path) -> None:
    lines = (POLLUX / "workloads" / "workload-6.csv").read_text().splitlines()[:6]
    p = write(tmp_path, "w.csv", "\n".join(lines) + "\n")
    out = tmp_path / "o"
    code = main(
        [
            "compare",
            "--schedulers",
            "tiresias,srtf",
            "--workload",
            f"pollux:{p}",
            "--slot-seconds",
            "30",
            "--out",
            str(out),
            "--seeds",
            "1",
            "--workers",
            "1",
        ]
    )
    assert code == 0
    assert "slot_seconds=30" in (out / "summary.md").read_text()
    assert (
        main(
            [
                "compare",
                "--schedulers",
                "tiresias",
                "--workload",
                f"pollux:{p}",
                "--slot-seconds",
                "0",
                "--out",
                str(out),
            ]
        )
        == 2
    )


@needs_peers
def test_run_takes_slot_seconds_speed_and_tiresias_follows_the_slot_length(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 17: Tiresias on workload-6 kept 3600-s thresholds (3733 s instead of 1648 s)."""
    import json

    w6 = f"pollux:{POLLUX / 'workloads' / 'workload-6.csv'}"
    run = ["run", "--scheduler", "tiresias", "--workload", w6, "--slot-seconds", "60"]
    assert main([*run, "--speed", "eq1"]) == 0
    m = json.loads(capsys.readouterr().out)
    assert m["mean_jct_s"] == pytest.approx(1647.7, abs=1.0)
    assert main(run) == 0  # the peer's measured throughputs by default
    measured = json.loads(capsys.readouterr().out)
    assert measured["mean_jct_s"] > m["mean_jct_s"]
    assert main([*run, "--speed", "goodput"]) == 0  # statistical epochs: longer still
    assert json.loads(capsys.readouterr().out)["mean_jct_s"] > measured["mean_jct_s"]


@pytest.mark.parametrize(
    ("flags", "field"),
    [
        (["--slot-seconds", "60"], "slot-seconds"),
        (["--speed", "measured"], "speed"),
        (["--speed", "goodput"], "speed"),
        (["--speed", "fast"], "speed"),
        (["--gpu", "v100"], "gpu"),
    ],
)
def test_peer_flags_on_a_workload_that_cannot_take_them_exit_2(
    flags: list[str], field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", "--scheduler", "fifo", "--jobs", "3", "--machines", "2", "--slots", "4"]
    assert main([*args, *flags]) == 2
    err = capsys.readouterr().err
    assert field in err and err.count("\n") == 1


# ---------------------------------------------------------------- speed models


def _toy_validations() -> dict:
    from dmlsched.model.speed.goodput import Validation

    out = {}
    for name, app in APPLICATIONS.items():
        e = app.epochs
        out[name] = Validation(
            name=name,
            batch_sizes=(1, 4096),
            progress=np.tile(np.arange(1, e + 1) * 100.0, (2, 1)),
            grad_sqr=np.ones((2, e)),
            grad_var=np.full((2, e), 15.0),
            max_epochs=e,
        )
    return out


def test_pollux_and_gavel_imports_default_to_the_peers_measured_throughputs(
    tmp_path: Path,
) -> None:
    from dmlsched.model.speed.gavel import GavelSpeed

    p = write(tmp_path, "w.csv", HEADER + "a,0,cifar10,4,80\n")
    assert isinstance(build_pollux_workload(read_pollux(p), source="t", profiles=TOY).speed,
                      MeasuredSpeed)  # fmt: skip
    row = PeerRow(0.0, "imagenet", 2, 64, 1, 640, "ResNet-50 (batch size 32)")
    table = {("ResNet-50 (batch size 32)", 1): 10.0, ("ResNet-50 (batch size 32)", 2): 18.0}
    assert isinstance(build_gavel_workload([row], source="t", table=table).speed, GavelSpeed)
    with pytest.raises(InvalidInput, match="speed"):
        build_gavel_workload([row], source="t", table=table, speed="goodput")


def test_goodput_work_is_the_statistical_steps_times_a_steps_samples(tmp_path: Path) -> None:
    from dmlsched.model.speed.goodput import pollux_batch, statistical_steps
    from dmlsched.model.speed.measured import accumulation

    p = write(tmp_path, "w.csv", HEADER + "a,0,cifar10,4,80\nb,60,cifar10,1,1\nc,0,bert,2,48\n")
    rows, vals = read_pollux(p), _toy_validations()
    wl = build_pollux_workload(rows, source="t", profiles=TOY, validations=vals, speed="goodput")
    assert isinstance(wl.speed, MeasuredSpeed) and any("goodput" in n for n in wl.notes)
    for job, row in zip(sorted(wl.jobs, key=lambda j: j.id), rows, strict=True):
        v, prof = vals[row.application], TOY[row.application]
        atomic, accum = accumulation(row.batch, row.workers, prof.max_local_bsz)
        steps = statistical_steps(v, pollux_batch(row.batch, row.workers, prof.max_local_bsz, v))
        want = steps * row.workers * atomic * (accum + 1)
        assert job.epochs == v.max_epochs
        assert job.total_work == pytest.approx(want, abs=job.epochs / 2)
    # the same job at batch 1 (gain 1) needs fewer samples than at batch 80 (gain < 80)
    a, b = sorted(wl.jobs, key=lambda j: j.id)[:2]
    assert b.total_work < a.total_work


def test_validation_traces_name_the_file_and_line_of_a_bad_number(tmp_path: Path) -> None:
    from dmlsched.workloads.pollux_validation import load_validation

    d = tmp_path / "bert"
    d.mkdir()
    head = "progress,iteration,metric,grad_sqr,grad_var\n"
    (d / "validation-12.csv").write_text(head + "1,1,1,1,1\n2,2,2,2,2\n")
    assert load_validation(tmp_path, "bert").batch_sizes == (12,)
    (d / "validation-24.csv").write_text(head + "1,1,1,1,1\n2,2,2,x,2\n")
    with pytest.raises(InvalidInput, match=r"validation-24.csv:3.*grad_sqr"):
        load_validation(tmp_path, "bert")
    (d / "validation-24.csv").write_text(head + "1,1,1,1,1\n")
    with pytest.raises(InvalidInput, match="2 epochs"):
        load_validation(tmp_path, "bert")


@needs_peers
def test_goodput_replay_of_workload_6_runs_longer_than_measured_and_near_pollux() -> None:
    """Pollux's simulator reports an average JCT of 3,469.69 s (SIMULATORS.md)."""
    path = POLLUX / "workloads" / "workload-6.csv"
    jct = {}
    for speed in ("measured", "goodput"):
        wl = load_pollux(path, speed=speed)
        res = simulate("cluster", wl, make_scheduler("cluster", "tiresias"), make_rng(1))
        jct[speed] = res.metrics["mean_jct_s"]
    assert jct["measured"] < jct["goodput"]
    assert jct["goodput"] == pytest.approx(3469.69, rel=0.15)
