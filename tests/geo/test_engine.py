"""The ``geo`` engine validates (8a), (8b), (8f), (8j), (8k) and prices slots itself."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from dmlsched.errors import InvalidDecision
from dmlsched.model.geo import GeoDecision, GeoJob, GeoPlacement, GeoSites, GeoWorkload
from dmlsched.rng import make_rng
from dmlsched.sim.engine import simulate


def sites() -> GeoSites:
    return GeoSites(
        a=[[2.0], [4.0]],
        b=[[1.0], [3.0]],
        l=[[3.0], [10.0]],
        d=[[0.0, 0.1], [0.1, 0.0]],
        resources=("gpu",),
    )


def workload() -> GeoWorkload:
    job = GeoJob(
        id=0,
        arrival=0,
        data=[[30.0, 10.0], [20.0, 20.0]],
        capacity=20.0,
        worker_demand=(1.0,),
        ps_demand=(0.5,),
        exchange_gb=2.0,
        deploy_cost=0.3,
    )
    return GeoWorkload(sites(), (job,), horizon=2)


class Fixed:
    """Returns the same placement every slot (or a callable's result)."""

    name: ClassVar[str] = "fixed"
    setting: ClassVar[str] = "geo"

    def __init__(self, make) -> None:
        self.make = make

    def reset(self, sites, horizon, rng) -> None:
        pass

    def decide(self, view) -> GeoDecision:
        return GeoDecision({j: self.make(view.data[j]) for j in view.active})


def central0(D: np.ndarray) -> GeoPlacement:
    q = np.zeros((2, 2))
    q[:, 0] = D
    return GeoPlacement((2, 0), 0, q)


def test_engine_prices_a_central_placement_by_hand() -> None:
    res = simulate("geo", workload(), Fixed(central0), make_rng(0))
    m = res.metrics
    # slot 0: moves 10 GB (1.0), usage 2 + 0.5 = 2.5 gpu at a=2 → 5, deploy 0.3 once
    # slot 1: moves 20 GB (2.0), same usage → 5
    assert m["cost_transfer"] == pytest.approx(3.0)
    assert m["cost_resource"] == pytest.approx(10.0)
    assert m["cost_deploy"] == pytest.approx(0.3)
    assert m["cost_communication"] == pytest.approx(0.0)
    assert m["total_cost"] == pytest.approx(13.3)


@pytest.mark.parametrize(
    ("placement", "match"),
    [
        (lambda D: GeoPlacement((1, 0), 0, np.array([[D[0], 0], [D[1], 0]])), r"\(8a\)"),
        (lambda D: GeoPlacement((2, 0), 0, np.zeros((2, 2))), r"\(8b\)"),
        (lambda D: GeoPlacement((2, 0), 2, np.array([[D[0], 0], [D[1], 0]])), r"\(8f\)"),
        (lambda D: GeoPlacement((1.5, 1), 0, np.diag(D)), r"\(8k\)"),
        (lambda D: GeoPlacement((2, 1), 0, np.array([[D[0] + 5, -5], [0, D[1]]])), r"\(8k\)"),
    ],
    ids=["capacity-8a", "unprocessed-data-8b", "ps-site-8f", "fractional-workers", "negative-q"],
)
def test_engine_rejects_invalid_decisions_naming_the_constraint(placement, match) -> None:
    with pytest.raises(InvalidDecision, match=match) as err:
        simulate("geo", workload(), Fixed(placement), make_rng(0))
    assert err.value.scheduler == "fixed" and err.value.job == 0 and err.value.slot == 0


def test_a_slot_without_data_needs_no_worker_but_still_pays_the_ps() -> None:
    # (8j) needs ceil(0 / P) = 0 workers; (8f) still places one PS (0.5 gpu at a = 4).
    # With integer y, (8j) is implied by (8a)+(8b), so no decision violates only (8j).
    job = GeoJob(
        id=0,
        arrival=0,
        data=[[0.0, 0.0]],
        capacity=20.0,
        worker_demand=(1.0,),
        ps_demand=(0.5,),
        exchange_gb=2.0,
        deploy_cost=0.3,
    )
    wl = GeoWorkload(sites(), (job,), horizon=1)
    ok = simulate(
        "geo", wl, Fixed(lambda D: GeoPlacement((0, 0), 1, np.zeros((2, 2)))), make_rng(0)
    )
    assert ok.metrics["cost_resource"] == pytest.approx(4.0 * 0.5)


def test_engine_rejects_a_missing_or_unknown_job() -> None:
    class Empty(Fixed):
        def decide(self, view):
            return GeoDecision({})

    with pytest.raises(InvalidDecision, match="no placement"):
        simulate("geo", workload(), Empty(None), make_rng(0))

    class Ghost(Fixed):
        def decide(self, view):
            return GeoDecision({7: central0(np.zeros(2))})

    with pytest.raises(InvalidDecision, match="not active"):
        simulate("geo", workload(), Ghost(None), make_rng(0))


def test_view_reveals_only_the_current_slots_data() -> None:
    seen = []

    class Spy(Fixed):
        def decide(self, view):
            seen.append((view.slot, view.data[0].tolist(), view.deployed[0].tolist()))
            with pytest.raises(ValueError):
                view.data[0][0] = 1.0
            return super().decide(view)

    simulate("geo", workload(), Spy(central0), make_rng(0))
    assert seen == [(0, [30.0, 10.0], [0.0, 0.0]), (1, [20.0, 20.0], [1.0, 0.0])]
