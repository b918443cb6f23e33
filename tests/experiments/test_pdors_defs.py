"""Smoke tests of the PD-ORS / thesis experiments (quick size, one point, one seed)."""

from __future__ import annotations

import math

import pytest

from dmlsched.experiments.catalogue import all_experiments, get
from tests.conftest import TRACES

IDS = [f"pdors-fig{i}" for i in range(6, 18)] + [f"thesis-fig3.{i}" for i in range(11, 15)]
GOOGLE = {f"pdors-fig{i}" for i in range(12, 18)}


def test_every_pdors_and_thesis_figure_is_in_the_catalogue() -> None:
    ids = {e.id for e in all_experiments()}
    assert set(IDS) <= ids
    for i in IDS:
        exp = get(i)
        assert exp.claims and exp.metrics and exp.quick_points


def test_fig10_cell_ratio_comes_from_the_milp_alone() -> None:
    exp = get("pdors-fig10")
    for point, seed in ((2, 2), (4, 0)):
        m = exp.run_cell("pd-ors", point, seed, True)
        assert m["opt_gap_open"] == 0.0
        assert m["opt_utility"] >= m["total_utility"] - 1e-9  # a true bound
        assert m["opt_replay_utility"] == pytest.approx(m["opt_utility"], abs=1e-9)
        if m["opt_utility"] == 0 and m["total_utility"] == 0:
            assert m["excluded"] == 1.0 and math.isnan(m["competitive_ratio"])  # never 1
        elif m["total_utility"] == 0:
            assert math.isinf(m["competitive_ratio"])
        else:
            assert m["competitive_ratio"] == pytest.approx(m["opt_utility"] / m["total_utility"])


def test_fig10_instances_have_a_job_that_finishes_alone_so_opt_is_positive() -> None:
    from dmlsched.experiments.defs.pdors import build_fig10, finishes_alone

    for point in (2, 6, 10):
        for seed in range(6):
            wl = build_fig10(point, seed, False)
            assert any(finishes_alone(j, wl.cluster.capacity, wl.horizon) for j in wl.jobs)
    m = get("pdors-fig10").run_cell("pd-ors", 6, 0, True)
    assert m["opt_utility"] > 0.0 and m["excluded"] == 0.0


def test_fig10_cells_with_opt_and_alg_zero_are_excluded() -> None:
    import dataclasses

    from dmlsched.experiments.defs.pdors import _sync

    # the paper's ranges without the OPT > 0 draw: no job of this instance finishes in T
    exp = dataclasses.replace(
        get("pdors-fig10"), id="fig10-unconditioned", build=lambda p, s, q: _sync(6, 10, 10, 0)
    )
    m = exp.run_cell("pd-ors", 6, 0, True)
    assert m["opt_utility"] == 0.0 and m["excluded"] == 1.0
    assert math.isnan(m["competitive_ratio"])


@pytest.mark.slow
@pytest.mark.parametrize("exp_id", IDS)
def test_quick_cell_runs(exp_id: str) -> None:
    if exp_id in GOOGLE and not TRACES.exists():
        pytest.skip("../shared/traces absent")
    exp = get(exp_id)
    m = exp.run_cell(exp.schedulers[0], exp.quick_points[0], 0, True)
    assert all(k in m for k in exp.metrics)
