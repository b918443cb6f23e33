"""Work: the speed model's credit over held slots, and the bound on measured work.

**The speed model** (:func:`advance`): a placement's rate is the work per
slot of Eq. (1) with Fact 1 (:func:`dmlsched.model.speed.pdors.job_rate`, or
the workload's own speed model); a decision held for several slots credits
them in bulk, stopping after the first slot in which a job completes.

**Measured work** (a testbed's processes, a service agent) is not trusted:
:func:`work_bound` is what a standing placement can physically do in the
elapsed slots — its model rate × ``slack`` × slots.  The slack
(:data:`MEASURED_SLACK` = 4 by default) is there because measured hardware
may be faster than Eq. (1)'s model: Eq. (1) charges every worker 2g/b of
transfer per step, while one NIC overlaps a step's pushes and pulls across
W workers (the testbed measures W workers' transfers at (W + 1) to 2W
one-worker times, ``docs/testbed.md``: up to 2× faster than the model), and
a job's nominal τ is an operator's estimate.  Four times the model's rate
leaves room for both and for a slot measured a little long; a report beyond
it — or negative, not a number, or for a job without a placement — is
refused with :class:`~dmlsched.errors.InvalidReport`.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["MEASURED_SLACK", "advance", "work_bound"]

#: Measured work may exceed the speed model's rate × elapsed slots by this factor.
MEASURED_SLACK = 4.0

# Columns of held slots credited at once (bounds the memory of a long hold).
_BLOCK = 1 << 20


def advance(
    done: np.ndarray, thr: np.ndarray, run: np.ndarray, rates: np.ndarray, slots: int
) -> tuple[int, np.ndarray, np.ndarray]:
    """Credit the running jobs (indices ``run`` into ``done``, ``rates`` per slot) for
    up to ``slots`` slots, stopping after the first slot in which one completes.

    Returns (slots credited k, which of ``run`` completed in slot k, their work
    before slot k).  Work is accumulated slot by slot — ``np.cumsum`` along a
    row is a sequential sum, the same floats as adding the rate once per slot
    — so bulk and step-by-step runs agree bit for bit.
    """
    if not run.size:
        return slots, np.zeros(0, dtype=bool), np.zeros(0)
    cur, lim = done[run], thr[run]
    held = 0
    while True:
        b = min(slots - held, max(1, _BLOCK // run.size))
        path = np.empty((run.size, b + 1))
        path[:, 0] = cur
        path[:, 1:] = rates[:, None]
        path = np.cumsum(path, axis=1)
        hits = path[:, 1:] >= lim[:, None]
        col = np.flatnonzero(hits.any(axis=0))
        if col.size:
            c = int(col[0]) + 1
            done[run] = path[:, c]
            return held + c, hits[:, c - 1], path[:, c - 1]
        held += b
        cur = path[:, b]
        if held == slots:
            done[run] = cur
            return slots, np.zeros(run.size, dtype=bool), cur


def work_bound(rate: float, elapsed: float, slack: float = MEASURED_SLACK) -> float:
    """The most work a placement of model rate ``rate`` can do in ``elapsed`` slots."""
    if not (math.isfinite(elapsed) and elapsed > 0):
        raise ValueError(f"elapsed={elapsed!r} slots is not a positive number")
    return rate * slack * elapsed
