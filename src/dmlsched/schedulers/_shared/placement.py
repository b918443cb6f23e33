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
from types import ModuleType

import numpy as np

from dmlsched.model.cluster import ClusterJob, Placement
from dmlsched.model.speed.pdors import ps_bandwidth_load

__all__ = [
    "BIG",
    "EPS",
    "SMALL_MACHINES",
    "bundle",
    "kernels",
    "machine_rows",
    "packed_fits",
    "place_packed",
    "place_round_robin",
    "take",
    "task_order",
    "use_of",
]

EPS = 1e-9  # slack of every capacity comparison
# Clusters of at most this many machines are placed by the plain NumPy code below, larger
# ones by the compiled kernels (placement_kernels): the same placements and the same floats
# (tests/schedulers/test_placement_kernels.py), but importing numba and loading the kernels
# costs about a second, more than a small cluster's whole replay (peer_replay_cli_s).
SMALL_MACHINES = 64


_loaded: list[ModuleType] = []


def kernels() -> ModuleType:
    """The compiled kernels (``placement_kernels``), imported on first use."""
    # imported once: an import statement per call is a measurable share of FIFO's time a task
    if not _loaded:
        from dmlsched.schedulers._shared import placement_kernels

        _loaded.append(placement_kernels)
    return _loaded[0]


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
    workers, ps = max(int(workers), 0), max(int(ps), 0)  # as task_order reads them
    if workers + ps == 0:
        return Placement((), (), ()), h
    wd = np.asarray(job.worker_demand, dtype=float)
    pd = np.asarray(job.ps_demand, dtype=float)
    if H <= SMALL_MACHINES:
        got = round_robin_numpy(np.asarray(free, dtype=float), wd, pd, workers, ps, h)
        if got is None:
            return None
        p, h = got
    else:
        # compiled, counts included: a NumPy probe per task, then per-task Python to
        # count them, dominated FIFO on 10,000 machines
        ok, machines, w_cnt, s_cnt, h = kernels().round_robin_fit(
            np.asarray(free, dtype=float), wd, pd, workers, ps, h, EPS
        )
        if not ok:
            return None
        p = Placement(tuple(machines.tolist()), tuple(w_cnt.tolist()), tuple(s_cnt.tolist()))
    if job.mode == "async":
        load, cap = ps_bandwidth_load(job, p.machines, p.workers, p.ps)
        if load > cap * (1 + 1e-9):
            return None
    return p, int(h)


def use_of(job: ClusterJob, p: Placement) -> np.ndarray:
    """What placement ``p`` uses of each of its machines: w_h·α + s_h·β (rows of ``p.machines``)."""
    # the products and sum of np.outer(w, α) + np.outer(s, β), without its calls
    use = np.asarray(p.workers, dtype=float)[:, None] * job.worker_demand
    use += np.asarray(p.ps, dtype=float)[:, None] * job.ps_demand
    return use


def take(free: np.ndarray, job: ClusterJob, p: Placement, sign: float = 1.0) -> None:
    """Subtract placement ``p``'s use from ``free`` in place (``sign=-1`` gives it back)."""
    if not p.machines:
        return
    if free.shape[0] <= SMALL_MACHINES:
        use = use_of(job, p)
        if sign != 1.0:
            use *= sign
        free[p.machines,] -= use
    else:
        kernels().take_rows(
            free,
            np.asarray(p.machines, dtype=np.int64),
            np.asarray(p.workers, dtype=np.int64),
            np.asarray(p.ps, dtype=np.int64),
            np.asarray(job.worker_demand, dtype=float),
            np.asarray(job.ps_demand, dtype=float),
            float(sign),
        )


BIG = np.iinfo(np.int64).max // 4  # "fits any number": a demand of nothing
_NO_CLASSES = (np.empty((0, 0)), np.empty(0, dtype=np.int64))


def machine_rows(capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct capacity rows, each machine's row index) for :func:`place_packed`."""
    ref, cls = np.unique(np.asarray(capacity, dtype=float), axis=0, return_inverse=True)
    return np.ascontiguousarray(ref), cls.reshape(-1).astype(np.int64)


def place_packed(
    free: np.ndarray,
    job: ClusterJob,
    workers: int,
    ps: int,
    classes: tuple[np.ndarray, np.ndarray] | None = None,
    below: bool = False,
) -> Placement | None:
    """Consolidate ``workers`` + ``ps`` tasks on as few machines as possible.

    The gang placement of Tiresias (Gu et al., NSDI'19, "consolidated
    placement") and of the Pollux simulator's Tiresias (next GPUs from the
    machine with the most free ones): workers go to the machine that still
    fits the most of them (ties: lower index), then PSs to machines the job
    already uses, else to the machine with most room.  All-or-nothing;
    ``free`` (H × R) is not modified; async jobs must also meet (3.4).
    ``classes`` (:func:`machine_rows`) only saves work on large clusters, more
    so with ``below``: the caller's promise that no row of ``free`` exceeds its
    class's row anywhere (true when ``free`` is the capacity less placements).
    """
    free = np.asarray(free, dtype=float)
    wd = np.asarray(job.worker_demand, dtype=float)
    pd = np.asarray(job.ps_demand, dtype=float)
    if free.shape[0] <= SMALL_MACHINES:
        got = packed_numpy(free, wd, pd, int(workers), int(ps))
        if got is None:
            return None
        p = got
    else:
        ok, machines, w, s = _packed_kernel(free, wd, pd, workers, ps, classes, below)
        if not ok:
            return None
        # machines are distinct and each holds a task: sorting them is Placement.from_counts
        o = np.argsort(machines, kind="stable")
        p = Placement(tuple(machines[o].tolist()), tuple(w[o].tolist()), tuple(s[o].tolist()))
    if job.mode == "async":
        load, cap = ps_bandwidth_load(job, p.machines, p.workers, p.ps)
        if load > cap * (1 + 1e-9):
            return None
    return p


def _packed_kernel(
    free: np.ndarray,
    wd: np.ndarray,
    pd: np.ndarray,
    workers: int,
    ps: int,
    classes: tuple[np.ndarray, np.ndarray] | None,
    below: bool,
) -> tuple:
    ref, cls = classes if classes is not None else _NO_CLASSES
    return kernels().packed_fit(
        free, ref, cls, wd, pd, int(workers), int(ps), EPS, BIG,
        bool(below) and classes is not None,
    )  # fmt: skip


def packed_fits(
    free: np.ndarray,
    job: ClusterJob,
    workers: int,
    ps: int,
    classes: tuple[np.ndarray, np.ndarray] | None = None,
    below: bool = False,
) -> bool:
    """Whether :func:`place_packed` places the gang, without building its placement
    (Tiresias asks it for every arriving job, on the empty cluster)."""
    free = np.asarray(free, dtype=float)
    if job.mode == "async" or free.shape[0] <= SMALL_MACHINES:  # (3.4) needs the placement
        return place_packed(free, job, workers, ps, classes, below) is not None
    wd = np.asarray(job.worker_demand, dtype=float)
    pd = np.asarray(job.ps_demand, dtype=float)
    return bool(_packed_kernel(free, wd, pd, workers, ps, classes, below)[0])


# ------------------------------------------------------------------ the NumPy path
# Small clusters (≤ SMALL_MACHINES), and the reference the compiled kernels are tested
# against: the kernels must give the same placements and floats.


def _next_fit(free: np.ndarray, left: dict[int, np.ndarray], d: np.ndarray, h: int) -> int | None:
    H = free.shape[0]
    need = d - EPS
    for k in range(min(8, H)):
        m = (h + k) % H
        if (left.get(m, free[m]) >= need).all():
            return m
    ok = np.all(free >= need, axis=1)
    for m, row in left.items():
        ok[m] = (row >= need).all()
    fits = np.flatnonzero(ok)
    if fits.size == 0:
        return None
    return int(fits[int(np.searchsorted(fits, h)) % fits.size])


def round_robin_numpy(
    free: np.ndarray, wd: np.ndarray, pd: np.ndarray, workers: int, ps: int, h: int
) -> tuple[Placement, int] | None:
    """:func:`place_round_robin`'s tasks one by one (no async check)."""
    H = free.shape[0]
    left: dict[int, np.ndarray] = {}
    w_cnt: Counter[int] = Counter()
    s_cnt: Counter[int] = Counter()
    for is_ps in task_order(workers, ps):
        d = pd if is_ps else wd
        m = _next_fit(free, left, d, h)
        if m is None:
            return None
        left[m] = left.get(m, free[m]) - d
        (s_cnt if is_ps else w_cnt)[m] += 1
        h = (m + 1) % H
    return Placement.from_counts(w_cnt, s_cnt), h


def packed_numpy(
    free: np.ndarray, wd: np.ndarray, pd: np.ndarray, workers: int, ps: int
) -> Placement | None:
    """:func:`place_packed` over every machine each time (no async check).

    Every machine's fit is counted once; after that only the machine just
    used changes, so only its count is taken again (:func:`_row_fit`)."""
    left = free.copy()
    w_cnt: dict[int, int] = {}
    s_cnt: dict[int, int] = {}
    need = workers
    if need > 0:
        fits = _fit_count(left, wd)
        while True:
            m = int(np.argmax(fits))
            if fits[m] <= 0:
                return None
            k = int(min(fits[m], need))
            left[m] -= k * wd
            w_cnt[m] = w_cnt.get(m, 0) + k
            need -= k
            if need <= 0:
                break
            fits[m] = _row_fit(left, m, wd)
    ps_fits: np.ndarray | None = None
    for _ in range(ps):
        # the first machine of the job's (by index) that fits a PS, else the one that
        # fits most (fits counted afresh: a PS changes its machine's count)
        m = next((h for h in sorted(w_cnt) if _row_fit(left, h, pd) > 0), -1)
        if m < 0:
            ps_fits = _fit_count(left, pd)
            m = int(np.argmax(ps_fits))
            if ps_fits[m] <= 0:
                return None
        left[m] -= pd
        s_cnt[m] = s_cnt.get(m, 0) + 1
    return Placement.from_counts(w_cnt, s_cnt)


def _fit_count(left: np.ndarray, d: np.ndarray) -> np.ndarray:
    """How many tasks of demand ``d`` each machine's ``left`` still holds (BIG: any)."""
    pos = d > EPS
    if pos.all():
        return np.floor((left + EPS) / d).min(axis=1).astype(np.int64)
    if not pos.any():
        return np.full(left.shape[0], BIG)
    return np.floor((left[:, pos] + EPS) / d[pos]).min(axis=1).astype(np.int64)


_EXACT_FIT = 2.0**62  # below this a count is the same int in Python as in int64


def _row_fit(left: np.ndarray, m: int, d: np.ndarray) -> int:
    """``_fit_count(left, d)[m]``, in Python floats (the same operations on the same
    floats: one machine's row costs less so than in NumPy's calls)."""
    got = [(x + EPS) / y for x, y in zip(left[m].tolist(), d.tolist(), strict=True) if y > EPS]
    if not got:
        return int(BIG)
    if not all(-_EXACT_FIT < q < _EXACT_FIT for q in got):  # nan, inf, beyond int64:
        return int(_fit_count(left[m : m + 1], d)[0])  # as NumPy casts it
    return math.floor(min(got))  # (floor is monotone: the min of the floors)
