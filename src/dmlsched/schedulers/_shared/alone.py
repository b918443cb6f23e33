"""The fastest a cluster job could train alone on the empty cluster, and with what gang.

No scheduler can finish a job faster than this, so it bounds every scheduler's
completions (:mod:`dmlsched.experiments.diagnose` explains them with it; the
testbed's report says why a scheduler placed nothing).  Under the Eq. (1)
speed model the rate is an upper bound, from a relaxation of the placement:
for every worker count W ≤ F (sync, Eq. (4)) or ≤ K (async, (3.2)) with its
fewest PSs ⌈W/γ⌉ (Eq. (2)) whose demand fits in the cluster's total capacity,
the workers that fit on the largest machine beside all the PSs run at the
internal rate b^(i) — all W of them must for a sync job (Fact 1), any of them
for an async one ((3.1)) — and the rest at b^(e); the PS bandwidth (3.4) and
the packing of tasks into machines are left out, so no placement is faster.
Under a measured speed model (peer workloads) it is the fastest of the gangs
1, 2, 3, 4, 6, 8, 12, … placed on the fewest machines — an estimate.
"""

from __future__ import annotations

import numpy as np

from dmlsched.model.cluster import ClusterJob, ClusterWorkload
from dmlsched.model.speed.pdors import job_rate, worker_rate
from dmlsched.schedulers._shared.placement import bundle, place_packed

__all__ = ["alone_rate"]


def _candidates(job: ClusterJob) -> list[int]:
    if job.requested_workers:
        return [job.requested_workers]
    out, w = {job.max_workers}, 1
    while w < job.max_workers:
        out.add(w)
        w = w + 1 if w < 4 else int(w * 1.5)
    return sorted(out)


def alone_rate(job: ClusterJob, workload: ClusterWorkload) -> tuple[float, int]:
    """(highest rate, its worker count) alone on the empty cluster (module docstring)."""
    if workload.speed is not None:
        return _packed_rate(job, workload)
    cap = np.asarray(workload.cluster.capacity, dtype=float)
    largest, total = cap.max(axis=0), cap.sum(axis=0)
    wd = np.asarray(job.worker_demand, dtype=float)
    pd = np.asarray(job.ps_demand, dtype=float)
    r_int, r_ext = worker_rate(job, True), worker_rate(job, False)
    best, best_w = 0.0, 0
    for w in range(1, job.max_workers + 1):
        s = job.min_ps(w)
        if np.any(w * wd + s * pd > total + _EPS):
            break  # more workers fit even less
        inside = _fits(largest - s * pd, wd, w)
        if job.mode == "sync":  # Fact 1: internal only with every task on one machine
            rate = w * (r_int if inside >= w else r_ext)
        else:  # (3.1): each worker beside the job's only PS machine is internal
            rate = inside * r_int + (w - inside) * r_ext
        if rate > best:
            best, best_w = rate, w
    return best, best_w


_EPS = 1e-9


def _fits(free: np.ndarray, demand: np.ndarray, most: int) -> int:
    """How many tasks of ``demand`` fit in ``free`` (at most ``most``)."""
    if np.any(free < -_EPS):
        return 0
    need = demand > 0
    if not need.any():
        return most
    return int(min(most, np.floor((free[need] + _EPS) / demand[need]).min()))


def _packed_rate(job: ClusterJob, workload: ClusterWorkload) -> tuple[float, int]:
    """The fastest of a few gangs placed on the fewest machines (a measured speed model)."""
    rate_of = workload.speed.rate if workload.speed is not None else job_rate
    free = np.array(workload.cluster.capacity, dtype=float)
    best, best_w = 0.0, 0
    for w in _candidates(job):
        ww, s = bundle(job, w)
        p = place_packed(free, job, ww, s) if ww else None
        if p is not None:
            r = rate_of(job, p.machines, p.workers, p.ps)
            if r > best:
                best, best_w = r, ww
    return best, best_w
