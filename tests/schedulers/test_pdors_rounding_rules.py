"""PD-ORS's external LP at tiny prices, the discard rule after S failed roundings, the probe."""

from __future__ import annotations

import numpy as np
import pytest

from dmlsched.experiments.rounding_probe import ProbingPdors
from dmlsched.model.cluster import Cluster, ClusterWorkload
from dmlsched.model.utility import Sigmoid
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.cluster.pdors import per_machine_lp
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.synthetic import synthetic_cluster
from tests.conftest import make_job


def _one_spread_job() -> ClusterWorkload:
    # 20 000 samples in 4 slots at < 1000 samples/worker/slot: more workers than
    # one 4-GPU machine holds, so only the external (rounded) case can schedule it
    job = make_job(0, epochs=20, utility=Sigmoid(10.0, 0.0, 0.0))
    cluster = Cluster.uniform(3, (4.0, 8.0, 64.0, 64.0))
    return ClusterWorkload(jobs=(job,), cluster=cluster, horizon=4)


def _run(wl: ClusterWorkload, **params: object):  # type: ignore[no-untyped-def]
    sched = make_scheduler("cluster", "pd-ors", **params)
    _, rng = spawn(make_rng(0), 2)
    return simulate("cluster", wl, sched, rng).metrics, sched


def test_external_lp_is_tight_and_cheapest_even_at_prices_near_l() -> None:
    # worker prices 1e-31 (machine 0) and 2e-31 (machines 1, 2), as on an idle cluster
    # with sigmoid utilities; unscaled, HiGHS sees all costs as 0 and returns surplus.
    job = make_job(0, batch=10, gamma=2.0)
    price = np.array([1e-31, 2e-31, 2e-31])
    alpha, beta = np.array(job.worker_demand), np.array(job.ps_demand)
    cost = np.concatenate([price * alpha.sum(), price * beta.sum()])
    free = np.tile([4.0, 8.0, 64.0, 64.0], (3, 1))
    lp = per_machine_lp(job, free, cost)
    assert lp.solve(9.0) is not None  # warm start from a larger bound, as _trace does
    obj, x, _, _ = lp.solve(6.0)  # unscaled: Σw = 6.4, cost 3.28e-30 (measured)
    assert x[:3].sum() == pytest.approx(6.0)  # no surplus workers
    assert x[3:].sum() == pytest.approx(3.0)  # Σ s = Σ w / γ
    # by hand (units of 1e-31): worker 3 on machine 0, 6 elsewhere; PS 1 and 2.
    # Machine 0 takes 4 workers (its 4 GPUs fill its 8 CPUs), 2 workers and the
    # 3 PSs go elsewhere: 4·3 + 2·6 + 3·2 = 30; trading a worker on machine 0 for
    # 2 PSs there costs +3 − 2 = +1, so this is optimal.
    assert x[0] == pytest.approx(4.0, abs=1e-6) and x[3] == pytest.approx(0.0, abs=1e-6)
    assert obj == pytest.approx(3.0e-30, rel=1e-6)
    assert obj == pytest.approx(float(cost @ x), rel=1e-9)


def test_failed_roundings_discard_the_job_as_printed_and_fall_back_in_plus() -> None:
    wl = _one_spread_job()
    m_fb, s_fb = _run(wl, g_delta=0.5, safe_packing=True, milp_fallback=True, greedy_fill=True)
    m_no, s_no = _run(wl, g_delta=0.5)
    # G = 0.5 halves x̄: the workload (cover) row fails, so S draws are exhausted
    assert s_fb.stats["rounding_failures"] > 0 and s_no.stats["rounding_failures"] > 0
    assert m_fb["admitted_jobs"] == 1 and m_fb["completed_jobs"] == 1  # integer (23) / greedy
    assert m_no["admitted_jobs"] == 0  # journal Sec. V: discarded
    m_one, s_one = _run(wl, g_delta=1.0, safe_packing=True)
    assert m_one["completed_jobs"] == 1 and s_one.stats["rounding_failures"] == 0


def test_as_printed_a_vertex_at_fractional_capacity_cannot_be_rounded() -> None:
    """The LP fills the cheapest machines to capacity; at fractional capacity no outcome
    of Eq. (27)–(28) meets both (24) and (26) (docs/pdors-rounding.md)."""
    from dmlsched.experiments.rounding_diagnosis import DiagnosingPdors, summarize

    # 2.5 workers fit per machine (5 CPUs ÷ 2): the LP puts 2.5 + 2.5 on two machines
    # for 5 workers; rounding gives 2 or 3 each, and 3 breaks the CPU row
    job = make_job(0, epochs=12, batch=6, gamma=6.0, ps_demand=(0.0, 0.5, 0.0, 0.0))
    cluster = Cluster.uniform(3, (4.0, 5.5, 64.0, 64.0))
    wl = ClusterWorkload(jobs=(job,), cluster=cluster, horizon=3)
    sched = DiagnosingPdors(diag_seed=0, extra_draws=2000)
    _, rng = spawn(make_rng(0), 2)
    printed = simulate("cluster", wl, sched, rng).metrics
    failed = [r for r in sched.records_ if r.failed]
    assert failed and all(r.box_feasible is False and r.capped > 0 for r in failed)
    assert all(r.integer_feasible for r in failed)  # Problem (23) itself is feasible
    summary = summarize(sched.records_)
    assert summary["failed_box_infeasible"] == 1.0 and summary["failed_integer_feasible"] == 1.0
    assert summary["failed_draws_packing"] > 0 and summary["failed_spread_ok"] == 1.0
    assert printed["admitted_jobs"] == 0  # discarded after S failed roundings
    for fix in ({"vertex": "interior"}, {"milp_fallback": True}):
        m, _ = _run(wl, **fix)
        assert m["completed_jobs"] == 1, fix
    # the packing margin alone does not: with a worker less per machine the margin LP
    # cannot reach the workload, and the plain LP above it is the same vertex
    assert _run(wl, safe_packing=True)[0]["completed_jobs"] == 0


def test_rounding_probe_measures_without_changing_the_run() -> None:
    wl_rng, _ = spawn(make_rng(4), 2)
    wl = synthetic_cluster(6, 5, 12, wl_rng, mode="async")
    plain, _ = _run(wl, g_delta=1.0)
    probe = ProbingPdors(probe_gain=1.0, probe_attempts=50, probe_seed=4)
    _, rng = spawn(make_rng(0), 2)
    res = simulate("cluster", wl, probe, rng).metrics
    assert res["total_utility"] == pytest.approx(plain["total_utility"])
    st = probe.stats
    assert st["probe_roundings"] >= 1
    assert 0.0 <= st["probe_failures"] <= 1.0
    if st["probe_failures"] < 1.0:
        assert 1.0 <= st["probe_attempts"] <= 50
        assert st["probe_ratio"] > 0
