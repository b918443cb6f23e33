"""A sweep on a local Ray cluster yields exactly the process pool's rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from dmlsched.experiments.catalogue import get
from dmlsched.experiments.runner import RunConfig, run_experiment

ray = pytest.importorskip("ray", reason="ray is not installed (pip install dmlsched[ray])")


def test_ray_local_sweep_matches_process_pool(tmp_path: Path) -> None:
    exp = get("cluster-baselines")
    pool = run_experiment(exp, tmp_path / "pool", RunConfig(seeds=2, quick=True, workers=2))
    try:
        via_ray = run_experiment(
            exp, tmp_path / "ray", RunConfig(seeds=2, quick=True, workers=2, ray="local")
        )
    finally:
        ray.shutdown()
    assert via_ray.read_bytes() == pool.read_bytes()
