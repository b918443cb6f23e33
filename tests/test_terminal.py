"""At 80 columns the result table wraps its columns into more tables (schedulers as rows)
and never elides a name."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from dmlsched.terminal import wrapped_tables

SCHEDULERS = ["pd-ors+", "pd-ors", "srtf", "tiresias", "drf", "oasis", "dorm", "fifo"]


def test_columns_wrap_into_tables_that_fit_and_keep_every_name_whole() -> None:
    metrics = [f"metric_with_a_long_name_{i}" for i in range(9)]
    cells = {(s, m): "1234.5 ± 6.7" for s in SCHEDULERS for m in metrics}
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None)
    tables = wrapped_tables("title", "scheduler", SCHEDULERS, metrics, cells, 80)
    assert len(tables) > 1
    for t in tables:
        console.print(t)
    text = out.getvalue()
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    for name in [*SCHEDULERS, *metrics]:
        assert name in text


def test_a_column_wider_than_the_console_folds_instead_of_eliding() -> None:
    cells = {("fifo", "m"): "x" * 120}
    out = io.StringIO()
    for t in wrapped_tables("t", "scheduler", ["fifo"], ["m"], cells, 80):
        Console(file=out, width=80, color_system=None).print(t)
    assert "…" not in out.getvalue() and out.getvalue().count("x") == 120


@pytest.mark.skipif(shutil.which("script") is None, reason="util-linux `script` not installed")
def test_compare_on_an_80_column_terminal_prints_no_elided_name(tmp_path: Path) -> None:
    """The issue's check, as a user runs it: a pseudo-terminal 80 columns wide."""
    cmd = (
        f"stty cols 80; {sys.executable} -m dmlsched compare --schedulers "
        f"{','.join(SCHEDULERS)} --mode async --jobs 8 --machines 3 --slots 6 --seeds 2 "
        f"--workers 1 --out {tmp_path / 'o'}"
    )
    r = subprocess.run(
        ["script", "-qc", cmd, "/dev/null"], capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stdout[-2000:]
    assert "…" not in r.stdout
    for name in [*SCHEDULERS, "completed_jobs", "total_utility", "rejected_jobs"]:
        assert name in r.stdout
