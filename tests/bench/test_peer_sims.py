"""Peer simulators: the cached build and the timed runs (the real peers only under -m bench)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dmlsched.bench import load
from dmlsched.bench import peer_sims as ps
from dmlsched.bench.peer_sims import PeerSim, build, cache_dir, timed
from dmlsched.errors import InvalidInput

PY = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "dmlsched" / "peers"


def _toy(tmp_path: Path, marker: str = "made") -> tuple[Path, PeerSim]:
    peers = tmp_path / "peers"
    (peers / "toy" / "sub").mkdir(parents=True, exist_ok=True)
    (peers / "toy" / "sub" / "sim.py").write_text("print('Average JCT: 12.5')\n")
    # the set-up runs with the venv first on PATH: `python` is the venv's
    setup = (("python", "-c", f"import sys; open('{marker}', 'w').write(sys.prefix)"),)
    return peers, PeerSim("toy", "toy", PY, (), setup, "sub")


def test_the_cache_lives_outside_the_repository_under_xdg_cache_home(cache: Path) -> None:
    assert cache_dir() == cache
    repo = Path(__file__).resolve().parents[2]
    assert repo not in cache_dir().parents


def test_a_build_copies_the_folder_makes_a_venv_runs_set_up_and_is_reused(
    tmp_path: Path, cache: Path
) -> None:
    peers, sim = _toy(tmp_path)
    said: list[str] = []
    built = build(sim, peers, said.append)
    assert built.python.is_file() and built.workdir == built.python.parents[2] / "src" / "sub"
    assert Path((built.workdir / "made").read_text()) == built.python.parents[1]  # venv's python
    assert not (peers / "toy" / "sub" / "made").exists()  # the shared copy is untouched
    assert len(said) == 2 and "building the toy simulator" in said[0]
    assert build(sim, peers, said.append) == built and len(said) == 2  # cached


def test_a_changed_source_or_pin_list_builds_anew_and_an_interrupted_build_again(
    tmp_path: Path, cache: Path
) -> None:
    peers, sim = _toy(tmp_path)
    first = build(sim, peers, lambda _: None)
    (peers / "toy" / "sub" / "sim.py").write_text("print('Average JCT: 1')\n")
    second = build(sim, peers, lambda _: None)
    assert second.workdir != first.workdir and first.workdir.exists()
    (second.workdir.parents[1] / "built.json").unlink()  # as if killed mid-build
    (second.workdir / "stale").write_text("x")
    third = build(sim, peers, lambda _: None)
    assert third == second and not (third.workdir / "stale").exists()


def test_a_failing_set_up_step_says_which(tmp_path: Path, cache: Path) -> None:
    peers, _ = _toy(tmp_path)
    bad = PeerSim("toy", "toy", PY, (), (("python", "-c", "raise SystemExit('no make')"),))
    with pytest.raises(RuntimeError, match="no make"):
        build(bad, peers, lambda _: None)
    with pytest.raises(InvalidInput, match="peers"):
        build(PeerSim("nope", "nope", PY, ()), peers, lambda _: None)


def test_timed_gives_a_childs_cpu_and_output_and_a_failure_its_stderr() -> None:
    cpu, wall, out = timed([sys.executable, "-c", "print(sum(range(10**6)))"])
    assert out.strip() == str(sum(range(10**6))) and cpu > 0 and wall > 0
    with pytest.raises(RuntimeError, match="boom"):
        timed([sys.executable, "-c", "import sys; sys.exit('boom')"])


def test_peer_outputs_are_read_for_their_last_average_jct() -> None:
    text = "Average JCT: 0\n...\nAverage JCT: 3469.69375\n"
    assert ps._last_number(text, r"Average JCT: ([0-9.eE+-]+)", "x") == 3469.69375
    with pytest.raises(RuntimeError, match="no x"):
        ps._last_number("nothing", r"Average JCT: ([0-9.eE+-]+)", "x")


def test_peer_sims_is_opt_in_and_its_figures_need_no_constants() -> None:
    from dmlsched.bench import OPT_IN
    from dmlsched.bench import peers as bench_peers

    assert "peer-sims" in load() and "peer-sims" in OPT_IN
    assert not hasattr(bench_peers, "POLLUX_SIM_W6_S")
    assert not hasattr(bench_peers, "GAVEL_2869CE_CPU_S")


def _reachable() -> bool:
    """PyPI through pip (what a peer build uses), or an existing cached build."""
    got = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d",
         str(Path("/tmp") / "dmlsched-pip-probe"), "func_timeout==4.3.5"],
        capture_output=True,
    )  # fmt: skip
    shutil.rmtree(Path("/tmp") / "dmlsched-pip-probe", ignore_errors=True)
    return got.returncode == 0


@pytest.mark.bench
def test_the_peer_bench_runs_both_peers_beside_dmlsched_on_the_same_files() -> None:
    peers = ps.peers_dir()
    if peers is None:
        pytest.skip("../shared/peers absent")
    if shutil.which(f"python{ps.POLLUX.python}") is None and ps.POLLUX.python != PY:
        pytest.skip(f"no python{ps.POLLUX.python} to build the peers with")
    if not _reachable():
        pytest.skip("PyPI unreachable: the peers cannot be built")
    figures = load()["peer-sims"]()
    json.dumps(figures)
    assert figures["gavel_2869ce_fifo_peer_cpu_s"] > 0
    assert figures["gavel_2869ce_fifo_jct_ratio"] == pytest.approx(1.0, abs=0.10)
    for w in (1, 6, 8):
        assert figures[f"pollux_w{w}_tiresias_jct_ratio"] == pytest.approx(1.0, abs=0.15)
