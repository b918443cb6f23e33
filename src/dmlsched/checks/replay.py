"""Recorded honest runs and a replaying scheduler that can cheat.

A cheat that should *gain nothing* replays the decisions an honest scheduler
made (so its own decisions cannot drift when it tampers with what it was
shown) and must produce the honest run's exact bytes; a cheat that should be
*refused* must end in :class:`~dmlsched.errors.InvalidDecision`.
:class:`Replay` counts the decisions its hook changed (``lies_``), so that a
lie that never found anything to change is told apart from one the engine
let through.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from dmlsched.model.cluster import ClusterDecision, Placement
from dmlsched.model.edge_cloud import EdgeCloudDecision
from dmlsched.model.geo import GeoDecision, GeoPlacement
from dmlsched.model.interval import IntervalDecision
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.sim.run import RunResult

__all__ = [
    "Hook",
    "Replay",
    "clone",
    "first_difference",
    "record",
    "result_bytes",
    "snapshot",
]


def result_bytes(res: RunResult) -> bytes:
    """Everything a run reports, as bytes (repr keeps exact floats and NaN == NaN)."""
    parts = [repr(sorted(res.metrics.items())), repr(res.events)]
    for k in sorted(res.series):
        a = np.asarray(res.series[k])
        parts.append(f"{k}:{a.dtype.str}:{a.shape}:{a.tobytes().hex()}")
    return "\n".join(parts).encode()


def snapshot(obj: Any, depth: int = 0) -> Any:
    """A deep, comparable copy of a view (dataclasses, mappings, arrays, sequences),
    as tagged tuples that :func:`first_difference` can walk."""
    if depth > 8:
        return ("repr", repr(obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = dataclasses.fields(obj)
        values = (snapshot(getattr(obj, f.name), depth + 1) for f in fields)
        return ("record", type(obj).__name__, tuple(f.name for f in fields), *values)
    if isinstance(obj, Mapping):
        items = sorted((repr(k), snapshot(v, depth + 1)) for k, v in obj.items())
        return ("mapping", tuple(k for k, _ in items), *(v for _, v in items))
    if isinstance(obj, np.ndarray):
        return ("array", obj.shape, obj.dtype.str, obj.tobytes())
    if isinstance(obj, (set, frozenset)):
        return ("set", tuple(sorted(repr(x) for x in obj)))
    if isinstance(obj, (list, tuple)):
        return ("sequence", len(obj), *(snapshot(x, depth + 1) for x in obj))
    return ("repr", repr(obj))


def first_difference(a: Any, b: Any, path: str = "view") -> str | None:
    """Where two :func:`snapshot` s first differ, as a path (``view.jobs[2].epochs``);
    ``None`` when they are equal."""
    if a == b:
        return None
    if a[:3] != b[:3] if a[0] == "record" else a[:2] != b[:2]:
        return path  # another type, other fields, keys or length: here
    if a[0] == "record":
        names = [f".{f}" for f in a[2]]
        parts = zip(names, a[3:], b[3:], strict=True)
    elif a[0] == "mapping":
        parts = zip((f"[{k}]" for k in a[1]), a[2:], b[2:], strict=True)
    elif a[0] == "sequence":
        parts = zip((f"[{i}]" for i in range(a[1])), a[2:], b[2:], strict=True)
    else:
        return path
    for name, x, y in parts:
        if x != y:
            return first_difference(x, y, path + name)
    return path


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


def record(setting: str, name: str, wl: Any, rng: np.random.Generator) -> tuple[RunResult, list]:
    """An honest run of a registered scheduler and clones of every decision it made."""
    sched = make_scheduler(setting, name)
    inner = sched.decide
    decisions: list = []

    def decide(view: Any) -> Any:
        out = inner(view)
        decisions.append(clone(out))
        return out

    sched.decide = decide
    return simulate(setting, wl, sched, rng), decisions


Hook = Callable[..., Any]


class Replay:
    """Replays recorded decisions; ``on_reset``/``on_decide`` hooks may cheat.

    ``on_decide(self, view, decision) -> decision`` sees a fresh clone of the
    recorded decision and returns what the engine gets.  ``lies_`` counts the
    calls where that was another object, or the clone with a field replaced;
    ``exhausted_`` says that the run asked for more decisions than were
    recorded (it went another way than the recorded one).
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
        self.lies_ = 0
        self.exhausted_ = False
        self.state_: dict[str, Any] = {}
        if self.on_reset is not None:
            self.on_reset(self, *static)

    def decide(self, view: Any) -> Any:
        if self.calls_ >= len(self.decisions):
            self.exhausted_ = True
            raise RuntimeError(
                f"the run asked for more than the honest run's {len(self.decisions)} decisions"
            )
        d = clone(self.decisions[self.calls_])
        self.calls_ += 1
        if self.on_decide is None:
            return d
        fields = {f: getattr(d, f) for f in d.__dataclass_fields__}
        out = self.on_decide(self, view, d)
        if out is not d or any(getattr(d, f) is not v for f, v in fields.items()):
            self.lies_ += 1
        return out
