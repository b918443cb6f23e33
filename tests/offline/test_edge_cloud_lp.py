from __future__ import annotations

import numpy as np
import pytest

from dmlsched.model.edge_cloud import EdgeCloud, EdgeCloudWorkload, EdgeJob
from dmlsched.offline.edge_cloud import exact_total_jct, half_processing, lp_lower_bound
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler, scheduler_names
from dmlsched.sim.engine import simulate
from dmlsched.workloads.edge_cloud import edge_cloud_workload
from tests.edge_cloud_helpers import ec_job, workload


def test_lp_bound_of_one_job_by_hand() -> None:
    # D = 1, p = 2 at n = 1: best is the edge worker at slots 1 and 2 (Δ = 1):
    # Σ_t x n/(EDB)(t − r) = 1·1/2 + 2·1/2 = 1.5 (the cloud at Δ = 5 is worse);
    # H(2) = 1/2 restores the exact JCT c − r = 2
    lb = lp_lower_bound(workload((ec_job(minibatches=2, delay=(1, 5)),)))
    assert lb.lp == pytest.approx(1.5)
    assert lb.correction == pytest.approx(0.5)
    assert lb.value == pytest.approx(2.0)
    assert lb.status == "Optimal"
    assert exact_total_jct(workload((ec_job(minibatches=2, delay=(1, 5)),))).value == 2.0


def test_a_slower_offline_side_raises_the_bound_by_hand() -> None:
    # Appendix D's offline speed 1/(1 + ε) with ε = 1: n = 1/2, p = 4 in slots 1–4,
    # c − r = 4 = LP (mean slot 2.5) + H(4) = 1.5
    wl = workload((ec_job(minibatches=2, delay=(1, 50)),))
    assert lp_lower_bound(wl, speed=0.5).value == pytest.approx(4.0)
    assert lp_lower_bound(wl, speed=0.5).value > lp_lower_bound(wl).value


def test_lp_spreads_a_chunk_fractionally_and_uses_the_cloud_in_parallel() -> None:
    # two chunks, one edge worker: one chunk-slot per slot on the edge, the rest in the cloud
    job = ec_job(chunks=2, minibatches=2, delay=(1, 1))
    lb = lp_lower_bound(workload((job,), EdgeCloud(((0,),), ((0,),), 2)))
    # both chunks can train in slots 1–2 (edge + cloud): 2 chunks × (1·1/4 + 2·1/4) = 1.5
    assert lb.lp == pytest.approx(1.5)
    assert lb.value == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("q", "h"), [(0.5, 0.0), (1.0, 0.0), (1.5, 1 / 3), (2.0, 0.5), (4.0, 1.5), (4.25, 7 / 4.25)]
)
def test_half_processing_is_the_slots_the_fractional_objective_misses(q, h) -> None:
    # k = ⌊q⌋ full slots at c, c−1, …, plus φ = q − k of slot c − k:
    # H = (Σ_{i<k} i + φ k) / q
    assert half_processing(q) == pytest.approx(h)


def test_exact_optimum_of_two_jobs_on_one_worker_is_shortest_first() -> None:
    # p = 2 and p = 3, both at r = 0 with Δ = 0, the cloud too far (Δ = 100):
    # A in slots 0–1 (c − r = 1), B in slots 2–4 (4): total 5
    a = ec_job(0, minibatches=2, delay=(0, 100))
    b = ec_job(1, minibatches=3, delay=(0, 100))
    wl = workload((a, b), horizon=200)
    assert exact_total_jct(wl).value == pytest.approx(5.0)
    assert lp_lower_bound(wl).value <= 5.0 + 1e-9


def test_exact_optimum_uses_the_faster_all_cloud_rate_when_it_pays() -> None:
    # ζ = 0 costs 1 slot per mini-batch extra (q/b = 1/2 slot each way): edge p = 4,
    # all-cloud p = 2 at Δ = 1 — two chunks in the cloud finish at slot 2, JCT 2
    job = ec_job(chunks=2, minibatches=2, q_mb=225.0, b_mbps=1.0, delay=(0, 1))
    assert exact_total_jct(workload((job,))).value == pytest.approx(2.0)


def _tiny(rng: np.random.Generator) -> EdgeCloudWorkload:
    S = int(rng.integers(1, 3))
    types = tuple(
        tuple(int(k) for k in rng.integers(0, 2, size=int(rng.integers(1, 3)))) for _ in range(S)
    )
    jobs = tuple(
        EdgeJob(
            id=i,
            arrival=int(rng.integers(0, 4)),
            chunks=int(rng.integers(1, 4)),
            minibatches=int(rng.integers(1, 5)),
            epochs=1,
            m=float(rng.choice([0.5, 1.0, 1.5])),
            G=0.0,
            q_mb=float(rng.choice([0.0, 45.0, 225.0])),  # 0, 0.2 or 1 slot of 2q/b
            b_mbps=1.0,
            worker_type=int(rng.integers(0, 2)),
            ps_type=0,
            delay=(*(int(x) for x in rng.integers(0, 3, size=S)), int(rng.integers(2, 6))),
        )
        for i in range(int(rng.integers(2, 4)))
    )
    return EdgeCloudWorkload(jobs, EdgeCloud(types, tuple((0, 1) for _ in range(S)), 2), 200)


def test_bound_never_exceeds_the_exact_optimum_which_no_scheduler_beats() -> None:
    # 40 random tiny instances (2–3 jobs, 1–3 chunks, 1–2 servers, ζ-dependent rates):
    # LP + Σ H ≤ OPT of (2) ≤ the total JCT of every registered scheduler at speed 1
    names = scheduler_names("edge-cloud")
    tight = gain = 0.0
    for seed in range(40):
        wl = _tiny(np.random.default_rng(seed))
        lb = lp_lower_bound(wl)
        opt = exact_total_jct(wl).value
        assert lb.lp <= lb.value <= opt + 1e-6, seed
        for name in names:
            sched = make_scheduler("edge-cloud", name)
            jct = simulate("edge-cloud", wl, sched, np.random.default_rng(0)).metrics
            assert opt <= jct["total_jct"] + 1e-6, (seed, name)
        tight += abs(lb.value - opt) < 1e-6
        gain += (lb.value - lb.lp) / opt / 40
    assert tight >= 1  # sometimes exact
    assert gain > 0.1  # Σ H closes > 10% of OPT on average (measured 15%)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lp_is_below_every_scheduler_total_jct(seed) -> None:
    wl_rng, rng = spawn(make_rng(seed), 2)
    wl = edge_cloud_workload(6, 4, 8, wl_rng)
    lb = lp_lower_bound(wl)
    for name in ("a-online", "srtf", "batchsche"):
        jct = simulate("edge-cloud", wl, make_scheduler("edge-cloud", name), rng).metrics
        assert lb.value <= jct["total_jct"] + 1e-6
        assert lb.lp <= jct["fractional_flow"] + 1e-6


def test_speed_augmentation_lowers_the_online_jct() -> None:
    wl_rng, _ = spawn(make_rng(4), 2)
    wl = edge_cloud_workload(5, 4, 6, wl_rng)
    jct = [
        simulate(
            "edge-cloud",
            wl.with_speedup(s),
            make_scheduler("edge-cloud", "a-online"),
            np.random.default_rng(0),
        ).metrics["total_jct"]
        for s in (1.0, 1.5)
    ]
    assert jct[1] < jct[0]


def _full_lp(wl: EdgeCloudWorkload) -> tuple[float, int]:
    """LP (4) with ζ = 1 written out again from the module docstring, every server's column
    at every slot of the window (none omitted), solved by scipy: (optimum, columns)."""
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix

    from dmlsched.model.speed.aonline import chunk_slots, processing_capacity

    system = wl.system
    S = system.servers
    count = {(s, k): list(row).count(k) for s, row in enumerate(system.worker_types) for k in row}
    cols = []  # (job index, server, slot)
    for i, j in enumerate(wl.jobs):
        end = j.arrival + j.delay[S] + chunk_slots(j, 1, 1.0)
        for s in range(S + 1):
            if s == S or count.get((s, j.worker_type), 0):
                cols += [(i, s, t) for t in range(j.arrival + j.delay[s], end)]
    cost = [
        processing_capacity(wl.jobs[i], 1, 1.0)
        / (wl.jobs[i].work_per_chunk * wl.jobs[i].chunks)
        * (t - wl.jobs[i].arrival)
        for i, _, t in cols
    ]
    rows: dict[tuple, int] = {}
    r, c, v, b = [], [], [], []

    def add(key: tuple, col: int, val: float, rhs: float) -> None:
        if key not in rows:
            rows[key] = len(rows)
            b.append(rhs)
        r.append(rows[key])
        c.append(col)
        v.append(val)

    for n, (i, s, t) in enumerate(cols):
        j = wl.jobs[i]
        # (4a) as -Σ x n_j ≤ -E_j B_j D_j; (4e) Σ_s x ≤ D_j; (4b) Σ x ≤ K_sk on the edge
        add(("a", i), n, -processing_capacity(j, 1, 1.0), -j.work_per_chunk * j.chunks)
        add(("e", i, t), n, 1.0, j.chunks)
        if s < S:
            add(("b", s, j.worker_type, t), n, 1.0, count[(s, j.worker_type)])
    a = coo_matrix((v, (r, c)), shape=(len(rows), len(cols)))
    res = linprog(cost, A_ub=a.tocsr(), b_ub=b, bounds=(0, None), method="highs")
    assert res.status == 0
    return float(res.fun), len(cols)


@pytest.mark.parametrize("seed", range(6))
def test_omitting_the_edge_columns_the_cloud_dominates_keeps_the_optimum(seed) -> None:
    # from r_j + Δ_{j s_c} on, the cloud column of j at t has the same cost and rate as
    # every edge column of j at t and no capacity row: the optimum is that of the LP with
    # every column, which has 1.8–2.6 times as many of them here
    wl_rng, _ = spawn(make_rng(seed), 2)
    wl = edge_cloud_workload(8, 3, 12, wl_rng)
    full, columns = _full_lp(wl)
    lb = lp_lower_bound(wl)
    assert lb.lp == pytest.approx(full, rel=1e-9, abs=1e-9)
    assert lb.variables < columns
