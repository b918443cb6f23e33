"""``pd-ors+``'s per-class rounding (``rounding="class"``): draws, spread, feasibility."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import Cluster, ClusterWorkload
from dmlsched.model.utility import Sigmoid
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers._shared.kernels import class_fits, class_rounding_ok
from dmlsched.schedulers.cluster.pdors import PdorsOracle, spread_class
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.synthetic import synthetic_cluster
from tests.conftest import make_job


def test_spread_gives_each_machine_floor_or_ceil_and_keeps_extras_apart_when_told() -> None:
    # 3 machines, 4 workers: one machine 2, two 1 (by hand); 2 PSs: two machines 1
    rng = np.random.default_rng(0)
    w, s = spread_class(3, 4, 2, True, rng)
    assert sorted(w.tolist()) == [1, 1, 2] and sorted(s.tolist()) == [0, 1, 1]
    # 4 machines, 1 extra worker and 2 extra PSs apart: never on one machine
    for _ in range(50):
        w, s = spread_class(4, 5, 2, False, rng)
        assert w.sum() == 5 and s.sum() == 2
        assert not np.any((w == 2) & (s == 1))


def test_spread_puts_the_extras_on_uniform_machines() -> None:
    # which machine carries the one extra worker of 5 on 4 machines: each w.p. 1/4,
    # as under the per-machine draws given their total (by hand)
    rng = np.random.default_rng(1)
    hits = np.zeros(4)
    for _ in range(4000):
        w, _s = spread_class(4, 5, 0, True, rng)
        hits[np.argmax(w)] += 1
    assert hits / hits.sum() == pytest.approx([0.25] * 4, abs=0.03)


def test_class_fits_says_together_apart_or_not_at_all() -> None:
    # a worker needs 0.6 and a PS 0.6 of one resource (by hand)
    a, b = np.array([0.6]), np.array([0.6])
    # room 1.0, 2 machines, W = S = 1: (1, 1) breaks it, (1, 0) and (0, 1) fit: apart
    assert class_fits(0, 1, 0, 1, 2, a, b, np.array([1.0])) == 0
    # room 1.2: one machine holds both: together
    assert class_fits(0, 1, 0, 1, 2, a, b, np.array([1.2])) == 1
    # room 1.0, W = 2, S = 1 on 2 machines: each has a worker, one must take the PS
    assert class_fits(1, 0, 0, 1, 2, a, b, np.array([1.0])) == -1


def test_class_test_sees_a_machine_with_both_extras_only_when_they_must_share() -> None:
    # one class of 2 machines with room 1.0 of one resource; a worker needs 0.6 and
    # a PS 0.6, so a machine holds a worker or a PS but not both (by hand):
    # W = 1, S = 1 spreads as (1, 0), (0, 1) — feasible; W = 2, S = 1 puts a worker
    # and the PS together on the second machine — infeasible
    a, b = np.array([0.6]), np.array([0.6])
    ub = np.array([[1.0]])
    cand = np.array([[1.0, 1.0], [2.0, 1.0]])
    ok = class_rounding_ok(cand, np.array([2]), 1.0, a, b, ub, 10.0, 2.0, 1e-9)
    assert ok.tolist() == [True, False]
    # the workload row (26) and Eq. (2): W ≥ m, ⌈W/γ⌉ ≤ S
    ok = class_rounding_ok(np.array([[1.0, 1.0]]), np.array([2]), 2.0, a, b, ub, 10.0, 2.0, 1e-9)
    assert ok.tolist() == [False]


def test_an_unknown_rounding_is_refused_naming_the_field() -> None:
    wl = synthetic_cluster(2, 3, 4, make_rng(0))
    sched = make_scheduler("cluster", "pd-ors+", rounding="coin")
    with pytest.raises(InvalidInput, match="rounding"):
        sched.reset(wl.cluster, wl.horizon, make_rng(0))


def _recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:  # type: ignore[type-arg]
    """Every per-class rounding of a run: (oracle, slot data, bound, result, placement)."""
    seen: list[tuple] = []  # type: ignore[type-arg]
    original = PdorsOracle._draw_classes

    def record(self, d, m):  # type: ignore[no-untyped-def]
        res, placement = original(self, d, m)
        seen.append((self, d, m, res, placement(res.x) if res.success else None))
        return res, placement

    monkeypatch.setattr(PdorsOracle, "_draw_classes", record)
    return seen


def _check(oracle: PdorsOracle, d, m: int, res, p) -> None:  # type: ignore[no-untyped-def]
    job, H = oracle.job, oracle.H
    w = np.zeros(H)
    s = np.zeros(H)
    for h, k, j in zip(p.machines, p.workers, p.ps, strict=True):
        w[h], s[h] = k, j
    # the placement is feasible: (24) on every machine, (26), Eq. (2)/(4)
    use = np.outer(w, oracle.alpha) + np.outer(s, oracle.beta)
    assert np.all(use <= d.free + 1e-9 * np.maximum(1.0, d.free))
    assert m <= w.sum() <= job.max_workers
    assert np.ceil(w.sum() / job.gamma - 1e-9) <= s.sum()
    # each class's totals are what the per-machine rounding of the even split
    # could sum to: n⌊x'⌋ ≤ total ≤ n⌈x'⌉ (workers may be trimmed to F below that),
    # and every machine of the class carries ⌊total/n⌋ or ⌈total/n⌉
    x = d.lp[m][1]
    cl = d.classes
    C = cl.n
    gain = float(oracle.gain(m, d))
    for c in range(C):
        members = cl.members[cl.starts[c] : cl.starts[c + 1]]
        n = members.size
        for kind, total_lp, per in ((0, x[c], w), (1, x[C + c], s)):
            got = per[members].sum()
            xs = gain * total_lp / n
            lo, hi = n * np.floor(xs + 1e-9), n * np.ceil(xs - 1e-9)
            assert got <= hi
            assert got >= lo or (kind == 0 and w.sum() == job.max_workers)
            assert per[members].max() - per[members].min() <= 1
    assert res.cost == pytest.approx(
        float(w @ (d.price @ oracle.alpha) + s @ (d.price @ oracle.beta)), rel=1e-9
    )


def _spread_jobs(machines: int, epochs: int, jobs: int = 5, mode: str = "sync") -> ClusterWorkload:
    """Jobs too large for one 4-GPU machine (the external, rounded case), arriving over
    three slots, so machines fall into classes by what earlier jobs took."""
    js = tuple(
        make_job(
            i, arrival=i % 3, epochs=epochs + 5 * i, mode=mode, utility=Sigmoid(10.0, 0.0, 0.0)
        )
        for i in range(jobs)
    )
    return ClusterWorkload(
        jobs=js, cluster=Cluster.uniform(machines, (4.0, 8.0, 64.0, 64.0)), horizon=6
    )


@settings(max_examples=15, deadline=None)
@given(
    st.integers(0, 10_000),
    st.integers(3, 16),
    st.integers(8, 40),
    st.sampled_from([0.8, 1.0, 1.2]),
)
def test_class_roundings_are_feasible_and_sum_as_per_machine_roundings_could(
    seed: int, machines: int, epochs: int, gain: float
) -> None:
    with pytest.MonkeyPatch.context() as mp:
        seen = _recorded(mp)
        wl = _spread_jobs(machines, epochs)
        sched = make_scheduler("cluster", "pd-ors+", rounding="class", g_delta=gain, attempts=40)
        _, rng = spawn(make_rng(seed), 2)
        simulate("cluster", wl, sched, rng)  # the engine's referee accepts every decision
    for oracle, d, m, res, p in seen:
        if res.success:
            _check(oracle, d, m, res, p)


def test_class_rounding_runs_where_jobs_span_machines_and_async_jobs_keep_the_fill(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = _recorded(monkeypatch)
    sched = make_scheduler("cluster", "pd-ors+", rounding="class", attempts=40)
    simulate("cluster", _spread_jobs(6, 10), sched, spawn(make_rng(0), 2)[1])
    assert sum(res.success for *_, res, _p in seen) > 20  # measured: 65 of 70
    for oracle, d, m, res, p in seen:
        if res.success:
            _check(oracle, d, m, res, p)
    seen.clear()
    sched = make_scheduler("cluster", "pd-ors+", rounding="class", attempts=40)
    simulate("cluster", _spread_jobs(4, 10, jobs=2, mode="async"), sched, spawn(make_rng(0), 2)[1])
    assert seen == []  # the fill is uneven within a class: drawn per machine
