"""What every setting's engine returns, and the table of engines by setting.

Each setting module in :mod:`dmlsched.sim` provides
``simulate(workload, scheduler, rng) -> RunResult`` and registers it here with
:func:`register_engine`; experiments and the CLI call :func:`simulate` and
never branch on the setting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.sim.events import Event

__all__ = ["RunResult", "register_engine", "simulate"]


@dataclass(frozen=True)
class RunResult:
    """Metrics by name (floats) plus the event log and per-slot series."""

    metrics: dict[str, float]
    events: tuple[Event, ...] = ()
    series: dict[str, np.ndarray] = field(default_factory=dict)


Engine = Callable[[Any, Any, np.random.Generator], RunResult]
_ENGINES: dict[str, Engine] = {}


def register_engine(setting: str) -> Callable[[Engine], Engine]:
    def deco(fn: Engine) -> Engine:
        _ENGINES[setting] = fn
        return fn

    return deco


def _load_all() -> None:
    import dmlsched.sim.cluster  # noqa: F401

    for mod in ("interval", "edge_cloud", "geo"):
        try:
            __import__(f"dmlsched.sim.{mod}")
        except ModuleNotFoundError as e:  # a setting not built yet
            if e.name != f"dmlsched.sim.{mod}":
                raise


def simulate(setting: str, workload: Any, scheduler: Any, rng: np.random.Generator) -> RunResult:
    _load_all()
    if setting not in _ENGINES:
        raise InvalidInput("setting", setting, " | ".join(sorted(_ENGINES)))
    return _ENGINES[setting](workload, scheduler, rng)
