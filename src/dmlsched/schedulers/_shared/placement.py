"""Round-robin placement and bundle sizing shared by FIFO, DRF, Dorm, ….

Round-robin (PD-ORS Sec. V: "workers and parameter servers are placed in a
round-robin fashion on available machines"): tasks go one by one to the next
machine, in cyclic order from a persistent pointer, that still has room for
the task; PSs and workers are interleaved so a job's PSs spread like its
workers.  Placement is all-or-nothing.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from dmlsched.model.cluster import ClusterJob, Placement
from dmlsched.model.speed.pdors import ps_bandwidth_load
from dmlsched.schedulers._shared.placement_kernels import packed_fit, round_robin_fit, take_rows

__all__ = ["bundle", "machine_rows", "place_packed", "place_round_robin", "take", "task_order"]

_EPS = 1e-9


def bundle(job: ClusterJob, workers: int) -> tuple[int, int]:
    """Largest (W, S) with W ≤ ``workers`` that the engine accepts for any placement.

    Sync: S = ⌈W/γ⌉ (Eq. (2)), W ≤ F.  Async: S = ⌈W/γ⌉ ≤ W (3.5), W ≤ K and
    W · b^(e) ≤ B, the PS-bandwidth bound (3.4) when every worker–PS link is
    external and each PS has its own machine; :func:`place_round_robin`
    then checks (3.4) exactly for the placement it finds.
    """
    w = min(int(workers), job.max_workers)
    while w > 0:
        s = job.min_ps(w)
        if job.mode == "sync":
            return w, s
        if w * job.b_ext <= job.ps_bandwidth * (1 + 1e-12):
            return w, min(s, w)
        w -= 1
    return 0, 0


def task_order(workers: int, ps: int) -> list[bool]:
    """Interleave S PSs among W workers (True = PS), PS first in each group."""
    order: list[bool] = []
    placed_ps = 0
    for k in range(workers):
        while placed_ps < ps and placed_ps * workers <= k * ps:
            order.append(True)
            placed_ps += 1
        order.append(False)
    order.extend([True] * (ps - placed_ps))
    return order


def place_round_robin(
    free: np.ndarray, job: ClusterJob, workers: int, ps: int, start: int
) -> tuple[Placement, int] | None:
    """Place ``workers`` + ``ps`` tasks round-robin on ``free`` (H × R, not modified).

    Returns the placement and the pointer after the last used machine, or
    ``None`` when some task fits nowhere or, for an async job, the placement
    breaks the PS-bandwidth constraint (3.4) (nothing is placed then).
    """
    H = free.shape[0]
    h = start % H
    order = task_order(workers, ps)
    if not order:
        return Placement((), (), ()), h
    wd = np.asarray(job.worker_demand, dtype=float)
    pd = np.asarray(job.ps_demand, dtype=float)
    # compiled: a NumPy probe per task dominated FIFO on 10,000 machines
    where, h = round_robin_fit(
        np.asarray(free, dtype=float), wd, pd, np.array(order, dtype=np.bool_), h, _EPS
    )
    if where[0] < 0:
        return None
    w_cnt: Counter[int] = Counter()
    s_cnt: Counter[int] = Counter()
    for is_ps, m in zip(order, where.tolist(), strict=True):
        (s_cnt if is_ps else w_cnt)[m] += 1
    p = Placement.from_counts(w_cnt, s_cnt)
    if job.mode == "async":
        load, cap = ps_bandwidth_load(job, p.machines, p.workers, p.ps)
        if load > cap * (1 + 1e-9):
            return None
    return p, int(h)


def take(free: np.ndarray, job: ClusterJob, p: Placement, sign: float = 1.0) -> None:
    """Subtract placement ``p``'s use from ``free`` in place (``sign=-1`` gives it back)."""
    if p.machines:
        take_rows(
            free,
            np.asarray(p.machines, dtype=np.int64),
            np.asarray(p.workers, dtype=np.int64),
            np.asarray(p.ps, dtype=np.int64),
            np.asarray(job.worker_demand, dtype=float),
            np.asarray(job.ps_demand, dtype=float),
            float(sign),
        )


_BIG = np.iinfo(np.int64).max // 4  # "fits any number": a demand of nothing
_NO_CLASSES = (np.empty((0, 0)), np.empty(0, dtype=np.int64))


def machine_rows(capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct capacity rows, each machine's row index) for :func:`place_packed`."""
    ref, cls = np.unique(np.asarray(capacity, dtype=float), axis=0, return_inverse=True)
    return np.ascontiguousarray(ref), cls.reshape(-1).astype(np.int64)


def ceil_div(a: float, b: float) -> int:
    return math.ceil(a / b - 1e-12)


def place_packed(
    free: np.ndarray,
    job: ClusterJob,
    workers: int,
    ps: int,
    classes: tuple[np.ndarray, np.ndarray] | None = None,
) -> Placement | None:
    """Consolidate ``workers`` + ``ps`` tasks on as few machines as possible.

    The gang placement of Tiresias (Gu et al., NSDI'19, "consolidated
    placement") and of the Pollux simulator's Tiresias (next GPUs from the
    machine with the most free ones): workers go to the machine that still
    fits the most of them (ties: lower index), then PSs to machines the job
    already uses, else to the machine with most room.  All-or-nothing;
    ``free`` (H × R) is not modified; async jobs must also meet (3.4).
    ``classes`` (:func:`machine_rows`) only saves work on large clusters.
    """
    free = np.asarray(free, dtype=float)
    ref, cls = classes if classes is not None else _NO_CLASSES
    ok, machines, w, s = packed_fit(
        free,
        ref,
        cls,
        np.asarray(job.worker_demand, dtype=float),
        np.asarray(job.ps_demand, dtype=float),
        int(workers),
        int(ps),
        _EPS,
        _BIG,
    )
    if not ok:
        return None
    ms, ws, ss = machines.tolist(), w.tolist(), s.tolist()
    w_cnt = dict(zip(ms, ws, strict=True))
    s_cnt = dict(zip(ms, ss, strict=True))
    p = Placement.from_counts(w_cnt, s_cnt)
    if job.mode == "async":
        load, cap = ps_bandwidth_load(job, p.machines, p.workers, p.ps)
        if load > cap * (1 + 1e-9):
            return None
    return p
