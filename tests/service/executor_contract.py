"""The executor contract (``dmlsched.service.executors.base``), as one scenario every executor runs.

Real training (the testbed's digits MLP, F = 64): a job starts on two
machines, is moved and resized onto a third (restarting from its
checkpoint), preempted (its checkpoint then holds all its work), resumed and
run to completion; its processes must run exactly where each decision says
and its work must never go backwards across runs.  The job's target is far
off until the last run, whose target sits a few steps past its checkpoint
(an executor runs what it is given), so the scenario's length does not
depend on how fast this machine trains.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from dmlsched.service.executors.base import Assignment, Executor, JobReport, Slice
from dmlsched.testbed.runtime import TrainSpec

__all__ = ["run_contract"]

STEP = 64  # samples per sync step (F)


def _wait(
    ex: Executor, job: int, ok: Callable[[JobReport], bool], what: str, timeout: float = 120.0
) -> JobReport:
    deadline = time.monotonic() + timeout
    rep = None
    while time.monotonic() < deadline:
        rep = ex.poll().get(job)
        if rep is not None and ok(rep):
            return rep
        time.sleep(0.2)
    raise AssertionError(f"job {job}: {what} not within {timeout:g} s (last report {rep})")


def run_contract(ex: Executor, machines: list[str], last_steps: int = 5) -> list[JobReport]:
    """The scenario of the module docstring on ``machines[:3]``; returns the reports seen."""
    m0, m1, m2 = machines[:3]
    train = TrainSpec(job=0, target=float(STEP * 100_000), batch=STEP, seed=7)
    seen: list[JobReport] = []
    names = {n.name for n in ex.nodes() if n.up}
    assert {m0, m1, m2} <= names, names

    a1 = Assignment.from_counts(train, 1, [(m0, 1, 1), (m1, 1, 0)])
    ex.apply({0: a1})
    r = _wait(ex, 0, lambda r: r.state == "running" and r.work >= 3 * STEP, "started and working")
    seen.append(r)
    assert r.incarnation == 1 and r.running == a1.placement, r.running

    # a move and a resize: stop (PSs checkpoint), start on the new placement from it
    a2 = Assignment.from_counts(train, 2, [(m2, 2, 1)])
    ex.apply({0: a2})
    r = _wait(ex, 0, lambda r: r.incarnation == 2 and r.state == "running", "moved")
    seen.append(r)
    assert r.saved >= seen[0].work and r.saved % STEP == 0, (r.saved, seen[0].work)
    r = _wait(ex, 0, lambda r: r.running == a2.placement, "placed exactly")
    assert r.running == (Slice(m2, 2, 1),)

    # preempted: nothing runs, the checkpoint holds every step it did
    r = _wait(ex, 0, lambda r: r.work > seen[-1].saved, "worked after the move")
    ex.apply({})
    r = _wait(ex, 0, lambda r: r.state == "stopped", "preempted")
    seen.append(r)
    assert r.running == () and r.saved == r.work >= seen[1].saved, r

    # resumed (a new incarnation, same place) and run to the end
    last = replace(train, target=r.saved + STEP * last_steps)
    a3 = Assignment.from_counts(last, 3, [(m2, 2, 1)])
    ex.apply({0: a3})
    r = _wait(ex, 0, lambda r: r.state == "done", "done", timeout=240.0)
    seen.append(r)
    assert r.work == last.target and r.incarnation == 3, r
    runs = r.run
    # a finished job is never started again, whatever it is told
    ex.apply({0: a3})
    time.sleep(1.0)
    r = ex.poll()[0]
    assert (r.state, r.run) == ("done", runs)
    works = [x.work for x in seen]
    assert works == sorted(works), works
    return seen
