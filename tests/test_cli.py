"""The CLI contract: exit codes, one-line errors, identical bytes, files written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dmlsched.cli import main
from tests.conftest import TRACES

COMPARE = [
    "compare",
    "--setting",
    "cluster",
    "--schedulers",
    "fifo,drf",
    "--jobs",
    "8",
    "--machines",
    "3",
    "--slots",
    "6",
    "--seeds",
    "2",
    "--workers",
    "1",
]


def _cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dmlsched", *args], capture_output=True, text=True, timeout=300
    )


def test_compare_twice_gives_byte_identical_results(tmp_path: Path) -> None:
    assert main([*COMPARE, "--out", str(tmp_path / "a"), "--plots"]) == 0
    assert main([*COMPARE, "--out", str(tmp_path / "b")]) == 0
    a = (tmp_path / "a" / "results.csv").read_bytes()
    assert a == (tmp_path / "b" / "results.csv").read_bytes()
    assert (tmp_path / "a" / "summary.md").exists()
    assert list((tmp_path / "a").glob("*.png"))
    # plots only when asked: the second run wrote its summary without drawing
    assert (tmp_path / "b" / "summary.md").exists()
    assert not list((tmp_path / "b").glob("*.png"))


def test_a_scheduler_named_twice_is_refused_before_any_cell_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["compare", "--schedulers", "fifo, drf,fifo", "--jobs", "4", "--machines", "2"]
    assert main([*args, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "schedulers='fifo, drf,fifo'" in err and "once" in err
    assert not (tmp_path / "x").exists()


def test_a_run_whose_output_is_not_a_terminal_prints_plain_progress_lines(tmp_path: Path) -> None:
    r = _cli(["run", "--scheduler", "fifo", "--jobs", "4", "--machines", "2", "--slots", "5"])
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("run fifo seed 0:")]
    assert lines and "admitted" in lines[-1] and "completed" in lines[-1]
    assert "elapsed" in lines[-1]


def test_unknown_scheduler_exits_2_with_one_line(tmp_path: Path) -> None:
    r = _cli(["compare", "--schedulers", "no-such-scheduler", "--out", str(tmp_path)])
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "no-such-scheduler" in lines[0] and "scheduler" in lines[0]


@pytest.mark.parametrize(
    ("content", "suffix", "expect"),
    [
        (
            '{"slots": 5, "cluster": {"machines": 2}, "jobs": [{"id": 0, "arrival": 0, "epochs": 1,'
            ' "samples": 10, "grad_mb": 1, "tau": -1, "worker_demand": [1,1,1,1],'
            ' "ps_demand": [0,1,1,1], "b_ext": 1}]}',
            ".json",
            "jobs.0.tau",
        ),
        ('{"slots": 5, "cluster": {"machines": 2}, "jobs": [', ".json", "json"),
        (
            "id,arrival,epochs,samples,grad_mb,tau,b_ext,worker_gpu,worker_cpu,ps_cpu\n"
            "0,0,1,10,5,0.001,1,1,1,1\n1,0,1,ten,5,0.001,1,1,1,1\n",
            ".csv",
            ":3: invalid samples",
        ),
        (
            "id,arrival,epochs,samples,grad_mb,tau,b_ext,worker_gpu,worker_cpu,ps_cpu,gamma\n"
            "0,0,1,10,5,0.001,1,1,1,1,0\n",
            ".csv",
            "gamma",
        ),
        (
            "id,arrival,epochs,samples,grad_mb,tau,b_ext,worker_gpu,worker_cpu,ps_cpu\n"
            "0,0,1,10,5,0.001,1,999,1,1\n",
            ".csv",
            "worker_demand[gpu]",
        ),
    ],
    ids=["json-negative-tau", "json-truncated", "csv-bad-int", "csv-gamma-0", "csv-too-big"],
)
def test_malformed_job_spec_file_exits_2_naming_the_field(
    tmp_path: Path, content: str, suffix: str, expect: str
) -> None:
    spec = tmp_path / f"jobs{suffix}"
    spec.write_text(content)
    r = _cli(
        [
            "compare",
            "--schedulers",
            "fifo",
            "--workload",
            str(spec),
            "--out",
            str(tmp_path / "o"),
            "--seeds",
            "1",
            "--workers",
            "1",
        ]
    )
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and expect in lines[0], lines
    assert "Traceback" not in r.stderr


def test_job_spec_csv_runs_end_to_end(tmp_path: Path) -> None:
    spec = tmp_path / "jobs.csv"
    spec.write_text(
        "id,arrival,epochs,samples,batch,grad_mb,tau,gamma,b_ext,worker_gpu,worker_cpu,ps_cpu,"
        "utility,theta1,theta2,theta3\n"
        "0,0,1,20000,20,50,0.00001,2,1,1,2,1,sigmoid,10,0,0\n"
        "1,2,1,20000,20,50,0.00001,2,1,1,2,1,sigmoid,10,0.5,3\n"
    )
    out = tmp_path / "o"
    assert (
        main(
            [
                "compare",
                "--schedulers",
                "fifo,drf",
                "--workload",
                str(spec),
                "--machines",
                "2",
                "--slots",
                "5",
                "--seeds",
                "1",
                "--workers",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    text = (out / "results.csv").read_text()
    assert "total_utility" in text


def test_schedulers_and_catalogue_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schedulers"]) == 0
    assert "fifo" in capsys.readouterr().out
    assert main(["reproduce", "--list"]) == 0
    assert "cluster-baselines" in capsys.readouterr().out
    assert main(["reproduce", "no-such-figure"]) == 2


def test_run_writes_event_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ev = tmp_path / "events.csv"
    assert (
        main(
            [
                "run",
                "--scheduler",
                "drf",
                "--jobs",
                "5",
                "--machines",
                "2",
                "--slots",
                "4",
                "--events",
                str(ev),
            ]
        )
        == 0
    )
    metrics = json.loads(capsys.readouterr().out)
    assert "total_utility" in metrics
    assert ev.read_text().splitlines()[0] == "slot,kind,job,detail"


def test_bad_flag_values_exit_2(tmp_path: Path) -> None:
    assert main(["compare", "--schedulers", "fifo", "--seeds", "0", "--out", str(tmp_path)]) == 2
    assert main(["compare", "--schedulers", "fifo", "--jobs", "-3", "--out", str(tmp_path)]) == 2
    assert (
        main(["compare", "--schedulers", "fifo", "--setting", "moon", "--out", str(tmp_path)]) == 2
    )
    assert main(["compare", "--schedulers", "fifo", "--seeds", "x", "--out", str(tmp_path)]) == 2


@pytest.mark.skipif(not (TRACES / "philly-pollux").exists(), reason="../shared/traces absent")
def test_corrupted_trace_exits_2_naming_file_line_and_field(tmp_path: Path) -> None:
    src = next((TRACES / "philly-pollux").glob("philly*.csv"))
    lines = src.read_text().splitlines()
    bad = tmp_path / src.name
    lines[5] = lines[5].replace(",", ",x", 2)  # corrupt a number on line 6
    bad.write_text("\n".join(lines[:40]) + "\n")
    r = _cli(
        [
            "compare",
            "--schedulers",
            "fifo",
            "--workload",
            "philly",
            "--trace",
            str(bad),
            "--seeds",
            "1",
            "--workers",
            "1",
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert f"{bad}:6" in line and "invalid" in line


def test_reproduce_all_only_runs_the_matching_experiments(tmp_path: Path) -> None:
    out = tmp_path / "all"
    args = ["reproduce", "--all", "--only", "cluster-*", "--quick", "--seeds", "1"]
    assert main([*args, "--workers", "1", "--out", str(out)]) == 0
    assert [p.name for p in out.iterdir() if p.is_dir()] == ["cluster-baselines"]
    text = (out / "reproduction.md").read_text()
    assert "`cluster-baselines`" in text and "--only 'cluster-*'" in text


def test_reproduce_all_reports_held_out_seeds_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pandas as pd

    out = tmp_path / "all"
    args = ["reproduce", "--all", "--only", "cluster-*", "--quick", "--seeds", "1"]
    args += ["--seed-base", "10", "--held-out", "100", "--workers", "2", "--out", str(out)]
    assert main(args) == 0
    main_seeds = pd.read_csv(out / "cluster-baselines" / "results.csv")["seed"]
    held = pd.read_csv(out / "held-out" / "cluster-baselines" / "results.csv")["seed"]
    assert set(main_seeds) == {10} and set(held) == {100}
    text = (out / "reproduction.md").read_text()
    assert "as printed, seed 10 |" in text and "as printed, held-out seed 100 |" in text
    counts = [ln for ln in text.splitlines() if ln.startswith("| as printed (")]
    assert len(counts) == 2 and "| seed 10 |" in counts[0] and "| held-out seed 100 |" in counts[1]
    assert "--seed-base 10 --held-out 100" in text
    # progress: the experiment's place in the catalogue and its seed set
    err = capsys.readouterr().err
    assert "cluster-baselines [1/1, seed 10]: " in err
    assert "cluster-baselines [1/1, held-out seed 100]: " in err


def test_the_recorded_commit_is_the_codes_not_the_working_directorys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dmlsched.cli as cli

    src = Path(cli.__file__).resolve().parent
    ours = subprocess.run(
        ["git", "-C", str(src), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
    )
    if ours.returncode:
        pytest.skip("dmlsched is not running from a git checkout")
    other = tmp_path / "elsewhere"
    other.mkdir()
    git = ["git", "-C", str(other), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    theirs = subprocess.run(
        [*git, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    monkeypatch.chdir(other)
    got = cli._commit()
    assert got.startswith(ours.stdout.strip()) and theirs not in got


def test_held_out_seeds_that_overlap_the_main_seeds_are_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "all"
    args = ["reproduce", "--all", "--only", "cluster-*", "--quick", "--out", str(out)]
    assert main([*args, "--seeds", "3", "--held-out", "2"]) == 2
    err = capsys.readouterr().err
    assert "held-out=2" in err and "seeds 0–2" in err and "≥ 3" in err
    assert main([*args, "--seeds", "3", "--seed-base", "10", "--held-out", "8"]) == 2
    assert "≥ 13 or ≤ 7" in capsys.readouterr().err
    assert not out.exists()


def test_held_out_needs_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "cluster-baselines", "--held-out", "100"]) == 2
    assert "held-out" in capsys.readouterr().err


def test_reproduce_all_logs_every_run_also_a_stopped_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """runs.csv gets a row per invocation (cells added, how it ended); the report lists them."""
    import csv

    import dmlsched.cli as cli

    out = tmp_path / "all"
    args = ["reproduce", "--all", "--only", "cluster-*", "--quick", "--workers", "1"]
    assert main([*args, "--seeds", "1", "--out", str(out)]) == 0
    assert main([*args, "--seeds", "1", "--out", str(out)]) == 0  # nothing left to compute

    def stop(*a: object, **k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_run", stop)
    assert main([*args, "--seeds", "2", "--out", str(out)]) == 130
    with (out / "runs.csv").open(newline="") as f:
        runs = list(csv.DictReader(f))
    assert [r["ended"] for r in runs] == ["complete", "complete", "stopped"]
    assert int(runs[0]["cells_added"]) > 0 and runs[1]["cells_added"] == "0"
    assert runs[2]["cells_added"] == "0" and all(r["commit"] for r in runs)
    text = (out / "reproduction.md").read_text()  # written by the second run
    assert "Runs that computed these results (2;" in text and "| complete |" in text


def test_reproduce_all_only_without_a_match_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["reproduce", "--all", "--only", "nope-*", "--out", str(tmp_path)]) == 2
    assert "only" in capsys.readouterr().err


def test_reproduce_all_computes_the_same_runs_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dmlsched.experiments.runner as runner

    computed: list[str] = []
    local = runner._local

    def counting(exp, cells, cfg):  # type: ignore[no-untyped-def]
        computed.extend([exp.id] * len(cells))
        return local(exp, cells, cfg)

    monkeypatch.setattr(runner, "_local", counting)
    out = tmp_path / "all"
    # synthetic jobs (no trace): runs with or without ../shared
    args = ["reproduce", "--all", "--only", "thesis-fig3.13,thesis-fig3.14", "--quick"]
    assert main([*args, "--seeds", "1", "--workers", "1", "--out", str(out)]) == 0
    assert set(computed) == {"thesis-fig3.13"}  # fig3.14 is fig3.13's sweep: copied
    src = (out / "thesis-fig3.13" / "results.csv").read_text()
    twin = (out / "thesis-fig3.14" / "results.csv").read_text()
    assert twin == src.replace("\nthesis-fig3.13,", "\nthesis-fig3.14,")
    assert "rounding_ratio" in (out / "thesis-fig3.14" / "summary.md").read_text()
