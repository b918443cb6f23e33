"""Pollux's goodput work model: how many steps a job needs at its batch size.

Pollux (Qiao et al., OSDI'21, Sec. 3) measures a job's progress in
*statistical* terms.  Its goodput is system throughput × statistical
efficiency (Sec. 3, "goodput"), and the efficiency of a batch of M samples,
relative to the job's initial batch M0, is (Sec. 3.1)

    E_t(M) = (φ_t + M0) / (φ_t + M),

where φ_t is the gradient noise scale at iteration t: φ_t = M0 · σ²_t / |g_t|²
(the pre-conditioned gradient noise scale, from the gradient's variance σ²_t
and squared norm |g_t|² measured at batch M0).  One step at batch M then makes
the progress of E_t(M) · M / M0 steps at M0:

    gain_t(M) = E_t(M) · M / M0 = (σ² + |g|²) / (σ² · M0 / M + |g|²),

which is 1 at M = M0 and grows sublinearly with M: larger batches need more
samples for the same progress.

The Pollux artifact's validation traces (``simulator/traces/<app>/
validation-<M>.csv``, one per batch size M trained) give, per epoch e, the
progress P_e reached after e epochs (in M0-steps), and (|g|², σ²) during epoch e.
Its simulator ends epoch e when a job's progress reaches the least P_{e+1}
over the batch sizes, interpolates (|g|², σ²) linearly in M between the two
batch sizes around it, and finishes the job after its ``max_epochs`` epochs.
At a batch M that does not change (gang schedulers give a job the GPUs it
asked for, so its batch stays that of its first placement), epoch e therefore
takes (P_{e+1} − P_e) / gain_e(M) steps, and the whole job

    steps(M) = Σ_{e < E} (P_{e+1} − P_e) / gain_e(M)                      (†)

steps: :func:`statistical_steps`.  ``dmlsched.workloads.peers`` with
``speed="goodput"`` turns (†) into the job's work (steps × the samples of a
step), so the engine's measured throughput runs it for the simulator's time.

M is Pollux's effective batch for W GPUs (:func:`pollux_batch`, its
``update_local_bsz``): local batch ⌈F/W⌉ split into accumulation micro-steps of
at most the largest local batch (at least two on one GPU when F > M0), the
micro-batch capped so the total stays within the largest validated batch.

Restart penalty: Pollux's simulator also charges δ = 30 s after every
(re)allocation of GPUs to a job (checkpoint and restart; the paper's
re-allocation delay), :data:`RESTART_SECONDS`.  The work above does not
contain it: it depends on the schedule.

Pure functions over :class:`Validation` records (no I/O; the loader is
:mod:`dmlsched.workloads.pollux_validation`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dmlsched.errors import InvalidInput

__all__ = [
    "RESTART_SECONDS",
    "Validation",
    "efficiency",
    "epoch_progress",
    "gain",
    "grad_stats",
    "pollux_batch",
    "statistical_steps",
]

#: Pollux's simulator: a job re-allocated GPUs makes no progress for 30 s.
RESTART_SECONDS = 30.0


@dataclass(frozen=True)
class Validation:
    """One application's validation traces.

    ``batch_sizes``: the batch sizes trained, ascending (the first is M0);
    ``progress``, ``grad_sqr``, ``grad_var``: arrays (batch sizes × epochs) of the
    progress reached after each epoch (M0-steps) and |g|², σ² during it;
    ``max_epochs``: epochs to train (the simulator's ``max_epochs``).
    """

    name: str
    batch_sizes: tuple[int, ...]
    progress: np.ndarray
    grad_sqr: np.ndarray
    grad_var: np.ndarray
    max_epochs: int

    @property
    def init_batch(self) -> int:
        return self.batch_sizes[0]

    @property
    def max_batch(self) -> int:
        return self.batch_sizes[-1]


def efficiency(noise_scale: float, m0: float, m: float) -> float:
    """E(M) = (φ + M0) / (φ + M): statistical efficiency of batch M (Sec. 3.1)."""
    return (noise_scale + m0) / (noise_scale + m)


def gain(sqr: np.ndarray, var: np.ndarray, m0: float, m: float) -> np.ndarray:
    """Progress of one step at batch M in M0-steps, elementwise: E(M)·M/M0 with
    φ = M0·σ²/|g|², i.e. (σ² + |g|²) / (σ²·M0/M + |g|²); 1 where both are 0."""
    sqr, var = np.asarray(sqr, dtype=float), np.asarray(var, dtype=float)
    denom = var / (m / m0) + sqr
    return np.divide(var + sqr, denom, out=np.ones_like(denom), where=denom > 0)


def grad_stats(v: Validation, batch: float) -> tuple[np.ndarray, np.ndarray]:
    """(|g|², σ²) per epoch at ``batch``: linear between the trained batch sizes around
    it (the simulator's ``get_grad_stats``)."""
    sizes = v.batch_sizes
    if not sizes[0] <= batch <= sizes[-1]:
        raise InvalidInput("batch", batch, f"within the trained batch sizes {sizes[0]}-{sizes[-1]}")
    hi = int(np.searchsorted(sizes, batch, side="left"))
    if sizes[hi] == batch:
        return v.grad_sqr[hi], v.grad_var[hi]
    lo = hi - 1
    b0, b1 = sizes[lo], sizes[hi]

    def lerp(a: np.ndarray) -> np.ndarray:
        return ((batch - b0) * a[hi] + (b1 - batch) * a[lo]) / (b1 - b0)

    return lerp(v.grad_sqr), lerp(v.grad_var)


def epoch_progress(v: Validation) -> np.ndarray:
    """P_0 … P_E: the progress that ends each number of epochs, the least over batch sizes."""
    return np.concatenate([[0.0], v.progress.min(axis=0)])


def statistical_steps(v: Validation, batch: float) -> float:
    """(†): steps at ``batch`` to train ``v.max_epochs`` epochs."""
    sqr, var = grad_stats(v, batch)
    return float(np.sum(np.diff(epoch_progress(v)) / gain(sqr, var, v.init_batch, batch)))


def pollux_batch(target: int, workers: int, max_local: int, v: Validation) -> int:
    """Pollux's effective batch for ``target`` samples over ``workers`` GPUs
    (``update_local_bsz`` with a fixed target): W · micro-batch · micro-steps."""
    local = math.ceil(target / workers - 1e-8)
    accum = math.ceil(local / max_local - 1e-8) - 1
    if workers == 1 and target > v.init_batch:
        accum = max(1, accum)
    atomic = math.ceil(local / (accum + 1) - 1e-8)
    count = workers * (accum + 1)
    atomic = min(atomic, int(v.max_batch / count))
    return workers * atomic * (accum + 1)
