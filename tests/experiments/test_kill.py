"""A sweep killed with SIGKILL resumes to the same file as an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dmlsched.experiments.results import COLUMNS, done_cells, repair

# 2 schedulers × 8 seeds, ~0.1–0.3 s a cell: slow enough to be killed mid-sweep
ARGS = [
    "compare",
    "--schedulers",
    "fifo,drf",
    "--jobs",
    "40",
    "--machines",
    "10",
    "--slots",
    "20",
    "--seeds",
    "8",
    "--workers",
    "1",
]


def _cli(out: Path) -> list[str]:
    return [sys.executable, "-m", "dmlsched", *ARGS, "--out", str(out)]


def test_sigkilled_sweep_reruns_only_missing_cells(tmp_path: Path) -> None:
    full, cut = tmp_path / "full", tmp_path / "cut"
    subprocess.run(_cli(full), check=True, capture_output=True, timeout=600)
    proc = subprocess.Popen(_cli(cut), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = cut / "results.csv"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if results.exists() and len(done_cells(results)) >= 3:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_with = len(done_cells(results))
    assert 3 <= killed_with < 16, "the kill must land mid-sweep"
    subprocess.run(_cli(cut), check=True, capture_output=True, timeout=600)
    assert results.read_bytes() == (full / "results.csv").read_bytes()


def test_repair_drops_a_torn_last_cell(tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    header = ",".join(COLUMNS)
    whole = "e,cluster,fifo,jobs,3,0,a,1.0\ne,cluster,fifo,jobs,3,0,b,2.0\n"
    torn = "e,cluster,drf,jobs,3,0,a,1.0\ne,cluster,drf,jobs,3,0,b,2"
    path.write_text(f"{header}\n{whole}{torn}")
    assert repair(path) == 1
    assert path.read_text() == f"{header}\n{whole}"
    assert repair(path) == 0
