"""The ``interval`` referee: SMD's constraints (Sec. III) on one interval's decision.

On allocations already read by :func:`dmlsched.sim.interval.read_decision`
— job id → (w[i], p[i]), exact positive integers (Eq. (8): x_i ∈ {0, 1},
w[i], p[i] ∈ ℤ⁺ for an admitted job), ids of the interval's jobs —
:func:`referee` checks, in this order:

* Eq. (3), per admitted job in the decision's order and per resource r:
  O^r[i] w[i] + G^r[i] p[i] ≤ v^r[i], the user's limit
  (:func:`check_allocation`);
* Eq. (2), per resource r: Σ_{admitted i} v^r[i] ≤ C^r, the cluster's
  capacity (:func:`check_capacity`).

Sums are compared with a relative tolerance of 1e-9 (plus 1e-9).  A
violation raises :class:`~dmlsched.errors.InvalidDecision` (slot 0) naming
scheduler, job (none for Eq. (2)) and resource; otherwise the interval's
:class:`IntervalPlan`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dmlsched.model.interval import IntervalJob
from dmlsched.sim.boundary import refuse

__all__ = ["TOL", "IntervalPlan", "check_allocation", "check_capacity", "referee"]

TOL = 1e-9


@dataclass(frozen=True, eq=False)
class IntervalPlan:
    """The accepted allocations (job id → (w, p), in the decision's order) with the
    resources they use, Σ O^r w + G^r p, and the limits they hold, Σ v^r."""

    allocations: Mapping[int, tuple[int, int]]
    used: np.ndarray
    limits: np.ndarray
    slot: int = 0

    @property
    def until(self) -> int:
        """One decision for the whole interval."""
        return 1


def referee(
    sched: str,
    jobs: Mapping[int, IntervalJob],
    allocations: Mapping[int, tuple[int, int]],
    capacity: np.ndarray,
    resources: tuple[str, ...],
) -> IntervalPlan:
    """The interval's :class:`IntervalPlan`, or :class:`InvalidDecision` at the first
    violation (module docstring)."""
    limits = np.zeros(len(resources))
    used = np.zeros(len(resources))
    for j, (w, p) in allocations.items():
        use, lim = check_allocation(sched, jobs[j], w, p, resources)
        limits += lim
        used += use
    check_capacity(sched, limits, capacity, resources)
    return IntervalPlan(dict(allocations), used, limits)


def check_allocation(
    sched: str, job: IntervalJob, w: int, p: int, resources: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (3) for one job; returns (usage O^r w + G^r p, limit v^r)."""
    use = job.usage(w, p)
    lim = np.asarray(job.limit, dtype=float)
    over = use > lim * (1 + TOL) + TOL
    if over.any():  # Eq. (3) O^r[i] w[i] + G^r[i] p[i] ≤ v^r[i]
        r = int(np.argmax(over))
        refuse(
            sched,
            job.id,
            0,
            f"uses {use[r]:g} > user limit {lim[r]:g} (Eq. 3)",
            resource=resources[r],
        )
    return use, lim


def check_capacity(
    sched: str, limits: np.ndarray, capacity: np.ndarray, resources: tuple[str, ...]
) -> None:
    """Eq. (2) Σ_{admitted i} v^r[i] ≤ C^r for every resource r."""
    over = limits > capacity * (1 + TOL) + TOL
    if over.any():
        r = int(np.argmax(over))
        refuse(
            sched,
            None,
            0,
            f"admitted limits sum to {limits[r]:g} > capacity {capacity[r]:g} (Eq. 2)",
            resource=resources[r],
        )
