"""The engine state every driver drives: ``reveal`` · ``accept`` · ``credit`` · ``result``.

Each setting's engine (``sim/<setting>.py``) is one state object of this
shape.  Three drivers run it and add nothing of their own — no check, no
view, no tolerance:

* ``simulate`` (event-driven, :mod:`dmlsched.sim.engine`);
* the testbed's executor loop (measured work fed back through ``credit``);
* the service's slot loop (decisions committed only once ``accept`` took them).

One slot of any driver::

    view = state.reveal()             # arrivals of state.slot; a view built from private copies
    decision = scheduler.decide(view)
    state.accept(decision)            # the referee: InvalidDecision, or the slot's decision
    state.credit(work)                # the speed model (work=None) or measured work, checked
    ...
    state.result()                    # the run's RunResult

Contract (every setting):

* ``reveal()`` reveals the jobs arriving at ``slot`` and returns the
  scheduler's read-only view, built from copies the engine never computes
  from: whatever a scheduler does to what it was shown changes nothing.
* ``accept(decision)`` reads the decision once (exact types, exact integers)
  and checks it against the paper's constraints; on a violation it raises
  :class:`~dmlsched.errors.InvalidDecision` and leaves the state as it was
  before the call.  Otherwise the decision stands for the slot.
* ``credit(work=None, ...)`` ends the slot (or, event-driven, the slots the
  decision holds): progress from the engine's own speed model, or from
  ``work`` measured by a testbed or an agent — a mapping job id → work in the
  engine's units, refused (:class:`~dmlsched.errors.InvalidReport`) where it
  exceeds what the standing placement could physically do.  Returns what
  happened (slots credited, jobs completed) as a named record.
* ``result()`` the run's :class:`~dmlsched.sim.engine.RunResult`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

from dmlsched.sim.engine import RunResult

__all__ = ["EngineState"]

ViewT_co = TypeVar("ViewT_co", covariant=True)


class EngineState(Protocol[ViewT_co]):
    """One run of one setting's engine (module docstring)."""

    @property
    def slot(self) -> int:
        """The slot the next ``reveal`` opens."""
        ...

    @property
    def over(self) -> bool:
        """Whether nothing is left that a decision could change (or the horizon is reached)."""
        ...

    def reveal(self) -> ViewT_co: ...

    def accept(self, decision: object) -> Any: ...

    def credit(self, work: Mapping[int, float] | None = None) -> Any: ...

    def result(self) -> RunResult: ...
