"""`make install-core` compiles the numba kernels (dmlsched.experiments.warm) into their
on-disk cache inside the checkout, and covers what a run compiles: after it, the demo's
runs compile nothing more."""

from __future__ import annotations

from pathlib import Path

from numba.core.registry import CPUDispatcher

from dmlsched.experiments.warm import warm
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers._shared import kernels, placement_kernels
from dmlsched.schedulers.protocols import make_scheduler, registry
from dmlsched.sim.engine import simulate
from dmlsched.workloads.synthetic import synthetic_cluster


def _dispatchers() -> dict[str, CPUDispatcher]:
    return {
        f"{mod.__name__}.{name}": obj
        for mod in (kernels, placement_kernels)
        for name, obj in vars(mod).items()
        if isinstance(obj, CPUDispatcher)
    }


def test_warming_compiles_into_the_checkout_what_the_demo_then_uses() -> None:
    cluster = [name for setting, name in registry() if setting == "cluster"]
    assert warm() == 2 * len(cluster)
    package = Path(kernels.__file__).resolve().parent
    compiled = {}
    for name, d in _dispatchers().items():
        assert Path(d._cache._cache_path).resolve().is_relative_to(package), name  # survives
        compiled[name] = set(d.signatures)
    assert any(compiled.values())
    for jobs, machines, mode in ((60, 10, "async"), (30, 100, "sync")):  # the demo; a big cluster
        wl_rng, rng = spawn(make_rng(7), 2)
        wl = synthetic_cluster(jobs, machines, 12, wl_rng, mode=mode)
        for name in cluster:
            simulate("cluster", wl, make_scheduler("cluster", name), rng, record_events=False)
    after = {name: set(d.signatures) for name, d in _dispatchers().items()}
    assert after == compiled  # nothing compiled on a first run after the install
