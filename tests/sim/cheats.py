"""Tools for testing the scheduler/engine boundary: tiny workloads, recorded honest
runs, a replaying scheduler that can cheat, view snapshots and byte-exact results.

A cheat that should *gain nothing* replays the decisions an honest scheduler
made (so its own decisions cannot drift when it tampers with what it was
shown) and must produce the honest run's exact bytes; a cheat that should be
*refused* must end in :class:`~dmlsched.errors.InvalidDecision`.
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from dmlsched.model.cluster import ClusterDecision, ClusterWorkload, Placement
from dmlsched.model.edge_cloud import EdgeCloudDecision, EdgeCloudWorkload
from dmlsched.model.geo import GeoDecision, GeoPlacement
from dmlsched.model.interval import IntervalDecision
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import RunResult, simulate
from dmlsched.workloads.registry import WorkloadParams, build_workload

SETTINGS = ("cluster", "interval", "edge-cloud", "geo")


def tiny(setting: str, seed: int = 3) -> Any:
    """The contract's tiny workload of each setting, cut so that runs are short and
    still eventful: cluster jobs train 1/40 of their epochs (some finish within the
    8 slots, some do not); edge-cloud jobs 1 epoch of ≤ 3 mini-batches (tens of
    slots instead of thousands)."""
    wl_rng, _ = spawn(make_rng(seed), 2)
    if setting == "cluster":
        wl = build_workload(
            setting, "synthetic", WorkloadParams(jobs=6, machines=3, slots=8), wl_rng
        )
        jobs = tuple(dataclasses.replace(j, epochs=max(1, j.epochs // 40)) for j in wl.jobs)
        return ClusterWorkload(jobs, wl.cluster, wl.horizon, wl.source, wl.notes)
    wl = build_workload(setting, "synthetic", WorkloadParams(jobs=4, machines=3, slots=6), wl_rng)
    if setting == "edge-cloud":
        jobs = tuple(
            dataclasses.replace(j, epochs=1, minibatches=min(j.minibatches, 3)) for j in wl.jobs
        )
        wl = EdgeCloudWorkload(jobs, wl.system, wl.horizon, wl.source, wl.notes)
    return wl


def run_rng(seed: int = 3) -> np.random.Generator:
    return spawn(make_rng(seed), 2)[1]


def result_bytes(res: RunResult) -> bytes:
    """Everything a run reports, as bytes (repr keeps exact floats and NaN == NaN)."""
    parts = [repr(sorted(res.metrics.items())), repr(res.events)]
    for k in sorted(res.series):
        a = np.asarray(res.series[k])
        parts.append(f"{k}:{a.dtype.str}:{a.shape}:{a.tobytes().hex()}")
    return "\n".join(parts).encode()


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


def clone(d: Any) -> Any:
    """A fresh copy of a decision (new mappings, placements and arrays)."""
    if type(d) is ClusterDecision:
        alloc = {j: Placement(p.machines, p.workers, p.ps) for j, p in d.allocations.items()}
        return ClusterDecision(alloc, tuple(d.admit), tuple(d.reject), d.until)
    if type(d) is IntervalDecision:
        return IntervalDecision(dict(d.allocations))
    if type(d) is EdgeCloudDecision:
        return EdgeCloudDecision(dict(d.dispatch), dict(d.run), dict(d.ps))
    if type(d) is GeoDecision:
        return GeoDecision(
            {
                j: GeoPlacement(p.workers, p.ps, np.array(p.transfers))
                for j, p in d.placements.items()
            }
        )
    raise TypeError(type(d))


def record(setting: str, name: str, wl: Any = None, seed: int = 3) -> tuple[RunResult, list]:
    """An honest run of a registered scheduler and clones of every decision it made."""
    sched = make_scheduler(setting, name)
    inner = sched.decide
    decisions: list = []

    def decide(view: Any) -> Any:
        out = inner(view)
        decisions.append(clone(out))
        return out

    sched.decide = decide
    res = simulate(setting, tiny(setting, seed) if wl is None else wl, sched, run_rng(seed))
    return res, decisions


Hook = Callable[..., Any]


class Replay:
    """Replays recorded decisions; ``on_reset``/``on_decide`` hooks may cheat.

    ``on_decide(self, view, decision) -> decision`` sees a fresh clone of the
    recorded decision and returns what the engine gets.
    """

    name: ClassVar[str] = "replay"

    def __init__(
        self,
        setting: str,
        decisions: list,
        on_decide: Hook | None = None,
        on_reset: Hook | None = None,
    ) -> None:
        self.setting = setting
        self.decisions = decisions
        self.on_decide = on_decide
        self.on_reset = on_reset

    def reset(self, *static: Any) -> None:
        self.calls_ = 0
        self.state_: dict[str, Any] = {}
        if self.on_reset is not None:
            self.on_reset(self, *static)

    def decide(self, view: Any) -> Any:
        d = clone(self.decisions[self.calls_])
        self.calls_ += 1
        return d if self.on_decide is None else self.on_decide(self, view, d)


class Twice(Mapping):
    """A mapping whose ``items()`` yields every entry ``times`` times."""

    def __init__(self, d: Mapping, times: int = 2) -> None:
        self.d = dict(d)
        self.times = times

    def __getitem__(self, k: Any) -> Any:
        return self.d[k]

    def __len__(self) -> int:
        return len(self.d)

    def __iter__(self) -> Iterator:
        return iter(self.d)

    def items(self) -> Iterator:  # type: ignore[override]
        for k, v in self.d.items():
            for _ in range(self.times):
                yield k, v


# ---------------------------------------------------------------- tampering with what was shown


def _bent(v: Any) -> Any:
    """A value of the same kind pushed to where it would pay (fewer epochs, more capacity…)."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, np.integer)):
        return 1
    if isinstance(v, (float, np.floating)):
        return float(v) * 1e3 if v else 1e3
    if isinstance(v, tuple) and all(isinstance(x, (int, float)) for x in v):
        return tuple(type(x)(x * 1000) if not isinstance(x, bool) else x for x in v)
    if isinstance(v, np.ndarray) and v.dtype.kind in "fiu":
        # frozen like the engine's, so that the next slot's check still tells ours apart
        b = np.asarray(v, dtype=float) * 1e3 + 1.0
        return np.frombuffer(b.tobytes()).reshape(b.shape)
    return v


def vandalize(obj: Any, seen: set[int] | None = None) -> None:
    """Bend every field of every model object reachable from ``obj`` with
    ``object.__setattr__``, rewrite the dicts behind its mapping proxies
    (``gc.get_referents``) and check that no array can be made writable."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        try:
            obj.setflags(write=True)
        except ValueError:
            return
        raise AssertionError("an array in a view could be made writable")
    if isinstance(obj, MappingProxyType):
        for inner in gc.get_referents(obj):
            if isinstance(inner, dict):
                for k, v in list(inner.items()):
                    vandalize(v, seen)
                    inner[k] = _bent(v)
        return
    if isinstance(obj, Mapping):
        for v in list(obj.values()):
            vandalize(v, seen)
        return
    if isinstance(obj, (tuple, list, frozenset, set)):
        for v in obj:
            vandalize(v, seen)
        return
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for k, v in list(vars(obj).items()):
            vandalize(v, seen)
            object.__setattr__(obj, k, _bent(v))
