"""The ``geo`` referee: mlBroker's constraints (8a)–(8k) on one slot's placements.

For every active job i ∈ I_t, in the order of I_t (by arrival, then id),
on a placement already read by :func:`dmlsched.sim.geo.read_decision` —
y_i^r(t) integers ≥ 0 (8k), one PS site s_i^r(t) (8f), q_i^{rr'}(t) a
finite (R, R) array — :func:`check_placement` checks, in this order:

* (8k) q_i^{rr'}(t) ≥ 0;
* (8b) Σ_{r'} q_i^{rr'}(t) = D_i^r(t): all the slot's data at r is moved
  (to r itself or elsewhere) to be trained;
* (8a) Σ_r q_i^{rr'}(t) ≤ P_i y_i^{r'}(t): the workers at r' train what is
  sent there;
* (8j) with g = y ⊗ s ((8i) holds with equality): Σ_r y_i^r(t) ≥
  ⌈Σ_r D_i^r(t) / P_i⌉ workers connect to the PS.

GB sums are compared with a relative tolerance of 1e-6 of the slot's data
(at least 1 GB).  A violation raises
:class:`~dmlsched.errors.InvalidDecision` naming scheduler, job, slot and
the data center (``machine``) where one is at fault.  :func:`referee` runs
it over I_t and returns the slot's :class:`GeoPlan`; the four costs
(Eqs. (1)–(6)) follow from the plan in
:meth:`dmlsched.sim.geo.GeoState.credit`.  D_i^r(t) here is the data the
engine holds for the job at r: the slot's new data, plus — with measured
work only — what earlier slots left untrained there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from dmlsched.model.geo import GeoJob
from dmlsched.model.speed.mlbroker import workers_needed
from dmlsched.sim.boundary import refuse

__all__ = ["REL_TOL", "GeoPlan", "Placed", "check_placement", "referee"]

#: Relative tolerance on GB sums (× the slot's data of the job, at least 1 GB).
REL_TOL = 1e-6


class Placed(NamedTuple):
    """One job's placement read once: workers y^r, the PS site, moves q^{rr'} (GB)."""

    workers: tuple[int, ...]
    ps: int
    transfers: np.ndarray


@dataclass(frozen=True, eq=False)
class GeoPlan:
    """One slot's accepted placements, row k for job ``ids[k]`` of I_t.

    ``y`` workers (n, R), ``s`` the PS indicator (n, R), ``q`` moves (n, R, R)
    with the negative zeros (8k) lets through clipped to 0; ``data`` the
    D_i^r(t) the decision moved (n, R).
    """

    slot: int
    jobs: tuple[GeoJob, ...]
    y: np.ndarray
    s: np.ndarray
    q: np.ndarray
    data: np.ndarray

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(j.id for j in self.jobs)

    @property
    def until(self) -> int:
        """The first slot to ask again: new data arrives every slot, so the next."""
        return self.slot + 1


def referee(
    sched: str,
    t: int,
    jobs: Sequence[GeoJob],
    data: Sequence[np.ndarray],
    placed: Mapping[int, Placed],
    R: int,
) -> GeoPlan:
    """The slot's :class:`GeoPlan` for the active ``jobs`` (I_t, with their data), or
    :class:`InvalidDecision` at the first violation."""
    n = len(jobs)
    y = np.zeros((n, R))
    s = np.zeros((n, R))
    q = np.zeros((n, R, R))
    for k, job in enumerate(jobs):
        p = placed[job.id]
        check_placement(sched, t, job, data[k], p.workers, p.transfers)
        y[k] = p.workers
        s[k, p.ps] = 1.0  # (8f) one PS site
        q[k] = np.maximum(p.transfers, 0.0)
    return GeoPlan(t, tuple(jobs), y, s, q, np.array(data).reshape(n, R))


def check_placement(
    sched: str, t: int, job: GeoJob, D: np.ndarray, w: tuple[int, ...], q: np.ndarray
) -> None:
    """(8k) q ≥ 0, (8b) all data moved, (8a) worker capacity, (8j) enough workers."""
    if np.any(q < -REL_TOL):  # (8k)
        r, r2 = np.argwhere(q < -REL_TOL)[0]
        refuse(sched, job.id, t, f"q[{r},{r2}]={q[r, r2]:.6g} < 0 (8k)", machine=int(r))
    scale = max(1.0, float(D.sum()))
    out = q.sum(axis=1)
    bad = np.abs(out - D) > REL_TOL * scale
    if bad.any():  # (8b) Σ_r' q^{rr'} = D^r
        r = int(np.argmax(bad))
        refuse(
            sched,
            job.id,
            t,
            f"moves out of DC {r} sum to {out[r]:.6g} GB, data is {D[r]:.6g} GB (8b)",
            machine=r,
        )
    y = np.asarray(w, dtype=float)
    inflow = q.sum(axis=0)
    over = inflow - job.capacity * y > REL_TOL * scale
    if over.any():  # (8a) Σ_r q^{rr'} ≤ P_i y^{r'}
        r = int(np.argmax(over))
        refuse(
            sched,
            job.id,
            t,
            f"{inflow[r]:.6g} GB sent to DC {r} but {w[r]} workers "
            f"train {job.capacity * y[r]:.6g} GB (8a)",
            machine=r,
        )
    need = workers_needed(float(D.sum()), job.capacity)
    if sum(w) < need:  # (8j) Σ_r y^r ≥ ⌈Σ_r D^r / P_i⌉
        refuse(
            sched,
            job.id,
            t,
            f"{sum(w)} workers connect to the PS, need {need} = ceil(sum D / P) (8j)",
        )
