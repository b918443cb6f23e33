"""The ``cluster`` referee: a decision read once and checked against PD-ORS's constraints.

This module is the reference every faster path of the engine is tested
against (:mod:`.fast`, ``tests/sim/test_referee.py``): it reads a decision
one placement at a time and says, in the paper's terms, whether it stands.

**Reading** (the boundary, :mod:`dmlsched.sim.boundary`): an exact
:class:`ClusterDecision`; its allocations an exact ``dict`` (or
``Mapping``) of exact :class:`Placement` s, or one exact
:class:`PlacementTable` whose arrays are copied (:func:`read_table`); every
count an exact integer, a job named once; totals recomputed from the
per-machine counts (:func:`read_placement`).

**Checking**, in this order (the first violation is the refusal):

* admissions (:func:`check_admissions`) — reject and admit only pending
  jobs; allocate only to pending (admitted by it) or active jobs;
* per placement (:func:`check_placement`) — Eq. (7): not before arrival;
  Eq. (4) / thesis (3.2): Σ_h w_ih ≤ F (K for async); Eq. (2): no PS
  without workers and Σ_h s_ih ≥ ⌈Σ_h w_ih / γ⌉ (sync); thesis (3.5):
  1 ≤ Σ_h s_ih ≤ Σ_h w_ih and (3.4): the workers' traffic within the PSs'
  bandwidth (async);
* Eq. (5) (:func:`check_capacity`) — Σ_i α_i^r w_ih + β_i^r s_ih ≤ C_h^r on
  every machine h and resource r, summed over the placements in the
  decision's order (:func:`machine_usage`).

:func:`judge` does all of it and returns a :class:`Ruling`; it changes
nothing.  Every refusal is an :class:`~dmlsched.errors.InvalidDecision`
naming scheduler, slot, job, machine and resource.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import NamedTuple

import numpy as np

from dmlsched.errors import InvalidDecision
from dmlsched.model.cluster import Cluster, ClusterDecision, ClusterJob, Placement, PlacementTable
from dmlsched.model.speed.pdors import ps_bandwidth_load
from dmlsched.sim.boundary import expect_type, read_int, read_ints, read_mapping, refuse, shown

__all__ = [
    "CAPACITY_EPS",
    "MAX_COUNT",
    "Counts",
    "Ruling",
    "Table",
    "capacity_limit",
    "check_admissions",
    "check_capacity",
    "check_placement",
    "judge",
    "machine_usage",
    "read_decision",
    "read_placement",
    "read_table",
    "read_until",
]

#: Relative slack of Eq. (5)'s comparison (float sums of demands; never more than this).
CAPACITY_EPS = 1e-9
#: Larger counts are refused outright: no cluster holds 2^31 workers, and the float
#: arithmetic of the checks stays exact below it.
MAX_COUNT = 2**31


class Counts(NamedTuple):
    """The engine's copy of one placement: machines, w_h, s_h as tuples of ``int``."""

    machines: tuple[int, ...]
    workers: tuple[int, ...]
    ps: tuple[int, ...]


class Ruling(NamedTuple):
    """What the referee found a decision to say (everything read and checked)."""

    slot: int
    until: int  # the first slot to ask again (slot + 1 unless the decision holds)
    rejected: tuple[int, ...]
    admitted: tuple[int, ...]  # by ``admit``
    by_allocation: tuple[int, ...]  # pending jobs admitted by their allocation
    placements: dict[int, Counts]  # every allocation, in the decision's order
    usage: np.ndarray  # Eq. (5)'s left-hand side, H × R


# ---------------------------------------------------------------- reading


def read_decision(
    sched: str, slot: int, decision: object, limit: int
) -> tuple[dict[int, object], tuple[int, ...], tuple[int, ...]]:
    """(allocations by job, admit, reject) read once from an exact ``ClusterDecision``.

    ``limit`` bounds the allocations (the pending and active jobs); the
    placements are returned as given, for :func:`read_placement`.
    """
    d = expect_type(sched, slot, decision, ClusterDecision)
    alloc = read_mapping(sched, slot, "allocations", d.allocations, limit)
    admit = read_ints(sched, slot, None, "admit", d.admit)
    reject = read_ints(sched, slot, None, "reject", d.reject)
    return alloc, admit, reject


def read_until(sched: str, slot: int, decision: ClusterDecision) -> int:
    """The first slot to ask again, read once from a decision's ``until`` (slot + 1 for ``None``).

    Only the event-driven driver (``simulate``) holds a decision that long;
    the testbed and the service run in real time and ask every slot.
    """
    raw = getattr(decision, "until", None)
    if raw is None:
        return slot + 1
    until = read_int(raw)
    if until is None or until <= slot:
        refuse(sched, None, slot, f"until={shown(raw)} is not an integer slot > {slot}")
    return until


def read_placement(sched: str, slot: int, job: int, p: object, n_machines: int) -> Counts:
    """Copy an exact :class:`Placement` into :class:`Counts` (machine ids and integer counts)."""
    expect_type(sched, slot, p, Placement, job)
    machines = read_ints(sched, slot, job, "machines", getattr(p, "machines", None))
    workers, ps = (getattr(p, f, None) for f in ("workers", "ps"))
    counts = [
        read_ints(sched, slot, job, f, v, "a non-negative integer")
        for f, v in (("workers", workers), ("ps", ps))
    ]
    if not (len(machines) == len(counts[0]) == len(counts[1])):
        refuse(sched, job, slot, "machines/workers/ps lengths differ")
    if len(set(machines)) != len(machines):
        refuse(sched, job, slot, f"machine listed twice in {machines}")
    w_all, s_all = counts
    if not machines or (
        min(machines) >= 0
        and max(machines) < n_machines
        and min(w_all) >= 0
        and max(w_all) <= MAX_COUNT
        and min(s_all) >= 0
        and max(s_all) <= MAX_COUNT
    ):
        return Counts(machines, w_all, s_all)  # all in range: the loop below names the first not
    for m, w, s in zip(machines, *counts, strict=True):
        if not 0 <= m < n_machines:
            refuse(sched, job, slot, f"no machine {shown(m)}")
        for name, v in (("workers", w), ("ps", s)):
            if not 0 <= v <= MAX_COUNT:
                refuse(
                    sched,
                    job,
                    slot,
                    f"{name}={shown(v)} is not a non-negative integer <= 2^31",
                    machine=m,
                )
    return Counts(machines, counts[0], counts[1])


class Table(NamedTuple):
    """The engine's copy of a :class:`PlacementTable` (read by :func:`read_table`)."""

    jobs: list[int]
    offsets: np.ndarray
    lens: np.ndarray
    seg: np.ndarray  # each entry's position in ``jobs``
    machines: np.ndarray
    workers: np.ndarray
    ps: np.ndarray

    def entries(self, sel: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(machines, workers, ps) of the placements at positions ``sel`` (ascending),
        back to back."""
        if len(sel) == len(self.jobs):
            return self.machines, self.workers, self.ps
        mask = np.zeros(len(self.jobs), dtype=bool)
        mask[sel] = True
        rows = mask[self.seg]
        return self.machines[rows], self.workers[rows], self.ps[rows]

    def placement(self, k: int) -> Placement:
        """The ``k``-th placement as a :class:`Placement` (read as every placement is)."""
        a, b = int(self.offsets[k]), int(self.offsets[k + 1])
        return Placement(
            tuple(self.machines[a:b].tolist()),
            tuple(self.workers[a:b].tolist()),
            tuple(self.ps[a:b].tolist()),
        )


_TABLE_FIELDS = ("jobs", "offsets", "machines", "workers", "ps")


def read_table(sched: str, slot: int, raw: object, limit: int) -> Table | None:
    """The engine's copy of ``allocations`` when it is an exact :class:`PlacementTable`
    (else None: :func:`read_decision` reads it as a mapping).

    Each array is copied and must be 1-D ``int64`` (whatever was done to the table
    after it was built); offsets rise from 0 to the entries, one more than the jobs;
    more jobs than ``limit`` + 1 or a job named twice is refused as
    :func:`~dmlsched.sim.boundary.read_mapping` refuses them.  The placements
    themselves are read as every placement is (:meth:`Table.placement`).
    """
    if type(raw) is not PlacementTable:
        return None
    got = []
    for f in _TABLE_FIELDS:
        a = getattr(raw, f, None)
        if type(a) is not np.ndarray or a.ndim != 1 or a.dtype != np.int64:
            refuse(sched, None, slot, f"allocations table: {f} is not a 1-D int64 array")
        got.append(np.array(a))  # ours: whatever happens to theirs
    jobs, offsets, m, w, s = got
    n = len(jobs)
    if not (
        len(offsets) == n + 1
        and offsets[0] == 0
        and offsets[-1] == len(m) == len(w) == len(s)
        and (np.diff(offsets) >= 0).all()
    ):
        refuse(sched, None, slot, "allocations table: offsets do not fit its arrays")
    if n > limit + 1:
        refuse(sched, None, slot, f"allocations names more than the {limit} jobs it may")
    keys = jobs.tolist()
    if len(set(keys)) != n:
        seen: set[int] = set()
        for j in keys:
            if j in seen:
                refuse(sched, j, slot, "allocations names the job twice")
            seen.add(j)
    lens = np.diff(offsets)
    return Table(keys, offsets, lens, np.repeat(np.arange(n), lens), m, w, s)


# ---------------------------------------------------------------- checking (PD-ORS constraints)


def check_admissions(
    sched: str,
    slot: int,
    allocations: Iterable[int],
    admit: Iterable[int],
    reject: Iterable[int],
    pending: Collection[int],
    active: Collection[int],
    rejected: Collection[int],
    finished: Collection[int],
) -> tuple[list[int], list[int], list[int]]:
    """Admission rules of a ``cluster`` decision (as read by :func:`read_decision`).

    Rejects first (each must be pending), then admits (pending after the
    rejects), then allocations (a pending job is admitted by its allocation;
    any other must be active).  Returns (rejected, admitted, admitted by
    allocation); raises :class:`InvalidDecision` on the first violation.
    """
    still = dict.fromkeys(pending)
    rej: list[int] = []
    adm: list[int] = []
    by_alloc: list[int] = []
    for j in reject:
        if j not in still:
            refuse(sched, j, slot, "rejected a job that is not pending")
        del still[j]
        rej.append(j)
    for j in admit:
        if j not in still:
            refuse(sched, j, slot, "admitted a job that is not pending")
        del still[j]
        adm.append(j)
    now_active = set(active) | set(adm)
    for j in allocations:
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
            refuse(sched, j, slot, f"allocation for a {why} job")
    return rej, adm, by_alloc


def check_placement(sched: str, job: ClusterJob, c: Counts, slot: int) -> None:
    """Eq. (7), Eq. (4)/(3.2), Eq. (2) or (3.4)–(3.5) on the engine's copy of a placement."""
    if slot < job.arrival:  # Eq. (7)
        refuse(sched, job.id, slot, f"allocated before arrival {job.arrival}")
    total_w, total_s = sum(c.workers), sum(c.ps)
    if total_w > job.max_workers:  # Eq. (4) / (3.2)
        refuse(sched, job.id, slot, f"{total_w} workers > limit {job.max_workers} (Eq. 4)")
    if total_w == 0 and total_s > 0:
        refuse(sched, job.id, slot, f"{total_s} PSs without workers (Eq. 2)")
    if job.mode == "sync":
        need = job.min_ps(total_w)
        if total_s < need:  # Eq. (2) as ⌈W/γ⌉
            refuse(sched, job.id, slot, f"{total_s} PSs < ceil({total_w}/γ={job.gamma:g}) = {need}")
    else:
        if total_w > 0 and total_s < 1:
            refuse(sched, job.id, slot, "workers without a PS")
        if total_s > total_w:  # (3.5)
            refuse(sched, job.id, slot, f"{total_s} PSs > {total_w} workers (3.5)")
        load, cap = ps_bandwidth_load(job, c.machines, c.workers, c.ps)
        if load > cap * (1 + 1e-9):  # (3.4)
            refuse(
                sched,
                job.id,
                slot,
                f"worker traffic {load:g} Gbps > PS bandwidth {total_s}×{job.ps_bandwidth:g} (3.4)",
            )


def capacity_limit(cluster: Cluster) -> np.ndarray:
    """C_h^r with Eq. (5)'s float slack: a usage above this is over capacity."""
    return cluster.capacity + CAPACITY_EPS * np.maximum(1.0, cluster.capacity)


def check_capacity(
    sched: str, cluster: Cluster, usage: np.ndarray, slot: int, owners: Mapping[int, list[int]]
) -> None:
    """Eq. (5): Σ_i α^r w_ih + β^r s_ih ≤ C_h^r for every machine and resource
    (``owners``: the jobs on each machine, in the decision's order, for the message)."""
    over = usage > capacity_limit(cluster)
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


def machine_usage(
    shape: tuple[int, int], jobs: Mapping[int, ClusterJob], placements: Mapping[int, Counts]
) -> np.ndarray:
    """Eq. (5)'s left-hand side: Σ_i α_i^r w_ih + β_i^r s_ih, summed in ``placements``' order."""
    usage = np.zeros(shape)
    for j, c in placements.items():
        if c.machines:
            alpha = np.asarray(jobs[j].worker_demand, dtype=float)
            beta = np.asarray(jobs[j].ps_demand, dtype=float)
            for h, w, s in zip(*c, strict=True):
                usage[h] += w * alpha + s * beta
    return usage


def owners_of(placements: Mapping[int, Counts]) -> dict[int, list[int]]:
    """The jobs on each machine, in ``placements``' order (for Eq. (5)'s message)."""
    owners: dict[int, list[int]] = {}
    for j, c in placements.items():
        for h in c.machines:
            owners.setdefault(h, []).append(j)
    return owners


# ---------------------------------------------------------------- the whole decision


def judge(
    sched: str,
    slot: int,
    decision: object,
    *,
    cluster: Cluster,
    jobs: Mapping[int, ClusterJob],
    pending: Collection[int],
    active: Collection[int],
    rejected: Collection[int],
    finished: Collection[int],
) -> Ruling:
    """Read ``decision`` once and check it, one placement at a time (module docstring).

    ``jobs``: every revealed job (the engine's own copies); ``pending``,
    ``active``, ``rejected``, ``finished``: the ids in each state before the
    decision.  Raises :class:`InvalidDecision` on the first violation.
    """
    d = expect_type(sched, slot, decision, ClusterDecision)
    limit = len(pending) + len(active)
    table = read_table(sched, slot, d.allocations, limit)
    if table is None:
        allocations, admit, reject = read_decision(sched, slot, d, limit)
    else:  # a table: its arrays copied, then its placements read as every placement is
        allocations = {j: table.placement(k) for k, j in enumerate(table.jobs)}
        admit = read_ints(sched, slot, None, "admit", d.admit)
        reject = read_ints(sched, slot, None, "reject", d.reject)
    until = read_until(sched, slot, d)
    rej, adm, by_alloc = check_admissions(
        sched, slot, allocations, admit, reject, pending, active, rejected, finished
    )
    placements: dict[int, Counts] = {}
    for j, p in allocations.items():
        c = read_placement(sched, slot, j, p, cluster.machines)
        check_placement(sched, jobs[j], c, slot)  # Eq. (7), (4), (2) / (3.2), (3.4), (3.5)
        placements[j] = c
    usage = machine_usage(cluster.capacity.shape, jobs, placements)
    check_capacity(sched, cluster, usage, slot, owners_of(placements))  # Eq. (5)
    return Ruling(slot, until, tuple(rej), tuple(adm), tuple(by_alloc), placements, usage)
