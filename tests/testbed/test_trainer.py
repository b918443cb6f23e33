"""The trainer entry point: which process it is, where its peers are, what it resumes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dmlsched.errors import InvalidInput
from dmlsched.testbed.trainer import build_config, latest_checkpoint, parse_args

BASE = ["--job", "3", "--ps", "2", "--workers", "3", "--hosts", "10.0.0.1,10.0.0.2"]


def _cfg(tmp_path: Path, *extra: str, env: dict | None = None):  # type: ignore[no-untyped-def]
    return build_config(parse_args([*BASE, "--job-dir", str(tmp_path), *extra]), env or {})


def test_the_index_comes_from_the_flag_then_tf_config_then_volcano_then_slurm(
    tmp_path: Path,
) -> None:
    assert _cfg(tmp_path, "--role", "ps", "--index", "1").index == 1
    tf = {"task": {"type": "worker", "index": 2}, "cluster": {}}
    env = {"TF_CONFIG": json.dumps(tf), "VK_TASK_INDEX": "0", "SLURM_PROCID": "1"}
    assert _cfg(tmp_path, "--role", "worker", env=env).index == 2
    env = {"VK_TASK_INDEX": "0", "SLURM_PROCID": "1"}
    assert _cfg(tmp_path, "--role", "worker", "--index-base", "1", env=env).index == 1
    assert (
        _cfg(tmp_path, "--role", "worker", "--index-base", "1", env={"SLURM_PROCID": "1"}).index
        == 2
    )
    with pytest.raises(InvalidInput, match="index"):
        _cfg(tmp_path, "--role", "worker")
    with pytest.raises(InvalidInput, match="index=2"):
        _cfg(tmp_path, "--role", "ps", "--index", "2")


def test_machines_and_peers_are_checked_against_the_counts(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, "--role", "ps", "--index", "0", "--ps-machines", "1,0")
    assert cfg.ps_machines == (1, 0) and cfg.hosts == ("10.0.0.1", "10.0.0.2")
    with pytest.raises(InvalidInput, match="ps-machines"):
        _cfg(tmp_path, "--role", "ps", "--index", "0", "--ps-machines", "0")
    with pytest.raises(InvalidInput, match="ps-addrs"):
        _cfg(tmp_path, "--role", "ps", "--index", "0", "--ps-addrs", "a:1")
    with pytest.raises(InvalidInput, match="ps-addrs"):
        _cfg(tmp_path, "--role", "ps", "--index", "0", "--ps-addrs", "a:1,b")
    cfg = _cfg(tmp_path, "--role", "worker", "--index", "0", "--ps-addrs", "a:1,b:2")
    assert cfg.extra == {"ps_addrs": ["a:1", "b:2"]}


def test_resume_auto_takes_the_newest_complete_checkpoint_up_to_this_incarnation(
    tmp_path: Path,
) -> None:
    def inc(n: int, shards: int, advertised: int) -> None:
        d = tmp_path / f"inc-{n}"
        (d / "ckpt").mkdir(parents=True)
        for k in range(advertised):
            (d / f"ps-{k}.addr").write_text("{}")
        for k in range(shards):
            (d / "ckpt" / f"shard-{k}.json").write_text("{}")

    inc(1, 2, 2)  # complete
    inc(4, 1, 2)  # a PS died before it saved: incomplete
    assert latest_checkpoint(tmp_path, 5) == str(tmp_path / "inc-1" / "ckpt")
    assert latest_checkpoint(tmp_path, 0) == ""
    inc(5, 2, 2)
    assert latest_checkpoint(tmp_path, 5) == str(tmp_path / "inc-5" / "ckpt")
    cfg = _cfg(tmp_path, "--role", "ps", "--index", "0", "--inc", "6")
    assert cfg.resume == str(tmp_path / "inc-5" / "ckpt")
    assert _cfg(tmp_path, "--role", "ps", "--index", "0", "--resume", "none").resume == ""


def test_bad_arguments_exit_2_with_one_line(tmp_path: Path) -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "dmlsched.testbed.trainer",
            "--role",
            "ps",
            *BASE,
            "--job-dir",
            str(tmp_path),
            "--index",
            "7",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "dmlsched-trainer: invalid index=7 (expected 0..1 (2 ps processes))"
    ]


def test_a_runs_periodic_checkpoints_count_when_its_final_one_is_missing(tmp_path: Path) -> None:
    d = tmp_path / "inc-2"
    for k in range(2):
        (d / f"ps-{k}.addr").parent.mkdir(parents=True, exist_ok=True)
        (d / f"ps-{k}.addr").write_text("{}")
    for step, shards in ((20, 2), (40, 2), (60, 1)):  # the machine died while saving step 60
        (d / f"ckpt-{step}").mkdir()
        for k in range(shards):
            (d / f"ckpt-{step}" / f"shard-{k}.json").write_text("{}")
    assert latest_checkpoint(tmp_path, 2) == str(d / "ckpt-40")
    (d / "ckpt").mkdir()
    for k in range(2):
        (d / "ckpt" / f"shard-{k}.json").write_text("{}")
    assert latest_checkpoint(tmp_path, 2) == str(d / "ckpt")
    with pytest.raises(InvalidInput, match="checkpoint-every"):
        _cfg(tmp_path, "--role", "ps", "--index", "0", "--checkpoint-every", "-1")
    cfg = _cfg(tmp_path, "--role", "ps", "--index", "0", "--checkpoint-every", "5")
    assert cfg.extra["ckpt_every"] == 5
