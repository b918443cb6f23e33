"""Lies a scheduler can tell: mappings that repeat a job, and tampering with
everything it was shown (frozen objects changed with ``object.__setattr__``,
the dicts behind mapping proxies rewritten, arrays made writable)."""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

__all__ = ["Twice", "ViewLeak", "bent", "must_stay_read_only", "vandalize", "vandalized"]


class ViewLeak(AssertionError):
    """Something the engine showed a scheduler could be made writable."""


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

    def items(self) -> Iterator:  # type: ignore[override]  # yields pairs, repeated on purpose
        for k, v in self.d.items():
            for _ in range(self.times):
                yield k, v


def must_stay_read_only(arr: np.ndarray) -> None:
    """Raise :class:`ViewLeak` if ``arr`` (shown to a scheduler) can be made writable."""
    try:
        arr.setflags(write=True)
    except ValueError:
        pass
    else:
        raise ViewLeak("an array in a view could be made writable")
    if np.lib.stride_tricks.as_strided(arr, writeable=True).flags.writeable:
        raise ViewLeak("a writable view of an array in a view could be made")


def bent(v: Any) -> Any:
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


def vandalized(obj: Any, result: Any) -> Any:
    """:func:`vandalize` ``obj``, then return ``result`` (a hook's decision)."""
    vandalize(obj)
    return result


def vandalize(obj: Any, seen: set[int] | None = None) -> None:
    """Bend every field of every model object reachable from ``obj`` with
    ``object.__setattr__``, rewrite the dicts behind its mapping proxies
    (``gc.get_referents``) and check that no array can be made writable
    (:class:`ViewLeak` otherwise)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        must_stay_read_only(obj)
        return
    if isinstance(obj, MappingProxyType):
        for inner in gc.get_referents(obj):
            if isinstance(inner, dict):
                for k, v in list(inner.items()):
                    vandalize(v, seen)
                    inner[k] = bent(v)
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
            object.__setattr__(obj, k, bent(v))
