"""Reasons schedulers give: capacity shortfalls said with the right numbers."""

from __future__ import annotations

import numpy as np
import pytest

from dmlsched.model.cluster import ClusterJob
from dmlsched.model.reasons import CODES, Reason
from dmlsched.model.utility import Sigmoid
from dmlsched.schedulers._shared.reasons import shortfall, too_large


def _job(worker: tuple[float, ...], ps: tuple[float, ...] = (0, 1, 1, 1)) -> ClusterJob:
    return ClusterJob(
        id=0, arrival=0, epochs=1, samples=100, batch=4, grad_mb=1.0, tau=1e-3, gamma=1.0,
        worker_demand=worker, ps_demand=ps, b_ext=1.0, b_int=40.0,
        utility=Sigmoid(1.0, 0.0, 0.0),
    )  # fmt: skip


def test_a_gang_short_in_the_cluster_names_the_resource_need_and_free() -> None:
    free = np.array([[3, 8, 8, 8], [4, 8, 8, 8]], dtype=float)
    r = shortfall(_job((1, 1, 1, 1)), 8, 8, free)  # 8 GPUs, 7 free in all
    assert r == Reason(
        "insufficient", "insufficient gpu in the cluster: need 8, free 7 (8 workers + 8 PSs)"
    )


def test_a_task_no_machine_holds() -> None:
    free = np.array([[7, 32, 32, 32], [5, 32, 32, 32]], dtype=float)
    r = shortfall(_job((8, 1, 1, 1)), 1, 1, free)
    assert r.text == "insufficient gpu on every machine: need 8 per worker, largest free 7"


def test_a_gang_that_must_sit_on_one_machine() -> None:
    free = np.array([[7, 32, 32, 32], [7, 32, 32, 32]], dtype=float)
    r = shortfall(_job((1, 1, 1, 1)), 8, 1, free, one_machine=True)
    assert r.text == "insufficient gpu on every machine: need 8, largest free 7"
    spread = shortfall(_job((1, 1, 1, 1)), 8, 1, free)
    assert spread.text.startswith("fragmented")


def test_a_rejection_is_too_large_for_the_empty_cluster() -> None:
    cap = np.array([[4, 16, 64, 100]], dtype=float)
    r = too_large(_job((1, 2, 4, 5)), 30, 15, cap)
    assert r.code == "too-large" and "need 30, free 4" in r.text


def test_a_reason_code_must_be_known() -> None:
    assert {"insufficient", "price-above-payoff", "preempted"} <= set(CODES)
    with pytest.raises(ValueError, match="reason code"):
        Reason("because", "I said so")
