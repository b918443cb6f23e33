"""Work: the speed model's credit over held slots.

**The speed model** (:func:`advance`): a placement's rate is the work per
slot of Eq. (1) with Fact 1 (:func:`dmlsched.model.speed.pdors.job_rate`, or
the workload's own speed model); a decision held for several slots credits
them in bulk, stopping after the first slot in which a job completes.

Measured work (a testbed's processes, a service agent) is bounded by
:func:`dmlsched.sim.drive.within_bound`, as in every setting.
"""

from __future__ import annotations

import numpy as np

__all__ = ["advance"]

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
        path = path.cumsum(axis=1)
        hits = path[:, 1:] >= lim[:, None]
        col = hits.any(axis=0).nonzero()[0]
        if col.size:
            c = int(col[0]) + 1
            done[run] = path[:, c]
            return held + c, hits[:, c - 1], path[:, c - 1]
        held += b
        cur = path[:, b]
        if held == slots:
            done[run] = cur
            return slots, np.zeros(run.size, dtype=bool), cur
