"""The cheat catalogue: one lie per entry, each refused or gaining nothing.

Each cheat replays the decisions of an honest run (:class:`~.replay.Replay`)
and then lies, in one way of its own: in what it returns (types that lie,
mappings that repeat a job, values that are not numbers, a decision over
capacity) or in what it was shown (frozen jobs and systems changed with
``object.__setattr__``, arrays made writable, the dicts behind mapping
proxies rewritten).  A lie in the decision must end in
:class:`~dmlsched.errors.InvalidDecision` (whose message matches ``match``
when given); a lie about what it was shown must leave the run byte-identical
to the honest one.  :func:`dmlsched.check_scheduler` runs every cheat of a
setting on the decisions of the scheduler it checks, through every driver.
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from dmlsched.checks.replay import Hook, Replay
from dmlsched.checks.tampering import Twice, must_stay_read_only, vandalize, vandalized
from dmlsched.model.cluster import ClusterDecision, Placement
from dmlsched.model.geo import GeoDecision, GeoPlacement
from dmlsched.model.interval import IntervalDecision
from dmlsched.model.utility import Sigmoid

__all__ = [
    "CHEATS",
    "Cheat",
    "DuckPlacement",
    "Endless",
    "OnesTuple",
    "Raising",
    "TwiceDict",
    "UnderReporting",
    "bend_jobs",
    "cheats_of",
    "geo_set",
    "on_first",
    "wrap",
]


class TwiceDict(dict):
    """A real dict whose ``items()`` repeats the first entry."""

    def items(self) -> Iterator:  # type: ignore[override]
        first = True
        for k, v in dict.items(self):
            yield k, v
            if first:
                yield k, v
                first = False


class Endless(Mapping):
    """A mapping that never stops yielding new job ids."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __getitem__(self, k: Any) -> Any:
        return self.value

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator:
        return itertools.count()

    def items(self) -> Iterator:  # type: ignore[override]
        return ((i, self.value) for i in itertools.count())


class Raising(Mapping):
    """A mapping whose items() raises KeyError midway."""

    def __getitem__(self, k: Any) -> Any:
        raise KeyError(k)

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator:
        return iter((0,))

    def items(self) -> Iterator:  # type: ignore[override]
        raise KeyError("gone")


class UnderReporting(Placement):
    """A Placement subclass that reports one worker whatever it holds."""

    @property
    def total_workers(self) -> int:
        return 1

    @property
    def total_ps(self) -> int:
        return 1


@dataclass(frozen=True)
class DuckPlacement:
    """Looks like a Placement to duck typing, reports one worker."""

    machines: tuple[int, ...]
    workers: tuple[int, ...]
    ps: tuple[int, ...]
    total_workers: int = 1
    total_ps: int = 1


class OnesTuple(tuple):
    """A tuple whose iteration shows 1 for every element."""

    def __iter__(self) -> Iterator:
        return iter((1,) * len(self))

    def __getitem__(self, i: Any) -> Any:
        return 1


class SubClusterDecision(ClusterDecision):
    pass


class SubGeoPlacement(GeoPlacement):
    pass


def on_first(field: str, change: Any) -> Any:
    """A hook applying ``change(j, value, view, sched) -> (j, value)`` to the first entry of
    ``decision.<field>`` in every decision where that mapping is not empty."""

    def on_decide(sched: Replay, view: Any, d: Any) -> Any:
        entries = dict(getattr(d, field))
        if entries:
            j = next(iter(entries))
            v = entries.pop(j)
            j2, v2 = change(j, v, view, sched)
            entries = {j2: v2, **entries}
            object.__setattr__(d, field, entries)
        return d

    return on_decide


def wrap(field: str, wrapper: Any) -> Any:
    """A hook replacing ``decision.<field>`` by ``wrapper(mapping)`` when it is not empty."""

    def on_decide(sched: Replay, view: Any, d: Any) -> Any:
        if getattr(d, field):
            object.__setattr__(d, field, wrapper(dict(getattr(d, field))))
        return d

    return on_decide


def _value(change: Any) -> Any:
    return lambda j, v, view, sched: (j, change(v))


def _mutate_after_validation(sched: Replay, view: Any, d: ClusterDecision) -> Any:
    """Return a validated Placement, then grow it in place and return the same object."""
    kept = sched.state_.get("kept")
    if kept is not None:
        j, p = kept
        if j in view.active:
            object.__setattr__(p, "workers", tuple(w + 1000 for w in p.workers))
            return ClusterDecision({**d.allocations, j: p}, d.admit, d.reject)
    if d.allocations and kept is None:
        sched.state_["kept"] = next(iter(d.allocations.items()))
    return d


def _rewrite_last_decision(sched: Replay, view: Any, d: Any) -> Any:
    """Keep last slot's mapping and change it after the engine read it."""
    prev = sched.state_.get("prev")
    if prev is not None:
        for k in list(prev):
            prev[k] = Placement((0,), (10**6,), (10**6,))
        prev[10**9] = Placement((0,), (1,), (1,))
    sched.state_["prev"] = d.allocations
    return d


def _steal_engine_dicts(sched: Replay, view: Any, d: Any) -> Any:
    """Rewrite the dicts behind every mapping proxy the view holds (gc.get_referents)."""
    for m in (view.jobs, view.remaining):
        for inner in gc.get_referents(m):
            if isinstance(inner, dict):
                for k, v in list(inner.items()):
                    if hasattr(v, "epochs"):
                        inner[k] = dataclasses.replace(v, epochs=1, samples=1)
                    else:
                        inner[k] = 0.0
    return d


def bend_jobs(**fields: Any) -> Any:
    def on_decide(sched: Replay, view: Any, d: Any) -> Any:
        for job in list(view.jobs.values() if isinstance(view.jobs, Mapping) else view.jobs):
            for k, v in fields.items():
                object.__setattr__(job, k, v)
        return d

    return on_decide


def _writable_then_bend(attr: str) -> Any:
    """Try to make the shown array writable (must fail), then swap it for a bigger one."""

    def on_decide(sched: Replay, view: Any, d: Any) -> Any:
        owner = view.cluster if attr == "cluster.capacity" else view
        name = attr.split(".")[-1]
        arr = getattr(owner, name)
        if sched.state_.setdefault("swapped", False):
            return d  # the array is ours now
        sched.state_["swapped"] = True
        must_stay_read_only(arr)
        object.__setattr__(owner, name, np.asarray(arr) * 1000.0)
        return d

    return on_decide


def _bend_static(**fields: Any) -> Any:
    def on_reset(sched: Replay, static: Any, *rest: Any) -> None:
        for k, v in fields.items():
            object.__setattr__(static, k, v(getattr(static, k)) if callable(v) else v)

    return on_reset


def _interval_loosen_limit(sched: Replay, view: Any, d: IntervalDecision) -> Any:
    """Raise a job's user limit in the view, then use the raised limit."""
    job = view.jobs[0]
    object.__setattr__(job, "limit", tuple(v * 1e6 for v in job.limit))
    return IntervalDecision({**d.allocations, job.id: (10**5, 10**5)})


def _interval_bend_capacity(sched: Replay, view: Any, d: Any) -> Any:
    must_stay_read_only(view.capacity)
    object.__setattr__(view, "capacity", np.asarray(view.capacity) * 1e6)
    vandalize(view.jobs)
    return d


def _edge_mark_all_finished(sched: Replay, view: Any, d: Any) -> Any:
    for inner in gc.get_referents(view.finished):
        if isinstance(inner, dict):
            inner.update({j: 0 for j in range(100)})
    return d


def _edge_bend_shown(sched: Replay, view: Any, d: Any) -> Any:
    for a in view.remaining.values():
        must_stay_read_only(a)
    vandalize(view)
    return d


def _geo_placement(change: Any) -> Any:
    return on_first("placements", _value(change))


def geo_set(field: str, value: Any) -> Any:
    def change(p: GeoPlacement) -> GeoPlacement:
        object.__setattr__(p, field, value(p) if callable(value) else value)
        return p

    return _geo_placement(change)


def _geo_claim_capacity(sched: Replay, view: Any, d: GeoDecision) -> Any:
    """Claim 1000× the worker capacity P_i in the view, then use one worker for all data."""
    if not d.placements:
        return d  # nothing to claim it for
    out = {}
    for j, p in d.placements.items():
        object.__setattr__(view.jobs[j], "capacity", view.jobs[j].capacity * 1000)
        D = np.asarray(view.data[j])
        q = np.zeros((D.size, D.size))
        q[:, p.ps] = D
        w = [0] * D.size
        w[p.ps] = 1
        out[j] = GeoPlacement(tuple(w), p.ps, q)
    return GeoDecision(out)


def _pack_on_machine_0(zero_demands: bool) -> Hook:
    """Every pending and active job on machine 0 with F workers (Eq. (5) can't hold); with
    ``zero_demands``, first the demands of every job shown set to 0 (object.__setattr__)."""

    def on_decide(sched: Replay, view: Any, d: ClusterDecision) -> ClusterDecision:
        if zero_demands:
            for job in view.jobs.values():
                for f in ("worker_demand", "ps_demand"):
                    object.__setattr__(job, f, (0.0,) * len(getattr(job, f)))
        alloc = {}
        for j in (*view.pending, *view.active):
            job = view.jobs[j]
            w = job.max_workers
            alloc[j] = Placement((0,), (w,), (job.min_ps(w),))
        return ClusterDecision(alloc) if alloc else d

    return on_decide


_SUBCLASSES: dict[type, type] = {}


def _as_subclass(sched: Replay, view: Any, d: Any) -> Any:
    """The same decision as an instance of a subclass of its class."""
    cls = type(d)
    sub = _SUBCLASSES.setdefault(cls, type("Sub" + cls.__name__, (cls,), {}))
    return sub(*(getattr(d, f) for f in d.__dataclass_fields__))


@dataclass(frozen=True)
class Cheat:
    """One lie: ``on_decide(replay, view, decision) -> decision`` and/or
    ``on_reset(replay, *reset_args)`` (hooks of :class:`~.replay.Replay`)."""

    name: str
    setting: str
    refused: bool  # True: InvalidDecision; False: byte-identical to the honest run
    on_decide: Hook | None = None
    on_reset: Hook | None = None
    match: str | None = None  # a regular expression the refusal's message must match


NAN, INF = math.nan, math.inf
CHEATS = [
    # ---- cluster: the decision lies
    Cheat(
        "placement-subclass-under-reports-workers",
        "cluster",
        True,
        on_first(
            "allocations",
            _value(lambda p: UnderReporting(p.machines, tuple(w * 4 for w in p.workers), p.ps)),
        ),
        match="exactly Placement",
    ),
    Cheat(
        "duck-typed-placement",
        "cluster",
        True,
        on_first("allocations", _value(lambda p: DuckPlacement(p.machines, p.workers, p.ps))),
        match="exactly Placement",
    ),
    Cheat("mapping-yields-job-twice", "cluster", True, wrap("allocations", Twice), match="twice"),
    Cheat("dict-subclass-yields-job-twice", "cluster", True, wrap("allocations", TwiceDict)),
    Cheat(
        "bool-job-id",
        "cluster",
        True,
        on_first("allocations", lambda j, p, v, s: (j == 1, p)),  # False == 0 as a dict key
        match="not an integer",
    ),
    Cheat(
        "float-worker-counts",
        "cluster",
        True,
        on_first(
            "allocations",
            # the lie: float counts where the protocol says int
            _value(lambda p: Placement(p.machines, tuple(map(float, p.workers)), p.ps)),  # type: ignore[arg-type]
        ),
        match="non-negative integer",
    ),
    Cheat(
        "numpy-float-ps-counts",
        "cluster",
        True,
        on_first(
            "allocations",
            # the lie: numpy floats where the protocol says int
            _value(lambda p: Placement(p.machines, p.workers, tuple(np.float64(s) for s in p.ps))),  # type: ignore[misc]
        ),
    ),
    Cheat(
        "astronomical-worker-count",
        "cluster",
        True,
        on_first(
            "allocations",
            _value(lambda p: Placement(p.machines, (10**400,) * len(p.machines), p.ps)),
        ),
    ),
    Cheat(
        "negative-ps-count",
        "cluster",
        True,
        on_first(
            "allocations", _value(lambda p: Placement(p.machines, p.workers, (-1,) * len(p.ps)))
        ),
    ),
    Cheat(
        "tuple-subclass-counts-iterate-as-ones",
        "cluster",
        True,
        on_first(
            "allocations",
            _value(lambda p: Placement(p.machines, OnesTuple(w * 50 for w in p.workers), p.ps)),
        ),
    ),
    Cheat(
        "placement-grown-in-place-after-validation",
        "cluster",
        True,
        _mutate_after_validation,
        match=r"Eq\. 4",
    ),
    Cheat(
        "decision-subclass",
        "cluster",
        True,
        lambda s, v, d: SubClusterDecision(d.allocations, d.admit, d.reject),
        match="expected exactly ClusterDecision",
    ),
    Cheat("no-decision", "cluster", True, lambda s, v, d: None),
    Cheat(
        "zeroed-demands-packed-on-machine-0",
        "cluster",
        True,
        _pack_on_machine_0(True),
        match=r"Eq\. 5",
    ),
    Cheat(
        "every-job-on-machine-0-over-capacity",
        "cluster",
        True,
        _pack_on_machine_0(False),
        match=r"Eq\. 5",
    ),
    Cheat(
        "admit-as-generator",
        "cluster",
        True,
        # the lie: a generator where the protocol says a tuple
        lambda s, v, d: ClusterDecision(d.allocations, (j for j in v.pending), d.reject),  # type: ignore[arg-type]
    ),
    Cheat(
        "endless-mapping",
        "cluster",
        True,
        on_first("allocations", lambda j, p, v, s: (j, p))
        and wrap("allocations", lambda m: Endless(next(iter(m.values())))),
        match="more than the",
    ),
    Cheat(
        "mapping-raises-keyerror",
        "cluster",
        True,
        lambda s, v, d: ClusterDecision(Raising(), d.admit, d.reject),
        match="raised KeyError",
    ),
    Cheat(
        "proxy-over-mapping-yielding-twice",
        "cluster",
        True,
        wrap("allocations", lambda m: MappingProxyType(Twice(m))),
        match="twice",
    ),
    Cheat(
        "proxy-over-raising-mapping",
        "cluster",
        True,
        lambda s, v, d: ClusterDecision(MappingProxyType(Raising()), d.admit, d.reject),
        match="raised KeyError",
    ),
    # ---- cluster: what was shown is changed
    Cheat("shown-job-epochs-cut", "cluster", False, bend_jobs(epochs=1, samples=1)),
    Cheat(
        "shown-job-utility-inflated", "cluster", False, bend_jobs(utility=Sigmoid(1e9, 0.0, 0.0))
    ),
    Cheat(
        "shown-capacity-made-writable-and-swapped",
        "cluster",
        False,
        _writable_then_bend("cluster.capacity"),
    ),
    Cheat(
        "reset-cluster-capacity-swapped",
        "cluster",
        False,
        on_reset=_bend_static(capacity=lambda c: np.asarray(c) * 1000.0),
    ),
    Cheat("dicts-behind-view-proxies-rewritten", "cluster", False, _steal_engine_dicts),
    Cheat("last-decision-rewritten-after-return", "cluster", False, _rewrite_last_decision),
    Cheat("every-shown-object-vandalized", "cluster", False, lambda s, v, d: vandalized(v, d)),
    # ---- interval
    Cheat(
        "interval-mapping-yields-job-five-times",
        "interval",
        True,
        wrap("allocations", lambda m: Twice(m, 5)),
        match="twice",
    ),
    Cheat(
        "interval-bool-counts",
        "interval",
        True,
        on_first("allocations", _value(lambda wp: (True, True))),
    ),
    Cheat(
        "interval-nan-count",
        "interval",
        True,
        on_first("allocations", _value(lambda wp: (NAN, 1))),
    ),
    Cheat(
        "interval-none-count",
        "interval",
        True,
        on_first("allocations", _value(lambda wp: (wp[0], None))),
    ),
    Cheat(
        "interval-pair-as-lying-tuple",
        "interval",
        True,
        on_first("allocations", _value(lambda wp: OnesTuple((wp[0] * 99, wp[1] * 99)))),
    ),
    Cheat(
        "interval-shown-limit-raised-then-used",
        "interval",
        True,
        _interval_loosen_limit,
        match=r"Eq\. 3",
    ),
    Cheat(
        "interval-decision-subclass",
        "interval",
        True,
        _as_subclass,
        match="expected exactly IntervalDecision",
    ),
    Cheat("interval-shown-capacity-and-jobs-bent", "interval", False, _interval_bend_capacity),
    # ---- edge-cloud
    Cheat(
        "edge-system-speedup-bent-in-reset",
        "edge-cloud",
        False,
        on_reset=_bend_static(speedup=100.0, _worker_offset=lambda a: np.asarray(a) * 0),
    ),
    Cheat("edge-finished-dict-stolen", "edge-cloud", False, _edge_mark_all_finished),
    Cheat("edge-shown-objects-vandalized", "edge-cloud", False, _edge_bend_shown),
    Cheat(
        "edge-dispatch-yields-job-twice",
        "edge-cloud",
        True,
        wrap("dispatch", Twice),
        match="twice",
    ),
    Cheat(
        "edge-float-chunk-indices",
        "edge-cloud",
        True,
        on_first("run", _value(lambda c: tuple(float(x) for x in c))),
    ),
    Cheat(
        "edge-decision-subclass",
        "edge-cloud",
        True,
        _as_subclass,
        match="expected exactly EdgeCloudDecision",
    ),
    Cheat("edge-ps-none", "edge-cloud", True, on_first("ps", _value(lambda sp: None))),
    Cheat(
        "edge-chunk-index-beyond-int64",
        "edge-cloud",
        True,
        on_first("run", _value(lambda c: (10**30,))),
        match="out of",
    ),
    Cheat(
        "edge-run-key-numpy-bool",
        "edge-cloud",
        True,
        on_first("run", lambda j, c, v, s: (np.bool_(j), c)),
    ),
    # ---- geo
    Cheat("geo-nan-transfer", "geo", True, geo_set("transfers", lambda p: p.transfers * NAN)),
    Cheat("geo-inf-workers", "geo", True, geo_set("workers", lambda p: (INF,) * len(p.workers))),
    Cheat("geo-none-workers", "geo", True, geo_set("workers", lambda p: (None,) * len(p.workers))),
    Cheat("geo-none-ps-site", "geo", True, geo_set("ps", None), match=r"\(8f\)"),
    Cheat(
        "geo-transfers-list-with-none",
        "geo",
        True,
        geo_set("transfers", lambda p: [[None] * len(p.workers)] * len(p.workers)),
    ),
    Cheat(
        "geo-placement-subclass",
        "geo",
        True,
        _geo_placement(lambda p: SubGeoPlacement(p.workers, p.ps, p.transfers)),
    ),
    Cheat("geo-decision-subclass", "geo", True, _as_subclass, match="expected exactly GeoDecision"),
    Cheat("geo-placements-yield-job-twice", "geo", True, wrap("placements", Twice), match="twice"),
    Cheat(
        "geo-shown-capacity-claimed-then-used", "geo", True, _geo_claim_capacity, match=r"\(8a\)"
    ),
    Cheat(
        "geo-reset-prices-bent",
        "geo",
        False,
        on_reset=_bend_static(a=lambda a: np.asarray(a) * 0 + 1e-9, d=lambda d: np.asarray(d) * 0),
    ),
    Cheat("geo-shown-objects-vandalized", "geo", False, lambda s, v, d: vandalized(v, d)),
]


def cheats_of(setting: str) -> tuple[Cheat, ...]:
    """The catalogue's cheats of one setting."""
    return tuple(c for c in CHEATS if c.setting == setting)
