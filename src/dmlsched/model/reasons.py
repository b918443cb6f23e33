"""Why a job is not running: a machine-readable code and one line for people.

A scheduler may explain its decision (the optional ``explain`` of
:class:`~dmlsched.schedulers.protocols.ClusterScheduler`); the engine and the
service explain what they decide themselves (an invalid decision, no machine
up, a cancellation).  ``code`` is one of :data:`CODES`; ``text`` says it with
the numbers, e.g. ``insufficient gpu on every machine: need 8, largest free 7``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CODES", "Reason"]

CODES: dict[str, str] = {
    # a scheduler's
    "insufficient": "not enough free capacity for the job's gang (which resource, need, free)",
    "too-large": "rejected: the gang fits nowhere even on the empty cluster",
    "queued": "waiting behind earlier or higher-priority jobs",
    "preempted": "was running; stopped for jobs the policy ranks higher",
    "fair-share": "the policy's division of the cluster gives it nothing now",
    "price-above-payoff": "rejected: the cheapest schedule costs more than its utility (λ ≤ 0)",
    "no-schedule": "rejected: no feasible integer schedule was found",
    "planned": "admitted; its committed schedule does not run it in this slot",
    "ran-short": "admitted; its schedule ended with work left, and no schedule for the rest pays",
    # the engine's and the service's
    "unexplained": "the scheduler placed it nowhere and gave no reason",
    "rejected": "rejected by a scheduler that gave no reason",
    "invalid-decision": "the scheduler's decision was refused: the slot runs nothing",
    "no-machine-up": "every machine is down: nothing is decided",
    "cancelled": "cancelled by a user or an admin",
    "max-runtime": "cancelled by the service: it ran its maximum runtime",
}


@dataclass(frozen=True)
class Reason:
    """``code`` (a key of :data:`CODES`) and ``text`` (one line with the numbers)."""

    code: str
    text: str

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"reason code must be one of {', '.join(CODES)}, not {self.code!r}")
