"""The simulator's driver of an engine state, and what every ``credit`` reads the same way.

:func:`drive` is ``simulate`` for the settings whose state follows
:mod:`dmlsched.sim.state` slot by slot (``edge-cloud``, ``geo``,
``interval``): reset the scheduler with what the state shows of the static
system, then reveal, decide, accept and credit (with the engine's own speed
model) until the state is over.  It adds nothing of its own — no check, no
view, no tolerance; the testbed drives the same states with measured work.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np

from dmlsched.errors import InvalidReport
from dmlsched.sim.boundary import INT_TYPES, shown
from dmlsched.sim.engine import Progress, RunResult

__all__ = ["DrivenState", "drive", "measured_number"]

_REAL_TYPES = INT_TYPES | {float, np.float16, np.float32, np.float64}


class DrivenState(Protocol):
    """An engine state with what :func:`drive` needs beyond the protocol."""

    horizon: int

    @property
    def slot(self) -> int: ...

    @property
    def over(self) -> bool: ...

    @property
    def counts(self) -> tuple[int, int]: ...

    def reset_args(self) -> tuple: ...

    def reveal(self) -> Any: ...

    def accept(self, decision: object) -> Any: ...

    def credit(self, work: Any = None) -> Any: ...

    def result(self) -> RunResult: ...


def drive(
    state: DrivenState, scheduler: Any, rng: np.random.Generator, progress: Progress | None
) -> RunResult:
    """Run ``scheduler`` on ``state`` to its end with the engine's speed model;
    ``progress`` hears (slot reached, horizon, *state.counts) after every slot."""
    scheduler.reset(*state.reset_args(), rng)
    while not state.over:
        state.accept(scheduler.decide(state.reveal()))
        state.credit()
        if progress is not None:
            progress(state.slot, state.horizon, *state.counts)
    return state.result()


def measured_number(source: str, job: int, slot: int, what: str, value: object) -> float:
    """A measured amount as ``float``: an exact real number type (never ``bool``), finite,
    ≥ 0; anything else is an :class:`InvalidReport` naming ``what`` and the value."""
    if type(value) not in _REAL_TYPES or not math.isfinite(value) or value < 0:  # type: ignore[arg-type, operator]
        raise InvalidReport(source, job, slot, f"{what}={shown(value)} is not a finite number >= 0")
    return float(value)  # type: ignore[arg-type]
