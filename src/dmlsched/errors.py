"""One exception per failure kind.

The CLI maps :class:`InvalidInput` to exit status 2 with ``str(error)`` as the
single line on stderr, so every message names the field and the value.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DmlschedError",
    "Interrupted",
    "InvalidDecision",
    "InvalidInput",
    "InvalidReport",
    "SolverFailed",
    "short",
]

# characters of a value shown in a message: enough to recognise it.  Text (a
# path, a field) may be longer than a list or a record, whose head suffices.
_SHORT_TEXT = 240
_SHORT = 60


def short(value: Any) -> str:
    """``repr(value)`` cut to a readable length (a whole row or job is not a value)."""
    text = repr(value)
    limit = _SHORT_TEXT if isinstance(value, str) else _SHORT
    return text if len(text) <= limit else text[: limit - 1] + "…"


class DmlschedError(Exception):
    """Base class of every error this package raises on purpose."""


class InvalidInput(DmlschedError, ValueError):
    """Bad user input: config, trace row, job spec or CLI flag."""

    def __init__(self, field: str, value: Any, allowed: str = "", where: str = "") -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        self.where = where
        msg = f"{where + ': ' if where else ''}invalid {field}={short(value)}"
        if allowed:
            msg += f" (expected {allowed})"
        super().__init__(msg)


class Interrupted(DmlschedError):
    """The user stopped a run (Ctrl-C); the message says what was kept.

    The CLI exits with status 130 and prints the message as its one line.
    """


class InvalidDecision(DmlschedError):
    """A scheduler returned a decision the engine refuses.

    Names the scheduler, job, slot, machine and resource so that the culprit is
    found without a debugger.
    """

    def __init__(
        self,
        scheduler: str,
        job: int | None,
        slot: int,
        detail: str,
        machine: int | None = None,
        resource: str | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.job = job
        self.slot = slot
        self.machine = machine
        self.resource = resource
        self.detail = detail
        parts = [f"scheduler={scheduler}", f"slot={slot}"]
        if job is not None:
            parts.append(f"job={job}")
        if machine is not None:
            parts.append(f"machine={machine}")
        if resource is not None:
            parts.append(f"resource={resource}")
        super().__init__(f"invalid decision ({', '.join(parts)}): {detail}")


class InvalidReport(DmlschedError):
    """Measured work a testbed or an agent reported that the engine refuses.

    Names who reported (``source``: a testbed, a machine's agent), the job and
    the slot, and why (more than the standing placement can physically do, no
    placement, a stale incarnation, ...).
    """

    def __init__(self, source: str, job: int | None, slot: int, detail: str) -> None:
        self.source = source
        self.job = job
        self.slot = slot
        self.detail = detail
        where = [f"source={source}", f"slot={slot}"] + ([f"job={job}"] if job is not None else [])
        super().__init__(f"invalid report ({', '.join(where)}): {detail}")


class SolverFailed(DmlschedError):
    """An LP/MILP/convex solve ended with a status we cannot use."""

    def __init__(self, status: str, model: str) -> None:
        self.status = status
        self.model = model
        super().__init__(f"solver failed on {model}: status {status}")
