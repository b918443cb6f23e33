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


@pytest.fixture(autouse=True)
def _arrivals(monkeypatch: pytest.MonkeyPatch) -> None:
    """Google arrivals when the trace and its loader exist; else uniform slots.

    The experiments' machinery (cells, optima, claims' metrics) is what these
    smoke tests check; the arrival process is the traces helper's and is
    exercised whenever the loader and ``../shared/traces`` are present.
    """
    if GOOGLE.exists() and _has_trace_loader():
        return
    import numpy as np

    import dmlsched.experiments.defs.mlbroker as defs

    def uniform(n: int, T: int, rng: np.random.Generator, *a: object, **k: object):  # type: ignore[no-untyped-def]
        return np.sort(rng.integers(0, T, n)), ("uniform slots: no Google trace here",)

    monkeypatch.setattr(defs, "google_arrivals_with_notes", uniform)


IDS = [f"mlbroker-fig{i}" for i in range(5, 15)] + ["mlbroker-table4"]


def test_every_mlbroker_figure_and_table4_is_registered_with_claims() -> None:
    ids = {e.id for e in all_experiments()}
    assert set(IDS) <= ids
    for i in IDS:
        assert get(i).claims and get(i).setting == "geo"


@pytest.mark.parametrize("exp_id", IDS)
def test_experiment_quick_cell_runs_and_returns_finite_metrics(exp_id: str) -> None:
    exp = get(exp_id)
    out = exp.run_cell(exp.schedulers[0], exp.quick_points[0], 0, True)
    assert set(exp.metrics) <= set(out)
    assert all(math.isfinite(v) for v in out.values())


def test_fig8_quick_cell_runs_for_every_series() -> None:
    exp = get("mlbroker-fig8")
    for s in exp.schedulers:
        out = exp.run_cell(s, exp.quick_points[0], 0, True)
        assert out["total_cost"] > 0
