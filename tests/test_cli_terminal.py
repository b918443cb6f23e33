"""What a new user sees: a bare command prints help, help without noise, sizes and no
machine paths in what is recorded, benchmarks with progress, and one line naming the
extra to install when a command's optional part is missing."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from dmlsched.cli import main
from dmlsched.extras import PARTS, MissingExtra, extra_of
from tests.conftest import TRACES

SMALL = ["--jobs", "8", "--machines", "3", "--slots", "6", "--seeds", "1", "--workers", "1"]


def _cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dmlsched", *args], capture_output=True, text=True, timeout=300
    )


def test_a_bare_dmlsched_prints_help_and_exits_0() -> None:
    r = _cli([])
    assert r.returncode == 0
    assert "Usage: dmlsched" in r.stdout and "compare" in r.stdout
    assert r.stderr == ""


@pytest.mark.parametrize("cmd", [["compare"], ["reproduce"], ["testbed", "run"], ["bench"], []])
def test_help_shows_no_type_beside_on_off_flags(cmd: list[str]) -> None:
    r = _cli([*cmd, "--help"])
    assert r.returncode == 0 and "Usage" in r.stdout
    assert "<bool>" not in r.stdout


def test_bench_help_lists_every_benchmark() -> None:
    from dmlsched.bench import load

    r = subprocess.run(
        [sys.executable, "-m", "dmlsched", "bench", "--help"],
        capture_output=True,
        text=True,
        timeout=300,
        env={"COLUMNS": "300", "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 0
    for name in load():
        assert name in r.stdout


def test_bench_reports_progress_on_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dmlsched.bench as bench

    bench.load()
    monkeypatch.setitem(bench.BENCHMARKS, "tiny", lambda: {"tiny_s": 0.5})
    assert main(["bench", "--only", "tiny", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["tiny_s"] == 0.5
    assert "bench: 0/1 benchmarks (tiny), ETA after the first benchmark" in err
    assert "bench: 1/1 benchmarks, done" in err


def test_config_records_the_sizes_actually_used(tmp_path: Path) -> None:
    assert main(["compare", "--schedulers", "fifo", *SMALL, "--out", str(tmp_path / "a")]) == 0
    extra = json.loads((tmp_path / "a" / "config.json").read_text())["extra"]
    assert (extra["jobs"], extra["machines"], extra["slots"]) == (8, 3, 6)
    # left out: the workload's defaults, as built
    args = ["compare", "--setting", "geo", "--schedulers", "local", "--seeds", "1"]
    assert main([*args, "--workers", "1", "--out", str(tmp_path / "g")]) == 0
    extra = json.loads((tmp_path / "g" / "config.json").read_text())["extra"]
    assert None not in (extra["jobs"], extra["machines"], extra["slots"])


@pytest.mark.skipif(not (TRACES / "philly-pollux").is_dir(), reason="needs ../shared/traces")
def test_nothing_recorded_holds_this_machines_paths(tmp_path: Path) -> None:
    out = tmp_path / "p"
    args = ["compare", "--schedulers", "fifo", "--workload", "philly", *SMALL, "--out", str(out)]
    assert main(args) == 0
    machine = str(Path(__file__).resolve().parents[2])
    for name in ("config.json", "summary.md", "results.csv"):
        assert machine not in (out / name).read_text(), name
    assert "../shared/traces/philly-pollux/" in (out / "summary.md").read_text()


def test_absolute_paths_beside_the_checkout_are_recorded_relative(tmp_path: Path) -> None:
    from dmlsched.portable import portable_paths

    checkout = tmp_path / "repo"
    text = f"trace x: {tmp_path}/shared/traces/a.csv (3 rows), /data/mine.csv"
    assert (
        portable_paths(text, checkout) == "trace x: ../shared/traces/a.csv (3 rows), /data/mine.csv"
    )


def _without(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == module else real(name, *a)
    )


@pytest.mark.parametrize(
    ("args", "module", "extra"),
    [
        (["testbed", "run", "--scheduler", "fifo", "--out", "x"], "torch", "testbed"),
        (["testbed", "calibrate", "--out", "x"], "torch", "testbed"),
        (["serve", "--scheduler", "fifo", "--manual-clock"], "fastapi", "service"),
        (
            ["agent", "--server", "http://x", "--machine", "m", "--capacity", "1,1,1,1"],
            "httpx",
            "service",
        ),
        (["k8s", "export", "--server", "http://x", "--out", "x"], "yaml", "service"),
        (["compare", "--schedulers", "fifo", *SMALL, "--ray", "local", "--out", "x"], "ray", "ray"),
    ],
)
def test_a_command_whose_extra_is_missing_exits_2_naming_it(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    args: list[str],
    module: str,
    extra: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    _without(monkeypatch, module)
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"needs the {extra} extra ({module} is not installed)" in err[0]
    assert f"make install-{extra}" in err[0] and f"dmlsched[{extra}]" in err[0]
    assert not (tmp_path / "x").exists()  # refused before any work


def test_every_command_that_needs_an_extra_is_checked() -> None:
    import dmlsched.cli as cli

    assert set(cli.NEEDS) == cli.EXTRAS_CHECKED


def test_an_import_that_fails_later_still_names_the_extra() -> None:
    assert extra_of(ModuleNotFoundError("No module named 'torch.nn'")) == ("testbed", "torch")
    assert extra_of(ModuleNotFoundError("No module named 'numpy_x'")) is None
    assert str(MissingExtra("ray", "ray", "--ray")).startswith("--ray needs the ray extra")
    assert set(PARTS) == {"testbed", "service", "ray"}


def test_the_core_commands_import_no_optional_part() -> None:
    """`make demo` installs no PyTorch, FastAPI or Ray: the CLI must not import them."""
    code = (
        "import sys, dmlsched.cli, dmlsched.experiments.report, dmlsched.experiments.plots;"
        "from dmlsched.extras import PARTS;"
        "print(sorted(m for ms in PARTS.values() for m in ms if m in sys.modules))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_missing_data_says_where_to_put_it_and_where_to_get_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clone without ../shared: the one line names the folder, docs/data.md and the flag."""
    import dmlsched.workloads.profiles as profiles

    empty = tmp_path / "traces"
    empty.mkdir()
    args = ["reproduce", "pdors-fig12", "--quick", "--seeds", "1", "--traces", str(empty)]
    assert main([*args, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "google-2011" in err and "docs/data.md" in err
    assert "--traces DIR" in err
    monkeypatch.setattr(profiles, "default_profile_dir", lambda: None)
    out = tmp_path / "x.trace"
    args = ["export", "--workload", "synthetic", "--format", "gavel", "--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "../shared/peers/pollux-osdi21/profiles" in err and "docs/data.md" in err
    assert "--profiles PATH" in err
    assert (Path(__file__).resolve().parents[1] / "docs" / "data.md").is_file()
