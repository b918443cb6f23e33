"""One contract over the whole registry: every scheduler, every setting.

Valid decisions on a tiny workload (the engine raises otherwise), same seed →
same metrics, and the read-only view is never mutated.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler, registry
from dmlsched.sim.engine import simulate
from dmlsched.workloads.registry import WorkloadParams, build_workload

ALL = sorted(registry())


def snapshot(obj: Any, depth: int = 0) -> Any:
    """A deep, comparable copy of a view (dataclasses, mappings, arrays, sequences)."""
    if depth > 8:
        return repr(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return (
            type(obj).__name__,
            tuple(
                (f.name, snapshot(getattr(obj, f.name), depth + 1)) for f in dataclasses.fields(obj)
            ),
        )
    if isinstance(obj, Mapping):
        return tuple(sorted((repr(k), snapshot(v, depth + 1)) for k, v in obj.items()))
    if isinstance(obj, np.ndarray):
        return ("nd", obj.shape, obj.dtype.str, obj.tobytes())
    if isinstance(obj, (set, frozenset)):
        return tuple(sorted(repr(x) for x in obj))
    if isinstance(obj, (list, tuple)):
        return tuple(snapshot(x, depth + 1) for x in obj)
    return repr(obj)


def _tiny(setting: str, seed: int) -> Any:
    wl_rng, _ = spawn(make_rng(seed), 2)
    return build_workload(setting, "synthetic", WorkloadParams(jobs=4, machines=3, slots=6), wl_rng)


def _run(setting: str, name: str, seed: int, guard: bool) -> dict[str, float]:
    sched = make_scheduler(setting, name)
    if guard:
        inner = sched.decide
        calls = []

        def decide(view: Any) -> Any:
            calls.append(1)
            if len(calls) > 300:  # long horizons: the first 300 decisions are checked
                return inner(view)
            before = snapshot(view)
            out = inner(view)
            assert snapshot(view) == before, f"{name} mutated its view at call {len(calls)}"
            return out

        sched.decide = decide
    _, rng = spawn(make_rng(seed), 2)
    return simulate(setting, _tiny(setting, seed), sched, rng).metrics


@pytest.mark.parametrize(("setting", "name"), ALL, ids=[f"{s}:{n}" for s, n in ALL])
def test_scheduler_makes_valid_decisions_without_mutating_the_view(setting: str, name: str) -> None:
    metrics = _run(setting, name, seed=3, guard=True)
    # NaN is allowed for undefined means (e.g. mean_jct with no completed job)
    assert metrics and not any(np.isinf(v) for v in metrics.values())


@pytest.mark.parametrize(("setting", "name"), ALL, ids=[f"{s}:{n}" for s, n in ALL])
def test_same_seed_gives_same_metrics(setting: str, name: str) -> None:
    a, b = _run(setting, name, seed=5, guard=False), _run(setting, name, seed=5, guard=False)
    assert repr(a) == repr(b)  # repr: exact floats, and NaN equals NaN


def test_registry_names_are_unique_per_setting_and_nonempty() -> None:
    assert ("cluster", "fifo") in ALL and ("cluster", "drf") in ALL
    assert len(ALL) == len(set(ALL))
