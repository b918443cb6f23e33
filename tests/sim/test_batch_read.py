"""The cluster engine's batched read of changed placements (``sim.cluster.fast.read_batch``).

With many placements changed in one decision the engine reads, checks and
rates them together; anything it cannot certainly accept goes the one-by-one
way.  Either way must give the same run to the byte, or the same refusal:
checked here with the batch forced (``_BATCH_MIN = 1``) against the batch
switched off, over every registered cluster scheduler, random decisions
(valid, invalid, oddly typed) and every cluster cheat of the boundary tests.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dmlsched.checks.cheats import cheats_of
from dmlsched.checks.replay import result_bytes
from dmlsched.errors import InvalidDecision
from dmlsched.model.cluster import Cluster, ClusterDecision, ClusterWorkload, Placement
from dmlsched.model.speed.pdors import sync_worker_rates, worker_rate
from dmlsched.rng import make_rng
from dmlsched.schedulers.protocols import make_scheduler, scheduler_names
from dmlsched.sim.cluster import fast
from dmlsched.sim.cluster import state as engine
from dmlsched.sim.engine import simulate
from dmlsched.workloads.synthetic import synthetic_cluster
from tests.conftest import engine_test_scheduler, make_job
from tests.sim import test_boundary, test_unchanged_placements

ALWAYS, NEVER = 1, 10**9


def _outcome(run: Callable[[], Any], batch_min: int = ALWAYS) -> tuple[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fast, "BATCH_MIN", batch_min)
        try:
            return "ran", result_bytes(run())
        except InvalidDecision as e:
            return "refused", str(e)


def _same_both_ways(run: Callable[[], Any]) -> tuple[str, Any]:
    batched = _outcome(run, ALWAYS)
    assert batched == _outcome(run, NEVER)
    return batched


@pytest.mark.parametrize("name", scheduler_names("cluster"))
def test_every_cluster_scheduler_runs_to_the_same_bytes_batched_or_not(name: str) -> None:
    wl = synthetic_cluster(40, 6, 20, make_rng(5))
    outcome = _same_both_ways(
        lambda: simulate("cluster", wl, engine_test_scheduler("cluster", name), make_rng(6))
    )
    assert outcome[0] == "ran"


def test_the_batch_is_used_for_a_large_honest_decision() -> None:
    wl = synthetic_cluster(40, 6, 20, make_rng(5))
    seen: list[int] = []
    real = engine.read_batch

    def spy(*a: Any) -> Any:
        batch, rest = real(*a)
        seen.append(len(batch.fast) if batch else 0)
        return batch, rest

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(engine, "read_batch", spy)
        mp.setattr(fast, "BATCH_MIN", ALWAYS)
        simulate("cluster", wl, make_scheduler("cluster", "fifo"), make_rng(6))
    assert sum(seen) > 0


_CLUSTER_CHEATS = cheats_of("cluster")


@pytest.mark.parametrize("cheat", _CLUSTER_CHEATS, ids=[c.name for c in _CLUSTER_CHEATS])
def test_a_boundary_cheat_ends_the_same_way_batched(cheat: Any) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fast, "BATCH_MIN", ALWAYS)
        if cheat.refused:
            with pytest.raises(InvalidDecision, match=cheat.match):
                test_boundary.cheat_run(cheat.setting, cheat.on_decide, cheat.on_reset)
        else:
            got = test_boundary.cheat_run(cheat.setting, cheat.on_decide, cheat.on_reset)
            assert got == test_boundary.honest(cheat.setting)[0]


@pytest.mark.parametrize("name", sorted(test_unchanged_placements.CHEATS))
def test_a_changed_returned_placement_is_refused_batched(name: str) -> None:
    keeper = test_unchanged_placements._Keeper(test_unchanged_placements.CHEATS[name])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fast, "BATCH_MIN", ALWAYS)
        with pytest.raises(InvalidDecision) as err:
            simulate("cluster", test_unchanged_placements.WL, keeper, make_rng(0))
    assert err.value.slot in (2, 3)


# ten honest placements and one more, at the end: each way to break it, or to write it oddly
_ODD_PLACEMENTS: dict[str, tuple[Any, bool]] = {  # name: (placement of job 10, accepted)
    "honest": (Placement((3,), (2,), (1,)), True),
    "machine-twice": (Placement((3, 3), (1, 1), (1, 0)), False),
    "no-such-machine": (Placement((12,), (2,), (1,)), False),
    "negative-machine": (Placement((-1,), (2,), (1,)), False),
    "negative-workers": (Placement((3, 4), (3, -1), (1, 0)), False),
    "workers-over-2^31": (Placement((3,), (2**31 + 1,), (2**30,)), False),
    "ps-over-int64": (Placement((3,), (2,), (2**70,)), False),
    "lengths-differ": (Placement((3,), (2, 1), (1,)), False),
    "too-few-ps": (Placement((3,), (4,), (1,)), False),
    "workers-over-F": (Placement((3, 4), (8, 8), (4, 4)), False),
    "ps-without-workers": (Placement((3,), (0,), (1,)), False),
    "bool-count": (Placement((3,), (True,), (1,)), False),
    "float-count": (Placement((3,), (2.0,), (1,)), False),
    "numpy-ints": (Placement((np.int64(3),), (np.int32(2),), (np.uint8(1),)), True),
    "lists": (Placement([3], [2], [1]), True),  # type: ignore[arg-type]
    "empty": (Placement((), (), ()), True),
    "internal-and-spread": (Placement((3, 4), (2, 0), (0, 1)), True),
}


_ODD_WL = ClusterWorkload(
    tuple(make_job(i, batch=10, gamma=2.0, epochs=50) for i in range(11)),
    Cluster.uniform(12, (64.0, 128.0, 256.0, 256.0)),
    3,
)


class _Odd:
    """Jobs 0–9 each alone on its own machine, job 10 at ``last`` (of :data:`_ODD_PLACEMENTS`)."""

    name = "odd"

    def __init__(self, last: Placement) -> None:
        self.last = last

    def reset(self, *a: Any) -> None:
        pass

    def decide(self, view: Any) -> ClusterDecision:
        alloc: dict[int, Any] = {j: Placement((j,), (2,), (1,)) for j in range(10)}
        alloc[10] = self.last
        return ClusterDecision(allocations=alloc)


@pytest.mark.parametrize("name", sorted(_ODD_PLACEMENTS))
def test_each_odd_placement_in_a_batch_ends_as_read_one_by_one(name: str) -> None:
    last, accepted = _ODD_PLACEMENTS[name]
    outcome = _same_both_ways(lambda: simulate("cluster", _ODD_WL, _Odd(last), make_rng(0)))
    assert (outcome[0] == "ran") is accepted, outcome


# ---------------------------------------------------------------- random decisions

_ODD = [True, 1.0, np.int64(1), -1, 2**31 + 1, 2**70, None]


class _Random:
    """Places every pending and active job each slot from its own seeded generator:
    mostly honest (W ≤ F, S ≥ ⌈W/γ⌉, distinct machines), sometimes a returned
    placement kept or rebuilt equal, sometimes broken in one of many ways."""

    name = "random"
    setting = "cluster"

    def __init__(self, seed: int, p_bad: float) -> None:
        self.seed, self.p_bad = seed, p_bad

    def reset(self, cluster: Cluster, horizon: int, rng: Any) -> None:
        self.rng = np.random.default_rng(self.seed)
        self.H = cluster.machines
        self.last: dict[int, Placement] = {}

    def _honest(self, job: Any) -> Placement:
        r = self.rng
        k = int(r.integers(0, min(self.H, 3) + 1))
        machines = tuple(sorted(r.choice(self.H, size=k, replace=False).tolist()))
        if not machines:
            return Placement((), (), ())
        total = min(int(r.integers(1, 7)), job.max_workers)
        w, s = [0] * k, [0] * k
        for _ in range(total):
            w[int(r.integers(0, k))] += 1
        need = job.min_ps(total) + int(r.integers(0, 2))
        for _ in range(min(need, total) if job.mode == "async" else need):  # (3.5)
            s[int(r.integers(0, k))] += 1
        return Placement(machines, tuple(w), tuple(s))

    def _broken(self, p: Placement) -> Any:
        r = self.rng
        how = int(r.integers(0, 7))
        m, w, s = list(p.machines), list(p.workers), list(p.ps)
        if not m:
            m, w, s = [0], [1], [1]
        if how == 0:  # an odd value somewhere
            field = [m, w, s][int(r.integers(0, 3))]
            field[int(r.integers(0, len(field)))] = _ODD[int(r.integers(0, len(_ODD)))]
        elif how == 1:  # a machine twice
            m, w, s = [*m, m[0]], [*w, 1], [*s, 0]
        elif how == 2:  # lengths differ
            w = [*w, 1]
        elif how == 3:  # no such machine
            m[0] = self.H + int(r.integers(0, 3))
        elif how == 4:  # too few PSs
            s = [0] * len(s)
        elif how == 5:  # lists, not tuples (accepted by the one-by-one read)
            return Placement(m, w, s)  # type: ignore[arg-type]
        else:  # far too many workers
            w[0] = 10_000
        return dataclasses.replace(p, machines=tuple(m), workers=tuple(w), ps=tuple(s))

    def decide(self, view: Any) -> ClusterDecision:
        r = self.rng
        alloc: dict[int, Any] = {}
        for j in (*view.pending, *view.active):
            if r.random() < 0.2:
                continue
            old = self.last.get(j)
            roll = r.random()
            if old is not None and roll < 0.3:
                p = old  # the same object: not read again
            elif old is not None and roll < 0.45:
                p = Placement(tuple(old.machines), tuple(old.workers), tuple(old.ps))
            else:
                p = self._honest(view.jobs[j])
            self.last[j] = p
            alloc[j] = self._broken(p) if r.random() < self.p_bad else p
        return ClusterDecision(allocations=alloc)


def _random_workload(seed: int, jobs: int, roomy: bool) -> ClusterWorkload:
    r = np.random.default_rng(seed)
    js = []
    for i in range(jobs):
        kw: dict[str, Any] = dict(
            arrival=int(r.integers(0, 3)),
            epochs=int(r.integers(1, 4)),
            samples=int(r.integers(50, 400)),
            batch=int(r.integers(1, 6)),
            gamma=float(r.choice([0.5, 1.0, 2.0, 3.0])),
            straggler=float(r.choice([1.0, 1.3])),
        )
        if r.random() < 0.2:
            kw.update(
                mode="async", straggler=1.0, ps_bandwidth=float(r.choice([2.0, math.inf, math.inf]))
            )
        js.append(make_job(i, **kw))
    per = (64.0, 128.0, 256.0, 256.0) if roomy else (4.0, 8.0, 64.0, 64.0)
    return ClusterWorkload(tuple(js), Cluster.uniform(4, per), 8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    jobs=st.integers(1, 14),
    p_bad=st.sampled_from([0.0, 0.0, 0.02, 0.2]),
    roomy=st.booleans(),
)
def test_random_decisions_end_the_same_way_batched_or_not(
    seed: int, jobs: int, p_bad: float, roomy: bool
) -> None:
    wl = _random_workload(seed, jobs, roomy)
    _same_both_ways(lambda: simulate("cluster", wl, _Random(seed, p_bad), make_rng(seed)))


@settings(max_examples=60, deadline=None)
@given(
    gamma=st.floats(1e-3, 1e3),
    batch=st.integers(1, 10**6),
    grad_mb=st.floats(0, 1e5),
    tau=st.floats(1e-9, 10),
    straggler=st.floats(1, 5),
    b_int=st.floats(1e-3, 1e3),
    b_ext=st.floats(1e-3, 1e3),
)
def test_vector_worker_rates_are_the_scalar_floats(
    gamma: float,
    batch: int,
    grad_mb: float,
    tau: float,
    straggler: float,
    b_int: float,
    b_ext: float,
) -> None:
    job = make_job(
        0,
        gamma=gamma,
        batch=batch,
        grad_mb=grad_mb,
        tau=tau,
        straggler=straggler,
        b_int=b_int,
        b_ext=b_ext,
    )
    for internal, b in ((True, b_int), (False, b_ext)):
        arrays = (np.array([x], dtype=float) for x in (gamma, batch, grad_mb, tau, straggler, b))
        assert sync_worker_rates(*arrays)[0] == worker_rate(job, internal)  # bit for bit
