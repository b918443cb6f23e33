"""The simulator's driver of an engine state, and how every state reads measured work.

:func:`drive` is ``simulate`` for the settings whose state follows
:mod:`dmlsched.sim.state` slot by slot (``edge-cloud``, ``geo``,
``interval``): reset the scheduler with what the state shows of the static
system, then reveal, decide, accept and credit (with the engine's own speed
model) until the state is over.  It adds nothing of its own — no check, no
view, no tolerance; the testbed drives the same states with measured work.

**Measured work** (a testbed's processes, a service agent) is not trusted:
:func:`measured_items` reads the report (a mapping, exact integer job ids)
and :func:`within_bound` each amount — a finite number ≥ 0 of an exact real
type, at most :data:`MEASURED_SLACK` × the model's rate × the elapsed
slots.  The slack is there because measured hardware may be faster than a
paper's model (Eq. (1) of A_online and of PD-ORS charge every step the full
2q/b of transfer that real workers overlap with computation; a model's
constants are an operator's estimate) and a slot may be measured a little
long; a report beyond it is physically impossible and refused with
:class:`~dmlsched.errors.InvalidReport`, as is anything that is not a
number.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

import numpy as np

from dmlsched.errors import InvalidReport
from dmlsched.sim.boundary import INT_TYPES, read_int, shown
from dmlsched.sim.run import Progress, RunResult

__all__ = [
    "MEASURED_SLACK",
    "DrivenState",
    "drive",
    "measured_amount",
    "measured_items",
    "within_bound",
]

#: Measured work may exceed the speed model's rate × elapsed slots by this factor.
MEASURED_SLACK = 4.0

_REAL_TYPES = INT_TYPES | {float, np.float16, np.float32, np.float64}


class DrivenState(Protocol):
    """An engine state with what :func:`drive` needs beyond the protocol."""

    horizon: int

    @property
    def slot(self) -> int: ...

    @property
    def over(self) -> bool: ...

    @property
    def admitted_count(self) -> int: ...

    @property
    def completed_count(self) -> int: ...

    def reset_args(self) -> tuple: ...

    def reveal(self) -> Any: ...

    def accept(self, decision: object) -> Any: ...

    def credit(self, work: Any = None) -> Any: ...

    def result(self) -> RunResult: ...


def drive(
    state: DrivenState, scheduler: Any, rng: np.random.Generator, progress: Progress | None
) -> RunResult:
    """Run ``scheduler`` on ``state`` to its end with the engine's speed model; ``progress``
    hears (slot reached, horizon, jobs admitted, jobs completed) after every slot."""
    scheduler.reset(*state.reset_args(), rng)
    while not state.over:
        state.accept(scheduler.decide(state.reveal()))
        state.credit()
        if progress is not None:
            progress(state.slot, state.horizon, state.admitted_count, state.completed_count)
    return state.result()


def measured_items(source: str, slot: int, work: object) -> Iterator[tuple[int, object]]:
    """(job id, amount) of a measured report: a mapping with exact integer job ids."""
    if not isinstance(work, Mapping):
        raise InvalidReport(source, None, slot, f"work is a {type(work).__name__}, not a mapping")
    for key, value in work.items():
        j = read_int(key)
        if j is None:
            raise InvalidReport(source, None, slot, f"job id {shown(key)} is not an integer")
        yield j, value


def measured_amount(source: str, job: int, slot: int, what: str, value: object) -> float:
    """``value`` as a float if it is a finite number ≥ 0 of an exact real type (not ``bool``)."""
    if type(value) not in _REAL_TYPES or not math.isfinite(value) or value < 0:  # type: ignore[arg-type, operator]  # exact real type checked first; mypy does not narrow type() in a set
        raise InvalidReport(source, job, slot, f"{what}={shown(value)} is not a finite number >= 0")
    return float(value)  # type: ignore[arg-type]  # exact real type checked above


def within_bound(
    source: str, job: int, slot: int, what: str, value: object, rate: float, elapsed: float
) -> float:
    """:func:`measured_amount` of ``value``, at most :data:`MEASURED_SLACK` × ``rate`` per
    slot × ``elapsed`` slots."""
    if not (math.isfinite(elapsed) and elapsed > 0):
        raise ValueError(f"elapsed={elapsed!r} slots is not a positive number")
    amount = measured_amount(source, job, slot, what, value)
    bound = MEASURED_SLACK * rate * elapsed
    if amount > bound:
        raise InvalidReport(
            source,
            job,
            slot,
            f"{what}={amount:g} > what the placement can do in {elapsed:g} slot(s): "
            f"{MEASURED_SLACK:g} × rate {rate:g} per slot = {bound:g}",
        )
    return amount
