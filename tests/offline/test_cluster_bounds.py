"""The cluster MILP is a true bound on the engine (issue 15, Build item 2).

On 40 random tiny instances (2 sync jobs, 2 machines, 2–3 slots, ratios γ
with ⌈W/γ⌉ > W/γ, tight capacities): every schedule the engine can be given
— workers and PSs per machine per slot, PSs up to one more than ⌈F/γ⌉ per
machine — is run through the real engine (:func:`simulate`, one job at a
time, the best combination that fits together then once more jointly), and
the best engine utility found must not exceed the MILP optimum; every
registered cluster scheduler's engine utility must not either.
"""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import pytest

from dmlsched.model.cluster import Cluster, ClusterJob, ClusterWorkload, Placement
from dmlsched.model.speed.pdors import worker_rate
from dmlsched.model.utility import Linear, Sigmoid
from dmlsched.offline.cluster import OfflineSolution, Replay, solve_offline
from dmlsched.schedulers.protocols import make_scheduler, scheduler_names
from dmlsched.sim.engine import simulate
from tests.conftest import make_job

N_INSTANCES = 40
CAPACITY = (2.0, 6.0, 8.0, 8.0)


def _instance(seed: int) -> ClusterWorkload:
    rng = np.random.default_rng([seed, 15])
    horizon = int(rng.choice([2, 3], p=[0.75, 0.25]))
    jobs = []
    for i in range(2):
        gamma = float(rng.choice([1.0, 1.5, 2.0, 3.0]))
        job = make_job(
            i,
            arrival=int(rng.integers(0, horizon)) if i else 0,
            # three slots only with one worker at most (keeps the enumeration small)
            batch=int(rng.integers(1, 4 if horizon == 2 else 2)),
            gamma=gamma,
            tau=float(rng.uniform(2e-4, 1e-3)),
            grad_mb=float(rng.uniform(200.0, 3000.0)),
            b_int=float(rng.choice([2.0, 40.0])),  # co-location worth little or much
            b_ext=1.0,
            worker_demand=(float(rng.integers(0, 2)), float(rng.integers(1, 4)), 2.0, 1.0),
            ps_demand=(0.0, float(rng.integers(1, 3)), 1.0, 1.0),
            utility=(
                Linear(float(rng.uniform(3, 10)), float(rng.uniform(0.5, 3)))
                if rng.random() < 0.5
                else Sigmoid(float(rng.uniform(3, 10)), float(rng.uniform(0.5, 4)), 1.0)
            ),
        )
        # work for 1–5 worker-slots at the external rate: some jobs need co-location,
        # several workers or several slots; half of them just above a whole number, where
        # crediting PSs beyond W/γ (the engine before issue 15) finished a slot earlier
        if rng.random() < 0.5:
            slots_of_work = float(rng.integers(1, 5) + rng.uniform(0.02, 0.3))
        else:
            slots_of_work = float(rng.uniform(0.8, 5.0))
        samples = max(1, round(slots_of_work * worker_rate(job, internal=False)))
        jobs.append(_with(job, samples=samples))
    return ClusterWorkload(tuple(jobs), Cluster.uniform(2, CAPACITY), horizon)


def _with(job: ClusterJob, **kw: object) -> ClusterJob:
    import dataclasses

    return dataclasses.replace(job, **kw)


def _slot_options(job: ClusterJob, H: int) -> list[Placement | None]:
    """Every placement of one job in one slot the engine accepts on an empty cluster."""
    cap = np.asarray(CAPACITY)
    a, b = np.asarray(job.worker_demand), np.asarray(job.ps_demand)
    out: list[Placement | None] = [None]
    for w in itertools.product(range(job.max_workers + 1), repeat=H):
        W = sum(w)
        if W == 0 or job.max_workers < W:
            continue
        need = job.min_ps(W)
        for s in itertools.product(range(need + 2), repeat=H):
            if not need <= sum(s) <= need + 1:  # (2) as ⌈W/γ⌉, and one PS more
                continue
            if all(np.all(w[h] * a + s[h] * b <= cap + 1e-9) for h in range(H)):
                out.append(Placement.from_counts(dict(enumerate(w)), dict(enumerate(s))))
    return out


def _engine_utility(wl: ClusterWorkload, schedule: dict[int, dict[int, Placement]]) -> float:
    rng = np.random.default_rng(0)
    return simulate("cluster", wl, Replay(schedule), rng).metrics["total_utility"]


def _usage(job: ClusterJob, plan: dict[int, Placement], wl: ClusterWorkload) -> np.ndarray:
    use = np.zeros((wl.horizon, wl.cluster.machines, len(CAPACITY)))
    for t, p in plan.items():
        for m, w, s in zip(p.machines, p.workers, p.ps, strict=True):
            use[t, m] += w * np.asarray(job.worker_demand) + s * np.asarray(job.ps_demand)
    return use


def _job_schedules(job: ClusterJob, wl: ClusterWorkload) -> list[tuple[float, dict]]:
    """(engine utility, plan) of every schedule of ``job`` alone that completes, plus the
    empty one (a schedule earning 0 is no better than the empty one and uses more).

    Depth first over the slots: each prefix is run in the real engine, and a
    prefix after which the job is done is not extended (the engine refuses
    allocations to finished jobs, so later slots cannot matter).
    """
    alone = ClusterWorkload((job,), wl.cluster, wl.horizon)
    options = _slot_options(job, wl.cluster.machines)[1:]
    out: list[tuple[float, dict]] = [(0.0, {})]

    def extend(t: int, plan: dict[int, Placement]) -> None:
        if t >= wl.horizon:
            return
        extend(t + 1, plan)  # nothing in slot t
        for p in options:
            trial = {**plan, t: p}
            metrics = simulate("cluster", alone, Replay({job.id: trial}), np.random.default_rng(0))
            if metrics.metrics["completed_jobs"] > 0:
                out.append((metrics.metrics["total_utility"], trial))
            else:
                extend(t + 1, trial)

    extend(job.arrival, {})
    return out


def brute_force(wl: ClusterWorkload) -> tuple[float, dict[int, dict[int, Placement]]]:
    """Best engine utility over every pair of per-job schedules that fit together."""
    per_job = [
        [(v, plan, _usage(job, plan, wl).ravel()) for v, plan in _job_schedules(job, wl)]
        for job in wl.jobs
    ]
    a, b = per_job
    va = np.array([v for v, _, _ in a])
    vb = np.array([v for v, _, _ in b])
    ua = np.stack([u for _, _, u in a])
    ub = np.stack([u for _, _, u in b])
    limit = np.broadcast_to(wl.cluster.capacity, (wl.horizon, *wl.cluster.capacity.shape)).ravel()
    fits = np.all(ua[:, None, :] + ub[None, :, :] <= limit + 1e-9, axis=2)
    total = np.where(fits, va[:, None] + vb[None, :], -np.inf)
    i, k = np.unravel_index(int(np.argmax(total)), total.shape)
    best = {wl.jobs[0].id: a[i][1], wl.jobs[1].id: b[k][1]}
    return float(total[i, k]), best


@cache
def _opt(seed: int) -> tuple[ClusterWorkload, OfflineSolution]:
    wl = _instance(seed)
    opt = solve_offline(wl)
    assert opt.optimal
    return wl, opt


def _case(seed: int) -> tuple[ClusterWorkload, float, float, dict]:
    wl, opt = _opt(seed)
    value, best = brute_force(wl)
    return wl, opt.bound, value, best


@pytest.mark.parametrize("seed", range(N_INSTANCES))
def test_brute_force_over_the_engine_never_beats_the_milp(seed: int) -> None:
    wl, bound, value, best = _case(seed)
    # the best combination, run jointly in the real engine, earns what the parts said
    assert _engine_utility(wl, best) == pytest.approx(value, abs=1e-9)
    assert value <= bound + 1e-6
    # the MILP is exact for the engine here: its optimum is reached by some schedule
    assert value == pytest.approx(bound, rel=1e-6, abs=1e-6)


CLUSTER = scheduler_names("cluster")


@pytest.mark.parametrize("name", CLUSTER)
def test_every_cluster_scheduler_stays_below_the_milp(name: str) -> None:
    for seed in range(N_INSTANCES):
        wl, opt = _opt(seed)
        sched = make_scheduler("cluster", name)
        got = simulate("cluster", wl, sched, np.random.default_rng(seed)).metrics
        assert got["total_utility"] <= opt.bound + 1e-6, (name, seed)


def test_the_milp_schedule_replayed_in_the_engine_earns_the_milp_value() -> None:
    for seed in range(10):
        wl, opt = _opt(seed)
        assert _engine_utility(wl, opt.schedule) == pytest.approx(opt.utility, abs=1e-9)
