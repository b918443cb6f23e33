"""The ``edge-cloud`` setting of A_online (Wang et al., Sec. III; storage of Sec. VI).

* S edge servers ``0..S-1``; server s has workers ``[W_s]`` and PSs ``[P_s]``,
  each of one *type* (Sec. V: 8–10 types, drawn per slot).  The cloud ``s_c``
  is server index ``S`` with unlimited workers and PSs of every type.
* A job j: D_j equal chunks × B_j mini-batches, E_j epochs, arrival r_j,
  per-server transfer delay Δ_js (a tuple of S + 1 values, the last the
  cloud's), worker type and PS type (``v_jsw = 1`` iff the worker's type is the
  job's, ``o_jsp`` likewise; cloud slots qualify for every type), the timing
  parameters of Eq. (1): m_j (slots per mini-batch), G_j (slots per update),
  q_j (MB of gradients), b_j (Mbps), and u_j (GB per chunk, Sec. VI).
* Optional storage capacity U_s (GB, Sec. VI, constraint (7b)); ``None`` =
  unlimited.  The cloud's storage is unlimited.

Units: one slot = one hour (Sec. V-A), m and G in slots, q/b converted by
:mod:`dmlsched.model.speed.aonline`.

:class:`EdgeCloudDecision` is what a scheduler returns per slot; the engine
validates it against (2a)–(2k) and (7a)–(7e).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from dmlsched.errors import InvalidInput

__all__ = [
    "EdgeCloud",
    "EdgeCloudDecision",
    "EdgeCloudWorkload",
    "EdgeJob",
]


def _check_int(name: str, v: object, lo: int, where: str) -> None:
    if not isinstance(v, int | np.integer) or isinstance(v, bool) or v < lo:
        raise InvalidInput(name, v, f"integer >= {lo}", where)


def _check_pos(name: str, v: float, where: str, *, strict: bool = True) -> None:
    ok = isinstance(v, int | float | np.floating | np.integer) and math.isfinite(v)
    ok = ok and (v > 0 if strict else v >= 0)
    if not ok:
        raise InvalidInput(name, v, "finite and > 0" if strict else "finite and >= 0", where)


@dataclass(frozen=True)
class EdgeCloud:
    """Edge servers with typed worker and PS slots, plus the unlimited cloud.

    ``worker_types[s]`` lists the type of each worker w ∈ [W_s] of edge server
    s (``ps_types`` likewise for [P_s]); ``storage[s]`` is U_s in GB or
    ``None`` for unlimited storage everywhere.  ``speedup`` is the (1 + ε)
    speed augmentation of Definition 1 applied to every worker's n_j (1 = none).
    """

    worker_types: tuple[tuple[int, ...], ...]
    ps_types: tuple[tuple[int, ...], ...]
    n_types: int
    storage: tuple[float, ...] | None = None
    speedup: float = 1.0

    def __post_init__(self) -> None:
        if len(self.worker_types) < 1:
            raise InvalidInput("servers", len(self.worker_types), ">= 1 edge server")
        if len(self.ps_types) != len(self.worker_types):
            raise InvalidInput("ps_types", len(self.ps_types), f"{len(self.worker_types)} servers")
        _check_int("n_types", self.n_types, 1, "edge-cloud")
        for name, table in (("worker_types", self.worker_types), ("ps_types", self.ps_types)):
            for s, row in enumerate(table):
                for k in row:
                    if not isinstance(k, int | np.integer) or not 0 <= k < self.n_types:
                        raise InvalidInput(
                            f"{name}[{s}]", k, f"integer type in [0, {self.n_types})"
                        )
        if self.storage is not None:
            if len(self.storage) != len(self.worker_types):
                raise InvalidInput("storage", len(self.storage), f"{self.servers} values (U_s)")
            for s, u in enumerate(self.storage):
                if not (u >= 0):
                    raise InvalidInput(f"storage[{s}]", u, ">= 0 GB")
        if not (self.speedup >= 1.0 and math.isfinite(self.speedup)):
            raise InvalidInput("speedup", self.speedup, "finite and >= 1 (1 + ε)")
        # Flat worker index: gid = worker_offset[s] + w, for fast engine checks.
        sizes = [len(r) for r in self.worker_types]
        off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        kinds = np.array([k for r in self.worker_types for k in r], dtype=np.int64)
        srv = np.repeat(np.arange(len(sizes)), sizes).astype(np.int64)
        for a in (off, kinds, srv):
            a.setflags(write=False)
        object.__setattr__(self, "_worker_offset", off)
        object.__setattr__(self, "_worker_kind", kinds)
        object.__setattr__(self, "_worker_server", srv)

    @property
    def servers(self) -> int:
        """S, the number of edge servers (the cloud is index ``S``)."""
        return len(self.worker_types)

    @property
    def cloud(self) -> int:
        """Index of s_c."""
        return len(self.worker_types)

    @property
    def worker_offset(self) -> np.ndarray:
        return self._worker_offset  # type: ignore[attr-defined]  # set in __post_init__ with object.__setattr__ (frozen)

    @property
    def worker_kind(self) -> np.ndarray:
        """Type of every edge worker by flat id."""
        return self._worker_kind  # type: ignore[attr-defined]  # set in __post_init__ with object.__setattr__ (frozen)

    @property
    def worker_server(self) -> np.ndarray:
        return self._worker_server  # type: ignore[attr-defined]  # set in __post_init__ with object.__setattr__ (frozen)

    @property
    def edge_workers(self) -> int:
        return int(self.worker_offset[-1])

    def worker_gid(self, server: int, worker: int) -> int:
        return int(self.worker_offset[server]) + worker

    def qualified_workers(self, worker_type: int) -> list[tuple[int, int]]:
        """(s, w) with v_jsw = 1 on the edge for a job of ``worker_type``."""
        return [
            (s, w)
            for s, row in enumerate(self.worker_types)
            for w, k in enumerate(row)
            if k == worker_type
        ]

    def storage_of(self, server: int) -> float:
        if self.storage is None or server == self.cloud:
            return math.inf
        return float(self.storage[server])

    def with_speedup(self, speedup: float) -> EdgeCloud:
        return EdgeCloud(self.worker_types, self.ps_types, self.n_types, self.storage, speedup)


@dataclass(frozen=True)
class EdgeJob:
    """One ML job (Table I).  ``delay[s]`` = Δ_js in slots, ``delay[S]`` the cloud's."""

    id: int
    arrival: int  # r_j
    chunks: int  # D_j
    minibatches: int  # B_j
    epochs: int  # E_j
    m: float  # m_j, slots per mini-batch on one worker
    G: float  # G_j, slots per PS update
    q_mb: float  # q_j, MB of gradients/parameters
    b_mbps: float  # b_j, Mbps reserved bandwidth
    worker_type: int
    ps_type: int
    delay: tuple[int, ...]  # Δ_js, s ∈ [S] ∪ {s_c}
    chunk_gb: float = 0.0  # u_j (Sec. VI)
    model: str = ""

    def __post_init__(self) -> None:
        w = f"job {self.id}"
        _check_int("arrival", self.arrival, 0, w)
        for name in ("chunks", "minibatches", "epochs"):
            _check_int(name, getattr(self, name), 1, w)
        _check_pos("m", self.m, w)
        _check_pos("G", self.G, w, strict=False)
        _check_pos("q_mb", self.q_mb, w, strict=False)
        _check_pos("b_mbps", self.b_mbps, w)
        _check_pos("chunk_gb", self.chunk_gb, w, strict=False)
        _check_int("worker_type", self.worker_type, 0, w)
        _check_int("ps_type", self.ps_type, 0, w)
        if len(self.delay) < 2:
            raise InvalidInput("delay", self.delay, "Δ_js for every edge server and the cloud", w)
        for s, d in enumerate(self.delay):
            _check_int(f"delay[{s}]", d, 0, w)

    @property
    def work_per_chunk(self) -> float:
        """E_j·B_j mini-batches to train one chunk (constraint (4a))."""
        return float(self.epochs) * float(self.minibatches)


@dataclass(frozen=True)
class EdgeCloudWorkload:
    """An instance: jobs by arrival, the system and a horizon cap T (slots)."""

    jobs: tuple[EdgeJob, ...]
    system: EdgeCloud
    horizon: int
    source: str = "synthetic"
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_int("slots", self.horizon, 1, "edge-cloud workload")
        ids = [j.id for j in self.jobs]
        if len(set(ids)) != len(ids):
            raise InvalidInput("job.id", ids, "unique ids")
        S = self.system.servers
        for j in self.jobs:
            if len(j.delay) != S + 1:
                raise InvalidInput(
                    "delay", len(j.delay), f"{S + 1} values (S edge + cloud)", f"job {j.id}"
                )
            for name in ("worker_type", "ps_type"):
                if getattr(j, name) >= self.system.n_types:
                    raise InvalidInput(
                        name, getattr(j, name), f"< n_types={self.system.n_types}", f"job {j.id}"
                    )
            if j.arrival >= self.horizon:
                raise InvalidInput("arrival", j.arrival, f"< slots={self.horizon}", f"job {j.id}")

    def with_speedup(self, speedup: float) -> EdgeCloudWorkload:
        return EdgeCloudWorkload(
            self.jobs, self.system.with_speedup(speedup), self.horizon, self.source, self.notes
        )


Slot = tuple[int, int]  # (server, worker) or (server, ps); server S = cloud
_EMPTY: Mapping = MappingProxyType({})


@dataclass(frozen=True)
class EdgeCloudDecision:
    """One slot's decision.

    * ``dispatch`` — job id → one ``(server, worker)`` per chunk, for jobs not
      yet dispatched (all chunks at once; fixed forever: no data migration).
      A cloud chunk is ``(S, 0)``: the cloud gives each chunk its own worker.
    * ``run`` — job id → chunk indices each trained this slot by its worker
      (y_jdsw(t) = 1).
    * ``ps`` — job id → ``(server, ps)`` for every job in ``run`` (z_jsp(t)).
    """

    dispatch: Mapping[int, tuple[Slot, ...]] = field(default_factory=lambda: _EMPTY)
    run: Mapping[int, tuple[int, ...]] = field(default_factory=lambda: _EMPTY)
    ps: Mapping[int, Slot] = field(default_factory=lambda: _EMPTY)
