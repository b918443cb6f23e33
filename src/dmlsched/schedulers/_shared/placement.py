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

__all__ = ["bundle", "place_packed", "place_round_robin", "take", "task_order"]

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
    # rows this placement has used so far (the others are ``free``'s): no H × R copy
    # per attempt, which dominated FIFO on 10,000 machines
    left: dict[int, np.ndarray] = {}
    wd = np.asarray(job.worker_demand)
    pd = np.asarray(job.ps_demand)
    w_cnt: Counter[int] = Counter()
    s_cnt: Counter[int] = Counter()
    h = start % H
    for is_ps in task_order(workers, ps):
        d = pd if is_ps else wd
        m = _next_fit(free, left, d, h)
        if m is None:
            return None
        left[m] = left.get(m, free[m]) - d
        (s_cnt if is_ps else w_cnt)[m] += 1
        h = (m + 1) % H
    p = Placement.from_counts(w_cnt, s_cnt)
    if job.mode == "async":
        load, cap = ps_bandwidth_load(job, p.machines, p.workers, p.ps)
        if load > cap * (1 + 1e-9):
            return None
    return p, h


_PROBE = 8  # machines tried one by one before a vectorized scan


def _next_fit(free: np.ndarray, left: dict[int, np.ndarray], d: np.ndarray, h: int) -> int | None:
    """First machine at or after ``h`` (cyclically) with room for demand ``d``; a machine's
    room is ``left[m]`` if this placement used it already, else ``free[m]``."""
    H = free.shape[0]
    need = d - _EPS
    # usually the next machine has room: probe a few before scanning all H (hot path)
    for k in range(min(_PROBE, H)):
        m = (h + k) % H
        if (left.get(m, free[m]) >= need).all():
            return m
    ok = (free >= need).all(axis=1)
    for m, row in left.items():
        ok[m] = (row >= need).all()
    fits = np.flatnonzero(ok)
    if fits.size == 0:
        return None
    return int(fits[int(np.searchsorted(fits, h)) % fits.size])


def take(free: np.ndarray, job: ClusterJob, p: Placement, sign: float = 1.0) -> None:
    """Subtract placement ``p``'s use from ``free`` in place (``sign=-1`` gives it back)."""
    if p.machines:
        idx = np.asarray(p.machines, dtype=np.intp)  # unique machines: fancy += is safe
        free[idx] -= sign * (np.outer(p.workers, job.worker_demand) + np.outer(p.ps, job.ps_demand))


def ceil_div(a: float, b: float) -> int:
    return math.ceil(a / b - 1e-12)


def place_packed(free: np.ndarray, job: ClusterJob, workers: int, ps: int) -> Placement | None:
    """Consolidate ``workers`` + ``ps`` tasks on as few machines as possible.

    The gang placement of Tiresias (Gu et al., NSDI'19, "consolidated
    placement") and of the Pollux simulator's Tiresias (next GPUs from the
    machine with the most free ones): workers go to the machine that still
    fits the most of them (ties: lower index), then PSs to machines the job
    already uses, else to the machine with most room.  All-or-nothing;
    ``free`` (H × R) is not modified; async jobs must also meet (3.4).
    """
    left = free.copy()
    wd = np.asarray(job.worker_demand, dtype=float)
    pd = np.asarray(job.ps_demand, dtype=float)
    w_cnt: Counter[int] = Counter()
    s_cnt: Counter[int] = Counter()

    def fit_count(d: np.ndarray) -> np.ndarray:
        pos = d > _EPS
        if not pos.any():
            return np.full(left.shape[0], np.iinfo(np.int64).max // 4)
        return np.floor((left[:, pos] + _EPS) / d[pos]).min(axis=1).astype(np.int64)

    need = int(workers)
    while need > 0:
        fits = fit_count(wd)
        m = int(np.argmax(fits))
        if fits[m] <= 0:
            return None
        k = int(min(fits[m], need))
        left[m] -= k * wd
        w_cnt[m] += k
        need -= k
    for _ in range(int(ps)):
        fits = fit_count(pd)
        used = [m for m in sorted(w_cnt) if fits[m] > 0]
        if used:
            m = used[0]
        else:
            m = int(np.argmax(fits))
            if fits[m] <= 0:
                return None
        left[m] -= pd
        s_cnt[m] += 1
    p = Placement.from_counts(w_cnt, s_cnt)
    if job.mode == "async":
        load, cap = ps_bandwidth_load(job, p.machines, p.workers, p.ps)
        if load > cap * (1 + 1e-9):
            return None
    return p
