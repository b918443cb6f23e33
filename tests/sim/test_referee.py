"""The referee and the fast paths behind ``ClusterState.accept``: one answer.

``ClusterState(fast=False)`` accepts every decision through
:func:`dmlsched.sim.cluster.referee.judge` alone — one placement at a time,
usage summed afresh.  The fast paths (unchanged placements skipped, table
entries compared, many placements read in one batch, usage kept across
decisions) must give exactly its answer: the same bytes of results, or the
same refusal with the same message.  Checked over every registered cluster
scheduler, random decisions (valid, broken, oddly typed, as tables or
dicts), the boundary cheats, and decisions refused mid-run (a refused
decision leaves the state as it was).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dmlsched.checks.cheats import cheats_of
from dmlsched.checks.replay import Replay, result_bytes
from dmlsched.checks.tiny import tiny
from dmlsched.errors import InvalidDecision
from dmlsched.model.cluster import Cluster, ClusterDecision, ClusterWorkload, Placement
from dmlsched.rng import make_rng
from dmlsched.schedulers.protocols import scheduler_names
from dmlsched.sim.cluster import ClusterState, judge, simulate_cluster
from dmlsched.sim.cluster import fast as fast_paths
from dmlsched.sim.cluster.referee import Counts
from dmlsched.workloads.synthetic import synthetic_cluster
from tests.conftest import engine_test_scheduler, make_job
from tests.sim import test_boundary, test_unchanged_placements
from tests.sim.test_batch_read import _ODD_PLACEMENTS, _ODD_WL, _Odd, _Random, _random_workload
from tests.sim.test_placement_table import AsTable

Outcome = tuple[str, Any]


def outcome(run: Callable[[], Any]) -> Outcome:
    try:
        return "ran", result_bytes(run())
    except InvalidDecision as e:
        return "refused", str(e)


def both_ways(wl: ClusterWorkload, make: Callable[[], Any], seed: int = 0) -> Outcome:
    """The run through the fast paths (every batch taken) and through the referee alone:
    the same outcome, returned."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fast_paths, "BATCH_MIN", 1)
        quick = outcome(lambda: simulate_cluster(wl, make(), make_rng(seed)))
    ref = outcome(lambda: simulate_cluster(wl, make(), make_rng(seed), fast=False))
    assert quick == ref
    return ref


_WL = synthetic_cluster(40, 6, 20, make_rng(5))


@pytest.mark.parametrize("name", scheduler_names("cluster"))
def test_every_cluster_scheduler_runs_to_the_referees_bytes(name: str) -> None:
    assert both_ways(_WL, lambda: engine_test_scheduler("cluster", name), 6)[0] == "ran"
    as_tables = both_ways(_WL, lambda: AsTable(engine_test_scheduler("cluster", name)), 6)
    assert as_tables == both_ways(_WL, lambda: engine_test_scheduler("cluster", name), 6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    jobs=st.integers(1, 14),
    p_bad=st.sampled_from([0.0, 0.0, 0.02, 0.2]),
    roomy=st.booleans(),
    every=st.sampled_from([0, 1, 2]),
)
def test_random_decisions_end_as_the_referee_says(
    seed: int, jobs: int, p_bad: float, roomy: bool, every: int
) -> None:
    wl = _random_workload(seed, jobs, roomy)
    if every:
        both_ways(wl, lambda: AsTable(_Random(seed, p_bad), lambda t: t % every == 0), seed)
    else:
        both_ways(wl, lambda: _Random(seed, p_bad), seed)


_CLUSTER_CHEATS = cheats_of("cluster")


@pytest.mark.parametrize("cheat", _CLUSTER_CHEATS, ids=[c.name for c in _CLUSTER_CHEATS])
def test_a_boundary_cheat_ends_as_the_referee_says(cheat: Any) -> None:
    decisions = test_boundary.honest("cluster")[1]
    got = both_ways(
        tiny("cluster"), lambda: Replay("cluster", decisions, cheat.on_decide, cheat.on_reset)
    )
    if cheat.refused:
        assert got[0] == "refused", cheat.name
    else:
        assert got == ("ran", test_boundary.honest("cluster")[0])


@pytest.mark.parametrize("name", sorted(test_unchanged_placements.CHEATS))
def test_a_changed_returned_placement_is_refused_as_the_referee_refuses_it(name: str) -> None:
    cheat = test_unchanged_placements.CHEATS[name]
    got = both_ways(test_unchanged_placements.WL, lambda: test_unchanged_placements._Keeper(cheat))
    assert got[0] == "refused"


@pytest.mark.parametrize("name", sorted(_ODD_PLACEMENTS))
def test_each_odd_placement_ends_as_the_referee_says(name: str) -> None:
    last, accepted = _ODD_PLACEMENTS[name]
    assert (both_ways(_ODD_WL, lambda: _Odd(last))[0] == "ran") is accepted


# ---------------------------------------------------------------- a refusal changes nothing


def _drive(wl: ClusterWorkload, sched: Any, spoiler: Any | None, fast: bool, seed: int) -> Outcome:
    """Run ``sched`` through a state by hand; before each of its decisions, offer the state
    ``spoiler``'s decision first whenever the referee refuses it: ``accept`` must refuse it
    with the same message and change nothing."""
    state = ClusterState(wl, "random", fast=fast)
    sched.reset(state.shown_cluster, wl.horizon, make_rng(seed))
    if spoiler is not None:
        spoiler.reset(state.shown_cluster, wl.horizon, make_rng(seed))
    while not state.over:
        view = state.reveal()
        if spoiler is not None:
            bad = spoiler.decide(view)
            try:
                state.judge(bad)
            except InvalidDecision as e:
                with pytest.raises(InvalidDecision) as got:
                    state.accept(bad)
                assert str(got.value) == str(e)
        try:
            state.accept(sched.decide(view))
        except InvalidDecision as e:
            return "refused", str(e)
        state.credit()
    return "ran", result_bytes(state.result())


class _Spoiler(_Random):
    """Every other slot a random decision with one placement broken (p_bad = 1); in the
    others, that decision with its first job moved to machine 0 with F workers (often
    over capacity: refused by Eq. (5) once every placement read well)."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed + 1, 1.0)

    def decide(self, view: Any) -> ClusterDecision:
        d = super().decide(view)
        alloc = dict(d.allocations)
        if view.slot % 2 and alloc:
            j = next(iter(alloc))
            job = view.jobs[j]
            w = job.max_workers
            alloc[j] = Placement((0,), (w,), (job.min_ps(w) if job.mode == "sync" else w,))
        return ClusterDecision(alloc)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), jobs=st.integers(2, 14), fast=st.booleans())
def test_a_refused_decision_leaves_the_state_as_it_was(seed: int, jobs: int, fast: bool) -> None:
    wl = _random_workload(seed, jobs, roomy=False)
    honest = _drive(wl, _Random(seed, 0.0), None, fast, seed)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fast_paths, "BATCH_MIN", 1)
        spoiled = _drive(wl, _Random(seed, 0.0), _Spoiler(seed), fast, seed)
    assert spoiled == honest


# ---------------------------------------------------------------- the referee by hand


def test_the_referee_reads_and_checks_one_placement_at_a_time() -> None:
    jobs = {j: make_job(j, batch=4, gamma=2.0) for j in range(3)}
    cluster = Cluster.uniform(2, (4.0, 8.0, 64.0, 64.0))
    kw = dict(cluster=cluster, jobs=jobs, pending=(0, 1), active=(2,), rejected=(), finished=())
    ok = ClusterDecision(
        {2: Placement((0,), (2,), (1,)), 0: Placement((1,), (1,), (1,))}, reject=(1,)
    )
    r = judge("s", 3, ok, **kw)
    assert (r.rejected, r.admitted, r.by_allocation, r.until) == ((1,), (), (0,), 4)
    assert r.placements == {2: Counts((0,), (2,), (1,)), 0: Counts((1,), (1,), (1,))}
    demand = np.asarray(jobs[2].worker_demand) * 2 + np.asarray(jobs[2].ps_demand)
    assert r.usage[0].tolist() == demand.tolist()
    too_big = ClusterDecision({2: Placement((0,), (4,), (2,)), 0: Placement((0,), (4,), (2,))})
    with pytest.raises(InvalidDecision, match=r"Eq\. 5.*jobs on machine: \[2, 0\]"):
        judge("s", 3, too_big, **kw)
    with pytest.raises(InvalidDecision, match="allocation for a unknown job"):
        judge("s", 3, ClusterDecision({7: Placement((0,), (1,), (1,))}), **kw)
