"""Smoke tests of the mlBroker experiments (quick size, one point, one seed)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from dmlsched.experiments.catalogue import all_experiments, get

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
GOOGLE = SHARED / "traces" / "google-2011"


def _has_trace_loader() -> bool:
    try:
        from dmlsched.workloads.traces import trace_arrivals  # noqa: F401
    except ImportError:
        return False
    return True


needs_google = pytest.mark.skipif(
    not GOOGLE.exists() or not _has_trace_loader(),
    reason="../shared/traces/google-2011 absent or dmlsched.workloads.traces not merged yet",
)

IDS = [f"mlbroker-fig{i}" for i in range(5, 15)] + ["mlbroker-table4"]


def test_every_mlbroker_figure_and_table4_is_registered_with_claims() -> None:
    ids = {e.id for e in all_experiments()}
    assert set(IDS) <= ids
    for i in IDS:
        assert get(i).claims and get(i).setting == "geo"


@needs_google
@pytest.mark.slow
@pytest.mark.parametrize("exp_id", IDS)
def test_experiment_quick_cell_runs_and_returns_finite_metrics(exp_id: str) -> None:
    exp = get(exp_id)
    out = exp.run_cell(exp.schedulers[0], exp.quick_points[0], 0, True)
    assert set(exp.metrics) <= set(out)
    assert all(math.isfinite(v) for v in out.values())


@needs_google
def test_fig8_quick_cell_runs_for_every_series() -> None:
    exp = get("mlbroker-fig8")
    for s in exp.schedulers:
        out = exp.run_cell(s, exp.quick_points[0], 0, True)
        assert out["total_cost"] > 0
