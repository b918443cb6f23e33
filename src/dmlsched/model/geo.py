"""The ``geo`` setting of mlBroker (Li et al., Sec. 3): data centers, jobs, costs.

Instance data (Table 1):

* :class:`GeoSites` — R data centers × K resource types with the
  volume-discount price F_k^r of Eq. (2) (a_k^r, b_k^r < a_k^r, threshold
  l_k^r, e_k^r = (a_k^r − b_k^r) l_k^r) and the transfer cost d^{rr'} per GB
  (d^{rr} = 0);
* :class:`GeoJob` — arrival t_i, lifetime, per-slot per-DC data D_i^r(t) (GB),
  worker capacity P_i (GB per slot, :mod:`dmlsched.model.speed.mlbroker`),
  per-worker / per-PS demands n_{i,k} / m_{i,k}, exchange size B_i (GB per
  worker–PS pair per slot) and deployment cost c_i (USD per new DC);
* :class:`GeoPlacement` / :class:`GeoDecision` — what a scheduler returns for
  one slot: integer workers y_i^r(t), the PS site (s_i^r(t) = 1 for exactly
  one r, Eq. (8f)) and data moves q_i^{rr'}(t).

The four cost parts are pure functions of the decisions (Eq. (1), (3), (5),
(6)); :func:`price` is Eq. (2) and :func:`price_min_form` its reformulation
min{a h, b h + e} of Sec. 3.3 (equal for every h ≥ 0 because e = (a − b) l).

Decisions made here (the paper leaves them open):

* Prices are per slot: a workload builder converts the paper's USD/day to
  USD/slot; F_k^r applies to the amount rented *in the slot* (Eq. (3)).
* A job is active (∈ I_t) in slots ``arrival ≤ t < arrival + duration``;
  ``data[t − arrival]`` holds D_i^r(t) for every r.
* The engine derives the worker–PS connections g_i^{rr'}(t) = y_i^r(t)·s_i^{r'}(t)
  (Sec. 3.2: one connection between each worker and the job's single PS;
  it is also Step 3 of A_round), so (8i) and (8j) reduce to Σ_r y_i^r(t) ≥
  ⌈Σ_r D_i^r(t)/P_i⌉.
* Deployment: v_i^r(t) = 1 iff y_i^r(t) + s_i^r(t) > 0 (the smallest binary
  meeting (8g)); v_i^r(t_i − 1) = 0, so a job pays c_i for every DC it uses in
  its first slot.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from dmlsched.errors import InvalidInput

__all__ = [
    "GEO_RESOURCES",
    "GeoDecision",
    "GeoJob",
    "GeoPlacement",
    "GeoSites",
    "GeoWorkload",
    "communication_cost",
    "connections",
    "deploy_cost",
    "deployed",
    "price",
    "price_min_form",
    "resource_cost",
    "transfer_cost",
    "usage",
]

GEO_RESOURCES: tuple[str, ...] = ("gpu", "cpu", "mem", "storage")


def _array(name: str, value: object, shape: tuple[int, ...], where: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if arr.shape != shape:
        raise InvalidInput(f"{name}.shape", arr.shape, str(shape), where)
    if not np.all(np.isfinite(arr)):
        raise InvalidInput(name, value, "finite numbers", where)
    arr = arr.copy()
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class GeoSites:
    """R data centers, K resource types, Eq. (2) prices, transfer costs d^{rr'}."""

    a: np.ndarray  # (R, K) list price a_k^r per unit per slot
    b: np.ndarray  # (R, K) discounted price b_k^r < a_k^r
    l: np.ndarray  # (R, K) threshold l_k^r
    d: np.ndarray  # (R, R) USD per GB moved, zero diagonal
    resources: tuple[str, ...] = GEO_RESOURCES

    def __post_init__(self) -> None:
        a = np.asarray(self.a, dtype=float)
        if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
            raise InvalidInput("a.shape", a.shape, "(R >= 1, K >= 1)", "sites")
        R, K = a.shape
        if len(self.resources) != K:
            raise InvalidInput("resources", self.resources, f"{K} names", "sites")
        for name, shape in (("a", (R, K)), ("b", (R, K)), ("l", (R, K)), ("d", (R, R))):
            object.__setattr__(self, name, _array(name, getattr(self, name), shape, "sites"))
        if np.any(self.a <= 0):
            raise InvalidInput("a", self.a.min(), "> 0", "sites")
        if np.any(self.b <= 0) or np.any(self.b > self.a):
            bad = np.argwhere((self.b <= 0) | (self.b > self.a))[0]
            raise InvalidInput(
                f"b[{bad[0]},{bad[1]}]", float(self.b[tuple(bad)]), "0 < b <= a", "sites"
            )
        if np.any(self.l < 0):
            raise InvalidInput("l", float(self.l.min()), ">= 0", "sites")
        if np.any(self.d < 0) or np.any(np.diag(self.d) != 0):
            raise InvalidInput("d", self.d.tolist(), "d >= 0 with d[r][r] = 0", "sites")

    @property
    def dcs(self) -> int:
        return int(self.a.shape[0])

    @property
    def kinds(self) -> int:
        return int(self.a.shape[1])

    @property
    def e(self) -> np.ndarray:
        """e_k^r = a_k^r l_k^r − b_k^r l_k^r (Eq. (2))."""
        return (self.a - self.b) * self.l


@dataclass(frozen=True, eq=False)
class GeoJob:
    """One geo-distributed ML job (Sec. 3.1)."""

    id: int
    arrival: int  # t_i
    data: np.ndarray  # (duration, R): D_i^r(t_i + τ), GB
    capacity: float  # P_i, GB a worker trains per slot
    worker_demand: tuple[float, ...]  # n_{i,k}
    ps_demand: tuple[float, ...]  # m_{i,k}
    exchange_gb: float  # B_i
    deploy_cost: float  # c_i
    model: str = ""

    def __post_init__(self) -> None:
        where = f"job {self.id}"
        if int(self.arrival) != self.arrival or self.arrival < 0:
            raise InvalidInput("arrival", self.arrival, "integer slot >= 0", where)
        data = np.asarray(self.data, dtype=float)
        if data.ndim != 2 or data.shape[0] < 1:
            raise InvalidInput("data.shape", data.shape, "(duration >= 1, R)", where)
        if not np.all(np.isfinite(data)) or np.any(data < 0):
            raise InvalidInput("data", float(np.nanmin(data)), "finite GB >= 0", where)
        data = data.copy()
        data.setflags(write=False)
        object.__setattr__(self, "data", data)
        for name in ("capacity", "exchange_gb", "deploy_cost"):
            v = getattr(self, name)
            ok = (v > 0 if name == "capacity" else v >= 0) and math.isfinite(v)
            if not ok:
                raise InvalidInput(name, v, "> 0" if name == "capacity" else ">= 0", where)
        if len(self.worker_demand) != len(self.ps_demand):
            raise InvalidInput(
                "ps_demand",
                self.ps_demand,
                f"{len(self.worker_demand)} values like worker_demand",
                where,
            )
        for name in ("worker_demand", "ps_demand"):
            vals = getattr(self, name)
            if any((not math.isfinite(v)) or v < 0 for v in vals):
                raise InvalidInput(name, vals, "finite values >= 0", where)
            object.__setattr__(self, name, tuple(float(v) for v in vals))

    @property
    def duration(self) -> int:
        return int(self.data.shape[0])

    def active(self, t: int) -> bool:
        return self.arrival <= t < self.arrival + self.duration

    def data_at(self, t: int) -> np.ndarray:
        """D_i^r(t) for every r (zeros outside the job's lifetime)."""
        if not self.active(t):
            return np.zeros(self.data.shape[1])
        return self.data[t - self.arrival]

    def workers_needed(self, t: int) -> int:
        """⌈Σ_r D_i^r(t) / P_i⌉, the right-hand side of (8j)."""
        from dmlsched.model.speed.mlbroker import workers_needed

        return workers_needed(float(self.data_at(t).sum()), self.capacity)


@dataclass(frozen=True, eq=False)
class GeoWorkload:
    """Sites, jobs and horizon T; job data must cover R data centers."""

    sites: GeoSites
    jobs: tuple[GeoJob, ...]
    horizon: int
    notes: tuple[str, ...] = ()  # provenance of the data (e.g. which trace gave arrivals)

    def __post_init__(self) -> None:
        if int(self.horizon) != self.horizon or self.horizon < 1:
            raise InvalidInput("horizon", self.horizon, "integer >= 1", "workload")
        seen: set[int] = set()
        for j in self.jobs:
            if j.id in seen:
                raise InvalidInput("job id", j.id, "unique ids", "workload")
            seen.add(j.id)
            if j.data.shape[1] != self.sites.dcs:
                raise InvalidInput(
                    "data.shape", j.data.shape, f"(duration, {self.sites.dcs})", f"job {j.id}"
                )
            if len(j.worker_demand) != self.sites.kinds:
                raise InvalidInput(
                    "worker_demand", j.worker_demand, f"{self.sites.kinds} values", f"job {j.id}"
                )
        object.__setattr__(self, "jobs", tuple(self.jobs))

    def active(self, t: int) -> list[GeoJob]:
        """I_t, by arrival then id."""
        return sorted((j for j in self.jobs if j.active(t)), key=lambda j: (j.arrival, j.id))


@dataclass(frozen=True, eq=False)
class GeoPlacement:
    """One job's slot decision: y_i^r(t), the PS site, q_i^{rr'}(t)."""

    workers: tuple[int, ...]  # y_i^r(t), length R
    ps: int  # r with s_i^r(t) = 1
    transfers: np.ndarray  # (R, R) q_i^{rr'}(t), GB

    def __post_init__(self) -> None:
        q = np.array(self.transfers, dtype=float)
        q.setflags(write=False)
        object.__setattr__(self, "transfers", q)
        object.__setattr__(self, "workers", tuple(self.workers))


@dataclass(frozen=True)
class GeoDecision:
    """Placements for every active job of the slot, by job id."""

    placements: Mapping[int, GeoPlacement] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "placements", MappingProxyType(dict(self.placements)))


# ---------------------------------------------------------------- cost functions


def price(
    h: np.ndarray | float, a: np.ndarray | float, b: np.ndarray | float, l: np.ndarray | float
) -> np.ndarray:
    """Eq. (2): F(h) = a h on [0, l], b h + e above l, with e = (a − b) l."""
    h = np.asarray(h, dtype=float)
    e = (np.asarray(a) - np.asarray(b)) * np.asarray(l)
    return np.where(h <= l, np.asarray(a) * h, np.asarray(b) * h + e)


def price_min_form(
    h: np.ndarray | float, a: np.ndarray | float, b: np.ndarray | float, e: np.ndarray | float
) -> np.ndarray:
    """Sec. 3.3 reformulation: F(h) = min{a h, b h + e} (the x of (7) at optimum)."""
    h = np.asarray(h, dtype=float)
    return np.minimum(np.asarray(a) * h, np.asarray(b) * h + np.asarray(e))


def usage(y: np.ndarray, s: np.ndarray, n: np.ndarray, m: np.ndarray) -> np.ndarray:
    """h_k^r = Σ_i n_{i,k} y_i^r + m_{i,k} s_i^r, shape (R, K); y, s are (I, R)."""
    # summed over jobs elementwise, not by ``@``: BLAS's order depends on the CPU, and the
    # bits of a cost must not (:mod:`dmlsched.numerics`, which model may not import)
    y, s = np.asarray(y, float), np.asarray(s, float)
    n, m = np.asarray(n, float), np.asarray(m, float)
    return (y[:, :, None] * n[:, None, :]).sum(axis=0) + (s[:, :, None] * m[:, None, :]).sum(axis=0)


def transfer_cost(q: np.ndarray, d: np.ndarray) -> float:
    """Eq. (1): C_1(t) = Σ_i Σ_r Σ_r' d^{rr'} q_i^{rr'}(t); q is (I, R, R)."""
    return float(np.einsum("irs,rs->", np.asarray(q, float), d)) if np.size(q) else 0.0


def resource_cost(h: np.ndarray, sites: GeoSites) -> float:
    """Eq. (3): C_2(t) = Σ_r Σ_k F_k^r(h_k^r)."""
    return float(price(h, sites.a, sites.b, sites.l).sum())


def deployed(y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """v_i^r(t): the smallest binary with U v ≥ y + s, (8g)."""
    return ((np.asarray(y) + np.asarray(s)) > 0).astype(float)


def deploy_cost(v_prev: np.ndarray, v: np.ndarray, c: np.ndarray) -> float:
    """Eq. (4)–(5): C_3(t) = Σ_i Σ_r c_i max{v_i^r(t) − v_i^r(t−1), 0}."""
    z = np.maximum(np.asarray(v, float) - np.asarray(v_prev, float), 0.0)
    return float((np.asarray(c, float) * z.sum(axis=1)).sum()) if z.size else 0.0


def connections(y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """g_i^{rr'}(t) = y_i^r(t) s_i^{r'}(t), shape (I, R, R) (A_round Step 3)."""
    return np.asarray(y, float)[:, :, None] * np.asarray(s, float)[:, None, :]


def communication_cost(g: np.ndarray, d: np.ndarray, exchange: np.ndarray) -> float:
    """Eq. (6): C_4(t) = Σ_i Σ_r Σ_r' d^{rr'} B_i g_i^{rr'}(t)."""
    if not np.size(g):
        return 0.0
    return float(np.einsum("irs,rs,i->", np.asarray(g, float), d, np.asarray(exchange, float)))
