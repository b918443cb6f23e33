"""A sweep on a local Ray cluster yields exactly the process pool's rows — with the
scheduler plugins of the command loaded in Ray's workers too."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dmlsched.experiments.catalogue import get
from dmlsched.experiments.runner import RunConfig, run_experiment
from dmlsched.schedulers.plugins import load_plugins
from tests.test_plugins import EXPERIMENT, PLUGIN

ray = pytest.importorskip("ray", reason="ray is not installed (pip install dmlsched[ray])")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray cluster for the module (starting one takes seconds), its session files
    in a folder of its own that goes with it (Ray keeps every session under /tmp/ray;
    the folder's path is short: Ray's sockets live in it, and a socket path has ≤ 107
    bytes)."""
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        _temp_dir=temp,
    )
    try:
        yield
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def test_ray_local_sweep_matches_process_pool(tmp_path: Path, local_ray: None) -> None:
    exp = get("cluster-baselines")
    pool = run_experiment(exp, tmp_path / "pool", RunConfig(seeds=2, quick=True, workers=2))
    via_ray = run_experiment(
        exp, tmp_path / "ray", RunConfig(seeds=2, quick=True, workers=2, ray="local")
    )
    assert via_ray.read_bytes() == pool.read_bytes()


def test_ray_workers_load_the_plugin(plugin_sandbox: Path, local_ray: None) -> None:
    path = plugin_sandbox / "plugin_demo.py"
    path.write_text(PLUGIN + EXPERIMENT)
    plugins = load_plugins([str(path)])
    exp = get("plugin-demo")
    pool = run_experiment(exp, plugin_sandbox / "pool", RunConfig(2, workers=2, plugins=plugins))
    via_ray = run_experiment(
        exp, plugin_sandbox / "ray", RunConfig(2, workers=2, ray="local", plugins=plugins)
    )
    assert via_ray.read_bytes() == pool.read_bytes()
    assert ",one-machine-each," in pool.read_text()
