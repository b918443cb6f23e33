"""What if these jobs were submitted now?  The service's answer, without committing anything.

:func:`simulate` copies the live service state (:class:`~dmlsched.service.core.Core`:
machines, jobs, the epoch's scheduler with its generator) onto a log that
keeps nothing, submits the jobs to the copy and runs the copy's own slot loop
forward — the same code that will run when they are really submitted, so a
deterministic scheduler answers what the service then does if nothing else
changes (no other submission, no machine lost, the speed model's progress).
Nothing of the copy reaches the service, its log or its scheduler.

For each job it reports: the slot it would arrive; whether and when it is
admitted or rejected; the first slot it runs and its placement then; the slot
it completes and the utility it then earns (the engine's u(t̃ − a)); the
service's own reason (:mod:`dmlsched.service.reasons`: the scheduler's, else the
engine's) for what it is doing at the end of the look-ahead — ``reason_code``
and ``reason``.

The look-ahead explains only the jobs asked about (the copy's
``explain_only``): the queue's other jobs' reasons are never read, and
computing them was half the cost of a question with 1,000 jobs queued
(docs/benchmarks.md).  The copy runs at most
``horizon`` slots (a deterministic bound, never wall-clock): a job still
pending or running then is reported so, with ``completion: null``.

Progress in the copy is the engine's speed model even when the service
credits measured work: a prediction cannot wait for real processes.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dmlsched.errors import InvalidInput
from dmlsched.service.core import Core
from dmlsched.service.schemas import JobRequest
from dmlsched.service.store import Record

__all__ = ["DEFAULT_HORIZON", "MAX_JOBS", "Prediction", "copy_core", "run", "simulate"]

DEFAULT_HORIZON = 50  # slots looked ahead
MAX_JOBS = 100  # jobs per question


@dataclass
class Prediction:
    """The service's answer for one job (module docstring)."""

    index: int  # position in the question
    arrival: int
    decision: str  # admitted | rejected | pending
    admitted: bool
    reason: str
    reason_code: str = "queued"
    start: int | None = None
    placement: dict[str, dict[str, int]] | None = None
    completion: int | None = None
    utility: float | None = None
    decided_at: int | None = None  # the slot it was admitted or rejected

    def body(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class _NoLog:
    """A store that keeps nothing: the copy's records go nowhere."""

    url = "what-if (nothing is kept)"

    def append_many(self, batch: Sequence[Record]) -> None:
        del batch

    def records(self, since: int = 0, limit: int | None = None) -> list[Record]:
        return []

    def close(self) -> None:
        pass


def copy_core(core: Core) -> Core:
    """A copy of the live state on a log that keeps nothing (hold the service's lock).

    A deep copy, except for what nothing mutates — each job's engine record and
    placements (frozen dataclasses) and its request — which the copy shares
    (:class:`~dmlsched.service.core.JobState` holds nothing else that is mutable).
    """
    memo: dict[int, Any] = {id(core.store): _NoLog()}
    for js in core.jobs.values():
        # a job's fields are numbers, strings and frozen records, and its request is
        # never changed: a shallow copy of each job is a deep one
        memo[id(js)] = copy.copy(js)
        for shared in (js.job, js.request, js.placement, js.last):
            memo[id(shared)] = shared
    clone = copy.deepcopy(core, memo=memo)
    clone.config = dataclasses.replace(clone.config, progress="model")
    clone.agent_timeout = 0.0  # no machine goes down in a prediction
    clone.group_commit = False
    clone.batch = []
    return clone


def simulate(
    core: Core, requests: Sequence[JobRequest], *, horizon: int = DEFAULT_HORIZON
) -> list[Prediction]:
    """Predictions for ``requests`` submitted now, in their order (module docstring)."""
    return run(copy_core(core), requests, horizon=horizon)


def run(
    clone: Core,
    requests: Sequence[JobRequest],
    *,
    horizon: int = DEFAULT_HORIZON,
    by: str = "whatif",
) -> list[Prediction]:
    """:func:`simulate` on a copy already made (:func:`copy_core`); uses the copy up."""
    if not requests:
        raise InvalidInput("jobs", [], "at least one job")
    if len(requests) > MAX_JOBS:
        raise InvalidInput("jobs", len(requests), f"at most {MAX_JOBS} per question")
    if not 1 <= horizon <= 10_000:
        raise InvalidInput("horizon", horizon, "1..10000 slots")
    ids = []
    for req in requests:
        js, _ = clone.submit(req, None, by=by)
        ids.append(js.id)
    clone.explain_only = frozenset(ids)  # type: ignore[attr-defined]  # read by service.reasons
    arrival = clone.slot
    out = [Prediction(k, arrival, "pending", False, "queued") for k in range(len(ids))]
    for _ in range(horizon):
        clone.tick()
        t = clone.slot - 1  # the slot just decided
        for p, j in zip(out, ids, strict=True):
            js = clone.jobs[j]
            if js.state == "rejected" and p.decision != "rejected":
                p.decision, p.admitted, p.decided_at = "rejected", False, t
            elif js.state in ("admitted", "running", "completed") and not p.admitted:
                p.decision, p.admitted, p.decided_at = "admitted", True, t
            if js.placement is not None and p.start is None:
                p.start = t
                p.placement = js.summary(clone.machines)["placement"]
            if js.state == "completed" and p.completion is None:
                assert js.completed is not None and js.arrival is not None
                p.completion = js.completed
                p.utility = float(js.job.utility(js.completed - js.arrival))
        if all(clone.jobs[j].state in ("completed", "rejected") for j in ids):
            break
        if not any(m.up for m in clone.machines):
            break  # nothing changes before one joins: the engine's reason says so
    for p, j in zip(out, ids, strict=True):
        p.reason_code, p.reason = _reason(clone, j, horizon)
    return out


def _reason(clone: Core, j: int, horizon: int) -> tuple[str, str]:
    """(code, text): the service's reason for a job not running, else what it does."""
    js = clone.jobs[j]
    if js.state == "completed":
        return "completed", f"completes in slot {js.completed}"
    if js.state == "running":
        return "running", f"running at slot {clone.slot - 1}; not complete within {horizon} slots"
    if js.reason is not None:
        return js.reason["code"], js.reason["text"]
    return js.state, f"{js.state} after {horizon} slots"
