"""Pollux's goodput work model, by hand (OSDI'21 Sec. 3.1 and the artifact's simulator)."""

from __future__ import annotations

import numpy as np
import pytest

from dmlsched.errors import InvalidInput
from dmlsched.model.speed.goodput import (
    Validation,
    efficiency,
    epoch_progress,
    gain,
    grad_stats,
    pollux_batch,
    statistical_steps,
)


def _toy() -> Validation:
    """Two trained batch sizes (M0 = 100, 400), two epochs."""
    return Validation(
        name="toy",
        batch_sizes=(100, 400),
        progress=np.array([[10.0, 20.0], [12.0, 19.0]]),
        grad_sqr=np.array([[1.0, 1.0], [3.0, 1.0]]),
        grad_var=np.array([[4.0, 9.0], [4.0, 9.0]]),
        max_epochs=2,
    )


def test_efficiency_is_one_at_the_initial_batch_and_falls_with_the_batch() -> None:
    assert efficiency(50.0, 100.0, 100.0) == 1.0
    assert efficiency(50.0, 100.0, 400.0) == pytest.approx(150 / 450)


def test_a_step_at_the_initial_batch_makes_one_step_of_progress() -> None:
    assert gain(np.array([2.0]), np.array([8.0]), 100, 100)[0] == pytest.approx(1.0)
    # φ = M0·σ²/|g|² = 400; E(400) = 500/800; gain = E·M/M0 = 2.5
    g = gain(np.array([2.0]), np.array([8.0]), 100, 400)[0]
    assert g == pytest.approx(efficiency(400.0, 100, 400) * 4) == pytest.approx(2.5)
    assert gain(np.array([0.0]), np.array([0.0]), 100, 400)[0] == 1.0  # no statistics


def test_gradient_statistics_interpolate_between_trained_batch_sizes() -> None:
    v = _toy()
    sqr, var = grad_stats(v, 200)  # a third of the way from 100 to 400
    assert sqr.tolist() == pytest.approx([1 + 2 / 3, 1.0]) and var.tolist() == [4.0, 9.0]
    assert grad_stats(v, 400)[0].tolist() == [3.0, 1.0]
    with pytest.raises(InvalidInput, match="batch"):
        grad_stats(v, 401)


def test_epochs_end_at_the_least_progress_over_batch_sizes() -> None:
    assert epoch_progress(_toy()).tolist() == [0.0, 10.0, 19.0]


def test_steps_sum_each_epochs_progress_over_its_gain() -> None:
    v = _toy()
    assert statistical_steps(v, 100) == pytest.approx(19.0)  # gain 1: steps = progress
    # epoch 0 at M = 400: gain (4+3)/(4/4+3) = 1.75; epoch 1: (9+1)/(9/4+1) = 40/13
    want = 10.0 / 1.75 + 9.0 / (40 / 13)
    assert statistical_steps(v, 400) == pytest.approx(want)


@pytest.mark.parametrize(
    ("target", "workers", "max_local", "want"),
    [
        (400, 4, 128, 400),  # 100 a GPU, no accumulation
        (400, 1, 128, 400),  # one GPU, F > M0: at least two micro-steps (200 + 200)
        (100, 1, 128, 100),  # one GPU at M0: one step
        (390, 4, 64, 392),  # ⌈97.5⌉ = 98 a GPU → two micro-steps of 49
        (4000, 4, 2000, 400),  # capped within the largest trained batch (400)
    ],
)
def test_pollux_batch_follows_update_local_bsz(
    target: int, workers: int, max_local: int, want: int
) -> None:
    assert pollux_batch(target, workers, max_local, _toy()) == want
