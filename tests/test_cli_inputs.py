"""Every input gets a clear answer: exit 2, one line naming the field (or path) and a short value.

In-process through :func:`dmlsched.cli.main` (the console script's code path),
so each case costs milliseconds.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from dmlsched.cli import main
from tests.conftest import PEERS, TRACES


def _cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out):
        rc = main(args)
    return rc, out.getvalue(), err.getvalue()


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert "Traceback" not in err
    return lines[0]


TINY = ["--jobs", "3", "--machines", "2", "--slots", "4"]


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["compare", "--schedulers", "fifo", "--seeds", "0"], ("--seeds", "'0'")),
        (["compare", "--schedulers", "fifo", "--jobs", "0"], ("--jobs", "'0'")),
        (["compare", "--schedulers", "fifo", "--machines", "0"], ("--machines", "'0'")),
        (["compare", "--schedulers", "fifo", "--slots", "-3"], ("--slots", "'-3'")),
        (["compare", "--schedulers", "fifo", "--workers", "0"], ("--workers", "'0'")),
        (["compare", "--schedulers", "fifo", "--slot-seconds", "inf"], ("--slot-seconds", "inf")),
        (["compare", "--schedulers", "fifo", "--slot-seconds", "nan"], ("--slot-seconds", "nan")),
        (["compare", "--schedulers", "fifo", "--slot-seconds", "0"], ("--slot-seconds", "'0'")),
        (
            ["compare", "--schedulers", "fifo", "--jobs", "99999999999999999999"],
            ("--jobs", "99999999999999999999"),
        ),
        (["run", "--scheduler", "fifo", "--seed", "-1"], ("--seed", "'-1'")),
        (["run", "--scheduler", "fifo", "--jobs", "0"], ("--jobs", "'0'")),
        (["run", "--scheduler", "fifo", "--machines", "0"], ("--machines", "'0'")),
        (["run", "--scheduler", "fifo", "--jobs", "1e3"], ("--jobs", "'1e3'")),
        (["run", "--scheduler", "fifo", "--slots", "99999999999999999999"], ("--slots",)),
        (["reproduce", "cluster-baselines", "--seeds", "0"], ("--seeds", "0")),
        (["export", "--workload", "synthetic", "--format", "pollux", "--jobs", "0"], ("--jobs",)),
        (["run", "--scheduler", "fifo", "--setting", "moon"], ("setting", "'moon'")),
    ],
)
def test_a_value_outside_its_domain_exits_2_naming_flag_and_value(
    tmp_path: Path, args: list[str], names: tuple[str, ...]
) -> None:
    if args[0] in ("compare", "reproduce"):
        args = [*args, "--out", str(tmp_path / "o")]
    if args[0] == "export":
        args = [*args, "--out", str(tmp_path / "x.csv")]
    rc, out, err = _cli(args)
    assert rc == 2 and out == ""
    line = _one_line(err)
    assert all(n in line for n in names), line
    assert not (tmp_path / "o").exists()  # refused before anything was written


@pytest.mark.parametrize(
    ("args", "names"),
    [  # lengths of time no clock can wait (they ended in a traceback), and counts no host holds
        (["testbed", "run", "--slot-seconds", "1e308"], ("slot-seconds", "1e+308")),
        (["testbed", "run", "--machines", "100000"], ("machines", "100000")),
        (["testbed", "run", "--int-mbit", "-1"], ("int-mbit", "-1.0")),
        (["testbed", "run", "--seed", "-1"], ("seed", "-1")),
        (["testbed", "run", "--param", "max_workers=abc"], ("max_workers", "'abc'")),
        (["testbed", "calibrate", "--probe-seconds", "1e308"], ("probe-seconds",)),
        (["testbed", "calibrate", "--caps", "5,nan"], ("caps", "'5,nan'")),
        (["testbed", "calibrate", "--int-mbit", "nan"], ("int-mbit", "nan")),
    ],
)
def test_testbed_flags_outside_their_domain_exit_2_before_any_process_starts(
    tmp_path: Path, args: list[str], names: tuple[str, ...]
) -> None:
    out = ["--out", str(tmp_path / "o"), "--state-dir", str(tmp_path / "state")]
    extra = ["--scheduler", "fifo"] if args[1] == "run" else []
    rc, stdout, err = _cli([*args, *extra, *out])
    assert rc == 2 and stdout == ""
    line = _one_line(err)
    assert all(n in line for n in names), line
    assert not (tmp_path / "o").exists() and not (tmp_path / "state").exists()


def test_out_that_is_a_file_or_under_a_file_exits_2_with_the_path(tmp_path: Path) -> None:
    f = tmp_path / "afile"
    f.write_text("x")
    for out in (f, f / "sub"):
        rc, _, err = _cli(
            ["compare", "--schedulers", "fifo", *TINY, "--seeds", "1", "--out", str(out)]
        )
        assert rc == 2 and str(out) in _one_line(err)


@pytest.mark.parametrize("where", ["folder", "missing-parent"])
def test_events_and_export_out_that_cannot_be_written_exit_2_before_any_work(
    tmp_path: Path, where: str
) -> None:
    target = tmp_path if where == "folder" else tmp_path / "no" / "such" / "e.csv"
    for args in (
        ["run", "--scheduler", "fifo", *TINY, "--events", str(target)],
        ["export", "--workload", "synthetic", "--format", "pollux", *TINY, "--out", str(target)],
    ):
        rc, out, err = _cli(args)
        assert rc == 2 and out == ""
        assert str(target) in _one_line(err)


JOB_CSV = (
    "id,arrival,epochs,samples,grad_mb,tau,b_ext,worker_gpu,worker_cpu,ps_cpu\n"
    "0,0,1,10,5,0.001,1,1,1,1\n"
)
JOB_JSON = {
    "slots": 5,
    "cluster": {"machines": 2},
    "jobs": [
        {
            "id": 0,
            "arrival": 0,
            "epochs": 1,
            "samples": 10,
            "grad_mb": 1,
            "tau": 0.001,
            "worker_demand": [1, 1, 1, 1],
            "ps_demand": [0, 1, 1, 1],
            "b_ext": 1,
        }
    ],
}


def _run_file(path: Path, prefix: str = "") -> tuple[int, str, str]:
    return _cli(["run", "--scheduler", "fifo", "--workload", f"{prefix}{path}", "--slots", "5"])


@pytest.mark.parametrize("name", ["jobs.csv", "jobs.json"])
def test_job_files_with_a_byte_order_mark_are_read(tmp_path: Path, name: str) -> None:
    f = tmp_path / name
    text = JOB_CSV if name.endswith(".csv") else json.dumps(JOB_JSON)
    f.write_bytes(b"\xef\xbb\xbf" + text.encode())
    rc, out, err = _run_file(f)
    assert rc == 0, err
    assert json.loads(out)["admitted_jobs"] == 1


@pytest.mark.parametrize("name", ["jobs.csv", "jobs.json"])
def test_undecodable_job_files_exit_2_naming_path_and_line(tmp_path: Path, name: str) -> None:
    f = tmp_path / name
    text = JOB_CSV if name.endswith(".csv") else json.dumps(JOB_JSON, indent=1)
    lines = text.encode().split(b"\n")
    lines[1] = b"\xff\xfe" + lines[1]
    f.write_bytes(b"\n".join(lines))
    rc, _, err = _run_file(f)
    assert rc == 2 and f"{f}:2:" in _one_line(err) and "UTF-8" in err


def test_a_missing_field_names_the_field_not_the_whole_job(tmp_path: Path) -> None:
    spec = json.loads(json.dumps(JOB_JSON))
    del spec["jobs"][0]["tau"]
    f = tmp_path / "j.json"
    f.write_text(json.dumps(spec))
    rc, _, err = _run_file(f)
    line = _one_line(err)
    assert rc == 2 and "jobs.0.tau" in line and "missing" in line and "worker_demand" not in line


def test_a_short_worker_demand_is_blamed_on_worker_demand(tmp_path: Path) -> None:
    spec = json.loads(json.dumps(JOB_JSON))
    spec["jobs"][0]["worker_demand"] = [1, 1]
    f = tmp_path / "j.json"
    f.write_text(json.dumps(spec))
    rc, _, err = _run_file(f)
    line = _one_line(err)
    assert rc == 2 and "jobs.0.worker_demand" in line and "ps_demand" not in line


def test_long_values_are_shortened_in_messages(tmp_path: Path) -> None:
    spec = json.loads(json.dumps(JOB_JSON))
    spec["jobs"][0]["worker_demand"] = list(range(500))
    f = tmp_path / "j.json"
    f.write_text(json.dumps(spec))
    rc, _, err = _run_file(f)
    assert rc == 2 and len(_one_line(err)) < len(str(f)) + 200


def test_run_prints_valid_json_with_null_for_undefined_metrics() -> None:
    rc, out, _ = _cli(["run", "--scheduler", "fifo", "--jobs", "3", "--slots", "2"])

    def no_constants(name: str) -> None:
        raise AssertionError(f"{name} is not JSON")

    metrics = json.loads(out, parse_constant=no_constants)
    assert rc == 0 and metrics["mean_jct"] is None  # no job finished in 2 slots


needs_peers = pytest.mark.skipif(not PEERS.is_dir(), reason="../shared/peers absent")


@needs_peers
def test_peer_files_with_a_byte_order_mark_are_read(tmp_path: Path) -> None:
    f = tmp_path / "w.csv"
    f.write_bytes(
        b"\xef\xbb\xbfname,time,application,num_replicas,batch_size\njob0,0,cifar10,1,128\n"
    )
    rc, _, err = _run_file(f, "pollux:")
    assert rc == 0, err


@pytest.mark.parametrize("kind", ["pollux", "gavel"])
def test_undecodable_peer_files_exit_2_naming_path_and_line(tmp_path: Path, kind: str) -> None:
    f = tmp_path / "w.csv"
    f.write_bytes(b"name,time,application,num_replicas,batch_size\n\xff,0,cifar10,1,128\n")
    rc, _, err = _run_file(f, f"{kind}:")
    assert rc == 2 and f"{f}:2:" in _one_line(err)


@pytest.mark.skipif(not (TRACES / "philly-pollux").is_dir(), reason="../shared/traces absent")
def test_a_trace_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    src = next((TRACES / "philly-pollux").glob("philly*.csv"))
    f = tmp_path / "philly.csv"
    f.write_bytes(b"\xef\xbb\xbf" + src.read_bytes())
    args = ["run", "--scheduler", "fifo", "--workload", "philly", "--trace", str(f), *TINY]
    rc, _, err = _cli(args)
    assert rc == 0, err


def test_report_of_a_folder_without_results_exits_2(tmp_path: Path) -> None:
    rc, _, err = _cli(["report", str(tmp_path)])
    assert rc == 2 and str(tmp_path) in _one_line(err)


def test_ctrl_c_outside_a_sweep_exits_130_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import dmlsched.cli as cli

    def interrupted(*a: object, **k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "make_scheduler", interrupted)
    rc, _, err = _cli(["run", "--scheduler", "fifo"])
    assert rc == 130 and "interrupted" in _one_line(err)


def test_help_exits_0() -> None:
    assert _cli(["--help"])[0] == 0
    assert _cli(["run", "--help"])[0] == 0
