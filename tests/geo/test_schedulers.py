"""End-to-end runs of every geo scheduler, the convex one-shot solver and the offline optima."""

from __future__ import annotations

import numpy as np
import pytest

from dmlsched.errors import InvalidInput, SolverFailed
from dmlsched.offline.geo import integer_optimum, relaxed_optimum
from dmlsched.rng import make_rng
from dmlsched.schedulers.protocols import GeoScheduler, make_scheduler, scheduler_names
from dmlsched.sim.engine import simulate
from dmlsched.solvers.convex import regularized_lp, sigma
from dmlsched.workloads.geo import synthetic_geo

GEO = ["mlbroker", "oasis-geo", "local", "central"]


def small(seed: int = 0, **kw: object):
    return synthetic_geo(6, 3, 5, make_rng(seed), **kw)  # type: ignore[arg-type]


def test_all_geo_schedulers_are_registered() -> None:
    assert set(GEO) <= set(scheduler_names("geo"))
    for name in GEO:
        assert isinstance(make_scheduler("geo", name), GeoScheduler)


@pytest.mark.parametrize("name", GEO)
def test_scheduler_runs_end_to_end_with_positive_cost_parts(name: str) -> None:
    res = simulate("geo", small(), make_scheduler("geo", name), make_rng(1))
    m = res.metrics
    parts = m["cost_transfer"] + m["cost_resource"] + m["cost_deploy"] + m["cost_communication"]
    assert m["total_cost"] == pytest.approx(parts)
    assert m["cost_resource"] > 0 and m["cost_deploy"] > 0


@pytest.mark.parametrize("rounding", ["dependent", "ir", "gr"])
def test_mlbroker_rounding_variants_are_feasible_and_no_cheaper_than_p_f(rounding: str) -> None:
    wl = small(2)
    sched = make_scheduler("geo", "mlbroker", rounding=rounding)
    res = simulate("geo", wl, sched, make_rng(3))
    opt = relaxed_optimum(wl).total_cost
    assert res.metrics["total_cost"] >= opt - 1e-6
    assert sum(sched.fractional_costs_) >= opt * (1 - 1e-6)


def test_optima_are_ordered_p_f_below_milp_below_every_scheduler() -> None:
    wl = synthetic_geo(4, 2, 3, make_rng(5))
    lp = relaxed_optimum(wl)
    milp = integer_optimum(wl)
    assert milp.status == "Optimal"
    assert lp.total_cost <= milp.total_cost + 1e-6
    for name in GEO:
        res = simulate("geo", wl, make_scheduler("geo", name), make_rng(0))
        assert res.metrics["total_cost"] >= milp.total_cost - 1e-6


def test_local_never_moves_data_and_central_never_talks_across_dcs() -> None:
    wl = small(4)
    assert (
        simulate("geo", wl, make_scheduler("geo", "local"), make_rng(0)).metrics["cost_transfer"]
        == 0.0
    )
    assert (
        simulate("geo", wl, make_scheduler("geo", "central"), make_rng(0)).metrics[
            "cost_communication"
        ]
        == 0.0
    )


def test_mlbroker_rejects_bad_options_naming_the_field() -> None:
    with pytest.raises(InvalidInput, match="rounding"):
        simulate("geo", small(), make_scheduler("geo", "mlbroker", rounding="x"), make_rng(0))
    with pytest.raises(InvalidInput, match="epsilon"):
        simulate("geo", small(), make_scheduler("geo", "mlbroker", epsilon=0), make_rng(0))


def test_regularized_lp_matches_the_closed_form_of_one_entropy_term() -> None:
    # min w/σ[(x+ε)ln((x+ε)/(p+ε)) − x] + c x, x ≥ 0 → x = (p+ε)e^{−cσ/w} − ε when positive
    eps, p, w, c = 0.1, 1.0, 2.0, 0.3
    sol = regularized_lp(
        np.array([c]),
        None,
        None,
        None,
        None,
        np.zeros(1),
        np.array([np.inf]),
        np.array([0]),
        np.array([w]),
        np.array([p]),
        eps,
    )
    expect = (p + eps) * np.exp(-c * sigma(eps) / w) - eps
    assert sol.x[0] == pytest.approx(expect, rel=1e-3)  # interior-point tolerance


def test_mlbroker_keeps_each_slots_interior_point_iterations() -> None:
    wl = small(2)
    sched = make_scheduler("geo", "mlbroker")
    simulate("geo", wl, sched, make_rng(3))
    its = sched.solver_iterations_  # type: ignore[attr-defined]  # mlbroker keeps them
    assert len(its) == wl.horizon == len(sched.fractional_costs_)  # type: ignore[attr-defined]
    # a slot with jobs took a solve of ≥ 1 iteration; a slot with none took no solve
    assert all((n >= 1) == (c != 0.0) for n, c in zip(its, sched.fractional_costs_, strict=True))  # type: ignore[attr-defined]
    assert sum(its) > 0


def test_regularized_lp_raises_on_an_infeasible_problem() -> None:
    import scipy.sparse as sp

    with pytest.raises(SolverFailed):
        regularized_lp(
            np.array([1.0]),
            sp.csr_matrix([[1.0]]),
            np.array([-1.0]),
            None,
            None,
            np.zeros(1),
            np.array([np.inf]),
            np.array([0]),
            np.array([1.0]),
            np.array([0.0]),
            0.5,
        )


def test_presolve_substitutes_fixed_variables_without_changing_the_optimum() -> None:
    import scipy.sparse as sp

    # min x0 + 2 x1 + reg(x2) s.t. x0 + x1 + x2 = 3, x1 fixed at 1 → x0 + x2 = 2
    c = np.array([1.0, 2.0, 0.0])
    a_eq = sp.csr_matrix([[1.0, 1.0, 1.0]])
    args = (c, a_eq, np.array([3.0]), None, None)
    free = regularized_lp(
        *args,
        np.array([0.0, 1.0, 0.0]),
        np.array([np.inf, np.inf, np.inf]),
        np.array([2]),
        np.array([1.0]),
        np.array([0.0]),
        0.5,
    )
    fixed = regularized_lp(
        *args,
        np.array([0.0, 1.0, 0.0]),
        np.array([np.inf, 1.0, np.inf]),
        np.array([2]),
        np.array([1.0]),
        np.array([0.0]),
        0.5,
    )
    assert fixed.x[1] == 1.0
    assert fixed.objective == pytest.approx(free.objective, abs=1e-5)
    assert fixed.x == pytest.approx(free.x, abs=1e-4)


def test_offline_optima_on_a_hand_worked_one_dc_instance() -> None:
    from dmlsched.model.geo import GeoJob, GeoSites, GeoWorkload

    # 30 GB, P = 20 → W = 2 workers (8j); usage h = 2·1 + 1 (PS) = 3 gpu.
    # a = 2, b = 1, l = 10 → e = 10; h̄ = 3 → M = max(e, (a−b)h̄ − e) = 10.
    # MILP: F(3) = 2·3 = 6, plus c = 0.5 for deploying once.
    # P_f: u1 = ½ relaxes x to ((a+b)h + e − M)/2 = 4.5; v = (y+s)/U = 3/3 → z = 1.
    sites = GeoSites(a=[[2.0]], b=[[1.0]], l=[[10.0]], d=[[0.0]], resources=("gpu",))
    job = GeoJob(
        id=0,
        arrival=0,
        data=[[30.0]],
        capacity=20.0,
        worker_demand=(1.0,),
        ps_demand=(1.0,),
        exchange_gb=1.0,
        deploy_cost=0.5,
    )
    wl = GeoWorkload(sites, (job,), horizon=1)
    assert integer_optimum(wl).total_cost == pytest.approx(6.5)
    assert relaxed_optimum(wl).total_cost == pytest.approx(5.0)


def test_a_failed_clarabel_solve_falls_back_to_scs(monkeypatch) -> None:
    import dmlsched.solvers.convex as convex

    # Clarabel capped at one iteration cannot reach "optimal"; SCS then solves it
    monkeypatch.setattr(
        convex,
        "_ATTEMPTS",
        (("CLARABEL", {"max_iter": 1}), *(a for a in convex._ATTEMPTS if a[0] == "SCS")),
    )
    eps, p, w, c = 0.1, 1.0, 2.0, 0.3
    sol = convex.regularized_lp(
        np.array([c]),
        None,
        None,
        None,
        None,
        np.zeros(1),
        np.array([np.inf]),
        np.array([0]),
        np.array([w]),
        np.array([p]),
        eps,
    )
    assert sol.solver == "SCS" and sol.status == "optimal"
    assert sol.x[0] == pytest.approx((p + eps) * np.exp(-c * sigma(eps) / w) - eps, rel=1e-3)


def test_every_attempt_failing_names_each_status(monkeypatch) -> None:
    import dmlsched.solvers.convex as convex

    monkeypatch.setattr(
        convex, "_ATTEMPTS", (("CLARABEL", {"max_iter": 1}), ("SCS", {"max_iters": 1}))
    )
    with pytest.raises(SolverFailed, match=r"CLARABEL.*SCS"):
        convex.regularized_lp(
            np.array([0.3]),
            None,
            None,
            None,
            None,
            np.zeros(1),
            np.array([np.inf]),
            np.array([0]),
            np.array([2.0]),
            np.array([1.0]),
            0.1,
        )


@pytest.mark.parametrize("name", ["mlbroker", "mlbroker+"])
def test_tied_prices_solve_the_testbed_and_a_tied_synthetic_instance(name: str) -> None:
    from dmlsched.model.geo import GeoSites, GeoWorkload
    from dmlsched.workloads.geo import on_testbed

    wl = small(7, models=True)
    s = wl.sites
    R = s.dcs
    tied = GeoSites(
        a=np.repeat(s.a[:1], R, 0),
        b=np.repeat(s.b[:1], R, 0),
        l=np.repeat(s.l[:1], R, 0),
        d=np.where(np.eye(R) > 0, 0.0, 0.015),
    )
    for w in (on_testbed(wl), GeoWorkload(sites=tied, jobs=wl.jobs, horizon=wl.horizon)):
        sched = make_scheduler("geo", name)
        res = simulate("geo", w, sched, make_rng(0))
        assert res.metrics["total_cost"] >= relaxed_optimum(w).total_cost - 1e-6


def test_testbed_sites_carry_the_papers_uniform_price() -> None:
    from dmlsched.workloads.geo import TESTBED_PRICE, on_testbed, testbed_sites

    s = testbed_sites()
    assert TESTBED_PRICE == 3.06 and s.dcs == 3 and s.resources == ("instance",)
    assert np.all(s.a == 3.06) and np.all(s.b < s.a)
    assert np.all(s.d[~np.eye(3, dtype=bool)] == 0.02) and np.all(np.diag(s.d) == 0)
    wl = on_testbed(small(1))
    assert all(j.worker_demand == (1.0,) and j.ps_demand == (1.0,) for j in wl.jobs)


def test_the_fractional_solution_costs_at_least_its_p_f_objective_at_eq_2_prices() -> None:
    sched = make_scheduler("geo", "mlbroker")
    simulate("geo", small(3), sched, make_rng(0))
    assert len(sched.fractional_true_costs_) == len(sched.fractional_costs_)
    for pf, true in zip(sched.fractional_costs_, sched.fractional_true_costs_, strict=True):
        assert true >= pf - 1e-6


def test_ps_near_the_workers_takes_the_cheapest_site_given_the_workers() -> None:
    from dmlsched.model.geo import GeoSites
    from dmlsched.schedulers._shared.geo_problem import SlotData
    from dmlsched.schedulers.geo.mlbroker import ps_near_workers

    sites = GeoSites(
        a=[[1.0], [1.0], [5.0]],
        b=[[0.5], [0.5], [2.5]],
        l=[[10.0]] * 3,
        d=[[0, 1, 1], [1, 0, 1], [1, 1, 0]],
        resources=("gpu",),
    )
    data = SlotData(
        D=np.zeros((2, 3)),
        P=np.ones(2),
        n=np.ones((2, 1)),
        m=np.ones((2, 1)),
        B=np.array([1.0, 1.0]),
        c=np.array([0.0, 0.0]),
    )
    # job 0: 3 workers in DC 1, 1 in DC 0 -> PS in DC 1 (1·1 + 1 vs 3 + 1);
    # job 1: 1 worker in DC 2 -> DC 2 costs 5 for the PS, DC 0/1 cost 1 + 1: tie -> DC 0
    y = np.array([[1.0, 3.0, 0.0], [0.0, 0.0, 1.0]])
    assert ps_near_workers(y, data, sites).tolist() == [1, 0]


def test_mlbroker_plus_options_are_named_and_checked() -> None:
    sched = make_scheduler("geo", "mlbroker+")
    assert sched.rounding == "job" and sched.ps_site == "workers"
    with pytest.raises(InvalidInput, match="ps_site"):
        simulate("geo", small(), make_scheduler("geo", "mlbroker", ps_site="x"), make_rng(0))


def test_every_mlbroker_series_solves_the_same_p_ft_sequence(monkeypatch) -> None:
    # A_fractional does not depend on the rounding after it: the memo of
    # solvers.convex solves a figure's P̃_ft once for all of its mlBroker series
    import dmlsched.solvers.convex as convex
    from dmlsched.memo import call_key

    seen: list[str] = []
    real = convex._memoised
    monkeypatch.setattr(
        convex, "_memoised", lambda *a: seen.append(call_key("lp", a, {})) or real(*a)
    )
    runs = {}
    for name, params in [
        ("mlbroker", {}),
        ("mlbroker", {"rounding": "ir"}),
        ("mlbroker", {"rounding": "gr"}),
        ("mlbroker+", {}),
        ("mlbroker+", {"ps_site": "sample"}),
    ]:
        seen.clear()
        simulate("geo", small(3), make_scheduler("geo", name, **params), make_rng(1))
        runs[(name, tuple(params.items()))] = tuple(seen)
    assert len(set(runs.values())) == 1 and len(next(iter(runs.values()))) == 5
