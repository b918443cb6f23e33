"""Seeded synthetic ``cluster`` workloads with the papers' parameter ranges.

Sync jobs (PD-ORS Sec. V), each drawn uniformly: E ∈ [50, 200],
K ∈ [20000, 500000], g ∈ [30, 575] MB, τ ∈ [1e-5, 1e-4] slots/sample,
γ ∈ {1, …, 10}, F ∈ [1, 200]; worker 0–4 GPU, 1–10 vCPU, 2–32 GB mem,
5–10 GB storage; PS 0 GPU, 1–10 vCPU, 2–32 GB, 5–10 GB; b^(e) ∈ [0.1, 4]
Gbps and b^(i) = 40·b^(e) (thesis Sec. 4.1; DESIGN.md "units").

Async jobs (thesis Sec. 4.1): E ∈ [50, 150], M ∈ [20, 40] mini-batches per
chunk, K ∈ [5, 20] chunks, g ∈ [50, 100] MB, τ ∈ [0.01, 0.05] **seconds** per
mini-batch, b^(i) ∈ [0.1, 4] Gbps with b^(e) = b^(i)/40, B ∈ [4, 20] Gbps;
worker 0–4 GPU, 1–10 vCPU, 2–30 GB mem, 4–8 GB storage.

Units of the async ranges (the thesis prints none for τ and g; decisions):

* τ is in seconds, like the transfer time it is added to: (3.1) calls
  τ + 2g/b(h, p) "the total amount of time to train a mini-batch ... and then
  communicate", and 2g/b of g MB over b Gbps is seconds.  Both are converted
  to slots (1 h) together.  Reading τ as slots (our earlier choice) made
  communication 0.6 % of compute (median), so b^(i)/b^(e) had no effect, and
  put E·M·τ — the fastest possible completion with all K workers — at a
  median of 77 slots (only 24 % of jobs could ever finish within T = 50).
  In seconds, median 2g/b^(e) ÷ τ ≈ 900 and 2g/b^(i) ÷ τ ≈ 23: the
  communication-bound regime in which the thesis's Fig. 3.12 (utility rises
  with b^(i)/b^(e)) and Fig. 3.11 (co-location ≫ OASiS) make sense.
* "b_i ∈ [100 Mbps, 4 Gbps]" is the *internal* rate b^(i) and
  b^(e) = b^(i)/40 (Sec. 4.1's b^(i)/b^(e) = 40).  (3.4) charges every
  worker's link rate against its PSs' B and (3.5) allows at most one PS per
  worker, so the internal case needs b^(i) ≤ B; the thesis's B ∈ [4, 20]
  Gbps starts exactly at 4 Gbps, the top of the b range, i.e. one PS can
  always serve one worker at rate b.  Reading the range as b^(e) (with
  b^(i) = 40·b^(e) ∈ [4, 160] Gbps) leaves the internal case feasible for
  only 4.8 % of jobs (b^(i) ≤ B), so co-location could almost never happen.

Integer-valued quantities (E, K, F, M, γ, resource units) are drawn as
integers.  Decision (the paper says "roughly 18 times of the resource
demands of a worker/PS"): every machine gets ``capacity_factor`` (18) × the
*upper bound* of each resource's demand range: 72 GPU, 180 vCPU, 576 GB
memory, 180 GB storage (sync ranges).

Arrivals (Sec. V): "normalized job arrival rates 1/3 and 2/3 in odd and even
time-slots" — each job's arrival slot is drawn independently with slot
weights 1/3 (odd slots, counting from 1) and 2/3 (even slots).

Utility: sigmoid θ1 ∈ [1, 100], θ3 ∈ [1, 15]; θ2 = 0 (time-insensitive),
∈ [0.01, 1] (time-sensitive) or ∈ [4, 6] (time-critical) with the class mix
as a parameter (default 10/55/35; Figs. 15/17 use 30/69/1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import SLOT_SECONDS, Cluster, ClusterJob, ClusterWorkload
from dmlsched.model.utility import Sigmoid

__all__ = [
    "DEFAULT_MIX",
    "INT_EXT_RATIO",
    "alternating_arrivals",
    "machine_capacity",
    "random_job",
    "sigmoid_utility",
    "synthetic_cluster",
]

DEFAULT_MIX: tuple[float, float, float] = (0.10, 0.55, 0.35)
INT_EXT_RATIO = 40.0  # b^(i)/b^(e), thesis Sec. 4.1 (also used for sync jobs)
_WORKER_MAX_SYNC = (4.0, 10.0, 32.0, 10.0)
_WORKER_MAX_ASYNC = (4.0, 10.0, 30.0, 8.0)


def alternating_arrivals(n_jobs: int, slots: int, rng: np.random.Generator) -> np.ndarray:
    """Sec. V: arrival weights 1/3 in odd and 2/3 in even slots (1-based), sorted."""
    weights = np.where(np.arange(1, slots + 1) % 2 == 1, 1 / 3, 2 / 3)
    return np.sort(rng.choice(slots, size=n_jobs, p=weights / weights.sum()))


def sigmoid_utility(rng: np.random.Generator, mix: Sequence[float] = DEFAULT_MIX) -> Sigmoid:
    """Sec. V's sigmoid: class by ``mix`` (insensitive, sensitive, critical)."""
    cls = int(rng.choice(3, p=np.asarray(mix) / np.sum(mix)))
    theta1 = float(rng.uniform(1, 100))
    theta3 = float(rng.uniform(1, 15))
    theta2 = 0.0 if cls == 0 else float(rng.uniform(0.01, 1) if cls == 1 else rng.uniform(4, 6))
    return Sigmoid(theta1, theta2, theta3)


def _check_mix(mix: Sequence[float]) -> None:
    if len(mix) != 3 or any(m < 0 for m in mix) or sum(mix) <= 0:
        raise InvalidInput("mix", tuple(mix), "three non-negative shares, not all 0")


def random_job(
    job_id: int,
    arrival: int,
    rng: np.random.Generator,
    *,
    mix: Sequence[float] = DEFAULT_MIX,
    mode: str = "sync",
) -> ClusterJob:
    """One job with every field drawn from the paper's ranges (module docstring).

    The draw order is fixed, so a given generator state always gives the same job;
    trace workloads draw a job here and then replace the fields the trace has.
    """
    b_draw = float(rng.uniform(0.1, 4.0))  # sync: b^(e); async: b^(i) (module docstring)
    wmax = _WORKER_MAX_SYNC if mode == "sync" else _WORKER_MAX_ASYNC
    worker = (
        float(rng.integers(0, 5)),
        float(rng.integers(1, 11)),
        float(rng.integers(2, int(wmax[2]) + 1)),
        float(rng.integers(5 if mode == "sync" else 4, int(wmax[3]) + 1)),
    )
    ps = (
        0.0,
        float(rng.integers(1, 11)),
        float(rng.integers(2, int(wmax[2]) + 1)),
        float(rng.integers(5 if mode == "sync" else 4, int(wmax[3]) + 1)),
    )
    if mode == "sync":
        spec = dict(
            epochs=int(rng.integers(50, 201)),
            samples=int(rng.integers(20000, 500001)),
            batch=int(rng.integers(1, 201)),
            grad_mb=float(rng.uniform(30, 575)),
            tau=float(rng.uniform(1e-5, 1e-4)),
            gamma=float(rng.integers(1, 11)),
        )
    else:
        spec = dict(
            epochs=int(rng.integers(50, 151)),
            samples=int(rng.integers(5, 21)),
            minibatches=int(rng.integers(20, 41)),
            batch=1,
            grad_mb=float(rng.uniform(50, 100)),
            tau=float(rng.uniform(0.01, 0.05)) / SLOT_SECONDS,  # seconds -> slots
            gamma=float(rng.integers(1, 11)),
            ps_bandwidth=float(rng.uniform(4, 20)),
        )
    b_ext = b_draw if mode == "sync" else b_draw / INT_EXT_RATIO
    return ClusterJob(
        id=job_id,
        arrival=arrival,
        worker_demand=worker,
        ps_demand=ps,
        b_ext=b_ext,
        b_int=INT_EXT_RATIO * b_ext,
        utility=sigmoid_utility(rng, mix),
        mode=mode,  # type: ignore[arg-type]  # ClusterJob checks mode: sync | async
        **spec,  # type: ignore[arg-type]  # spec holds the job fields of this mode
    )


def machine_capacity(mode: str = "sync", capacity_factor: float = 18.0) -> tuple[float, ...]:
    """Per-machine capacity: ``capacity_factor`` × each resource's demand upper bound."""
    wmax = _WORKER_MAX_SYNC if mode == "sync" else _WORKER_MAX_ASYNC
    return tuple(capacity_factor * x for x in wmax)


def synthetic_cluster(
    jobs: int,
    machines: int,
    slots: int,
    rng: np.random.Generator,
    *,
    mix: Sequence[float] = DEFAULT_MIX,
    mode: str = "sync",
    capacity_factor: float = 18.0,
    arrivals: np.ndarray | None = None,
) -> ClusterWorkload:
    """``jobs`` jobs on ``machines`` identical machines over ``slots`` slots.

    ``arrivals`` (sorted slot per job) replaces the alternating pattern, e.g.
    with arrivals scaled from a real trace.
    """
    if jobs < 1:
        raise InvalidInput("jobs", jobs, ">= 1")
    if machines < 1:
        raise InvalidInput("machines", machines, ">= 1")
    if slots < 1:
        raise InvalidInput("slots", slots, ">= 1")
    if mode not in ("sync", "async"):
        raise InvalidInput("mode", mode, "sync | async")
    _check_mix(mix)
    if arrivals is None:
        arrivals = alternating_arrivals(jobs, slots, rng)
    elif len(arrivals) != jobs:
        raise InvalidInput("arrivals", len(arrivals), f"{jobs} values")
    out = [random_job(i, int(arrivals[i]), rng, mix=mix, mode=mode) for i in range(jobs)]
    per_machine = machine_capacity(mode, capacity_factor)
    return ClusterWorkload(
        jobs=tuple(out),
        cluster=Cluster.uniform(machines, per_machine),
        horizon=slots,
        source=f"synthetic-{mode}",
    )
