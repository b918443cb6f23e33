"""The ``interval`` optimum is a true bound: brute force through the engine never beats it.

On 40 tiny random instances every decision the engine can be handed — each
subset of jobs admitted, each admitted job with each (w, p) of a box that
reaches past Eq. (3) — is run through the real engine
(:func:`dmlsched.sim.interval.simulate_interval`); the ones it refuses
(Eq. (2), Eq. (3)) are counted, the best utility it accepts must equal
:func:`dmlsched.offline.interval.interval_optimum` (the optimum is exact,
so ≤ and ≥ both hold), and every registered ``interval`` scheduler must
stay at or below it.
"""

from __future__ import annotations

import itertools
from typing import ClassVar

import numpy as np

from dmlsched.errors import InvalidDecision
from dmlsched.model.interval import IntervalDecision, IntervalJob, IntervalWorkload
from dmlsched.model.utility import Sigmoid
from dmlsched.model.views import IntervalView
from dmlsched.offline.interval import interval_optimum
from dmlsched.schedulers.protocols import make_scheduler, scheduler_names
from dmlsched.sim.engine import simulate

INSTANCES = 40
RTOL = 1e-6  # the MKP MILP is exact to HiGHS's tolerances (1e-8 of the largest value)
BOX = 3  # w, p ∈ 1..BOX: covers Eq. (3) (limits ≤ 2 tasks beyond w = p = 1) and reaches past it


class _Fixed:
    """Hands the engine one given decision."""

    name: ClassVar[str] = "brute-force"
    setting: ClassVar[str] = "interval"

    def __init__(self, allocations: dict[int, tuple[int, int]]) -> None:
        self.allocations = allocations

    def reset(self, capacity, resources, rng) -> None:
        pass

    def decide(self, view: IntervalView) -> IntervalDecision:
        return IntervalDecision(allocations=dict(self.allocations))


def _tiny(rng: np.random.Generator) -> IntervalWorkload:
    jobs = []
    for i in range(int(rng.integers(2, 4))):
        o = tuple(float(x) for x in rng.integers(1, 3, size=2))
        g = tuple(float(x) for x in rng.integers(1, 3, size=2))
        # room for 0–2 extra tasks beyond one worker and one PS (demands ≥ 1)
        lim = tuple(o[r] + g[r] + float(rng.integers(0, 3)) for r in range(2))
        layers = int(rng.integers(1, 3))
        jobs.append(
            IntervalJob(
                id=i,
                iterations=int(rng.integers(50, 200)),
                global_batch=int(rng.integers(8, 64)),
                minibatch=int(rng.integers(1, 8)),
                grad_mb=float(rng.uniform(10, 200)),
                ps_bandwidth=float(rng.uniform(1, 10)),
                fp_ms=tuple(float(x) for x in rng.uniform(1, 50, size=layers)),
                bp_ms=tuple(float(x) for x in rng.uniform(1, 50, size=layers)),
                comm_ms=tuple(float(x) for x in rng.uniform(1, 50, size=layers)),
                beta1=float(rng.uniform(0, 0.05)),
                beta2=float(rng.uniform(0, 0.01)),
                alpha=float(rng.uniform(0.1, 1)),
                worker_demand=o,
                ps_demand=g,
                limit=lim,
                utility=Sigmoid(
                    float(rng.uniform(1, 100)),
                    float(rng.uniform(0.05, 2)),
                    float(rng.uniform(5, 40)),
                ),
                mode="sync" if rng.random() < 0.5 else "async",
                time_unit_s=1.0,
            )
        )
    total = np.sum([j.limit for j in jobs], axis=0)
    # capacity below the sum of limits (Eq. (2) binds) but ≥ the largest single job
    cap = np.maximum(np.max([j.limit for j in jobs], axis=0), total * rng.uniform(0.4, 0.9))
    return IntervalWorkload(tuple(jobs), cap, resources=("cpu", "mem"))


def _brute_force(wl: IntervalWorkload) -> tuple[float, int, int]:
    """(best engine utility, decisions run, decisions the engine refused)."""
    options = [None, *itertools.product(range(1, BOX + 1), repeat=2)]
    best, runs, refused = 0.0, 0, 0
    for choice in itertools.product(options, repeat=len(wl.jobs)):
        alloc = {j.id: a for j, a in zip(wl.jobs, choice, strict=True) if a is not None}
        runs += 1
        try:
            m = simulate("interval", wl, _Fixed(alloc), np.random.default_rng(0)).metrics
        except InvalidDecision:
            refused += 1
            continue
        best = max(best, m["total_utility"])
    return best, runs, refused


def test_brute_force_over_the_engine_equals_the_optimum_and_no_scheduler_beats_it() -> None:
    names = scheduler_names("interval")
    total_runs = total_refused = 0
    for seed in range(INSTANCES):
        wl = _tiny(np.random.default_rng(seed))
        opt = interval_optimum(wl).total_utility
        brute, runs, refused = _brute_force(wl)
        total_runs += runs
        total_refused += refused
        assert brute <= opt + RTOL * max(1.0, opt), seed  # OPT is a bound ...
        assert brute >= opt - RTOL * max(1.0, opt), seed  # ... and attained: exact
        for name in names:
            # ε1 only sets Alg. 1's grid (cost), not the bound being tested
            sched = make_scheduler("interval", name, **({"eps": 0.1} if "smd" in name else {}))
            got = simulate("interval", wl, sched, np.random.default_rng(seed)).metrics
            assert got["total_utility"] <= opt + RTOL * max(1.0, opt), (seed, name)
    assert total_refused > 0  # the box reaches past Eq. (2)/(3): the engine guards both
    assert total_runs > 10 * INSTANCES
