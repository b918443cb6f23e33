"""Real processes: a short local-mode run, checkpoint-resume, cleanup after SIGKILL, netns.

Each test keeps its run state in its own folder; netns tests skip without
root or iproute2.  Together well under a minute on two shared cores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from dmlsched.model.cluster import Placement
from dmlsched.testbed.emulation import netns_available
from dmlsched.testbed.runtime import Job, Testbed, TrainSpec
from dmlsched.testbed.state import PREFIX, RunState, cleanup, live_resources

NETNS = netns_available()
needs_netns = pytest.mark.skipif(NETNS is not None, reason=NETNS or "")


def _cli(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "dmlsched", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def test_a_short_local_run_trains_every_job_and_leaves_nothing(tmp_path):
    out = tmp_path / "out"
    p = _cli(
        "testbed",
        "run",
        "--scheduler",
        "pd-ors",
        "--jobs",
        "2",
        "--machines",
        "2",
        "--slot-seconds",
        "2",
        "--slots",
        "8",
        "--epochs",
        "1,2",
        "--out",
        str(out),
        "--state-dir",
        str(tmp_path / "state"),
    )
    stdout, stderr = p.communicate(timeout=120)
    assert p.returncode == 0, stderr
    df = pd.read_csv(out / "results.csv", dtype={"value": str})
    assert list(df.columns) == [
        "experiment",
        "setting",
        "scheduler",
        "param",
        "value",
        "seed",
        "metric",
        "metric_value",
    ]
    per_job = df[df.value != "all"].pivot(index="value", columns="metric", values="metric_value")
    assert set(per_job.index) == {"0", "1"}
    assert (per_job.real_jct > 0).all() and (per_job.sim_jct > 0).all()
    assert (per_job.sim_error >= 0).all()
    assert (per_job.bytes > 0).all() and (per_job.final_loss < 2.3).all()  # ln 10 = untrained
    for f in ("summary.md", "slots.csv", "gantt.png", "loss.png"):
        assert (out / f).exists()
    assert not list((tmp_path / "state").glob("*.json"))
    run_id = stdout.split()[1].rstrip(":")
    assert live_resources(run_id) == []


def test_a_moved_job_resumes_from_its_checkpoint(tmp_path):
    with Testbed(2, tmp_path / "run", ext_mbit=50, state_dir=tmp_path / "st") as tb:
        job = Job(tb, TrainSpec(job=0, target=1e12, hidden=64))
        job.start(Placement((0,), (2,), (1,)))
        time.sleep(1.5)
        job.stop()
        first = job.status()
        assert first.work > 0 and not first.done
        job.start(Placement((0, 1), (1, 0), (0, 1)))  # move and resize
        time.sleep(1.5)
        job.stop()
        second = job.status()
        meta = json.loads((job.dir / "inc-1" / "ckpt" / "shard-0.json").read_text())
    assert second.work > first.work and meta["work"] == second.work
    assert second.bytes > first.bytes
    curve = job.loss_curve()
    # the loss curve carries on where the first incarnation left off (no restart from scratch)
    resumed = [c for c in curve if c[1] > first.work]
    assert resumed and resumed[0][2] < curve[0][2]


def _sigkill_then_cleanup(tmp_path, emulation: str) -> None:
    state = tmp_path / "state"
    p = _cli(
        "testbed",
        "run",
        "--scheduler",
        "pd-ors",
        "--jobs",
        "2",
        "--machines",
        "2",
        "--slot-seconds",
        "1",
        "--epochs",
        "40,60",
        "--out",
        str(tmp_path / "out"),
        "--state-dir",
        str(state),
        "--emulation",
        emulation,
        start_new_session=True,
    )
    assert p.stdout is not None
    line = p.stdout.readline()  # "testbed <id>: ..." once the agents are up
    run_id = line.split()[1].rstrip(":")
    deadline = time.monotonic() + 30
    while " start" not in p.stdout.readline() and time.monotonic() < deadline:
        pass
    time.sleep(0.5)  # PSs and workers running
    assert live_resources(run_id)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    removed = cleanup(state)
    assert any(run_id in r or "process" in r or "file" in r for r in removed)
    deadline = time.monotonic() + 10
    while live_resources(run_id) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert live_resources(run_id) == []
    assert not list(state.glob("*.json"))


def test_sigkill_then_cleanup_leaves_no_process_local(tmp_path):
    _sigkill_then_cleanup(tmp_path, "local")


@needs_netns
def test_sigkill_then_cleanup_leaves_no_namespace_or_qdisc_netns(tmp_path):
    _sigkill_then_cleanup(tmp_path, "netns")


@needs_netns
def test_netns_split_placement_is_slower_than_colocated(tmp_path):
    def steps_per_s(job: Job) -> float:
        time.sleep(0.7)
        a = job.status().work
        t = time.monotonic()
        time.sleep(1.5)
        return (job.status().work - a) / (time.monotonic() - t)

    with Testbed(
        2, tmp_path / "run", emulation="netns", ext_mbit=10, state_dir=tmp_path / "st"
    ) as tb:
        run_id = tb.run_id
        job = Job(tb, TrainSpec(job=0, target=1e12))
        job.start(Placement((0,), (2,), (1,)))
        co = steps_per_s(job)
        job.stop()
        job.start(Placement((0, 1), (2, 0), (0, 1)))
        split = steps_per_s(job)
        job.stop()
    # 2 × 77 KB per push over 10 Mbit/s is > 120 ms a step; co-located is a few ms
    assert co > 3 * split > 0
    assert live_resources(run_id) == []


def test_bad_testbed_input_exits_2_with_one_line(tmp_path):
    for args, field in (
        (["--emulation", "vm"], "emulation"),
        (["--epochs", "5"], "epochs"),
    ):
        base = {"--scheduler": "fifo"}
        argv = ["testbed", "run", "--out", str(tmp_path / "o"), "--state-dir", str(tmp_path)]
        if "--scheduler" not in args:
            argv += ["--scheduler", base["--scheduler"]]
        p = _cli(*argv, *args)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 2, (args, err)
        assert field in err and len(err.strip().splitlines()) == 1


@needs_netns
def test_cleanup_from_another_state_folder_spares_a_live_runs_namespaces(tmp_path):
    # concurrent runs (pytest -n 2) keep their state in different folders; the orphan
    # sweep of one must not delete the other's namespaces while its owner lives
    with Testbed(1, tmp_path / "run", emulation="netns", state_dir=tmp_path / "a") as tb:
        mine = [ns for ns in _netns() if ns.startswith(f"{PREFIX}{tb.run_id}")]
        assert mine
        cleanup(tmp_path / "b")
        assert [ns for ns in _netns() if ns.startswith(f"{PREFIX}{tb.run_id}")] == mine
        run_id = tb.run_id
    assert live_resources(run_id) == []


def test_cleanup_removes_the_shm_files_of_a_dead_run_whose_state_file_is_gone(tmp_path):
    # a run killed with its state folder (a test's tmp_path) leaves its owner marker and
    # token-bucket file in /dev/shm; the sweep removes them and spares a live run's
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm on this machine")
    live = RunState.new(tmp_path / "live", "local")  # this process owns it
    gone = f"{PREFIX}{live.run_id[::-1]}x"  # another id, its owner a pid no process has
    files = [shm / f"{gone}-owner", shm / f"{gone}-tb", shm / f"{live.prefix}-tb"]
    files[0].write_text("999999999 0")
    files[1].write_bytes(b"\0" * 64)
    files[2].write_bytes(b"\0" * 64)
    try:
        removed = cleanup(tmp_path / "elsewhere")
        assert [f.exists() for f in files] == [False, False, True]
        assert (shm / f"{live.prefix}-owner").exists()
        assert sorted(r for r in removed if gone in r) == [
            f"orphan file {files[0]}",
            f"orphan file {files[1]}",
        ]
    finally:
        cleanup(tmp_path / "live", run_id=live.run_id, force=True)
        for f in files:
            f.unlink(missing_ok=True)


def _netns() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [ln.split()[0] for ln in out.splitlines() if ln.strip()]


def test_probe_jobs_run_together_and_report_their_steps(tmp_path):
    from dmlsched.testbed.validate import measure_steps

    with Testbed(3, tmp_path / "run", emulation="local", ext_mbit=20.0, state_dir=tmp_path) as tb:
        steps = measure_steps(tb, [((1, 0, 0), (0, 1, 0)), ((0, 0, 1), (0, 1, 0))], 1.0, 0)
        run_id = tb.run_id
    assert len(steps) == 2 and all(0 < s < 5 for s in steps)
    assert live_resources(run_id) == []


def test_cleanup_never_kills_a_process_that_reused_a_recorded_pid(tmp_path):
    # a dead run's state file names a pid that now belongs to someone else's process
    from dmlsched.testbed.state import RunState

    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        st = RunState.new(tmp_path, "local")
        st.owner_pid, st.owner_start = 2**22 + 1, "0"  # an owner that is gone
        st.pids = [[bystander.pid, "1"], bystander.pid]  # another start time; a bare pid
        st.save()
        cleanup(tmp_path)
        time.sleep(0.2)
        assert bystander.poll() is None
        assert not list(tmp_path.glob("*.json"))
    finally:
        bystander.kill()
        bystander.wait()


def test_cleanup_kills_a_recorded_process_that_is_still_the_same(tmp_path):
    from dmlsched.testbed.state import RunState

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        st = RunState.new(tmp_path, "local")
        st.add_process(child.pid)
        st.owner_pid, st.owner_start = 2**22 + 1, "0"
        st.save()
        removed = cleanup(tmp_path)
        assert f"process {child.pid}" in removed
        child.wait(timeout=10)  # cleanup reaped it (its own child here): gone either way
        assert not os.path.exists(f"/proc/{child.pid}")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
