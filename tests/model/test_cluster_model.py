"""Validation of cluster-setting specs names the field and the value."""

from __future__ import annotations

import numpy as np
import pytest

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import Cluster, ClusterWorkload
from dmlsched.model.utility import InverseTime, Linear, Sigmoid, utility_from_dict
from tests.conftest import make_job


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("gamma", 0.0),
        ("gamma", -1.0),
        ("tau", 0.0),
        ("epochs", 0),
        ("samples", -5),
        ("grad_mb", -1.0),
        ("b_ext", 0.0),
        ("arrival", -1),
        ("mode", "bsp"),
    ],
)
def test_invalid_job_field_is_rejected_with_its_name_and_value(field: str, value: object) -> None:
    with pytest.raises(InvalidInput) as e:
        make_job(**{field: value})
    assert field in str(e.value) and repr(value) in str(e.value)


def test_negative_demand_is_rejected() -> None:
    with pytest.raises(InvalidInput, match=r"worker_demand\[1\]"):
        make_job(worker_demand=(1.0, -2.0, 0.0, 0.0))


def test_demand_larger_than_every_machine_is_rejected() -> None:
    cl = Cluster.uniform(2, (4.0, 8.0, 64.0, 64.0))
    with pytest.raises(InvalidInput, match=r"worker_demand\[gpu\].*8"):
        ClusterWorkload(jobs=(make_job(worker_demand=(8.0, 1.0, 0.0, 0.0)),), cluster=cl, horizon=4)


def test_arrival_after_horizon_is_rejected() -> None:
    cl = Cluster.uniform(1, (4.0, 8.0, 64.0, 64.0))
    with pytest.raises(InvalidInput, match="arrival"):
        ClusterWorkload(jobs=(make_job(arrival=4),), cluster=cl, horizon=4)


def test_cluster_capacity_is_read_only() -> None:
    cl = Cluster.uniform(2, (1.0, 2.0, 3.0, 4.0))
    with pytest.raises(ValueError):
        cl.capacity[0, 0] = 9.0
    with pytest.raises(InvalidInput):
        Cluster(np.array([[1.0, -1.0, 0.0, 0.0]]))


def test_sigmoid_matches_section_v_formula() -> None:
    u = Sigmoid(50.0, 0.5, 8.0)
    assert u(8.0) == pytest.approx(25.0)
    assert u(10.0) == pytest.approx(50.0 / (1 + np.exp(1.0)))
    assert Sigmoid(7.0, 0.0, 3.0)(100.0) == pytest.approx(3.5)  # time-insensitive
    assert Sigmoid(1.0, 6.0, 1.0)(1e6) == 0.0  # no overflow


def test_inverse_and_linear_utilities() -> None:
    assert InverseTime()(3.0) == pytest.approx(0.25)
    assert Linear(10.0, 2.0)(3.0) == pytest.approx(4.0)
    assert Linear(10.0, 2.0)(30.0) == 0.0
    assert utility_from_dict({"kind": "inverse", "weight": 2}) == InverseTime(2.0)
    with pytest.raises(InvalidInput, match=r"utility\.kind"):
        utility_from_dict({"kind": "step"})
