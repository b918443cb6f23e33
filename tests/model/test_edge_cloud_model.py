from __future__ import annotations

import pytest

from dmlsched.errors import InvalidInput
from dmlsched.model.edge_cloud import EdgeCloud, EdgeCloudWorkload
from dmlsched.model.speed.aonline import chunk_slots, comm_slots, processing_capacity
from tests.edge_cloud_helpers import ec_job, one_worker_system


def test_processing_capacity_follows_eq_1_with_and_without_communication() -> None:
    # m = 0.01 h, G = 36 ms = 1e-5 h, q = 450 MB at 1000 Mbps: q/b = 3.6 s = 1e-3 h
    job = ec_job(m=0.01, G=1e-5, q_mb=450.0, b_mbps=1000.0)
    assert comm_slots(job) == pytest.approx(2e-3)
    assert processing_capacity(job, 0) == pytest.approx(1 / (0.01 + 1e-5 + 2e-3))
    assert processing_capacity(job, 1) == pytest.approx(1 / (0.01 + 1e-5))
    assert processing_capacity(job, 1, speedup=1.5) == pytest.approx(1.5 / (0.01 + 1e-5))


def test_a_chunk_needs_whole_slots_rounded_up() -> None:
    job = ec_job(minibatches=5, epochs=2, m=0.25)  # E·B = 10 at 4 per slot -> 2.5 -> 3 slots
    assert chunk_slots(job, 0) == 3
    assert chunk_slots(ec_job(minibatches=4, m=1.0), 1) == 4


def test_zeta_must_be_zero_or_one() -> None:
    with pytest.raises(ValueError, match="zeta"):
        processing_capacity(ec_job(), 2)


def test_bad_job_fields_name_field_and_value() -> None:
    with pytest.raises(InvalidInput, match=r"invalid chunks=0"):
        ec_job(chunks=0)
    with pytest.raises(InvalidInput, match=r"invalid m=-1"):
        ec_job(m=-1.0)
    with pytest.raises(InvalidInput, match=r"delay\[1\]"):
        ec_job(delay=(1, -2))


def test_system_validates_types_and_storage() -> None:
    with pytest.raises(InvalidInput, match=r"worker_types\[0\]"):
        EdgeCloud(((5,),), ((0,),), 2)
    with pytest.raises(InvalidInput, match="storage"):
        EdgeCloud(((0,),), ((0,),), 2, storage=(1.0, 2.0))
    with pytest.raises(InvalidInput, match="speedup"):
        EdgeCloud(((0,),), ((0,),), 2, speedup=0.5)
    sys = EdgeCloud(((0, 1), (1,)), ((0,), (1,)), 2, storage=(3.0, 4.0))
    assert sys.cloud == 2 and sys.edge_workers == 3
    assert sys.qualified_workers(1) == [(0, 1), (1, 0)]
    assert sys.worker_gid(1, 0) == 2 and sys.storage_of(2) == float("inf")


def test_workload_checks_delay_length_and_types() -> None:
    with pytest.raises(InvalidInput, match="delay"):
        EdgeCloudWorkload((ec_job(delay=(1, 2, 3)),), one_worker_system(), 10)
    with pytest.raises(InvalidInput, match="worker_type"):
        EdgeCloudWorkload((ec_job(worker_type=7),), one_worker_system(), 10)
    with pytest.raises(InvalidInput, match="arrival"):
        EdgeCloudWorkload((ec_job(arrival=10),), one_worker_system(), 10)
