"""No scheduler can bend the engine: cheats are refused or gain nothing (issue 13).

Each cheat replays an honest scheduler's decisions (:mod:`tests.sim.cheats`)
and then lies, in one way of its own: in what it returns (types that lie,
mappings that repeat a job, values that are not numbers) or in what it was
shown (frozen jobs and systems changed with ``object.__setattr__``, arrays
made writable, the dicts behind mapping proxies rewritten).  A lie in the
decision must end in :class:`InvalidDecision`; a lie about what it was shown
must leave the run byte-identical to the honest one.  The six leaks of the
issue each have a named test below the table.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dmlsched.errors import InvalidDecision
from dmlsched.model.cluster import ClusterDecision, Placement
from dmlsched.model.edge_cloud import EdgeCloudDecision
from dmlsched.model.geo import GeoDecision, GeoPlacement
from dmlsched.model.interval import IntervalDecision
from dmlsched.model.utility import Sigmoid
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.boundary import frozen_array, private_copy, read_int, read_mapping
from dmlsched.sim.engine import simulate
from tests.sim.cheats import Replay, Twice, record, result_bytes, run_rng, tiny, vandalize

HONEST = {"cluster": "fifo", "interval": "esw", "edge-cloud": "a-online", "geo": "local"}


@cache
def honest(setting: str) -> tuple[bytes, list]:
    res, decisions = record(setting, HONEST[setting])
    return result_bytes(res), decisions


def cheat_run(setting: str, on_decide: Any = None, on_reset: Any = None, wl: Any = None) -> bytes:
    sched = Replay(setting, honest(setting)[1], on_decide, on_reset)
    return result_bytes(simulate(setting, tiny(setting) if wl is None else wl, sched, run_rng()))


# ---------------------------------------------------------------- lying types and mappings


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


def _on_first(field: str, change: Any) -> Any:
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


def _wrap(field: str, wrapper: Any) -> Any:
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


def _bend_jobs(**fields: Any) -> Any:
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
        with pytest.raises(ValueError):
            arr.setflags(write=True)
        assert not np.lib.stride_tricks.as_strided(arr, writeable=True).flags.writeable
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
    with pytest.raises(ValueError):
        view.capacity.setflags(write=True)
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
        with pytest.raises(ValueError):
            a.setflags(write=True)
    vandalize(view)
    return d


def _geo_placement(change: Any) -> Any:
    return _on_first("placements", _value(change))


def _geo_set(field: str, value: Any) -> Any:
    def change(p: GeoPlacement) -> GeoPlacement:
        object.__setattr__(p, field, value(p) if callable(value) else value)
        return p

    return _geo_placement(change)


def _geo_claim_capacity(sched: Replay, view: Any, d: GeoDecision) -> Any:
    """Claim 1000× the worker capacity P_i in the view, then use one worker for all data."""
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


@dataclass(frozen=True)
class Cheat:
    name: str
    setting: str
    refused: bool  # True: InvalidDecision; False: byte-identical to the honest run
    on_decide: Any = None
    on_reset: Any = None
    match: str | None = None


NAN, INF = math.nan, math.inf
CHEATS = [
    # ---- cluster: the decision lies
    Cheat(
        "placement-subclass-under-reports-workers",
        "cluster",
        True,
        _on_first(
            "allocations",
            _value(lambda p: UnderReporting(p.machines, tuple(w * 4 for w in p.workers), p.ps)),
        ),
        match="exactly Placement",
    ),
    Cheat(
        "duck-typed-placement",
        "cluster",
        True,
        _on_first("allocations", _value(lambda p: DuckPlacement(p.machines, p.workers, p.ps))),
        match="exactly Placement",
    ),
    Cheat("mapping-yields-job-twice", "cluster", True, _wrap("allocations", Twice), match="twice"),
    Cheat("dict-subclass-yields-job-twice", "cluster", True, _wrap("allocations", TwiceDict)),
    Cheat(
        "bool-job-id",
        "cluster",
        True,
        _on_first("allocations", lambda j, p, v, s: (j == 1, p)),  # False == 0 as a dict key
        match="not an integer",
    ),
    Cheat(
        "float-worker-counts",
        "cluster",
        True,
        _on_first(
            "allocations",
            _value(lambda p: Placement(p.machines, tuple(map(float, p.workers)), p.ps)),
        ),
        match="non-negative integer",
    ),
    Cheat(
        "numpy-float-ps-counts",
        "cluster",
        True,
        _on_first(
            "allocations",
            _value(lambda p: Placement(p.machines, p.workers, tuple(np.float64(s) for s in p.ps))),
        ),
    ),
    Cheat(
        "astronomical-worker-count",
        "cluster",
        True,
        _on_first(
            "allocations",
            _value(lambda p: Placement(p.machines, (10**400,) * len(p.machines), p.ps)),
        ),
    ),
    Cheat(
        "negative-ps-count",
        "cluster",
        True,
        _on_first(
            "allocations", _value(lambda p: Placement(p.machines, p.workers, (-1,) * len(p.ps)))
        ),
    ),
    Cheat(
        "tuple-subclass-counts-iterate-as-ones",
        "cluster",
        True,
        _on_first(
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
        "admit-as-generator",
        "cluster",
        True,
        lambda s, v, d: ClusterDecision(d.allocations, (j for j in v.pending), d.reject),
    ),
    Cheat(
        "endless-mapping",
        "cluster",
        True,
        _on_first("allocations", lambda j, p, v, s: (j, p))
        and _wrap("allocations", lambda m: Endless(next(iter(m.values())))),
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
        _wrap("allocations", lambda m: MappingProxyType(Twice(m))),
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
    Cheat("shown-job-epochs-cut", "cluster", False, _bend_jobs(epochs=1, samples=1)),
    Cheat(
        "shown-job-utility-inflated", "cluster", False, _bend_jobs(utility=Sigmoid(1e9, 0.0, 0.0))
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
    Cheat("every-shown-object-vandalized", "cluster", False, lambda s, v, d: vandalize(v) or d),
    # ---- interval
    Cheat(
        "interval-mapping-yields-job-five-times",
        "interval",
        True,
        _wrap("allocations", lambda m: Twice(m, 5)),
        match="twice",
    ),
    Cheat(
        "interval-bool-counts",
        "interval",
        True,
        _on_first("allocations", _value(lambda wp: (True, True))),
    ),
    Cheat(
        "interval-nan-count",
        "interval",
        True,
        _on_first("allocations", _value(lambda wp: (NAN, 1))),
    ),
    Cheat(
        "interval-none-count",
        "interval",
        True,
        _on_first("allocations", _value(lambda wp: (wp[0], None))),
    ),
    Cheat(
        "interval-pair-as-lying-tuple",
        "interval",
        True,
        _on_first("allocations", _value(lambda wp: OnesTuple((wp[0] * 99, wp[1] * 99)))),
    ),
    Cheat(
        "interval-shown-limit-raised-then-used",
        "interval",
        True,
        _interval_loosen_limit,
        match=r"Eq\. 3",
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
        _wrap("dispatch", Twice),
        match="twice",
    ),
    Cheat(
        "edge-float-chunk-indices",
        "edge-cloud",
        True,
        _on_first("run", _value(lambda c: tuple(float(x) for x in c))),
    ),
    Cheat("edge-ps-none", "edge-cloud", True, _on_first("ps", _value(lambda sp: None))),
    Cheat(
        "edge-chunk-index-beyond-int64",
        "edge-cloud",
        True,
        _on_first("run", _value(lambda c: (10**30,))),
        match="out of",
    ),
    Cheat(
        "edge-run-key-numpy-bool",
        "edge-cloud",
        True,
        _on_first("run", lambda j, c, v, s: (np.bool_(j), c)),
    ),
    # ---- geo
    Cheat("geo-nan-transfer", "geo", True, _geo_set("transfers", lambda p: p.transfers * NAN)),
    Cheat("geo-inf-workers", "geo", True, _geo_set("workers", lambda p: (INF,) * len(p.workers))),
    Cheat("geo-none-workers", "geo", True, _geo_set("workers", lambda p: (None,) * len(p.workers))),
    Cheat("geo-none-ps-site", "geo", True, _geo_set("ps", None), match=r"\(8f\)"),
    Cheat(
        "geo-transfers-list-with-none",
        "geo",
        True,
        _geo_set("transfers", lambda p: [[None] * len(p.workers)] * len(p.workers)),
    ),
    Cheat(
        "geo-placement-subclass",
        "geo",
        True,
        _geo_placement(lambda p: SubGeoPlacement(p.workers, p.ps, p.transfers)),
    ),
    Cheat("geo-placements-yield-job-twice", "geo", True, _wrap("placements", Twice), match="twice"),
    Cheat(
        "geo-shown-capacity-claimed-then-used", "geo", True, _geo_claim_capacity, match=r"\(8a\)"
    ),
    Cheat(
        "geo-reset-prices-bent",
        "geo",
        False,
        on_reset=_bend_static(a=lambda a: np.asarray(a) * 0 + 1e-9, d=lambda d: np.asarray(d) * 0),
    ),
    Cheat("geo-shown-objects-vandalized", "geo", False, lambda s, v, d: vandalize(v) or d),
]


def test_there_are_at_least_25_distinct_cheats_over_all_four_settings() -> None:
    names = [c.name for c in CHEATS]
    assert len(set(names)) == len(names) >= 25
    assert {c.setting for c in CHEATS} == {"cluster", "interval", "edge-cloud", "geo"}


@pytest.mark.parametrize("cheat", CHEATS, ids=[c.name for c in CHEATS])
def test_a_cheat_is_refused_or_gains_nothing(cheat: Cheat) -> None:
    if cheat.refused:
        with pytest.raises(InvalidDecision, match=cheat.match) as err:
            cheat_run(cheat.setting, cheat.on_decide, cheat.on_reset)
        assert err.value.scheduler == "replay"
    else:
        assert cheat_run(cheat.setting, cheat.on_decide, cheat.on_reset) == honest(cheat.setting)[0]


# ---------------------------------------------------------------- the six leaks of issue 13


def test_leak1_a_placement_that_reports_fewer_workers_than_it_holds_is_refused() -> None:
    """16 workers credited where F = 4: a Placement subclass or a duck-typed object."""
    from dmlsched.model.cluster import Cluster, ClusterWorkload
    from tests.conftest import make_job

    wl = ClusterWorkload((make_job(0, batch=4, gamma=4.0),), Cluster.uniform(1, (64.0,) * 4), 4)
    honest_run = simulate("cluster", wl, _Fixed(Placement((0,), (4,), (1,))), run_rng())
    for p in (
        UnderReporting((0,), (16,), (4,)),
        DuckPlacement((0,), (16,), (4,)),
        Placement((0,), OnesTuple((16,)), (4,)),
    ):
        with pytest.raises(InvalidDecision) as err:
            simulate("cluster", wl, _Fixed(p), run_rng())
        assert (err.value.scheduler, err.value.job, err.value.slot) == ("fixed", 0, 0)
    assert honest_run.metrics["completed_jobs"] == 1


@pytest.mark.parametrize("setting", ["cluster", "interval", "edge-cloud", "geo"])
def test_leak2_a_mapping_that_yields_a_job_twice_is_refused(setting: str) -> None:
    field = {
        "cluster": "allocations",
        "interval": "allocations",
        "edge-cloud": "dispatch",
        "geo": "placements",
    }[setting]
    # five times: in the old interval engine a job admitted five times counted its utility 5×
    with pytest.raises(InvalidDecision, match="twice"):
        cheat_run(setting, _wrap(field, lambda m: Twice(m, 5)))
    with pytest.raises(InvalidDecision, match="twice"):
        cheat_run(setting, _wrap(field, TwiceDict))


def test_leak3_changing_shown_jobs_or_capacity_arrays_changes_nothing() -> None:
    """object.__setattr__ on epochs/utility, setflags(write=True) on a capacity array."""
    base = honest("cluster")[0]
    assert cheat_run("cluster", _bend_jobs(epochs=1, samples=1)) == base
    assert cheat_run("cluster", _bend_jobs(utility=Sigmoid(1e9, 0.0, 0.0))) == base
    assert cheat_run("cluster", _writable_then_bend("cluster.capacity")) == base
    assert cheat_run("interval", _interval_bend_capacity) == honest("interval")[0]
    # and nothing of it reaches a later run in the same process
    assert cheat_run("cluster") == base


def test_leak4_the_geo_view_reveals_no_future_data_rows() -> None:
    wl = tiny("geo")
    full = {j.id: np.array(j.data) for j in wl.jobs}
    seen: list[tuple[int, int, int]] = []

    def spy(sched: Replay, view: Any, d: Any) -> Any:
        for j, job in view.jobs.items():
            orig = next(o for o in wl.jobs if o.id == j)
            rows = min(view.slot - orig.arrival + 1, orig.duration)
            assert job.data.shape == (rows, wl.sites.dcs)  # nothing after slot t
            assert np.array_equal(job.data, full[j][:rows])
            assert not job.data_at(view.slot + 1).any()
            with pytest.raises(ValueError):
                job.data.setflags(write=True)
            seen.append((view.slot, j, rows))
        for j in view.active:
            assert np.array_equal(view.data[j], full[j][view.slot - view.jobs[j].arrival])
        return d

    assert cheat_run("geo", spy) == honest("geo")[0]
    assert any(rows < next(o for o in wl.jobs if o.id == j).duration for _, j, rows in seen)
    # every geo scheduler still runs on the cut copies: tests/schedulers/test_contract.py


def test_leak5_an_edge_cloud_system_changed_by_a_scheduler_does_not_reach_a_later_run() -> None:
    wl = tiny("edge-cloud")  # one workload object, reused by every run below
    sched = make_scheduler("edge-cloud", "a-online")
    first = result_bytes(simulate("edge-cloud", wl, sched, run_rng()))

    def bend(sched: Replay, system: Any, *rest: Any) -> None:
        object.__setattr__(system, "speedup", 50.0)
        object.__setattr__(system, "worker_types", ((),) * system.servers)
        object.__setattr__(system, "storage", (0.0,) * system.servers)
        object.__setattr__(system, "_worker_offset", np.zeros(system.servers + 1, dtype=int))

    assert cheat_run("edge-cloud", on_reset=bend, wl=wl) == honest("edge-cloud")[0]
    assert wl.system.speedup == 1.0 and wl.system.storage is None
    sched = make_scheduler("edge-cloud", "a-online")
    assert result_bytes(simulate("edge-cloud", wl, sched, run_rng())) == first


LEAK6 = {
    "y-nan": ("workers", lambda p: (NAN,) * len(p.workers)),
    "y-inf": ("workers", lambda p: (INF,) * len(p.workers)),
    "y-none-values": ("workers", lambda p: (None,) * len(p.workers)),
    "y-none": ("workers", None),
    "ps-nan": ("ps", NAN),
    "ps-inf": ("ps", INF),
    "ps-none": ("ps", None),
    "ps-beyond-float": ("ps", 10**400),
    "q-inf": ("transfers", lambda p: np.full_like(p.transfers, INF)),
    "q-nan": ("transfers", lambda p: np.full_like(p.transfers, NAN)),
    "q-none": ("transfers", None),
    "q-object-array": ("transfers", lambda p: p.transfers.astype(object)),
    "q-list-of-none": ("transfers", lambda p: [[None] * len(p.workers)] * len(p.workers)),
}


@pytest.mark.parametrize(("field", "value"), LEAK6.values(), ids=LEAK6.keys())
def test_leak6_non_finite_or_none_in_a_geo_decision_is_an_invalid_decision(
    field: str, value: Any
) -> None:
    with pytest.raises(InvalidDecision) as err:
        cheat_run("geo", _geo_set(field, value))
    assert err.value.scheduler == "replay" and err.value.job is not None


class _Fixed:
    name = "fixed"
    setting = "cluster"

    def __init__(self, p: Any) -> None:
        self.p = p

    def reset(self, *a: Any) -> None:
        pass

    def decide(self, view: Any) -> ClusterDecision:
        return ClusterDecision({j: self.p for j in (*view.pending, *view.active)})


def test_the_edge_cloud_decision_fields_are_read_as_plain_integers() -> None:
    """np.int64 pairs and int arrays are honest and accepted (only the types that lie are not)."""

    def widen(sched: Replay, view: Any, d: EdgeCloudDecision) -> Any:
        run = {np.int64(j): np.asarray(c, dtype=np.int32) for j, c in d.run.items()}
        ps = {j: (np.int64(s), np.uint8(p)) for j, (s, p) in d.ps.items()}
        return EdgeCloudDecision(d.dispatch, run, ps)

    assert cheat_run("edge-cloud", widen) == honest("edge-cloud")[0]


def test_geo_integer_arrays_and_numpy_ints_are_honest_and_accepted() -> None:
    def widen(sched: Replay, view: Any, d: GeoDecision) -> Any:
        return GeoDecision(
            {
                j: GeoPlacement(np.asarray(p.workers, dtype=np.int64), np.int32(p.ps), p.transfers)
                for j, p in d.placements.items()
            }
        )

    assert cheat_run("geo", widen) == honest("geo")[0]


# ---------------------------------------------------------------- the boundary's own helpers


def test_a_frozen_array_cannot_be_made_writable_by_any_numpy_call() -> None:
    a = frozen_array(np.arange(6.0).reshape(2, 3))
    for attempt in (
        lambda: a.setflags(write=True),
        lambda: a.view().setflags(write=True),
        lambda: a.reshape(6).setflags(write=True),
        lambda: a.T.setflags(write=True),
        lambda: a.__setitem__((0, 0), 1.0),
        lambda: np.copyto(a, 0.0),
        lambda: np.add(a, 1.0, out=a),
    ):
        with pytest.raises(ValueError):
            attempt()
    assert not np.lib.stride_tricks.as_strided(a, writeable=True).flags.writeable
    assert a.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert frozen_array(np.zeros((0, 3))).shape == (0, 3)


def test_a_private_copy_shares_nothing_mutable_with_the_original() -> None:
    wl = tiny("edge-cloud")
    system = private_copy(wl.system)
    assert system == wl.system and system is not wl.system
    assert system.worker_offset is not wl.system.worker_offset
    assert not system.worker_offset.flags.writeable
    job = tiny("cluster").jobs[0]
    copy = private_copy(job)
    assert copy == job and copy.utility is not job.utility
    object.__setattr__(copy.utility, "theta1", 1e9)
    assert job.utility.theta1 != 1e9


@pytest.mark.parametrize(
    ("value", "whole"),
    [
        (3, 3),
        (np.int64(3), 3),
        (np.uint8(3), 3),
        (10**400, 10**400),
        (True, None),
        (np.bool_(True), None),
        (3.0, None),
        (np.float32(3.0), None),
        (NAN, None),
        (INF, None),
        (None, None),
        ("3", None),
        (OnesTuple((1,)), None),
    ],
)
def test_whole_numbers_are_read_by_exact_type(value: Any, whole: Any) -> None:
    assert read_int(value) == whole


def test_read_mapping_refuses_more_entries_than_jobs_and_wraps_the_mappings_errors() -> None:
    assert read_mapping("s", 0, "m", {np.int64(1): "a", 2: "b"}, 2) == {1: "a", 2: "b"}
    with pytest.raises(InvalidDecision, match="more than the 1 jobs"):
        read_mapping("s", 0, "m", {1: 0, 2: 0, 3: 0}, 1)
    with pytest.raises(InvalidDecision, match="more than the 1 jobs"):
        read_mapping("s", 0, "m", Endless(0), 1)
    with pytest.raises(InvalidDecision, match="raised KeyError") as err:
        read_mapping("s", 0, "m", MappingProxyType(Raising()), 1)
    assert isinstance(err.value.__cause__, KeyError)
    with pytest.raises(InvalidDecision, match="not a mapping"):
        read_mapping("s", 0, "m", [(1, 2)], 1)


# ---------------------------------------------------------------- fuzz: only InvalidDecision

_hashable_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=6),
    st.integers(min_value=2**62, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=2),
    st.sampled_from([np.int64(1), np.uint64(2**64 - 1), np.float64(1.0), np.bool_(True), object()]),
)
_junk_leaf = st.one_of(
    _hashable_leaf,
    st.sampled_from([np.zeros(2), np.array([1, 0]), np.array([np.nan]), np.array(["a"])]),
)
_junk = st.recursive(
    _junk_leaf,
    lambda inner: st.one_of(
        st.tuples(inner, inner),
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.integers(0, 5), inner, max_size=2),
    ),
    max_leaves=6,
)


def _bare(cls: type, **fields: Any) -> Any:
    """An instance of a frozen dataclass with any field values (no __post_init__)."""
    obj = object.__new__(cls)
    for k, v in fields.items():
        object.__setattr__(obj, k, v)
    return obj


def _junk_decision(setting: str, view: Any, draw: Any) -> Any:
    ids = list(getattr(view, "pending", ())) + list(getattr(view, "active", ()))
    if setting == "interval":
        ids = [j.id for j in view.jobs]
    key = st.one_of(st.sampled_from(ids or [0]), _hashable_leaf)
    if setting == "cluster":
        value = st.one_of(
            _junk,
            st.builds(
                lambda m, w, p: _bare(Placement, machines=m, workers=w, ps=p), _junk, _junk, _junk
            ),
        )
        return _bare(
            ClusterDecision,
            allocations=draw(st.dictionaries(key, value, max_size=3)),
            admit=draw(st.one_of(st.just(()), _junk)),
            reject=draw(st.one_of(st.just(()), _junk)),
        )
    if setting == "interval":
        return _bare(IntervalDecision, allocations=draw(st.dictionaries(key, _junk, max_size=3)))
    if setting == "edge-cloud":
        return _bare(
            EdgeCloudDecision,
            **{f: draw(st.dictionaries(key, _junk, max_size=2)) for f in ("dispatch", "run", "ps")},
        )
    value = st.one_of(
        _junk,
        st.builds(
            lambda w, p, q: _bare(GeoPlacement, workers=w, ps=p, transfers=q),
            _junk,
            _junk,
            st.one_of(_junk, st.just(np.full((3, 3), NAN)), st.just(np.zeros((3, 3)))),
        ),
    )
    return _bare(GeoDecision, placements=draw(st.dictionaries(key, value, max_size=3)))


@pytest.mark.parametrize("setting", ["cluster", "interval", "edge-cloud", "geo"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_junk_decisions_end_in_invalid_decision_and_nothing_else(setting: str, data: Any) -> None:
    class Enough(Exception):
        pass

    class Junk:
        name = "junk"

        def reset(self, *a: Any) -> None:
            self.calls = 0

        def decide(self, view: Any) -> Any:
            self.calls += 1
            if self.calls > 12:  # a run of empty decisions would go on for thousands of slots
                raise Enough
            return _junk_decision(setting, view, data.draw)

    with contextlib.suppress(InvalidDecision, Enough):
        simulate(setting, tiny(setting), Junk(), run_rng())
