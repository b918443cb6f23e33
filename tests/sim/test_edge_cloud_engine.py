from __future__ import annotations

import numpy as np
import pytest

from dmlsched.errors import InvalidDecision
from dmlsched.model.edge_cloud import EdgeCloud
from dmlsched.model.edge_cloud import EdgeCloudDecision as Dec
from dmlsched.sim.engine import simulate
from tests.edge_cloud_helpers import Scripted, ec_job, workload

RNG = np.random.default_rng(0)


def _run(wl, script):
    return simulate("edge-cloud", wl, Scripted(script), RNG)


def test_a_job_trains_after_its_delay_and_completes_in_its_last_slot() -> None:
    wl = workload((ec_job(minibatches=2),))  # p = 2 slots, Δ = 1
    res = _run(
        wl,
        {
            0: Dec(dispatch={0: ((0, 0),)}),
            1: Dec(run={0: (0,)}, ps={0: (0, 0)}),
            2: Dec(run={0: (0,)}, ps={0: (0, 0)}),
        },
    )
    m = res.metrics
    assert m["total_jct"] == 2.0 and m["completed_jobs"] == 1.0 and m["makespan"] == 2.0
    assert m["utilization"] == pytest.approx(2 / 3)  # slots 0..2, busy in 1 and 2
    assert m["fractional_flow"] == pytest.approx(1 * 0.5 + 2 * 0.5)  # Eq. (3)
    assert res.series["utilization"].tolist() == [0.0, 1.0, 1.0]


def test_cloud_job_runs_at_zeta_one_speed() -> None:
    job = ec_job(q_mb=450.0, b_mbps=1000.0, m=0.002, minibatches=1000, delay=(1, 2))
    wl = workload((job,))
    # ζ = 1: n = 500/slot -> 2 slots; at ζ = 0 it would need 1000/(1/(0.004)) = 4
    res = _run(
        wl,
        {
            0: Dec(dispatch={0: ((1, 0),)}),
            2: Dec(run={0: (0,)}, ps={0: (1, 0)}),
            3: Dec(run={0: (0,)}, ps={0: (1, 0)}),
        },
    )
    assert res.metrics["total_jct"] == 3.0 and res.metrics["cloud_chunk_share"] == 1.0


def _two_jobs():
    return workload((ec_job(0), ec_job(1)), EdgeCloud(((0, 0),), ((0, 0),), 2))


@pytest.mark.parametrize(
    ("script", "match"),
    [
        ({0: Dec(dispatch={0: ((0, 5),)})}, "no worker 5"),
        ({0: Dec(dispatch={0: ((0, 0), (0, 0))})}, "D_j"),
        ({0: Dec(dispatch={0: ((0, 0),)}), 1: Dec(dispatch={0: ((0, 1),)})}, "already dispatched"),
        ({0: Dec(dispatch={0: ((0, 0),)}, run={0: (0,)}, ps={0: (0, 0)})}, r"\(2i\)"),
        (
            {
                0: Dec(dispatch={0: ((0, 0),), 1: ((0, 0),)}),
                1: Dec(run={0: (0,), 1: (0,)}, ps={0: (0, 0), 1: (0, 1)}),
            },
            r"\(2d\)",
        ),
        (
            {
                0: Dec(dispatch={0: ((0, 0),), 1: ((0, 1),)}),
                1: Dec(run={0: (0,), 1: (0,)}, ps={0: (0, 0), 1: (0, 0)}),
            },
            r"\(2f\)",
        ),
        ({0: Dec(dispatch={0: ((0, 0),)}), 1: Dec(run={0: (0,)})}, r"\(2e\)"),
        ({0: Dec(dispatch={0: ((0, 0),)}), 1: Dec(ps={0: (0, 0)})}, r"\(2e\)"),
        ({0: Dec(dispatch={0: ((0, 0),)}), 1: Dec(run={0: (0, 0)}, ps={0: (0, 0)})}, "twice"),
        ({0: Dec(run={0: (0,)}, ps={0: (0, 0)})}, "not dispatched"),
    ],
)
def test_engine_rejects_invalid_decisions(script, match) -> None:
    with pytest.raises(InvalidDecision, match=match):
        _run(_two_jobs(), script)


def test_an_all_cloud_job_needs_a_cloud_ps_2g() -> None:
    wl = workload((ec_job(delay=(1, 1)),))
    with pytest.raises(InvalidDecision, match=r"\(2g\)"):
        _run(wl, {0: Dec(dispatch={0: ((1, 0),)}), 1: Dec(run={0: (0,)}, ps={0: (0, 0)})})


def test_worker_of_another_type_is_refused_by_2a() -> None:
    wl = workload((ec_job(worker_type=1),), EdgeCloud(((0, 1),), ((0,),), 2))
    with pytest.raises(InvalidDecision, match=r"\(2a\)") as e:
        _run(wl, {0: Dec(dispatch={0: ((0, 0),)})})
    assert e.value.job == 0 and e.value.machine == 0 and e.value.resource == "worker"


def test_ps_of_another_type_is_refused() -> None:
    wl = workload((ec_job(ps_type=1),), EdgeCloud(((0,),), ((0, 1),), 2))
    with pytest.raises(InvalidDecision, match="o_jsp"):
        _run(wl, {0: Dec(dispatch={0: ((0, 0),)}), 1: Dec(run={0: (0,)}, ps={0: (0, 0)})})


def test_cloud_chunks_cannot_be_preempted() -> None:
    wl = workload((ec_job(delay=(1, 1)),))
    with pytest.raises(InvalidDecision, match="cloud"):
        _run(wl, {0: Dec(dispatch={0: ((1, 0),)}), 1: Dec(run={0: (0,)}, ps={0: (1, 0)})})


def test_storage_capacity_7b_limits_dispatch_until_the_job_completes() -> None:
    jobs = (ec_job(0, chunk_gb=2.0, minibatches=1), ec_job(1, chunk_gb=2.0, minibatches=1))
    wl = workload(jobs, EdgeCloud(((0, 0),), ((0, 0),), 2, storage=(3.0,)))
    with pytest.raises(InvalidDecision, match=r"\(7b\)") as e:
        _run(wl, {0: Dec(dispatch={0: ((0, 0),), 1: ((0, 1),)})})
    assert e.value.resource == "storage"
    # after job 0 completes (slot 1) its storage is free again
    res = _run(
        wl,
        {
            0: Dec(dispatch={0: ((0, 0),)}),
            1: Dec(run={0: (0,)}, ps={0: (0, 0)}),
            2: Dec(dispatch={1: ((0, 1),)}),
            3: Dec(run={1: (0,)}, ps={1: (0, 0)}),
        },
    )
    assert res.metrics["completed_jobs"] == 2.0


def test_preemption_counts_a_suspended_chunk_once_per_job_and_slot() -> None:
    wl = workload((ec_job(0, minibatches=3), ec_job(1, minibatches=1, arrival=1)))
    run = lambda j: Dec(run={j: (0,)}, ps={j: (0, 0)})  # noqa: E731
    res = _run(
        wl,
        {
            0: Dec(dispatch={0: ((0, 0),)}),
            1: Dec(dispatch={1: ((0, 0),)}, **{"run": {0: (0,)}, "ps": {0: (0, 0)}}),
            2: run(1),
            3: run(0),
            4: run(0),
        },
    )
    assert res.metrics["preemptions"] == 1.0
    assert res.metrics["total_jct"] == 4.0 + 1.0


def test_unfinished_jobs_count_horizon_minus_arrival() -> None:
    res = _run(workload((ec_job(),), horizon=7), {})
    assert res.metrics["total_jct"] == 7.0 and res.metrics["completed_jobs"] == 0.0
