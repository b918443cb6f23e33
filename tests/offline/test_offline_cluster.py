"""The offline DMLRS MILP against brute force on tiny instances."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import Cluster, ClusterWorkload
from dmlsched.model.speed.pdors import worker_rate
from dmlsched.model.utility import Linear, Sigmoid
from dmlsched.offline.cluster import solve_offline
from tests.conftest import make_job


def _slot_options(job, H):
    """Every (workers per machine, PSs per machine) in one slot, Eq. (2)/(4) valid."""
    opts = [((0,) * H, (0,) * H)]
    per = range(job.max_workers + 1)
    ps_per = range(math.ceil(job.max_workers / job.gamma) + 1)
    for w in itertools.product(per, repeat=H):
        n_w = sum(w)
        if n_w == 0 or n_w > job.max_workers:
            continue
        for s in itertools.product(ps_per, repeat=H):
            if sum(s) * job.gamma >= n_w:
                opts.append((w, s))
    return opts


def _work(job, w, s):
    machines = {h for h, x in enumerate(w) if x} | {h for h, x in enumerate(s) if x}
    return sum(w) * worker_rate(job, internal=len(machines) == 1)


def brute_force(wl: ClusterWorkload) -> float:
    """Best Σ u(t̃ − a) over every schedule (γ-form rate, Fact 1, capacity)."""
    H = wl.cluster.machines
    cap = wl.cluster.capacity
    per_job = []
    for job in wl.jobs:
        opts = _slot_options(job, H)
        slots = range(job.arrival, wl.horizon)
        scheds = []
        for combo in itertools.product(opts, repeat=len(slots)):
            done, t_done = 0.0, None
            for t, (w, s) in zip(slots, combo, strict=True):
                done += _work(job, w, s)
                if t_done is None and done >= job.total_work * (1 - 1e-9):
                    t_done = t
            value = job.utility(t_done - job.arrival) if t_done is not None else 0.0
            use = np.zeros((wl.horizon, H, cap.shape[1]))
            for t, (w, s) in zip(slots, combo, strict=True):
                use[t] += np.outer(w, job.worker_demand) + np.outer(s, job.ps_demand)
            scheds.append((value, use))
        per_job.append(scheds)
    a, b = per_job  # two jobs: all pairs at once
    va = np.array([v for v, _ in a])
    vb = np.array([v for v, _ in b])
    ua = np.stack([u.ravel() for _, u in a])
    ub = np.stack([u.ravel() for _, u in b])
    fits = np.all(_fits(ua, ub, cap, wl.horizon), axis=2)
    total = va[:, None] + vb[None, :]
    return float(np.max(np.where(fits, total, 0.0)))


def _fits(ua: np.ndarray, ub: np.ndarray, cap: np.ndarray, horizon: int) -> np.ndarray:
    limit = np.broadcast_to(cap, (horizon, *cap.shape)).ravel()
    return ua[:, None, :] + ub[None, :, :] <= limit[None, None, :] + 1e-9


def _tiny(seed: int) -> ClusterWorkload:
    rng = np.random.default_rng(seed)
    jobs = []
    for i in range(2):
        jobs.append(
            make_job(
                i,
                arrival=int(rng.integers(0, 2)) * i,
                batch=2,
                gamma=2.0,
                tau=1e-3,
                samples=int(rng.integers(600, 1800)),
                grad_mb=float(rng.uniform(5e3, 2e4)),
                epochs=1,
                utility=Linear(float(rng.uniform(5, 10)), float(rng.uniform(0.5, 3))),
                worker_demand=(1.0, 2.0, 0.0, 0.0),
                ps_demand=(0.0, 1.0, 0.0, 0.0),
            )
        )
    cluster = Cluster.uniform(2, (2.0, 5.0, 1.0, 1.0))
    return ClusterWorkload(jobs=tuple(jobs), cluster=cluster, horizon=2)


@pytest.mark.parametrize("seed", range(4))
def test_offline_milp_matches_brute_force_on_tiny_instances(seed: int) -> None:
    wl = _tiny(seed)
    opt = solve_offline(wl)
    assert opt.utility == pytest.approx(brute_force(wl), abs=1e-6)


def test_offline_milp_uses_the_internal_rate_only_when_everything_shares_one_machine() -> None:
    # one job; 2 workers co-located finish in 1 slot, spread they need 2 slots
    job = make_job(
        0, batch=2, gamma=2.0, tau=1e-3, samples=1500, grad_mb=200.0, utility=Linear(10.0, 4.0)
    )
    assert 2 * worker_rate(job, True) >= job.total_work > 2 * worker_rate(job, False)
    assert 4 * worker_rate(job, False) >= job.total_work
    roomy = ClusterWorkload((job,), Cluster.uniform(2, (2.0, 5.0, 1.0, 1.0)), horizon=3)
    cramped = ClusterWorkload((job,), Cluster.uniform(2, (1.0, 3.0, 1.0, 1.0)), horizon=3)
    assert solve_offline(roomy).utility == pytest.approx(10.0)
    assert solve_offline(roomy).completion == {0: 0}
    # one worker per machine only: always external, needs a second slot
    assert solve_offline(cramped).completion == {0: 1}
    assert solve_offline(cramped).utility == pytest.approx(6.0)


def test_offline_rejects_async_jobs() -> None:
    job = make_job(0, mode="async", ps_bandwidth=10.0, utility=Sigmoid(1, 0, 0))
    wl = ClusterWorkload((job,), Cluster.uniform(1, (4.0, 8.0, 64.0, 64.0)), horizon=2)
    with pytest.raises(InvalidInput):
        solve_offline(wl)
