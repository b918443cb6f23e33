"""results.csv and config.json are read strictly: cut cells are redone, corruption refused."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from dmlsched.cli import main
from dmlsched.errors import InvalidInput
from dmlsched.experiments.catalogue import get
from dmlsched.experiments.report import render_report
from dmlsched.experiments.runner import RunConfig, run_experiment
from dmlsched.results import COLUMNS, CellKey, done_cells, repair, scan_results

HEADER = ",".join(COLUMNS)
CELL_A = "e,cluster,fifo,jobs,3,0,a,1.0\ne,cluster,fifo,jobs,3,0,b,2.0\n"
CELL_B = "e,cluster,fifo,jobs,3,1,a,1.5\ne,cluster,fifo,jobs,3,1,b,2.5\n"


def _cli(args: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        rc = main(args)
    return rc, err.getvalue()


def _write(tmp_path: Path, text: str | bytes) -> Path:
    p = tmp_path / "results.csv"
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


def test_a_row_cut_mid_line_drops_its_whole_cell(tmp_path: Path) -> None:
    p = _write(tmp_path, f"{HEADER}\n{CELL_A}e,cluster,fifo,jobs,3,1,a,1.5\ne,cluster,fifo,jo")
    scan = scan_results(p)
    assert scan.torn and scan.cut == CellKey("fifo", "3", 1)
    assert done_cells(p) == {CellKey("fifo", "3", 0)}
    assert repair(p) == 1 and p.read_text() == f"{HEADER}\n{CELL_A}"


def test_a_cell_cut_at_a_line_end_is_found_by_its_missing_metrics(tmp_path: Path) -> None:
    p = _write(tmp_path, f"{HEADER}\n{CELL_A}e,cluster,fifo,jobs,3,1,a,1.5\n")
    assert scan_results(p).cut == CellKey("fifo", "3", 1)
    assert repair(p) == 1 and p.read_text() == f"{HEADER}\n{CELL_A}"
    whole = _write(tmp_path, f"{HEADER}\n{CELL_A}{CELL_B}")
    assert scan_results(whole).cut is None and repair(whole) == 0


@pytest.mark.parametrize(
    ("body", "line", "field"),
    [
        (f"{CELL_A}e,cluster,fifo,jobs,3,1,a\n{CELL_B}", 4, "row"),
        (f"{CELL_A}e,cluster,fifo,jobs,3,x,a,1.5\n", 4, "seed"),
        (f"{CELL_A}e,cluster,fifo,jobs,3,1,a,one\n", 4, "metric_value"),
        (f"{CELL_A}{CELL_A}", 4, "row"),  # a cell written twice: two runs into one folder
    ],
    ids=["short-row", "bad-seed", "bad-value", "duplicate"],
)
def test_a_corrupt_row_is_refused_naming_file_and_line(
    tmp_path: Path, body: str, line: int, field: str
) -> None:
    p = _write(tmp_path, f"{HEADER}\n{body}")
    with pytest.raises(InvalidInput) as e:
        scan_results(p)
    assert (e.value.where, e.value.field) == (f"{p}:{line}", field)


def test_binary_results_are_refused_naming_the_line(tmp_path: Path) -> None:
    p = _write(tmp_path, f"{HEADER}\n{CELL_A}".encode() + b"\xff\xfe\x00junk\n")
    with pytest.raises(InvalidInput, match=f"{p}:4"):
        scan_results(p)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run")
    run_experiment(get("cluster-baselines"), out, RunConfig(seeds=2, workers=1, quick=True))
    return out


def _copy(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for f in ("results.csv", "config.json"):
        (dst / f).write_bytes((src / f).read_bytes())
    return dst


def test_report_on_a_cut_file_says_what_is_missing(tmp_path: Path, finished: Path) -> None:
    d = _copy(finished, tmp_path / "d")
    data = (d / "results.csv").read_bytes()
    (d / "results.csv").write_bytes(data[: len(data) - 7])  # cut mid-row
    rc, err = _cli(["report", str(d)])
    assert rc == 0
    assert "was cut mid-write" in err and "incomplete:" in err
    summary = (d / "summary.md").read_text()
    assert "**Incomplete:" in summary and "cut mid-write" in summary


def test_resume_after_a_cut_recomputes_the_cell_to_the_same_bytes(
    tmp_path: Path, finished: Path
) -> None:
    d = _copy(finished, tmp_path / "d")
    data = (d / "results.csv").read_bytes()
    (d / "results.csv").write_bytes(data[: len(data) - 7])
    run_experiment(get("cluster-baselines"), d, RunConfig(seeds=2, workers=1, quick=True))
    assert (d / "results.csv").read_bytes() == data


def test_resume_with_a_corrupt_config_exits_2_naming_file_and_line(
    tmp_path: Path, finished: Path
) -> None:
    d = _copy(finished, tmp_path / "d")
    (d / "config.json").write_text('{\n  "experiment": "cluster-baselines",\n  "seeds": ,\n}')
    rc, err = _cli(["reproduce", "cluster-baselines", "--quick", "--seeds", "2", "--out", str(d)])
    assert rc == 2
    (line,) = err.strip().splitlines()
    assert f"{d / 'config.json'}:3:" in line and "Traceback" not in err


def test_resume_with_corrupt_results_exits_2_naming_file_and_line(
    tmp_path: Path, finished: Path
) -> None:
    d = _copy(finished, tmp_path / "d")
    lines = (d / "results.csv").read_text().splitlines(keepends=True)
    lines[5] = "garbage\n"
    (d / "results.csv").write_text("".join(lines))
    args = ["reproduce", "cluster-baselines", "--quick", "--seeds", "2", "--workers", "1"]
    rc, err = _cli([*args, "--out", str(d)])
    assert rc == 2
    (line,) = err.strip().splitlines()
    assert f"{d / 'results.csv'}:6:" in line


def test_config_json_records_the_workload_notes_and_is_valid_json(finished: Path) -> None:
    blob = json.loads((finished / "config.json").read_text())
    assert isinstance(blob["notes"], list)


def test_report_lists_workload_notes(tmp_path: Path, finished: Path) -> None:
    d = _copy(finished, tmp_path / "d")
    blob = json.loads((d / "config.json").read_text())
    blob["notes"] = ["trace philly: x.csv (3 rows, 0 bad rows skipped)", "WARNING: a fallback"]
    (d / "config.json").write_text(json.dumps(blob))
    text = render_report(d).read_text()
    assert "## Workload\n\n- trace philly: x.csv" in text and "- WARNING: a fallback" in text


def test_a_folder_written_before_notes_were_recorded_still_resumes(
    tmp_path: Path, finished: Path
) -> None:
    d = _copy(finished, tmp_path / "d")
    blob = json.loads((d / "config.json").read_text())
    del blob["notes"]  # as the runner wrote it before issue 14
    (d / "config.json").write_text(json.dumps(blob))
    before = (d / "results.csv").read_bytes()
    run_experiment(get("cluster-baselines"), d, RunConfig(seeds=2, workers=1, quick=True))
    assert (d / "results.csv").read_bytes() == before
    blob["seeds"] = 3
    (d / "config.json").write_text(json.dumps(blob))
    with pytest.raises(InvalidInput, match="seeds"):
        run_experiment(get("cluster-baselines"), d, RunConfig(seeds=2, workers=1, quick=True))
