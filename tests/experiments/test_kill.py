"""Real processes, real signals: a sweep cannot be corrupted by Ctrl-C, SIGKILL or a second run.

Each test starts ``python -m dmlsched compare`` in its own process group (as a
shell job), signals it the way a terminal or the OOM killer would, and checks
the exit status, the processes left, and that resuming gives the bytes of an
uninterrupted run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dmlsched.experiments.lock import LOCK_NAME
from dmlsched.results import COLUMNS, done_cells, repair, scan_results

# 2 schedulers × 8 seeds, ~0.1–0.3 s a cell: slow enough to be signalled mid-sweep
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
]
CELLS = 16


@pytest.fixture(autouse=True)
def _own_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Children make their temporary folders in the test's: a SIGKILLed sweep cannot
    remove its shared memo folder, and nothing may be left in the machine's /tmp."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))


def _cli(out: Path, workers: int = 2, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "dmlsched",
        *ARGS,
        "--workers",
        str(workers),
        "--out",
        str(out),
        *extra,
    ]


def _start(cmd: list[str]) -> subprocess.Popen[str]:
    """A new process group whose SIGINT is the default (a test runner may ignore it)."""
    return subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        process_group=0,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait_for_cells(proc: subprocess.Popen[str], results: Path, n: int) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if results.exists() and len(done_cells(results)) >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"the sweep ended or stalled before {n} cells: rc={proc.poll()}")


def _living(pgid: int) -> list[str]:
    """Processes of the group that are not zombies: '<pid> <command>'."""
    alive = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:80]
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(f"{d.name} {cmd}")
    return alive


def _survivors(pgid: int, within: float = 15.0) -> list[str]:
    deadline = time.monotonic() + within
    while (left := _living(pgid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    out = tmp_path_factory.mktemp("reference")
    subprocess.run(_cli(out, 1), check=True, capture_output=True, timeout=600)
    return (out / "results.csv").read_bytes()


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


@needs_proc
def test_sigkilled_sweep_leaves_no_process_of_the_run(tmp_path: Path) -> None:
    cut = tmp_path / "cut"
    proc = _start(_cli(cut))
    results = cut / "results.csv"
    _wait_for_cells(proc, results, 2)
    os.kill(proc.pid, signal.SIGKILL)  # the parent only: its workers must notice by themselves
    proc.communicate(timeout=60)
    assert _survivors(proc.pid) == []
    assert 2 <= len(done_cells(results)) < CELLS, "the kill must land mid-sweep"
    assert repair(results) == 0  # whole cells only: each was written with one write


@needs_proc
def test_ctrl_c_mid_sweep_exits_130_saying_what_was_kept_and_resumes_byte_identical(
    tmp_path: Path, reference: bytes
) -> None:
    cut = tmp_path / "cut"
    proc = _start(_cli(cut))
    results = cut / "results.csv"
    _wait_for_cells(proc, results, 2)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    last = err.strip().splitlines()[-1]
    kept = len(done_cells(results))
    assert last.startswith("dmlsched: interrupted:"), err
    assert f"{kept} of {CELLS} cells kept in {results}" in last
    assert "Traceback" not in err
    assert _survivors(proc.pid) == []
    assert kept < CELLS
    r = subprocess.run(_cli(cut), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert results.read_bytes() == reference


def _our_code_started(pid: int, within: float = 60.0) -> None:
    """Wait until the interpreter runs dmlsched's imports (numpy's library is mapped).

    A SIGINT while Python itself still starts (its ``site`` import) is a fatal
    error of the interpreter, exit 1, before any code of ours can run: on a
    loaded machine that start takes longer than the shortest delay below.
    """
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if "numpy" in Path(f"/proc/{pid}/maps").read_text():
                return
        except OSError:
            return  # it ended: the assertions below say how
        time.sleep(0.01)


@needs_proc
def test_ctrl_c_at_any_moment_exits_130_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    # during imports, the workload build, the pool start, the first cells
    for i, delay in enumerate((0.0, 0.6, 1.4, 2.2)):
        # larger cells: an idle machine finishes the default sweep in ~1 s
        proc = _start(_cli(tmp_path / str(i), 2, "--jobs", "200", "--slots", "100"))
        _our_code_started(proc.pid)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, (delay, err)
        assert "Traceback" not in err, (delay, err)
        assert err.strip().splitlines()[-1].startswith("dmlsched: interrupted"), (delay, err)
        assert _survivors(proc.pid) == [], delay


def _frozen_mid_sweep(out: Path) -> subprocess.Popen[str]:
    """A run stopped (SIGSTOP) after its first cell: it holds the folder, and stays busy."""
    proc = _start(_cli(out, 1))
    _wait_for_cells(proc, out / "results.csv", 1)
    os.killpg(proc.pid, signal.SIGSTOP)
    return proc


def _finish(proc: subprocess.Popen[str]) -> str:
    os.killpg(proc.pid, signal.SIGCONT)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return err


def test_a_second_run_into_a_busy_folder_refuses_naming_the_holder(
    tmp_path: Path, reference: bytes
) -> None:
    out = tmp_path / "o"
    first = _frozen_mid_sweep(out)
    try:
        second = subprocess.run(_cli(out, 1), capture_output=True, text=True, timeout=300)
    finally:
        _finish(first)
    assert second.returncode == 2
    (line,) = second.stderr.strip().splitlines()
    assert f"pid {first.pid}" in line and "--wait" in line and str(out) in line
    assert (out / "results.csv").read_bytes() == reference  # every row once


@pytest.mark.slow
def test_with_wait_the_second_run_queues_and_adds_no_row(tmp_path: Path, reference: bytes) -> None:
    out = tmp_path / "o"
    first = _frozen_mid_sweep(out)
    try:
        second = _start(_cli(out, 1, "--wait"))
        assert second.stderr is not None
        said = second.stderr.readline()  # blocks until the second run reaches the lock
    finally:
        _finish(first)
    _, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
    assert said.startswith(f"dmlsched: waiting for pid {first.pid} ")
    data = (out / "results.csv").read_bytes()
    assert data == reference
    assert len(scan_results(out / "results.csv").rows) == data.count(b"\n") - 1  # no duplicate


def test_with_wait_a_run_starts_when_the_holder_is_done(tmp_path: Path) -> None:
    import threading

    from dmlsched.experiments.catalogue import get
    from dmlsched.experiments.lock import hold
    from dmlsched.experiments.runner import RunConfig, run_experiment

    exp = get("cluster-baselines")
    held, release = threading.Event(), threading.Event()

    def holder_thread() -> None:
        with hold(tmp_path):
            held.set()
            release.wait(60)

    t = threading.Thread(target=holder_thread)
    t.start()
    held.wait(60)
    heard: list[str] = []

    def on_warning(text: str) -> None:
        heard.append(text)
        release.set()  # the holder finishes as soon as we are queued

    out = run_experiment(
        exp, tmp_path, RunConfig(seeds=1, workers=1, quick=True, wait=True), on_warning=on_warning
    )
    t.join()
    assert len(heard) == 1 and heard[0].startswith(f"waiting for pid {os.getpid()} ")
    assert scan_results(out).rows


def test_a_stale_lock_file_of_a_dead_run_is_taken_over(tmp_path: Path) -> None:
    from dmlsched.experiments.lock import hold, holder

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    (tmp_path / LOCK_NAME).write_text(f"pid {dead.stdout.strip()} (dmlsched compare)\n")
    with hold(tmp_path):  # the kernel dropped the dead run's flock with it
        assert holder(tmp_path).startswith(f"pid {os.getpid()} ")
    assert holder(tmp_path) == ""


def test_the_lock_is_reentrant_in_a_thread_and_exclusive_across_threads(tmp_path: Path) -> None:
    import threading

    from dmlsched.errors import InvalidInput
    from dmlsched.experiments.lock import hold

    errors: list[str] = []

    def other() -> None:
        try:
            with hold(tmp_path):
                pass
        except InvalidInput as e:
            errors.append(str(e))

    with hold(tmp_path), hold(tmp_path):  # re-entered by the same thread
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert len(errors) == 1 and f"pid {os.getpid()}" in errors[0]
    with hold(tmp_path):  # released: free again
        pass


def test_repair_drops_a_torn_last_cell(tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    header = ",".join(COLUMNS)
    whole = "e,cluster,fifo,jobs,3,0,a,1.0\ne,cluster,fifo,jobs,3,0,b,2.0\n"
    torn = "e,cluster,drf,jobs,3,0,a,1.0\ne,cluster,drf,jobs,3,0,b,2"
    path.write_text(f"{header}\n{whole}{torn}")
    assert repair(path) == 1
    assert path.read_text() == f"{header}\n{whole}"
    assert repair(path) == 0


def test_a_ctrl_c_another_thread_takes_inside_the_block_is_raised_when_it_ends() -> None:
    # Python runs a signal's handler on the main thread whichever thread the kernel
    # chose; a progress display's thread has SIGINT unblocked, so blocking it here is
    # not enough: the Ctrl-C would land mid-spawn (the flake this test pins down)
    import threading

    from dmlsched.experiments.pool import sigint_blocked

    # Python's own handler, whatever the runner's process has (an xdist worker ignores it)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        reached_end = False
        with pytest.raises(KeyboardInterrupt), sigint_blocked():
            sender = threading.Thread(
                target=lambda: (
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}),
                    os.kill(os.getpid(), signal.SIGINT),
                )
            )
            sender.start()
            sender.join()
            deadline = time.monotonic() + 0.3
            while time.monotonic() < deadline:  # bytecodes, at which a handler would run
                pass
            reached_end = True
        assert reached_end
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)
