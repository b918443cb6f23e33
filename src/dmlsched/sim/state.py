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
    accepted = state.accept(decision) # the referee: InvalidDecision, or the slot's decision
    state.credit(until=accepted.until)  # the speed model over the slots the decision holds
    # or: state.credit(work, elapsed=1.0)  # measured work, checked (InvalidReport)
    ...
    state.result()                    # the run's RunResult

Contract (every setting):

* ``reveal()`` reveals the jobs arriving at ``slot`` and returns the
  scheduler's read-only view, built from copies the engine never computes
  from: whatever a scheduler does to what it was shown changes nothing.
* ``accept(decision)`` reads the decision once (exact types, exact integers)
  and checks it against the paper's constraints; on a violation it raises
  :class:`~dmlsched.errors.InvalidDecision` and leaves the state as it was
  before the call.  Otherwise the decision stands for the slot; returns a
  named record of what it took (admissions, ``until``: the first slot to
  ask again, slot + 1 unless the decision holds).
* ``credit(work=None, *, until=None, elapsed=1.0)`` ends the slot —
  event-driven, with ``until``, the slots the decision holds (stopping at
  the next arrival or the first completion): progress from the engine's own
  speed model, or from ``work`` measured by a testbed or an agent in
  ``elapsed`` slots — a mapping job id → work in the engine's units,
  refused (:class:`~dmlsched.errors.InvalidReport`) where it exceeds what
  the standing placement could physically do (``check_work``, the same
  check on its own for a report that arrives mid-slot).  Returns what
  happened (slots credited, jobs completed) as a named record.
* ``result()`` the run's :class:`~dmlsched.sim.run.RunResult`.

A driver calls them in this order (reveal · accept · credit, each once a
slot); anything else is a :class:`RuntimeError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol, TypeVar

from dmlsched.sim.run import RunResult

__all__ = ["Credited", "EngineState", "one_slot"]

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

    def credit(
        self, work: Mapping[int, float] | None = None, *, until: int | None = None
    ) -> Any: ...

    def result(self) -> RunResult: ...


class Credited(NamedTuple):
    """What ``credit`` credited where a decision holds one slot (edge-cloud, geo, interval;
    the cluster's :class:`~dmlsched.sim.cluster.Credited` has the same fields)."""

    slots: int  # slots credited: always 1
    completed: tuple[int, ...]  # jobs that completed with the slot
    per_slot: Mapping[int, float]  # by job, in the setting's unit (its state's ``credit``)


def one_slot(decision: str, slot: int, until: int | None) -> None:
    """``credit``'s ``until`` where ``decision`` (e.g. "a geo decision") holds one slot:
    ``None`` or the next slot, else a :class:`ValueError`."""
    if until is not None and until != slot + 1:
        raise ValueError(f"until={until!r}: {decision} holds one slot ({slot + 1})")
