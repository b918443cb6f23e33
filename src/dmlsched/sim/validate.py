"""Checks of a ``cluster`` decision against the model's constraints.

Each check raises :class:`InvalidDecision` naming scheduler, job, slot and,
where it applies, machine and resource.  Constraint numbers are PD-ORS's
(journal) and, for ``async`` jobs, the thesis's.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from dmlsched.errors import InvalidDecision
from dmlsched.model.cluster import Cluster, ClusterDecision, ClusterJob, Placement
from dmlsched.model.speed.pdors import ps_bandwidth_load

__all__ = ["check_admissions", "check_capacity", "check_placement"]

_EPS = 1e-9


def check_admissions(
    sched: str,
    decision: ClusterDecision,
    slot: int,
    pending: Collection[int],
    active: Collection[int],
    rejected: Collection[int],
    finished: Collection[int],
) -> tuple[list[int], list[int], list[int]]:
    """Admission rules of a ``cluster`` decision, applied in the engine's order.

    Rejects first (each must be pending), then admits (pending after the
    rejects), then allocations (a pending job is admitted by its allocation;
    any other must be active).  Returns (rejected, admitted, admitted by
    allocation); raises :class:`InvalidDecision` on the first violation.
    """
    still = dict.fromkeys(pending)
    rej: list[int] = []
    adm: list[int] = []
    by_alloc: list[int] = []
    for j in decision.reject:
        if j not in still:
            raise InvalidDecision(sched, j, slot, "rejected a job that is not pending")
        del still[j]
        rej.append(j)
    for j in decision.admit:
        if j not in still:
            raise InvalidDecision(sched, j, slot, "admitted a job that is not pending")
        del still[j]
        adm.append(j)
    now_active = set(active) | set(adm)
    for j in decision.allocations:
        if j in still:
            del still[j]
            by_alloc.append(j)
            now_active.add(j)
        elif j not in now_active:
            why = (
                "rejected"
                if j in rejected or j in rej
                else "finished"
                if j in finished
                else "unknown"
            )
            raise InvalidDecision(sched, j, slot, f"allocation for a {why} job")
    return rej, adm, by_alloc


def check_placement(sched: str, job: ClusterJob, p: Placement, slot: int, n_machines: int) -> None:
    """Integrality, machine ids, Eq. (4)/(3.2), Eq. (2) or (3.4)–(3.5), Eq. (7)."""
    if not (len(p.machines) == len(p.workers) == len(p.ps)):
        raise InvalidDecision(sched, job.id, slot, "machines/workers/ps lengths differ")
    if len(set(p.machines)) != len(p.machines):
        raise InvalidDecision(sched, job.id, slot, f"machine listed twice in {p.machines}")
    for m, w, s in zip(p.machines, p.workers, p.ps, strict=True):
        if not (isinstance(m, int | np.integer) and 0 <= m < n_machines):
            raise InvalidDecision(sched, job.id, slot, f"no machine {m!r}", machine=None)
        for name, v in (("workers", w), ("ps", s)):
            if not isinstance(v, int | np.integer) or v < 0:
                raise InvalidDecision(
                    sched, job.id, slot, f"{name}={v!r} is not a non-negative integer", machine=m
                )
    if slot < job.arrival:  # Eq. (7)
        raise InvalidDecision(sched, job.id, slot, f"allocated before arrival {job.arrival}")
    total_w, total_s = p.total_workers, p.total_ps
    if total_w > job.max_workers:  # Eq. (4) / (3.2)
        raise InvalidDecision(
            sched, job.id, slot, f"{total_w} workers > limit {job.max_workers} (Eq. 4)"
        )
    if total_w == 0 and total_s > 0:
        raise InvalidDecision(sched, job.id, slot, f"{total_s} PSs without workers (Eq. 2)")
    if job.mode == "sync":
        need = job.min_ps(total_w)
        if total_s < need:  # Eq. (2) as ⌈W/γ⌉
            raise InvalidDecision(
                sched, job.id, slot, f"{total_s} PSs < ceil({total_w}/γ={job.gamma:g}) = {need}"
            )
    else:
        if total_w > 0 and total_s < 1:
            raise InvalidDecision(sched, job.id, slot, "workers without a PS")
        if total_s > total_w:  # (3.5)
            raise InvalidDecision(sched, job.id, slot, f"{total_s} PSs > {total_w} workers (3.5)")
        load, cap = ps_bandwidth_load(job, p.machines, p.workers, p.ps)
        if load > cap * (1 + 1e-9):  # (3.4)
            raise InvalidDecision(
                sched,
                job.id,
                slot,
                f"worker traffic {load:g} Gbps > PS bandwidth {total_s}×{job.ps_bandwidth:g} (3.4)",
            )


def check_capacity(
    sched: str, cluster: Cluster, usage: np.ndarray, slot: int, owners: dict[int, list[int]]
) -> None:
    """Eq. (5): Σ_i α^r w_ih + β^r s_ih ≤ C_h^r for every machine and resource."""
    over = usage > cluster.capacity + _EPS * np.maximum(1.0, cluster.capacity)
    if over.any():
        h, r = (int(x) for x in np.argwhere(over)[0])
        jobs = owners.get(h, [])
        raise InvalidDecision(
            sched,
            jobs[-1] if jobs else None,
            slot,
            f"uses {usage[h, r]:g} > capacity {cluster.capacity[h, r]:g} (Eq. 5); "
            f"jobs on machine: {jobs}",
            machine=h,
            resource=cluster.resources[r],
        )
