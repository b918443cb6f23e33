"""Allocations as a :class:`PlacementTable`: the same run, or the same refusal, as a dict.

FIFO on a large cluster returns its allocations as one table of arrays; the
engine reads a table's placements together (``sim.cluster.fast.read_table_batch``)
and skips those equal, entry for entry, to what it last read from a table
(``table_unchanged``).  Checked here: every registered scheduler's decisions
rewritten as tables (batched and one by one) give its run to the byte; random
decisions, valid or broken, end the same way as tables, as dicts, or switching
between the two from slot to slot; a malformed table is refused with one line;
a table changed after it was returned is read again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dmlsched.errors import InvalidDecision
from dmlsched.model.cluster import (
    Cluster,
    ClusterDecision,
    ClusterWorkload,
    Placement,
    PlacementTable,
)
from dmlsched.rng import make_rng
from dmlsched.schedulers.protocols import make_scheduler, scheduler_names
from dmlsched.sim import cluster as engine
from dmlsched.sim.cluster import fast
from dmlsched.sim.engine import simulate
from dmlsched.workloads.synthetic import synthetic_cluster
from tests.conftest import engine_test_scheduler, make_job
from tests.sim.test_batch_read import ALWAYS, NEVER, _outcome, _Random, _random_workload

_INT64 = (-(2**63), 2**63 - 1)


def table_of(alloc: dict[int, Any]) -> PlacementTable | None:
    """``alloc`` as a table, or None if some value is not an int64 (bool, float, …)."""
    m: list[int] = []
    w: list[int] = []
    s: list[int] = []
    offsets = [0]
    for p in alloc.values():
        if type(p) is not Placement:
            return None
        fields = (p.machines, p.workers, p.ps)
        if len({len(f) for f in fields}) != 1:
            return None
        for f, out in zip(fields, (m, w, s), strict=True):
            for v in f:
                if type(v) is not int or not _INT64[0] <= v <= _INT64[1]:
                    return None
                out.append(v)
        offsets.append(len(m))
    arr = [np.array(x, dtype=np.int64) for x in (list(alloc), offsets, m, w, s)]
    return PlacementTable(*arr)


class AsTable:
    """``inner``'s decisions with the allocations as a table (when ``every`` says so and
    they fit one; otherwise as they were)."""

    name = "as-table"
    setting = "cluster"

    def __new__(cls, inner: Any, every: Callable[[int], bool] = lambda slot: True) -> Any:
        # named as ``inner``: refusals name the scheduler, and must read the same
        named = type(cls.__name__, (cls,), {"name": type(inner).name})
        return super().__new__(named)

    def __init__(self, inner: Any, every: Callable[[int], bool] = lambda slot: True) -> None:
        self.inner, self.every = inner, every

    def reset(self, *a: Any) -> None:
        self.inner.reset(*a)

    def decide(self, view: Any) -> ClusterDecision:
        d = self.inner.decide(view)
        alloc = d.allocations
        if self.every(view.slot) and type(alloc) is dict:
            table = table_of(alloc)
            if table is not None:
                return ClusterDecision(table, d.admit, d.reject, d.until)
        return d


class AsDict(AsTable):
    """``inner``'s decisions with a table's allocations as a dict of Placements."""

    name = "as-dict"

    def decide(self, view: Any) -> ClusterDecision:
        d = self.inner.decide(view)
        alloc = d.allocations
        if type(alloc) is PlacementTable:
            return ClusterDecision(dict(alloc), d.admit, d.reject, d.until)
        return d


# ---------------------------------------------------------------- the model


def test_a_table_is_the_mapping_of_its_placements() -> None:
    t = PlacementTable(np.array([5, 3, 9]), np.array([0, 2, 3, 3]), [1, 2, 7], [1, 1, 2], [0, 1, 0])
    assert list(t) == [5, 3, 9] and len(t) == 3
    assert dict(t) == {
        5: Placement((1, 2), (1, 1), (0, 1)),
        3: Placement((7,), (2,), (0,)),
        9: Placement((), (), ()),
    }
    with pytest.raises(KeyError):
        t[4]
    for a in (t.jobs, t.offsets, t.machines, t.workers, t.ps):
        assert a.dtype == np.int64
        with pytest.raises(ValueError):
            a.setflags(write=True)  # an immutable copy: nobody rewrites it


@pytest.mark.parametrize(
    "args",
    [
        ([1], [0, 1], [0.5], [1], [0]),  # floats
        ([1], [0, 2], [0], [1], [0]),  # offsets past the end
        ([1], [0], [0], [1], [0]),  # offsets one short
        ([1, 2], [0, 1, 0], [0], [1], [0]),  # offsets fall
        ([1], [0, 1], [0], [1, 1], [0]),  # lengths differ
        ([1], [0, 1], [[0]], [1], [0]),  # 2-D
        ([1], [0, 1], np.array([2**64 - 1], dtype=np.uint64), [1], [0]),  # beyond int64
    ],
)
def test_a_malformed_table_cannot_be_built(args: tuple) -> None:
    with pytest.raises(ValueError, match="PlacementTable"):
        PlacementTable(*(np.asarray(a) for a in args))


# ---------------------------------------------------------------- the same runs

_WL = synthetic_cluster(40, 6, 20, make_rng(5))


@pytest.mark.parametrize("batch_min", [ALWAYS, NEVER], ids=["batched", "one-by-one"])
@pytest.mark.parametrize("name", scheduler_names("cluster"))
def test_every_cluster_schedulers_decisions_as_tables_run_to_the_same_bytes(
    name: str, batch_min: int
) -> None:
    def run(wrap: Callable[[Any], Any]) -> tuple[str, Any]:
        sched = wrap(engine_test_scheduler("cluster", name))
        return _outcome(lambda: simulate("cluster", _WL, sched, make_rng(6)), batch_min)

    plain = run(lambda s: s)
    assert plain[0] == "ran"
    assert run(AsTable) == plain
    # switching between the forms every other slot: each read right after the other
    assert run(lambda s: AsTable(s, lambda slot: slot % 2 == 0)) == plain


def test_fifo_on_a_large_cluster_returns_a_table_with_the_bytes_of_its_dicts() -> None:
    wl = synthetic_cluster(150, 80, 30, make_rng(2))
    seen: list[type] = []

    class Spy(AsDict):
        def decide(self, view: Any) -> ClusterDecision:
            d = self.inner.decide(view)
            seen.append(type(d.allocations))
            return d

    table = _outcome(
        lambda: simulate("cluster", wl, Spy(make_scheduler("cluster", "fifo")), make_rng(1))
    )
    as_dict = _outcome(
        lambda: simulate("cluster", wl, AsDict(make_scheduler("cluster", "fifo")), make_rng(1))
    )
    assert set(seen) == {PlacementTable}
    assert table[0] == "ran" and table == as_dict
    assert (
        _outcome(
            lambda: simulate("cluster", wl, make_scheduler("cluster", "fifo"), make_rng(1)), NEVER
        )
        == table
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    jobs=st.integers(1, 14),
    p_bad=st.sampled_from([0.0, 0.0, 0.02, 0.2]),
    roomy=st.booleans(),
    every=st.sampled_from([1, 2, 3]),
    batch_min=st.sampled_from([ALWAYS, NEVER]),
)
def test_random_decisions_end_the_same_way_as_tables_or_dicts(
    seed: int, jobs: int, p_bad: float, roomy: bool, every: int, batch_min: int
) -> None:
    wl = _random_workload(seed, jobs, roomy)
    plain = _outcome(lambda: simulate("cluster", wl, _Random(seed, p_bad), make_rng(seed)))
    tables = _outcome(
        lambda: simulate(
            "cluster", wl, AsTable(_Random(seed, p_bad), lambda t: t % every == 0), make_rng(seed)
        ),
        batch_min,
    )
    assert tables == plain


# ---------------------------------------------------------------- refused

_JOBS = tuple(make_job(i, batch=10, gamma=2.0, epochs=50) for i in range(3))
_SMALL = ClusterWorkload(_JOBS, Cluster.uniform(4, (64.0, 128.0, 256.0, 256.0)), 4)


def _good() -> PlacementTable:
    return PlacementTable(
        np.array([0, 1, 2]), np.array([0, 1, 2, 3]), [0, 1, 2], [2, 2, 2], [1, 1, 1]
    )


class _Tables:
    """Returns ``make(slot)`` each slot (the same table object if it returns one)."""

    name = "tables"
    setting = "cluster"

    def __init__(self, make: Callable[[int], Any]) -> None:
        self.make = make

    def reset(self, *a: Any) -> None:
        pass

    def decide(self, view: Any) -> ClusterDecision:
        return ClusterDecision(self.make(view.slot))


def _swapped(field: str, value: Any) -> PlacementTable:
    t = _good()
    object.__setattr__(t, field, value)
    return t


@pytest.mark.parametrize(
    ("table", "match"),
    [
        (_swapped("machines", [0, 1, 2]), "machines is not a 1-D int64 array"),
        (_swapped("workers", np.array([2.0, 2.0, 2.0])), "workers is not a 1-D int64 array"),
        (_swapped("ps", np.ones((3, 1), dtype=np.int64)), "ps is not a 1-D int64 array"),
        (_swapped("jobs", np.array([0, 1, 2], dtype=np.int32)), "jobs is not a 1-D int64"),
        (_swapped("offsets", np.array([0, 1, 3, 2])), "offsets do not fit"),
        (_swapped("offsets", np.array([0, 1, 2])), "offsets do not fit"),
        (_swapped("jobs", np.array([0, 1, 1])), "names the job twice"),
        (
            PlacementTable(np.arange(6), np.zeros(7, dtype=np.int64), [], [], []),
            "names more than the 3 jobs",
        ),
        (_swapped("jobs", np.array([0, 1, 7])), "allocation for a unknown job"),
        (_swapped("machines", np.array([0, 1, 9])), "no machine 9"),
        (_swapped("workers", np.array([2, 2, 11])), "workers"),
        (_swapped("ps", np.array([1, 1, 0])), "PS"),
    ],
)
def test_a_bad_table_is_refused_with_one_line(table: Any, match: str) -> None:
    for batch_min in (ALWAYS, NEVER):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(fast, "BATCH_MIN", batch_min)
            with pytest.raises(InvalidDecision, match=match) as err:
                simulate("cluster", _SMALL, _Tables(lambda slot: table), make_rng(0))
        assert "\n" not in str(err.value)


def test_a_table_is_refused_as_its_placements_would_be() -> None:
    broken = {0: Placement((0,), (2,), (1,)), 1: Placement((1, 1), (1, 1), (1, 0))}
    as_dict = _outcome(
        lambda: simulate("cluster", _SMALL, _Tables(lambda slot: broken), make_rng(0))
    )
    as_table = _outcome(
        lambda: simulate("cluster", _SMALL, _Tables(lambda slot: table_of(broken)), make_rng(0))
    )
    assert as_dict[0] == "refused" and as_table == as_dict


def test_a_table_changed_after_it_was_returned_is_read_again() -> None:
    kept = _good()

    def make(slot: int) -> PlacementTable:
        if slot == 2:  # the same object, another machine: read again, and refused
            object.__setattr__(kept, "machines", np.array([0, 1, 5]))
        return kept

    with pytest.raises(InvalidDecision, match="no machine 5") as err:
        simulate("cluster", _SMALL, _Tables(make), make_rng(0))
    assert err.value.slot == 2


def test_a_fresh_table_each_slot_runs_as_its_dicts_and_a_moved_job_is_seen() -> None:
    def fresh(slot: int) -> PlacementTable:
        t = _good()
        if slot >= 2:  # job 2 moves to machine 3: a change the engine must see
            t = PlacementTable(t.jobs, t.offsets, np.array([0, 1, 3]), t.workers, t.ps)
        return t

    as_dict = {slot: dict(fresh(slot)) for slot in range(4)}
    got = _outcome(lambda: simulate("cluster", _SMALL, _Tables(fresh), make_rng(0)))
    want = _outcome(lambda: simulate("cluster", _SMALL, _Tables(lambda s: as_dict[s]), make_rng(0)))
    assert got[0] == "ran" and got == want


def test_an_overfull_machine_is_refused_naming_the_same_jobs_as_dicts() -> None:
    # the table's Counts are made only when asked for: here, to name the machine's jobs
    tight = ClusterWorkload(_JOBS, Cluster.uniform(2, (4.0, 8.0, 64.0, 64.0)), 4)
    alloc = {j: Placement((0,), (2,), (1,)) for j in range(3)}

    def run(a: Any) -> tuple[str, Any]:
        return _outcome(lambda: simulate("cluster", tight, _Tables(lambda s: a), make_rng(0)))

    got = [run(alloc), run(table_of(alloc))]
    assert got[0][0] == "refused" and "jobs on machine: [0, 1, 2]" in got[0][1]
    assert got[1] == got[0]


def test_the_testbed_and_service_reader_takes_a_table_as_the_mapping_it_is() -> None:
    # they read decisions with read_decision, one placement at a time, as they apply them
    table = _good()
    alloc, admit, reject = engine.read_decision("s", 0, ClusterDecision(table, (0,)), 3)
    assert alloc == dict(table) and admit == (0,) and reject == ()
    assert all(type(p) is Placement for p in alloc.values())


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(0, 20), max_size=6),  # job indices kept from a table
            st.lists(st.integers(0, 20), max_size=4),  # job indices that end
            st.integers(0, 80),  # entries per kept placement (the pool fills: 1,024)
        ),
        max_size=40,
    )
)
def test_the_entry_pool_keeps_every_live_jobs_entries_when_it_compacts(steps: list) -> None:
    """:class:`fast.EntryPool` drops ended jobs' entries when full (``_compact``); a job
    that still holds its entries reads them back as they were kept."""
    pool = fast.EntryPool(21)
    model: dict[int, tuple[tuple[int, ...], ...]] = {}
    stamp = 0
    for keep, end, size in steps:
        keep = sorted(set(keep))
        jobs = np.arange(len(keep), dtype=np.int64)
        offsets = np.arange(len(keep) + 1, dtype=np.int64) * size
        n = int(offsets[-1])
        m, w, s = (np.arange(stamp + i, stamp + i + n, dtype=np.int64) for i in (0, 1, 2))
        stamp += 3 * n + 1
        table = engine.referee.Table(
            jobs.tolist(), offsets, np.diff(offsets), np.repeat(jobs, size), m, w, s
        )
        at = np.asarray(keep, dtype=np.intp)
        pool.keep(table, list(range(len(keep))), (m, w, s), at)
        for k, d in enumerate(keep):
            a, b = k * size, (k + 1) * size
            model[d] = (tuple(m[a:b].tolist()), tuple(w[a:b].tolist()), tuple(s[a:b].tolist()))
        for d in end:
            pool.length[d] = -1  # as ClusterState._forget
            model.pop(d, None)
        for d, counts in model.items():
            assert pool.counts(d) == counts
