from __future__ import annotations

import numpy as np
import pytest

from dmlsched.errors import InvalidInput
from dmlsched.workloads.edge_cloud import MODELS, edge_cloud_workload, node_list_path, server_shapes
from dmlsched.workloads.registry import WorkloadParams, build_workload


def test_tiny_synthetic_workload_follows_sec_v_ranges() -> None:
    wl = build_workload(
        "edge-cloud",
        "synthetic",
        WorkloadParams(jobs=4, machines=3, slots=6),
        np.random.default_rng(0),
    )
    assert len(wl.jobs) == 4 and wl.system.servers == 3
    assert 8 <= wl.system.n_types <= 10
    present = set(wl.system.worker_kind.tolist())
    for j in wl.jobs:
        assert (j.chunks, j.minibatches) in {(d, b) for _, _, d, b, _ in MODELS}
        assert 20 <= j.epochs <= 60 and 0.001 <= j.m <= 0.05
        assert all(1 <= d <= 4 for d in j.delay[:-1]) and 10 <= j.delay[-1] <= 15
        assert j.worker_type in present and 0 <= j.arrival < 6
    assert wl.horizon > max(j.arrival for j in wl.jobs)


def test_same_generator_state_gives_the_same_workload() -> None:
    a = edge_cloud_workload(5, 4, 10, np.random.default_rng(3))
    b = edge_cloud_workload(5, 4, 10, np.random.default_rng(3))
    assert a == b


def test_bad_sizes_name_the_field() -> None:
    with pytest.raises(InvalidInput, match="jobs"):
        edge_cloud_workload(0, 3, 5, np.random.default_rng(0))
    with pytest.raises(InvalidInput, match="storage_gb"):
        build_workload(
            "edge-cloud",
            "synthetic",
            WorkloadParams(4, 3, 6, extra={"storage_gb": -1}),
            np.random.default_rng(0),
        )


def test_synthetic_server_ranges_when_the_trace_folder_is_absent_with_a_warning(
    tmp_path,
) -> None:
    from dmlsched.workloads.traces import trace_root

    with trace_root(tmp_path):  # an empty trace set: no alibaba-gpu-v2023/ folder
        w, p, note = server_shapes(50, np.random.default_rng(0))
    assert set(w.tolist()) <= {1, 2, 4, 8} and set(p.tolist()) <= {8, 16, 32, 64, 96, 104, 128}
    assert note.startswith("WARNING: ") and "synthetic" in note


def test_a_named_node_list_that_is_missing_is_an_error_not_a_fallback(tmp_path) -> None:
    with pytest.raises(InvalidInput, match=r"none\.csv"):
        server_shapes(50, np.random.default_rng(0), tmp_path / "none.csv")


@pytest.mark.skipif(node_list_path() is None, reason="../shared/traces absent")
def test_servers_follow_the_alibaba_node_list() -> None:
    w, p, note = server_shapes(200, np.random.default_rng(0))
    assert set(w.tolist()) <= {1, 2, 4, 8} and p.min() >= 8 and "Alibaba" in note


def test_philly_workload_scales_the_trace_onto_the_span() -> None:
    traces = pytest.importorskip("dmlsched.workloads.traces")
    if traces.default_trace_dir("philly") is None:
        pytest.skip("../shared/traces absent")
    wl = build_workload(
        "edge-cloud",
        "philly",
        WorkloadParams(jobs=20, machines=5, slots=40),
        np.random.default_rng(0),
    )
    arr = [j.arrival for j in wl.jobs]
    assert wl.source == "philly" and arr == sorted(arr) and arr[0] >= 0 and arr[-1] < 40
