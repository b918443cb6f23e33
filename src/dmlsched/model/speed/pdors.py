"""PD-ORS speed model: Eq. (1)–(3) (sync, journal) and (3.1) (async, thesis).

**Fact 1** (journal Sec. IV-A): under BSP the slowest worker–PS link sets the
pace, so a job trains at the internal rate b^(i) only when *all* of its
workers and PSs sit on one machine; any spread makes the bottleneck b^(e).
The four cases of Fig. 4 (a–d) reduce to that single test.

Sync, Eq. (1) with W = Σ_h w_h workers and S = Σ_h s_h PSs:

    samples/slot = W / (τ + (2g/S)/b · W/F)

**PSs beyond W/γ do nothing** (a model decision, following the paper): the
journal fixes the job's worker:PS ratio γ_i (Eq. (2) and the text before it:
users "specify a fixed ratio") and rewrites Eq. (1) with it as
W / (τ + γ_i/F · 2g/b) — the form used by Eq. (3), Problem (19), (26),
Alg. 4 and the price constants (13)–(14).  With integer counts the engine
requires S ≥ ⌈W/γ⌉ (Eq. (2) in integers) and credits the PSs Eq. (1) would
see at the job's ratio, S_eff = min(S, W/γ): the parameters are sharded over
W/γ PSs' worth of servers, and a further PS (or the ceiling's fraction of
one) holds no shard and carries no traffic.  So every allocation the engine
accepts trains at exactly the γ-form rate, the rate the offline MILP
(:mod:`dmlsched.offline.cluster`) and every planner credit; fewer PSs than
W/γ (never accepted for sync jobs, but callable) slow the job as Eq. (1)
says.  (Before this decision the engine credited the integer S given, so
⌈W/γ⌉ > W/γ or extra PSs trained faster than any planner or the MILP
assumed, and a schedule could beat "OPT".)

Async, (3.1): each worker on machine h trains
1 / (τ + 2g / min_{p∈P} b(h, p)) mini-batches per slot, so a worker is
internal when every PS of the job is on its own machine h.

Stragglers (sync only): under BSP each iteration waits for the slowest
worker, so the time per sample is τ·``job.straggler`` (the slowest ÷ mean
worker time, e.g. from the PAI mini-batch trace); 1 = identical workers.

Transfer times convert MB over Gbps into slots: MB · 8e-3 / Gbps / 3600.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dmlsched.model.cluster import SLOT_SECONDS, ClusterJob

__all__ = [
    "comm_slots",
    "is_internal",
    "job_rate",
    "ps_bandwidth_load",
    "sync_rate",
    "sync_worker_rates",
    "worker_rate",
]

_GBIT_PER_MB = 8e-3


def comm_slots(megabytes: float, gbps: float) -> float:
    """Slots to move ``megabytes`` over a ``gbps`` link."""
    return megabytes * _GBIT_PER_MB / gbps / SLOT_SECONDS


def is_internal(worker_machines: Sequence[int], ps_machines: Sequence[int]) -> bool:
    """Fact 1: internal rate iff all workers and PSs share exactly one machine."""
    machines = set(worker_machines) | set(ps_machines)
    return len(machines) == 1


def sync_rate(job: ClusterJob, workers: int, ps: int, internal: bool) -> float:
    """Eq. (1) summed over machines: samples per slot for W workers and S PSs,
    crediting at most W/γ PSs (module docstring): the γ-form whenever S ≥ W/γ."""
    if workers <= 0 or ps <= 0:
        return 0.0
    if ps * job.gamma >= workers:  # Eq. (2) met: the γ-form, bit for bit
        return workers * worker_rate(job, internal)
    b = job.b_int if internal else job.b_ext
    comm = comm_slots(2.0 * job.grad_mb / ps, b) * workers / job.batch
    per_sample = job.tau * job.straggler + comm
    return workers / per_sample


def worker_rate(job: ClusterJob, internal: bool) -> float:
    """Work per worker per slot at the job's ratio γ (the γ-form after Eq. (2)).

    Sync: 1/(τ·straggler + γ/F · 2g/b); async: 1/(τ + 2g/b). PD-ORS plans with it.
    """
    b = job.b_int if internal else job.b_ext
    if job.mode == "sync":
        comm = job.gamma / job.batch * comm_slots(2.0 * job.grad_mb, b)
        return 1.0 / (job.tau * job.straggler + comm)
    return 1.0 / (job.tau + comm_slots(2.0 * job.grad_mb, b))


def sync_worker_rates(
    gamma: np.ndarray,
    batch: np.ndarray,
    grad_mb: np.ndarray,
    tau: np.ndarray,
    straggler: np.ndarray,
    gbps: np.ndarray,
) -> np.ndarray:
    """:func:`worker_rate` of sync jobs over arrays (one entry per job, link ``gbps``).

    The same operations in the same order as the scalar form, so the same
    floats (IEEE arithmetic is elementwise); the engine's batched reads use it
    (``tests/model/test_speed_vector.py`` checks it bit for bit).
    """
    comm = gamma / batch * (2.0 * grad_mb * _GBIT_PER_MB / gbps / SLOT_SECONDS)
    return 1.0 / (tau * straggler + comm)


def job_rate(
    job: ClusterJob,
    machines: Sequence[int],
    workers: Sequence[int],
    ps: Sequence[int],
) -> float:
    """Work per slot of a placement given as parallel lists (machine, w_h, s_h).

    The engine calls this with the *actual* allocation; schedulers may call it
    to predict.
    """
    w_m = [m for m, w in zip(machines, workers, strict=True) if w > 0]
    s_m = [m for m, s in zip(machines, ps, strict=True) if s > 0]
    total_w = sum(workers)
    total_s = sum(ps)
    if total_w <= 0 or total_s <= 0:
        return 0.0
    if job.mode == "sync":
        return sync_rate(job, total_w, total_s, is_internal(w_m, s_m))
    # async, (3.1): per-worker locality against the set of PS machines
    ps_set = set(s_m)
    rate_int = worker_rate(job, True)
    rate_ext = worker_rate(job, False)
    total = 0.0
    for m, w in zip(machines, workers, strict=True):
        if w > 0:
            total += w * (rate_int if ps_set == {m} else rate_ext)
    return total


def ps_bandwidth_load(
    job: ClusterJob, machines: Sequence[int], workers: Sequence[int], ps: Sequence[int]
) -> tuple[float, float]:
    """Thesis (3.4): (Σ_{h∈W} Σ_{p∈P} w_h b(h, p), Σ_p s_p B) — load must not exceed capacity."""
    ps_machines = [m for m, s in zip(machines, ps, strict=True) if s > 0]
    load = 0.0
    for m, w in zip(machines, workers, strict=True):
        if w:
            load += w * sum(job.b_int if q == m else job.b_ext for q in ps_machines)
    return load, sum(ps) * job.ps_bandwidth
