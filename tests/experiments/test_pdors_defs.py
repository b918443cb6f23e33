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


def test_fig10_cell_reports_a_ratio_of_at_least_one() -> None:
    exp = get("pdors-fig10")
    m = exp.run_cell("pd-ors", 2, 2, True)
    assert m["opt_utility"] >= m["total_utility"] - 1e-9
    assert m["competitive_ratio"] >= 1.0 - 1e-9 or math.isinf(m["competitive_ratio"])


@pytest.mark.slow
@pytest.mark.parametrize("exp_id", IDS)
def test_quick_cell_runs(exp_id: str) -> None:
    if exp_id in GOOGLE and not TRACES.exists():
        pytest.skip("../shared/traces absent")
    exp = get(exp_id)
    m = exp.run_cell(exp.schedulers[0], exp.quick_points[0], 0, True)
    assert all(k in m for k in exp.metrics)
