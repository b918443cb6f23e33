"""Smoke tests: every aonline-fig* experiment runs one quick cell."""

from __future__ import annotations

import math

import pytest

from dmlsched.experiments.catalogue import get
from dmlsched.workloads.traces import default_trace_dir

# the figures' arrivals are the Philly trace's, with no fallback (see the defs' docstring)
pytestmark = pytest.mark.skipif(
    default_trace_dir("philly") is None, reason="../shared/traces/philly-pollux absent"
)

IDS = [f"aonline-fig{i}" for i in range(7, 14)]


def test_all_seven_figures_are_registered_in_the_edge_cloud_setting() -> None:
    for exp_id in IDS:
        exp = get(exp_id)
        assert exp.setting == "edge-cloud" and exp.quick_points and exp.claims


@pytest.mark.parametrize("exp_id", ["aonline-fig12", "aonline-fig13"])
def test_competitive_ratio_cell_divides_by_a_bound_below_speed_one_jct(
    exp_id,
) -> None:
    from dmlsched.experiments.defs.aonline import _simulate

    exp = get(exp_id)
    # SRTF's total JCT falls with speed; A_online's need not on the contended instances
    # (measured: at fig12's 5 jobs seed 0, 1.213 at ε = 0.1 and 1.225 at ε = 0.2)
    srtf = exp.run_cell("srtf", exp.quick_points[0], 0, True)
    ratios = [srtf[f"competitive_ratio_eps{e:g}"] for e in (0.1, 0.2, 0.3, 0.4, 0.5)]
    assert ratios == sorted(ratios, reverse=True)
    m = exp.run_cell("a-online", exp.quick_points[0], 0, True)
    ratios = [m[f"competitive_ratio_eps{e:g}"] for e in (0.1, 0.2, 0.3, 0.4, 0.5)]
    assert all(r > 0 for r in ratios) and m["competitive_ratio"] == ratios[0]
    assert m["lp_bound"] == srtf["lp_bound"] > m["lp_relaxation"] > 0
    # with (1 + ε) speed the ratio may dip below 1; at speed 1 no schedule beats the bound
    wl = exp.build(exp.quick_points[0], 0, True)
    assert _simulate(wl, "a-online", 0)["total_jct"] >= m["lp_bound"] - 1e-6


def test_jct_rate_cell_divides_by_srtf_on_the_same_instance() -> None:
    exp = get("aonline-fig8")
    srtf = exp.run_cell("srtf", 20, 0, True)
    m = exp.run_cell("a-online", 20, 0, True)
    assert srtf["jct_rate"] == 1.0
    assert math.isclose(m["jct_rate"], m["total_jct"] / srtf["total_jct"])


def test_a_reference_series_runs_once_for_its_own_cell_and_every_rate(monkeypatch) -> None:
    from dmlsched.experiments.defs import aonline

    runs: list[str] = []
    real = aonline._simulate

    def counted(wl, label, seed):
        runs.append(label)
        return real(wl, label, seed)

    monkeypatch.setattr(aonline, "_simulate", counted)
    exp = get("aonline-fig8")
    cells = {s: exp.run_cell(s, 20, 7, True) for s in ("srtf", "a-online", "srtf-edge")}
    assert sorted(runs) == ["a-online", "srtf", "srtf-edge"]
    assert cells["srtf"]["jct_rate"] == cells["srtf-edge"]["jct_rate_edge"] == 1.0
    # the ablation's SRTF on the same instance is the same run
    abl = get("ablation-aonline").run_cell("a-online", "fig8:20", 7, True)
    assert runs.count("srtf") == 1
    assert abl["jct_rate"] == cells["a-online"]["jct_rate"]


@pytest.mark.slow
@pytest.mark.parametrize("exp_id", IDS)
def test_every_experiment_runs_a_quick_cell(exp_id) -> None:
    exp = get(exp_id)
    m = exp.run_cell(exp.schedulers[0], exp.quick_points[0], 0, True)
    assert all(k in m for k in exp.metrics)


def test_fig7_bound_rate_is_below_every_scheduler_jct_rate() -> None:
    exp = get("aonline-fig7")
    cells = {s: exp.run_cell(s, 30, 0, True) for s in ("srtf", "a-online", "batchsche")}
    bound = cells["srtf"]["opt_bound_rate"]
    assert 0 < bound <= 1.0
    for m in cells.values():
        assert m["opt_bound_rate"] == bound
        assert bound <= m["jct_rate"] + 1e-9
