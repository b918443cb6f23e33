"""What a run of any setting's engine returns, and how it reports progress.

Every setting's engine (``sim/<setting>``) returns a :class:`RunResult` and
calls a :data:`Progress` callback after each decision it asks for; the
dispatcher above them all, :func:`dmlsched.sim.engine.simulate`, picks the
engine by setting.  This module sits below the engines and imports none of
them, so that the dependencies point one way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from dmlsched.sim.events import Event

__all__ = ["Progress", "RunResult"]

#: (slot reached, horizon, jobs admitted so far, jobs completed so far)
Progress = Callable[[int, int, int, int], None]


@dataclass(frozen=True)
class RunResult:
    """Metrics by name (floats) plus the event log and per-slot series."""

    metrics: dict[str, float]
    events: tuple[Event, ...] = ()
    series: dict[str, np.ndarray] = field(default_factory=dict)
