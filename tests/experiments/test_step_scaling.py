"""Saturating step curves: the minimax fit on synthetic profiles with known parameters."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.errors import InvalidInput
from dmlsched.experiments.step_scaling import (
    StepProfile,
    fit_curve,
    fit_profile,
    monotone_floor,
    read_step_profile,
    write_step_fits,
)
from dmlsched.model.speed.saturating import StepCurve

BATCHES = (2, 4, 8, 16, 32, 64, 128, 256, 512)
H200 = Path(__file__).resolve().parents[2] / ".." / "shared" / "profiles" / "h200-step-scaling.json"


def _profile(curve: StepCurve, noise: np.ndarray | None = None) -> StepProfile:
    y = np.array([curve.seconds(b) for b in BATCHES])
    if noise is not None:
        y = y * (1.0 + noise)
    return StepProfile("synthetic", BATCHES, tuple(float(v) for v in y), 50.0)


@pytest.mark.parametrize(
    ("t0", "tau", "c"),
    [
        (15e-3, 3e-4, 3e-3),  # saturates at b = 50 (ResNet-50-like)
        (2e-3, 1e-5, 0.5e-3),  # saturates at b = 200
        (0.0, 2e-5, 1e-3),  # linear from the start, with an overhead
    ],
)
def test_the_fit_recovers_known_parameters(t0, tau, c):
    fit = fit_curve(_profile(StepCurve("s", t0, tau, c)))
    assert fit.max_error < 1e-7
    assert fit.curve.t0_s == pytest.approx(t0, abs=1e-9)
    assert fit.curve.tau_s == pytest.approx(tau, rel=1e-6)
    assert fit.curve.overhead_s == pytest.approx(c, abs=1e-9)


def test_a_curve_that_never_saturates_saturates_after_the_largest_batch():
    flat = fit_curve(_profile(StepCurve("s", 8e-3, 0.0, 0.0)))
    assert flat.max_error < 1e-7
    assert flat.curve.overhead_s == pytest.approx(0.0, abs=1e-12)
    assert flat.curve.saturation_batch == pytest.approx(max(BATCHES))


@settings(max_examples=40, deadline=None)
@given(
    t0=st.floats(1e-4, 5e-2),
    b_sat=st.floats(1.0, 1000.0),
    c=st.floats(0.0, 5e-3),
    noise=st.lists(st.floats(-0.08, 0.08), min_size=len(BATCHES), max_size=len(BATCHES)),
)
def test_the_fit_is_never_worse_than_the_noise_nor_better_than_the_floor(t0, b_sat, c, noise):
    # the true curve is a candidate with error at most max|noise|/(1 − max|noise|)
    n = np.array(noise)
    fit = fit_curve(_profile(StepCurve("s", t0, t0 / b_sat, c), n))
    truth = np.abs(n / (1.0 + n)).max()
    assert fit.max_error <= truth + 1e-6
    assert fit.max_error >= fit.floor - 1e-9


def test_the_monotone_floor_by_hand():
    # 19.52 at b = 8 and 15.50 at b = 32: any non-decreasing t misses one by ≥ 4.02 / 35.02
    assert monotone_floor((8, 32), (19.52, 15.50)) == pytest.approx(4.02 / 35.02)
    assert monotone_floor((8, 32), (15.50, 19.52)) == 0.0


def test_a_bad_step_profile_names_the_field(tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"m": {"2": 0.1, "x": 0.2}}))
    with pytest.raises(InvalidInput, match=r"m\.x"):
        read_step_profile(bad)
    bad.write_text(json.dumps({"m": {"2": -1.0, "4": 0.2}}))
    with pytest.raises(InvalidInput, match=r"m\.2"):
        read_step_profile(bad)
    bad.write_text(json.dumps({"device": "x"}))
    with pytest.raises(InvalidInput, match="at least one model"):
        read_step_profile(bad)
    with pytest.raises(InvalidInput, match="step-profile"):
        read_step_profile(tmp_path / "missing.json")


def test_gradient_sizes_match_by_the_name_before_the_underscore(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(
        json.dumps({"device": "gpu", "net_big": {"2": 0.1, "4": 0.2}, "grad_mb": {"net": 9.0}})
    )
    profs, notes = read_step_profile(path)
    assert profs[0].grad_mb == 9.0 and notes == {"device": "gpu"}


@pytest.mark.skipif(not H200.exists(), reason="../shared/profiles/h200-step-scaling.json absent")
def test_the_h200_profile_fits_within_the_floor_plus_a_margin(tmp_path):
    fits = fit_profile(H200)
    assert {f.curve.name for f in fits} == {"resnet18_cifar", "resnet50_224", "mlp_digits"}
    for f in fits:
        # the best non-decreasing curve cannot beat the floor; ours stays within 10% or on it
        assert f.max_error <= max(0.10, f.floor + 1e-6)
    r50 = next(f for f in fits if f.curve.name == "resnet50_224")
    assert 30 < r50.curve.saturation_batch < 64  # flat to ~32, linear from 64
    text = write_step_fits(fits, "h200", tmp_path)
    assert "resnet50_224" in text and (tmp_path / "step_fit.png").exists()
    blob = json.loads((tmp_path / "step_fit.json").read_text())
    assert set(blob["mlp_digits"]["errors"]) == {
        "2", "4", "8", "16", "32", "64", "128", "256", "512", "1024", "4096"
    }  # fmt: skip


def _synthetic_file(tmp_path: Path) -> Path:
    curve = StepCurve("net_x", 15e-3, 3e-4, 3e-3)
    blob = {"net_x": {str(b): curve.seconds(b) for b in BATCHES}, "grad_mb": {"net": 50.0}}
    path = tmp_path / "steps.json"
    path.write_text(json.dumps(blob))
    return path


def test_calibrate_step_profile_prints_every_batch_and_writes_its_fit(tmp_path, capsys):
    from dmlsched.cli import main

    path = _synthetic_file(tmp_path)
    assert main(["calibrate", "--step-profile", str(path), "--out", str(tmp_path / "o")]) == 0
    text = capsys.readouterr().out
    assert "net_x" in text and all(f"{b}: " in text for b in BATCHES)
    assert json.loads((tmp_path / "o" / "step_fit.json").read_text())["net_x"]["max_error"] < 1e-6
    assert main(["calibrate"]) == 2  # neither an output folder nor a step profile


def test_compute_saturating_runs_a_comparison_and_refuses_what_it_cannot_apply(tmp_path):
    from dmlsched.cli import main

    path = str(_synthetic_file(tmp_path))
    args = ["compare", "--schedulers", "fifo", "--jobs", "4", "--machines", "3", "--slots", "5"]
    assert main([*args, "--seeds", "1", "--compute", path, "--out", str(tmp_path / "a")]) == 0
    cfg = json.loads((tmp_path / "a" / "config.json").read_text())
    assert cfg["extra"]["compute"] == path
    assert main([*args, "--compute", "nope.json", "--out", str(tmp_path / "b")]) == 2
    assert main([*args, "--setting", "interval", "--compute", path, "--out", str(tmp_path)]) == 2
    assert main(["reproduce", "testbed-pdors", "--compute", path, "--out", str(tmp_path)]) == 2


def test_with_compute_puts_the_fitted_curves_on_the_workload(tmp_path):
    from dmlsched.experiments.defs.pdors import build_fig7
    from dmlsched.experiments.step_scaling import WithCompute

    wl = WithCompute(build_fig7, str(_synthetic_file(tmp_path)))(20, 0, True)
    assert wl.speed is not None and wl.speed.curves[0].name == "net_x"
