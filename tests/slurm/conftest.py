"""A real Slurm cluster for the tests: one per test session (per xdist worker).

Skips with the reason where it cannot start (not root, no ``ip``/``tc``, the
Debian packages missing — ``make test-deps`` installs them as root).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dmlsched.service.slurm_cluster import SlurmCluster, slurm_available

SLURM = slurm_available()
needs_slurm = pytest.mark.skipif(SLURM is not None, reason=SLURM or "")


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """Three nodes of the quickstart's size (1 GPU, 4 vCPUs, 8 GB, 8 GB), 10 Mbit/s links."""
    if SLURM is not None:
        pytest.skip(SLURM)
    cluster = SlurmCluster(Path(tmp_path_factory.mktemp("slurm")), 3, slurmd_timeout=4)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()
