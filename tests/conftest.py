"""Shared fixtures: small hand-made cluster workloads and the shared-data path."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from dmlsched.model.cluster import Cluster, ClusterJob, ClusterWorkload
from dmlsched.model.utility import Sigmoid
from dmlsched.schedulers.protocols import make_scheduler

# CI replays a fixed example set (no flaky draws); locally hypothesis explores.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def fuzz(max_examples: int) -> settings:
    """Fuzzing an input surface: the same examples on every machine (a CI failure
    reproduces locally), no deadline, fixtures shared by the examples of one test."""
    return settings(
        max_examples=max_examples,
        derandomize=True,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        database=None,
    )


#: Tests that run a scheduler two ways and compare the bytes test the engine's paths, not
#: the scheduler's solver: there Dorm's MILP stops within 20% of its optimum (a 30-job
#: partition takes ~0.3 s at the default 0.1% gap, ~0.01 s at 20%; still deterministic).
_ENGINE_TEST_PARAMS: dict[str, dict[str, object]] = {"dorm": {"mip_gap": 0.2}}


def engine_test_scheduler(setting: str, name: str, **params: object) -> Any:
    """``make_scheduler`` with the solver settings of :data:`_ENGINE_TEST_PARAMS`."""
    return make_scheduler(setting, name, **{**_ENGINE_TEST_PARAMS.get(name, {}), **params})


SHARED = Path(__file__).resolve().parents[1].parent / "shared"
TRACES = SHARED / "traces"
PEERS = SHARED / "peers"


def make_job(i: int = 0, **kw: object) -> ClusterJob:
    """A small sync job: 1 GPU + 2 CPU per worker, 1 CPU per PS, easy numbers."""
    spec: dict[str, object] = dict(
        id=i,
        arrival=0,
        epochs=1,
        samples=1000,
        batch=10,
        grad_mb=45.0,
        tau=1e-3,
        gamma=2.0,
        worker_demand=(1.0, 2.0, 0.0, 0.0),
        ps_demand=(0.0, 1.0, 0.0, 0.0),
        b_int=40.0,
        b_ext=1.0,
        utility=Sigmoid(10.0, 0.0, 0.0),
    )
    spec.update(kw)
    return ClusterJob(**spec)  # type: ignore[arg-type]


@pytest.fixture
def two_machine_cluster() -> Cluster:
    return Cluster.uniform(2, (4.0, 8.0, 64.0, 64.0))


@pytest.fixture
def small_workload(two_machine_cluster: Cluster) -> ClusterWorkload:
    jobs = (make_job(0, arrival=0), make_job(1, arrival=1), make_job(2, arrival=2))
    return ClusterWorkload(jobs=jobs, cluster=two_machine_cluster, horizon=8)


@pytest.fixture
def plugin_sandbox(tmp_path: Path):  # type: ignore[no-untyped-def]  # a generator fixture
    """Plugins loaded in a test leave nothing behind: the registry, whether entry points
    were loaded, the experiment catalogue and the modules imported from ``tmp_path`` are
    restored afterwards."""
    import sys

    from dmlsched.experiments import catalogue
    from dmlsched.schedulers import plugins, protocols, registration

    protocols.registry()  # every built-in registered before the snapshot (imported once)
    catalogue.all_experiments()
    registered = dict(registration._REGISTRY)
    entry_points = list(plugins._ENTRY_POINTS)
    experiments = dict(catalogue._CATALOGUE)
    yield tmp_path
    catalogue._CATALOGUE.clear()
    catalogue._CATALOGUE.update(experiments)
    registration._REGISTRY.clear()
    registration._REGISTRY.update(registered)
    plugins._ENTRY_POINTS[:] = entry_points
    for name, mod in list(sys.modules.items()):
        where = getattr(mod, "__file__", None) or ""
        if where.startswith(str(tmp_path)):
            del sys.modules[name]
