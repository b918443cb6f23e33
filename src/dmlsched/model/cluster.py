"""The ``cluster`` setting: jobs of PD-ORS Table I and a cluster of H × R.

Units (one set, used everywhere in this setting):

* one slot = one hour (:data:`SLOT_SECONDS`);
* τ (``tau``) in slots per sample (sync) or per mini-batch (async) — PD-ORS
  Sec. V draws τ ∈ [1e-5, 1e-4] slots; the thesis's τ ∈ [0.01, 0.05] is in
  seconds (it is added to a transfer time 2g/b) and enters as τ/3600 slots
  (:mod:`dmlsched.workloads.synthetic`);
* g (``grad_mb``) in MB; bandwidths b^(i), b^(e), B in Gbps (1 MB = 8e-3 Gb);
* resources in the units of :data:`RESOURCES`: GPUs, vCPUs, GB memory,
  GB storage.

Two job models share one spec (``mode``):

* ``sync`` — journal PD-ORS, BSP with a fixed global batch F: work is E·K
  samples, at most F workers (Eq. (4)), workers:PSs = γ (Eq. (2)).
* ``async`` — thesis Async-SGD: K chunks of M mini-batches, work E·K·M
  mini-batches, at most K workers (3.2), PS bandwidth (3.4), PSs ≤ workers
  (3.5); ``gamma`` is then the scheduler's preferred ratio only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.utility import Sigmoid, Utility

__all__ = [
    "RESOURCES",
    "SLOT_SECONDS",
    "Cluster",
    "ClusterDecision",
    "ClusterJob",
    "ClusterWorkload",
    "Placement",
    "PlacementTable",
    "SpeedModel",
]

SLOT_SECONDS = 3600.0
RESOURCES: tuple[str, ...] = ("gpu", "cpu", "mem", "storage")


def _positive(name: str, value: float, *, strict: bool = True, job: int | None = None) -> None:
    ok = (value > 0 if strict else value >= 0) and math.isfinite(value)
    if not ok:
        where = f"job {job}" if job is not None else ""
        raise InvalidInput(name, value, "> 0" if strict else ">= 0", where)


@dataclass(frozen=True)
class ClusterJob:
    """One training job (PD-ORS Table I; thesis Table 3.1 for ``async``)."""

    id: int
    arrival: int
    epochs: int  # E
    samples: int  # K: samples (sync) or data chunks (async)
    batch: int  # F: global batch size (sync)
    grad_mb: float  # g
    tau: float  # τ, slots per sample (sync) / per mini-batch (async)
    gamma: float  # γ = workers / PSs, Eq. (2)
    worker_demand: tuple[float, ...]  # α^r
    ps_demand: tuple[float, ...]  # β^r
    b_int: float  # b^(i), Gbps
    b_ext: float  # b^(e), Gbps
    utility: Utility = field(default_factory=lambda: Sigmoid(1.0, 0.0, 0.0))
    mode: Literal["sync", "async"] = "sync"
    minibatches: int = 1  # M, mini-batches per chunk (async)
    ps_bandwidth: float = math.inf  # B, Gbps per PS (async, (3.4))
    straggler: float = 1.0  # slowest ÷ mean worker time per sample (sync, BSP); τ·straggler
    # Gang size the job's owner asked for (peer traces' GPUs / ``num_replicas``);
    # None = the scheduler chooses.  Only gang schedulers (srtf, tiresias) read it.
    requested_workers: int | None = None

    def __post_init__(self) -> None:
        if self._plainly_valid():
            return
        j = self.id
        if self.mode not in ("sync", "async"):
            raise InvalidInput("mode", self.mode, "sync | async", f"job {j}")
        if int(self.arrival) != self.arrival or self.arrival < 0:
            raise InvalidInput("arrival", self.arrival, "integer slot >= 0", f"job {j}")
        for name in ("epochs", "samples", "batch", "minibatches"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise InvalidInput(name, v, "integer >= 1", f"job {j}")
        for name in ("grad_mb", "b_int", "b_ext"):
            _positive(name, getattr(self, name), strict=name != "grad_mb", job=j)
        _positive("tau", self.tau, job=j)
        _positive("gamma", self.gamma, job=j)
        if not (self.straggler >= 1.0 and math.isfinite(self.straggler)):
            raise InvalidInput("straggler", self.straggler, "finite and >= 1", f"job {j}")
        if self.mode == "async" and self.straggler != 1.0:
            # async workers do not wait for each other, so one factor for all is wrong
            raise InvalidInput("straggler", self.straggler, "1 for async (BSP only)", f"job {j}")
        rw = self.requested_workers
        if rw is not None and (int(rw) != rw or not 1 <= rw <= self.max_workers):
            raise InvalidInput(
                "requested_workers", rw, f"integer in [1, {self.max_workers}]", f"job {j}"
            )
        if not (self.ps_bandwidth > 0):
            raise InvalidInput("ps_bandwidth", self.ps_bandwidth, "> 0", f"job {j}")
        if len(self.worker_demand) != len(self.ps_demand):
            raise InvalidInput(
                "ps_demand", self.ps_demand, f"{len(self.worker_demand)} resources", f"job {j}"
            )
        for name in ("worker_demand", "ps_demand"):
            for r, v in enumerate(getattr(self, name)):
                _positive(f"{name}[{r}]", v, strict=False, job=j)
        if sum(self.worker_demand) <= 0:
            raise InvalidInput("worker_demand", self.worker_demand, "some resource > 0", f"job {j}")

    def _plainly_valid(self) -> bool:
        """Every check below passes, for the common case of plain ``int`` counts and
        finite floats (one expression: workloads build 10⁵ jobs); ``False`` means
        "run the checks", which then raise for the first failure, or pass."""
        try:
            wd, pd, rw = self.worker_demand, self.ps_demand, self.requested_workers
            wsum, psum = sum(wd), sum(pd)
            return (
                type(self.arrival) is int
                and type(self.epochs) is int
                and type(self.samples) is int
                and type(self.batch) is int
                and type(self.minibatches) is int
                and self.arrival >= 0
                and self.epochs >= 1
                and self.samples >= 1
                and self.batch >= 1
                and self.minibatches >= 1
                and 0.0 <= self.grad_mb < math.inf
                and 0.0 < self.b_int < math.inf
                and 0.0 < self.b_ext < math.inf
                and 0.0 < self.tau < math.inf
                and 0.0 < self.gamma < math.inf
                and (
                    (self.mode == "sync" and 1.0 <= self.straggler < math.inf)
                    or (self.mode == "async" and self.straggler == 1.0)
                )
                and (rw is None or (type(rw) is int and 1 <= rw <= self.max_workers))
                and self.ps_bandwidth > 0
                and len(wd) == len(pd)
                # a NaN or ±inf makes a sum NaN or inf; with every value >= 0, a finite
                # sum means every value is finite
                and 0.0 < wsum < math.inf
                and 0.0 <= psum < math.inf
                and min(wd) >= 0
                and (not pd or min(pd) >= 0)
            )
        except TypeError:
            return False

    @property
    def total_work(self) -> float:
        """Samples (sync, E·K) or mini-batches (async, E·K·M) to train, Eq. (3)/(3.1)."""
        if self.mode == "sync":
            return float(self.epochs) * float(self.samples)
        return float(self.epochs) * float(self.samples) * float(self.minibatches)

    @property
    def max_workers(self) -> int:
        """Eq. (4): ≤ F workers (sync); (3.2): ≤ K workers (async)."""
        return self.batch if self.mode == "sync" else self.samples

    def min_ps(self, workers: int) -> int:
        """Fewest PSs the engine accepts for ``workers`` workers (Eq. (2) as ⌈W/γ⌉)."""
        if workers <= 0:
            return 0
        return max(1, math.ceil(workers / self.gamma - 1e-9))


@dataclass(frozen=True)
class Cluster:
    """H machines × R resources; ``capacity[h, r]`` = C_h^r (read-only array)."""

    capacity: np.ndarray
    resources: tuple[str, ...] = RESOURCES

    def __post_init__(self) -> None:
        cap = np.array(self.capacity, dtype=float)
        if cap.ndim != 2 or cap.shape[0] < 1:
            raise InvalidInput("capacity", cap.shape, "a 2-D array H x R with H >= 1")
        if cap.shape[1] != len(self.resources):
            raise InvalidInput("capacity", cap.shape, f"{len(self.resources)} resource columns")
        if not np.all(np.isfinite(cap)) or np.any(cap < 0):
            raise InvalidInput("capacity", float(cap.min()), "finite and >= 0")
        cap.setflags(write=False)
        object.__setattr__(self, "capacity", cap)

    @property
    def machines(self) -> int:
        return int(self.capacity.shape[0])

    @classmethod
    def uniform(cls, machines: int, per_machine: tuple[float, ...]) -> Cluster:
        if machines < 1:
            raise InvalidInput("machines", machines, ">= 1")
        return cls(np.tile(np.asarray(per_machine, dtype=float), (machines, 1)))


@runtime_checkable
class SpeedModel(Protocol):
    """An engine-side speed model replacing Eq. (1) (see ``ClusterWorkload.speed``).

    ``rate`` returns the job's work (samples, or mini-batches for async jobs)
    per slot for a placement given as parallel lists (machine, w_h, s_h) —
    the signature of :func:`dmlsched.model.speed.pdors.job_rate`.

    Optionally ``slot_rates(items)``: the rates of jobs running in the same
    slot, ``items`` a sequence of (job, placement) — for models in which jobs
    slow each other down (shared links, :mod:`dmlsched.model.speed.calibrated`);
    the engine then uses these instead of each job's ``rate`` alone.
    """

    def rate(
        self,
        job: ClusterJob,
        machines: Sequence[int],
        workers: Sequence[int],
        ps: Sequence[int],
    ) -> float: ...


@dataclass(frozen=True)
class ClusterWorkload:
    """A ``cluster``-setting instance: jobs (sorted by arrival), cluster, horizon T.

    ``speed``: the engine's speed model for this instance; ``None`` (default)
    is PD-ORS Eq. (1)–(3) (:func:`dmlsched.model.speed.pdors.job_rate`).  A
    workload built from measured throughput (e.g. the Pollux profiles, see
    :mod:`dmlsched.model.speed.measured`) sets it; schedulers never see it.

    ``slot_seconds``: the length of one slot in seconds — :data:`SLOT_SECONDS`
    for the papers' workloads, the import's choice for peer job lists (60 s
    by default).  The engine passes it to schedulers in every view, so a
    scheduler with time-valued parameters (Tiresias' GPU-hour thresholds)
    reads it from there and is never told twice.

    ``kinds``: job id → the peer's name for what the job trains (a Pollux
    application such as ``"cifar10"``, a Gavel job type such as
    ``"ResNet-50 (batch size 64)"``); empty for synthetic jobs.  Exporters and
    peer speed models read it; the engine and schedulers do not.
    """

    jobs: tuple[ClusterJob, ...]
    cluster: Cluster
    horizon: int
    source: str = "synthetic"
    notes: tuple[str, ...] = ()
    speed: SpeedModel | None = None
    slot_seconds: float = SLOT_SECONDS
    kinds: Mapping[int, str] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if self.horizon < 1:
            raise InvalidInput("slots", self.horizon, ">= 1")
        if not (self.slot_seconds > 0 and math.isfinite(self.slot_seconds)):
            raise InvalidInput("slot_seconds", self.slot_seconds, "a finite number > 0")
        object.__setattr__(self, "kinds", MappingProxyType(dict(self.kinds)))
        ids = [j.id for j in self.jobs]
        if len(set(ids)) != len(ids):
            raise InvalidInput("job.id", ids, "unique ids")
        cap_max = self.cluster.capacity.max(axis=0)
        # "fits some machine" only needs the distinct machine rows (a cluster of
        # identical machines has one): O(jobs), not O(jobs × machines)
        # (a set of rows, not np.unique: its axis= path imports numpy.ma, a share of a
        # short run's start-up)
        caps = np.array(sorted(set(map(tuple, self.cluster.capacity.tolist()))), dtype=float)
        caps = caps.reshape(-1, self.cluster.capacity.shape[1])
        if self._all_fit(caps):
            return
        for job in self.jobs:
            if len(job.worker_demand) != len(self.cluster.resources):
                raise InvalidInput(
                    "worker_demand",
                    job.worker_demand,
                    f"{len(self.cluster.resources)} values",
                    f"job {job.id}",
                )
            if job.arrival >= self.horizon:
                raise InvalidInput(
                    "arrival", job.arrival, f"< slots={self.horizon}", f"job {job.id}"
                )
            fits_w = np.all(caps >= np.asarray(job.worker_demand), axis=1)
            fits_p = np.all(caps >= np.asarray(job.ps_demand), axis=1)
            if not fits_w.any():
                r = int(np.argmax(np.asarray(job.worker_demand) - cap_max))
                raise InvalidInput(
                    f"worker_demand[{self.cluster.resources[r]}]",
                    job.worker_demand[r],
                    f"<= largest machine capacity {cap_max[r]:g}",
                    f"job {job.id}",
                )
            if not fits_p.any():
                r = int(np.argmax(np.asarray(job.ps_demand) - cap_max))
                raise InvalidInput(
                    f"ps_demand[{self.cluster.resources[r]}]",
                    job.ps_demand[r],
                    f"<= largest machine capacity {cap_max[r]:g}",
                    f"job {job.id}",
                )

    def _all_fit(self, caps: np.ndarray) -> bool:
        """Every job arrives before the horizon and its worker and PS each fit some
        machine: the loop's checks over arrays; ``False`` means "run the loop" (it
        raises for the first job that fails, naming it)."""
        R = len(self.cluster.resources)
        if not self.jobs or any(len(j.worker_demand) != R for j in self.jobs):
            return not self.jobs
        arrivals = np.fromiter((j.arrival for j in self.jobs), float, len(self.jobs))
        if arrivals.max() >= self.horizon:
            return False
        for field_ in ("worker_demand", "ps_demand"):
            left = np.array([getattr(j, field_) for j in self.jobs], dtype=float)
            for c in caps:  # drop the demands this machine row fits
                left = left[~np.all(c >= left, axis=1)]
                if not len(left):
                    break
            if len(left):
                return False
        return True


# ---- what a ``cluster`` scheduler returns for one slot (validated by the engine) ----
@dataclass(frozen=True)
class Placement:
    """One job's workers w_ih[t] and PSs s_ih[t] on the machines it uses.

    Parallel tuples; a machine appears at most once.
    """

    machines: tuple[int, ...]
    workers: tuple[int, ...]
    ps: tuple[int, ...]

    @property
    def total_workers(self) -> int:
        return sum(self.workers)

    @property
    def total_ps(self) -> int:
        return sum(self.ps)

    @classmethod
    def from_counts(cls, workers: Mapping[int, int], ps: Mapping[int, int]) -> Placement:
        """Merge per-machine dicts into sorted parallel tuples (zeros dropped)."""
        machines = sorted({m for m, v in workers.items() if v} | {m for m, v in ps.items() if v})
        return cls(
            tuple(machines),
            tuple(int(workers.get(m, 0)) for m in machines),
            tuple(int(ps.get(m, 0)) for m in machines),
        )


def _frozen_ints(name: str, a: object) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise ValueError(f"PlacementTable.{name} must be a 1-D integer array, not {arr.dtype}")
    if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise ValueError(f"PlacementTable.{name} holds a value beyond int64")
    # an immutable copy (bytes-backed, as the engine's frozen arrays): no one can rewrite it
    return np.frombuffer(np.ascontiguousarray(arr, dtype=np.int64).tobytes(), dtype=np.int64)


@dataclass(frozen=True, eq=False)
class PlacementTable(Mapping[int, Placement]):
    """Many jobs' placements as flat integer arrays, for ``ClusterDecision.allocations``.

    Job ``jobs[k]`` holds ``machines[a:b]`` with ``workers[a:b]`` and ``ps[a:b]``,
    ``a, b = offsets[k], offsets[k + 1]``.  It is a ``Mapping[int, Placement]``
    (each :class:`Placement` built when looked up), so it stands wherever a
    dict of placements does; the ``cluster`` engine reads its arrays at once,
    without a Python object per job or per machine — what a scheduler that
    places hundreds of jobs a decision on thousands of machines (FIFO) pays
    least for.  The arrays are immutable copies; the engine still reads and
    checks them as it reads every placement.
    """

    jobs: np.ndarray
    offsets: np.ndarray
    machines: np.ndarray
    workers: np.ndarray
    ps: np.ndarray

    def __post_init__(self) -> None:
        for name in ("jobs", "offsets", "machines", "workers", "ps"):
            object.__setattr__(self, name, _frozen_ints(name, getattr(self, name)))
        n, k = len(self.jobs), len(self.machines)
        o = self.offsets
        if not (
            len(o) == n + 1
            and o[0] == 0
            and o[-1] == k
            and (np.diff(o) >= 0).all()
            and len(self.workers) == len(self.ps) == k
        ):
            raise ValueError(
                "PlacementTable: offsets must rise from 0 to len(machines), one more than jobs,"
                " and machines, workers, ps must be as long as each other"
            )
        object.__setattr__(self, "_row", None)  # job -> row, built on the first lookup

    def __len__(self) -> int:
        return len(self.jobs)

    def __iter__(self):
        return iter(self.jobs.tolist())

    def __getitem__(self, job: int) -> Placement:
        row = self._row  # type: ignore[attr-defined]  # _row is set in __post_init__ with object.__setattr__ (frozen)
        if row is None:
            row = dict(zip(self.jobs.tolist(), range(len(self.jobs)), strict=True))
            object.__setattr__(self, "_row", row)
        k = row[job]
        a, b = int(self.offsets[k]), int(self.offsets[k + 1])
        return Placement(
            tuple(self.machines[a:b].tolist()),
            tuple(self.workers[a:b].tolist()),
            tuple(self.ps[a:b].tolist()),
        )


_EMPTY: Mapping[int, Placement] = MappingProxyType({})


@dataclass(frozen=True)
class ClusterDecision:
    """A slot's decision.

    * ``admit`` / ``reject``: ids of *pending* jobs (arrived, not yet decided).
      A rejected job can never run; allocating to a pending job admits it.
      Jobs may stay pending (queued) as long as the scheduler likes.
    * ``allocations``: job id → placement for this slot only (a dict, or a
      :class:`PlacementTable` holding many placements as arrays).
    * ``until``: event-driven time.  ``None`` (default): ask again next slot.
      A slot k > this slot: the scheduler promises that, asked at any slot
      before k at which no job has arrived and none has completed since this
      decision, it would return these same allocations (same placements, same
      order) and nothing to admit or reject; the engine then applies them to
      those slots in bulk without asking (``horizon``: until the next arrival
      or completion).  The engine still checks and credits every slot as it
      would slot by slot, so results are identical either way.
    """

    allocations: Mapping[int, Placement] = field(default_factory=lambda: _EMPTY)
    admit: tuple[int, ...] = ()
    reject: tuple[int, ...] = ()
    until: int | None = None
