"""dmlsched.memo: a reference computed once for all of a run's worker processes."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from dmlsched.memo import ENV, shared, shared_folder


@shared(maxsize=8)
def _slow_square(x: int, log: str) -> int:
    with open(log, "a") as f:  # one line per computation, whoever does it
        f.write(f"{os.getpid()} {x}\n")
    return x * x


def _worker(x: int, log: str) -> int:
    return _slow_square(x, log)


def test_workers_of_one_run_compute_each_call_once(tmp_path: Path) -> None:
    log = str(tmp_path / "log")
    with shared_folder() as folder, ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        assert os.environ[ENV] == str(folder)
        got = list(pool.map(_worker, [3, 4, 3, 4, 3, 4, 5], [log] * 7))
    assert got == [9, 16, 9, 16, 9, 16, 25]
    calls = Path(log).read_text().splitlines()
    assert sorted(int(line.split()[1]) for line in calls) == [3, 4, 5]
    assert ENV not in os.environ and not folder.exists()  # nothing outlives the run


def test_without_a_run_folder_it_is_a_per_process_cache(tmp_path: Path) -> None:
    log = str(tmp_path / "log")
    assert ENV not in os.environ
    assert _slow_square(6, log) == _slow_square(6, log) == 36
    assert len(Path(log).read_text().splitlines()) == 1
