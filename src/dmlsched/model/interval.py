"""The ``interval`` setting (SMD paper, Sec. III): one scheduling interval.

A cluster with aggregate capacity C^r per resource r receives the interval's
active jobs; each job i states its user limit v^r[i].  A decision admits
jobs (x_i) and gives each admitted job w[i] workers and p[i] PSs, subject to

* Eq. (2): Σ_i v^r[i] x_i ≤ C^r  (admission is charged the *limits*),
* Eq. (3): O^r[i] w[i] + G^r[i] p[i] ≤ v^r[i],
* w[i], p[i] positive integers.

The job completes after E[i] / f(p[i], w[i]) (Eq. (4) sync, (5) async, see
:mod:`dmlsched.model.speed.smd`) and earns μ_i of that completion time.

Units (the paper gives ranges without tying them together; decided here):

* per-layer times f_j, b_j, r_j in **milliseconds**, measured for one
  mini-batch of the job's size m (Optimus reports per-step times), so the
  per-sample FP time is t_f = Σ_j f_j / m and the BP time of a mini-batch is
  t_b = Σ_j b_j (the paper: BP "does not depend on m");
* g in MB, B in Gbps, β1/β2 in seconds per worker / per PS per iteration;
* completion times are expressed in ``time_unit_s`` seconds (the utility's
  unit; the workload chooses it, see :mod:`dmlsched.workloads.interval`).

A job whose limit cannot hold one worker and one PS (Eq. (3) with
w = p = 1) is rejected as invalid input: Eq. (8) demands both ≥ 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.utility import Sigmoid, Utility

__all__ = [
    "COMM_MODELS",
    "RESOURCES",
    "IntervalDecision",
    "IntervalJob",
    "IntervalWorkload",
]

RESOURCES: tuple[str, ...] = ("gpu", "cpu", "mem", "storage")
COMM_MODELS: tuple[str, ...] = ("sequential", "wait-free", "priority")


def _where(job: int) -> str:
    return f"job {job}"


def _finite_at_least(name: str, value: float, low: float, job: int, strict: bool) -> None:
    ok = math.isfinite(value) and (value > low if strict else value >= low)
    if not ok:
        raise InvalidInput(name, value, f"{'>' if strict else '>='} {low:g}", _where(job))


@dataclass(frozen=True)
class IntervalJob:
    """One DNN training job of the SMD paper (Table I)."""

    id: int
    iterations: int  # E[i]
    global_batch: int  # K[i] (sync)
    minibatch: int  # m[i]
    grad_mb: float  # g[i], MB
    ps_bandwidth: float  # B[i], Gbps
    fp_ms: tuple[float, ...]  # f_j[i]
    bp_ms: tuple[float, ...]  # b_j[i]
    comm_ms: tuple[float, ...]  # r_j[i]
    beta1: float  # s per worker per iteration
    beta2: float  # s per PS per iteration
    alpha: float  # w'_ρ = α w (async)
    worker_demand: tuple[float, ...]  # O^r[i]
    ps_demand: tuple[float, ...]  # G^r[i]
    limit: tuple[float, ...]  # v^r[i]
    utility: Utility = field(default_factory=lambda: Sigmoid(1.0, 0.0, 0.0))
    mode: Literal["sync", "async"] = "sync"
    comm_model: Literal["sequential", "wait-free", "priority"] = "sequential"
    slice_ms: float = 5.0  # φ, Lemma 2 (parameter slicing)
    time_unit_s: float = 3600.0

    def __post_init__(self) -> None:
        j = self.id
        if self.mode not in ("sync", "async"):
            raise InvalidInput("mode", self.mode, "sync | async", _where(j))
        if self.comm_model not in COMM_MODELS:
            raise InvalidInput("comm_model", self.comm_model, " | ".join(COMM_MODELS), _where(j))
        for name in ("iterations", "global_batch", "minibatch"):
            v = getattr(self, name)
            if isinstance(v, bool) or int(v) != v or v < 1:
                raise InvalidInput(name, v, "integer >= 1", _where(j))
        _finite_at_least("grad_mb", self.grad_mb, 0.0, j, strict=True)
        _finite_at_least("ps_bandwidth", self.ps_bandwidth, 0.0, j, strict=True)
        _finite_at_least("beta1", self.beta1, 0.0, j, strict=False)
        _finite_at_least("beta2", self.beta2, 0.0, j, strict=False)
        _finite_at_least("slice_ms", self.slice_ms, 0.0, j, strict=False)
        _finite_at_least("time_unit_s", self.time_unit_s, 0.0, j, strict=True)
        if not (0.0 <= self.alpha <= 1.0):
            raise InvalidInput("alpha", self.alpha, "in [0, 1]", _where(j))
        n = len(self.fp_ms)
        if n < 1:
            raise InvalidInput("fp_ms", self.fp_ms, "at least one layer", _where(j))
        for name in ("bp_ms", "comm_ms"):
            if len(getattr(self, name)) != n:
                raise InvalidInput(name, len(getattr(self, name)), f"{n} layers", _where(j))
        for name in ("fp_ms", "bp_ms", "comm_ms"):
            for k, v in enumerate(getattr(self, name)):
                _finite_at_least(f"{name}[{k}]", v, 0.0, j, strict=False)
        if sum(self.fp_ms) + sum(self.bp_ms) <= 0:
            raise InvalidInput("fp_ms", self.fp_ms, "some computation time > 0", _where(j))
        r = len(self.limit)
        for name in ("worker_demand", "ps_demand"):
            vec = getattr(self, name)
            if len(vec) != r:
                raise InvalidInput(name, vec, f"{r} resources (as limit)", _where(j))
        for name in ("worker_demand", "ps_demand", "limit"):
            for k, v in enumerate(getattr(self, name)):
                _finite_at_least(f"{name}[{k}]", v, 0.0, j, strict=False)
        for k in range(r):
            need = self.worker_demand[k] + self.ps_demand[k]
            if need > self.limit[k] * (1 + 1e-12):
                raise InvalidInput(
                    f"limit[{k}]",
                    self.limit[k],
                    f">= one worker + one PS = {need:g} (Eq. (3) with w = p = 1)",
                    _where(j),
                )

    @property
    def layers(self) -> int:
        """N[i]."""
        return len(self.fp_ms)

    def usage(self, workers: int, ps: int) -> np.ndarray:
        """LHS of Eq. (3): O^r w + G^r p per resource."""
        return np.asarray(self.worker_demand) * workers + np.asarray(self.ps_demand) * ps


@dataclass(frozen=True)
class IntervalWorkload:
    """One interval: jobs I and aggregate capacity C^r (read-only array)."""

    jobs: tuple[IntervalJob, ...]
    capacity: np.ndarray
    resources: tuple[str, ...] = RESOURCES
    source: str = "synthetic"
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        cap = np.array(self.capacity, dtype=float)
        if cap.ndim != 1 or cap.shape[0] != len(self.resources):
            raise InvalidInput("capacity", cap.shape, f"{len(self.resources)} values")
        if not np.all(np.isfinite(cap)) or np.any(cap < 0):
            raise InvalidInput("capacity", cap.tolist(), "finite and >= 0")
        cap.setflags(write=False)
        object.__setattr__(self, "capacity", cap)
        ids = [j.id for j in self.jobs]
        if len(set(ids)) != len(ids):
            raise InvalidInput("job.id", ids, "unique ids")
        for job in self.jobs:
            if len(job.limit) != len(self.resources):
                raise InvalidInput(
                    "limit", job.limit, f"{len(self.resources)} values", _where(job.id)
                )


@dataclass(frozen=True)
class IntervalDecision:
    """Admitted jobs (x_i = 1) with their (w[i], p[i]); absent jobs are not admitted."""

    allocations: Mapping[int, tuple[int, int]] = field(default_factory=lambda: MappingProxyType({}))
