"""No scheduler can bend the engine: cheats are refused or gain nothing (issue 13).

The cheat catalogue (:mod:`dmlsched.checks.cheats`) on one honest scheduler
per setting, through the simulator: each cheat replays its decisions
(:class:`dmlsched.checks.replay.Replay`) and then lies, in one way of its
own: in what it returns (types that lie, mappings that repeat a job, values
that are not numbers) or in what it was shown (frozen jobs and systems
changed with ``object.__setattr__``, arrays made writable, the dicts behind
mapping proxies rewritten).  A lie in the decision must end in
:class:`InvalidDecision`; a lie about what it was shown must leave the run
byte-identical to the honest one.  The six leaks of the issue each have a
named test below.  (``dmlsched.check_scheduler`` runs the same catalogue on
every registered scheduler through every driver: tests/schedulers/test_contract.py.)
"""

from __future__ import annotations

import contextlib
import math
from functools import cache
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dmlsched.checks.cheats import (
    CHEATS,
    Cheat,
    DuckPlacement,
    Endless,
    OnesTuple,
    Raising,
    TwiceDict,
    UnderReporting,
    bend_jobs,
    geo_set,
    wrap,
)
from dmlsched.checks.replay import Replay, record, result_bytes
from dmlsched.checks.tampering import Twice
from dmlsched.checks.tiny import run_rng, tiny
from dmlsched.errors import InvalidDecision
from dmlsched.model.cluster import ClusterDecision, Placement
from dmlsched.model.edge_cloud import EdgeCloudDecision
from dmlsched.model.geo import GeoDecision, GeoPlacement
from dmlsched.model.interval import IntervalDecision
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.boundary import frozen_array, private_copy, read_int, read_mapping
from dmlsched.sim.engine import simulate

HONEST = {"cluster": "fifo", "interval": "esw", "edge-cloud": "a-online", "geo": "local"}


@cache
def honest(setting: str) -> tuple[bytes, list]:
    res, decisions = record(setting, HONEST[setting], tiny(setting), run_rng())
    return result_bytes(res), decisions


def cheat_run(setting: str, on_decide: Any = None, on_reset: Any = None, wl: Any = None) -> bytes:
    sched = Replay(setting, honest(setting)[1], on_decide, on_reset)
    return result_bytes(simulate(setting, tiny(setting) if wl is None else wl, sched, run_rng()))


NAN, INF = math.nan, math.inf
BY_NAME = {c.name: c for c in CHEATS}


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
        cheat_run(setting, wrap(field, lambda m: Twice(m, 5)))
    with pytest.raises(InvalidDecision, match="twice"):
        cheat_run(setting, wrap(field, TwiceDict))


def test_leak3_changing_shown_jobs_or_capacity_arrays_changes_nothing() -> None:
    """object.__setattr__ on epochs/utility, setflags(write=True) on a capacity array."""
    base = honest("cluster")[0]
    for name in (
        "shown-job-epochs-cut",
        "shown-job-utility-inflated",
        "shown-capacity-made-writable-and-swapped",
    ):
        assert cheat_run("cluster", BY_NAME[name].on_decide) == base
    bend = BY_NAME["interval-shown-capacity-and-jobs-bent"].on_decide
    assert cheat_run("interval", bend) == honest("interval")[0]
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
        cheat_run("geo", geo_set(field, value))
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


@pytest.mark.parametrize("setting", sorted(HONEST))
def test_the_engine_reads_the_workloads_jobs_and_no_scheduler_reaches_them(setting: str) -> None:
    """Each engine computes from the workload's jobs as given (no copy of its own): a
    scheduler that bends every job it is shown bends only its copies — the workload it
    ran on is unchanged, and a later run on that same object gives the honest bytes."""
    wl = tiny(setting)
    before = repr(wl.jobs)
    bent = bend_jobs(arrival=10**6, id=-1)
    result_of_bent = cheat_run(setting, bent, wl=wl)
    assert repr(wl.jobs) == before
    assert result_of_bent == cheat_run(setting, wl=wl) == honest(setting)[0]
