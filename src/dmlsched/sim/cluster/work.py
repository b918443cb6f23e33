"""Work: the speed model's credit over held slots.

**The speed model** (:func:`advance`): a placement's rate is the work per
slot of Eq. (1) with Fact 1 (:func:`dmlsched.model.speed.pdors.job_rate`, or
the workload's own speed model); a decision held for several slots credits
them in bulk, stopping after the first slot in which a job completes.

**Jobs sharing links** (:func:`shared_slot`): a speed model that rates jobs
running together (``slot_rates``: the flow-level model of a calibrated
testbed profile) gives each job its share of the links for the set running.
When one of them completes within a slot its flows end, and the others get
the links for the rest of the slot at the rates of the smaller set — the flow
set changed, so the rates are recomputed (as a TCP link's or a token bucket's
share is).  The papers' speed models rate each job alone; there nothing
changes within a slot.

**New incarnations** (:func:`restart_shares`): a speed model measured on real
processes may charge a job's first incarnation (``start_slots``) and every
later one — resumed, moved, resized — (``restart_slots``) a share of its
first slot; the papers' models charge nothing.

Measured work (a testbed's processes, a service agent) is bounded by
:func:`dmlsched.sim.drive.within_bound`, as in every setting.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Mapping, Sequence
from typing import NamedTuple

import numpy as np

__all__ = ["SharedSlot", "advance", "restart_shares", "shared_slot"]

# Columns of held slots credited at once (bounds the memory of a long hold).
_BLOCK = 1 << 20
# Slots summed past the first completion foreseen by division (its rounding is far smaller).
_MARGIN = 2
# Up to this many running jobs, the first completion is foreseen in Python floats.
_FEW = 32


def advance(
    done: np.ndarray, thr: np.ndarray, run: np.ndarray, rates: np.ndarray, slots: int
) -> tuple[int, np.ndarray, np.ndarray]:
    """Credit the running jobs (indices ``run`` into ``done``, ``rates`` per slot) for
    up to ``slots`` slots, stopping after the first slot in which one completes.

    Returns (slots credited k, which of ``run`` completed in slot k, their work
    before slot k).  Work is accumulated slot by slot — ``np.cumsum`` along a
    row is a sequential sum, the same floats as adding the rate once per slot
    — so bulk and step-by-step runs agree bit for bit, in blocks of any length.
    A block reaches just past the first completion that division foresees
    (:func:`_reach`): the slots after it would be summed for nothing.
    """
    if not run.size:
        return slots, np.zeros(0, dtype=bool), np.zeros(0)
    cur, lim = done[run], thr[run]
    held = 0
    while True:
        b = min(slots - held, max(1, _BLOCK // run.size), _reach(cur, lim, rates))
        path = np.empty((run.size, b + 1))
        path[:, 0] = cur
        path[:, 1:] = rates[:, None]
        np.cumsum(path, axis=1, out=path)
        hits = path[:, 1:] >= lim[:, None]
        any_hit = hits.any(axis=0)
        c = int(any_hit.argmax())
        if any_hit[c]:
            c += 1
            done[run] = path[:, c]
            return held + c, hits[:, c - 1], path[:, c - 1]
        held += b
        cur = path[:, b]
        if held == slots:
            done[run] = cur
            return slots, np.zeros(run.size, dtype=bool), cur


def _reach(cur: np.ndarray, lim: np.ndarray, rates: np.ndarray) -> int:
    """Slots that surely include the first in which a job's work reaches ``lim``: the
    fewest by division, plus a margin for the sums' rounding (any length is exact;
    one too short only costs another block).  Jobs that do no work (a rate ≤ 0, or nan)
    never complete: they bound nothing."""
    if cur.size > _FEW:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            first = float(np.min((lim - cur) / rates, where=rates > 0, initial=math.inf))
    else:  # in Python floats (NumPy's calls cost more for a few jobs)
        left, per = (lim - cur).tolist(), rates.tolist()
        first = min((x / r for x, r in zip(left, per, strict=True) if r > 0), default=math.inf)
    if not first < _BLOCK:  # none completes soon (or a nan): no bound of its own
        return _BLOCK
    return max(1, math.ceil(first) + _MARGIN)


class SharedSlot(NamedTuple):
    """One slot of jobs sharing links (:func:`shared_slot`), by position in its inputs."""

    work: np.ndarray  # work credited in the slot
    completed: np.ndarray  # bool: completed within it
    at: np.ndarray  # share of the slot when each completed (NaN: did not)


def shared_slot(
    before: np.ndarray,
    thr: np.ndarray,
    total: np.ndarray,
    rates: np.ndarray,
    rates_of: Callable[[np.ndarray], np.ndarray],
) -> SharedSlot:
    """A slot of jobs that start it with work ``before`` at ``rates`` (per slot, the set's
    joint rates): a job completes when its work reaches ``thr``, at the share of the slot
    where its work reaches ``total`` (as :func:`advance`'s callers count it); after each
    completion ``rates_of(alive)`` — positions of the jobs still running, ascending —
    rates the others for the rest of the slot (module docstring)."""
    done = before.astype(float, copy=True)
    at = np.full(before.size, np.nan)
    alive = np.arange(before.size)
    r = np.asarray(rates, dtype=float).copy()
    used = 0.0  # share of the slot gone
    while alive.size:
        ra = r[alive]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            need = np.where(ra > 0, (thr[alive] - done[alive]) / ra, np.inf)
        step = float(need.min())
        if not used + step <= 1.0:  # no completion before the slot's end (by division)
            start = done[alive]
            done[alive] = start + (1.0 - used) * ra
            # by addition, as advance() decides: a job whose work reaches thr completes
            hit = done[alive] >= thr[alive]
            ends = alive[hit]
            at[ends] = np.minimum(1.0, used + np.maximum(0.0, total[ends] - start[hit]) / r[ends])
            break
        ends = alive[need <= step]
        left = np.maximum(0.0, total[ends] - done[ends])
        at[ends] = np.minimum(1.0, used + left / r[ends])
        done[alive] += step * ra
        used += step
        alive = alive[need > step]
        if alive.size:
            r[alive] = rates_of(alive)
    return SharedSlot(done - before, ~np.isnan(at), at)


def restart_shares(
    jobs: Sequence[int],
    placements: Sequence[object],
    last: Mapping[int, object],
    ran: Container[int],
    start: float,
    restart: float,
) -> list[float]:
    """The share of this slot each job's incarnation loses: ``start`` for a job that never
    ran (not in ``ran``), ``restart`` for one not running in the last slot under the same
    placement (``last``: job → its placement there), else 0."""
    return [
        start if j not in ran else restart if last.get(j) != p else 0.0
        for j, p in zip(jobs, placements, strict=True)
    ]
