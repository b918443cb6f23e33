"""The four cost parts, Eq. (1)–(6), on a hand-worked 2-DC example."""

from __future__ import annotations

import numpy as np
import pytest

from dmlsched.errors import InvalidInput
from dmlsched.model.geo import (
    GeoJob,
    GeoSites,
    communication_cost,
    connections,
    deploy_cost,
    deployed,
    price,
    price_min_form,
    resource_cost,
    transfer_cost,
    usage,
)
from dmlsched.model.speed.mlbroker import workers_needed


def two_dcs() -> GeoSites:
    # K = 2: (gpu, cpu).  DC 0: gpu 2 → 1 above 3 units; DC 1: gpu 4 → 3 above 10.
    return GeoSites(
        a=[[2.0, 1.0], [4.0, 1.0]],
        b=[[1.0, 0.5], [3.0, 0.5]],
        l=[[3.0, 100.0], [10.0, 100.0]],
        d=[[0.0, 0.1], [0.1, 0.0]],
        resources=("gpu", "cpu"),
    )


def test_price_reformulation_equals_the_piecewise_price() -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(1, 10, 200)
    b = a * rng.uniform(0.7, 0.8, 200)
    ll = rng.uniform(10, 1000, 200)
    h = rng.uniform(0, 2000, 200)
    h[:5] = ll[:5]  # on the threshold
    h[5:10] = 0.0
    assert np.allclose(price(h, a, b, ll), price_min_form(h, a, b, (a - b) * ll))


def test_price_is_list_price_below_and_discounted_above_the_threshold() -> None:
    assert price(2.0, 2.0, 1.0, 3.0) == pytest.approx(4.0)
    assert price(5.0, 2.0, 1.0, 3.0) == pytest.approx(5.0 + 3.0)  # b h + (a − b) l


def test_four_cost_parts_on_a_hand_worked_two_dc_example() -> None:
    sites = two_dcs()
    # Two jobs.  Job 0: 3 workers in DC 0, PS in DC 1; moves 10 GB DC1→DC0.
    # Job 1: 1 worker in each DC, PS in DC 0; moves nothing.
    y = np.array([[3.0, 0.0], [1.0, 1.0]])
    s = np.array([[0.0, 1.0], [1.0, 0.0]])
    q = np.zeros((2, 2, 2))
    q[0, 1, 0] = 10.0
    n = np.array([[1.0, 2.0], [2.0, 1.0]])  # per-worker (gpu, cpu)
    m = np.array([[0.0, 1.0], [0.0, 3.0]])  # per-PS
    B = np.array([5.0, 2.0])
    c = np.array([0.5, 0.25])
    # Eq. (1): 0.1 × 10 = 1
    assert transfer_cost(q, sites.d) == pytest.approx(1.0)
    # usage: DC 0 gpu 3·1 + 1·2 = 5, cpu 3·2 + 1·1 + 3 (PS of job 1) = 10;
    #        DC 1 gpu 0 + 2 = 2,     cpu 1 (PS of job 0) + 1 = 2
    h = usage(y, s, n, m)
    assert h.tolist() == [[5.0, 10.0], [2.0, 2.0]]
    # Eq. (3): DC 0 gpu above l=3 → 1·5 + 3 = 8; cpu 1·10 = 10; DC 1 gpu 4·2 = 8; cpu 2 → 28
    assert resource_cost(h, sites) == pytest.approx(28.0)
    # Eq. (5): job 0 was in DC 0 before, job 1 nowhere → z = [[0,1],[1,1]] → 0.5 + 0.5
    v_prev = np.array([[1.0, 0.0], [0.0, 0.0]])
    assert deploy_cost(v_prev, deployed(y, s), c) == pytest.approx(0.5 + 2 * 0.25)
    # Eq. (6): job 0: 3 workers DC0→PS DC1: 0.1·5·3 = 1.5; job 1: 1 worker DC1→DC0: 0.1·2 = 0.2
    assert communication_cost(connections(y, s), sites.d, B) == pytest.approx(1.7)


def test_workers_needed_is_the_ceiling_of_data_over_capacity() -> None:
    assert workers_needed(100.0, 40.0) == 3
    assert workers_needed(80.0, 40.0) == 2
    assert workers_needed(0.0, 40.0) == 0


def test_sites_reject_a_discount_price_above_the_list_price() -> None:
    with pytest.raises(InvalidInput, match=r"b\[0,0\]"):
        GeoSites(a=[[1.0]], b=[[2.0]], l=[[1.0]], d=[[0.0]], resources=("gpu",))


def test_job_rejects_non_positive_capacity_naming_the_field() -> None:
    with pytest.raises(InvalidInput, match="capacity"):
        GeoJob(
            id=3,
            arrival=0,
            data=[[1.0]],
            capacity=0.0,
            worker_demand=(1.0,),
            ps_demand=(1.0,),
            exchange_gb=1.0,
            deploy_cost=0.1,
        )
