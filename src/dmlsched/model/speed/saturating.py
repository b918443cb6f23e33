"""Saturating compute: a worker's step time is flat in its batch until the GPU saturates.

Measured on a real GPU (``../shared/profiles/h200-step-scaling.json``), the
forward + backward + update time of one step against the per-worker batch b
is flat while the GPU is not saturated and linear after — not τ·b as PD-ORS
Eq. (1) (and SMD's layered model) assume.  One model's curve (ours)::

    t(b) = max(t0, τ·b) + c

t0: the flat time of an unsaturated step; τ: seconds per sample once
saturated; c: a per-step overhead (the intercept of the linear branch).
b_sat = t0/τ is the batch at which the GPU saturates (∞ when τ = 0).  The
curves are fitted by :mod:`dmlsched.experiments.step_scaling`
(``dmlsched calibrate --step-profile FILE``); this module holds only the
pure functions.

:class:`SaturatingSpeed` — the engine's speed model with saturating
compute (``--compute saturating``): PD-ORS Eq. (1) (with Fact 1 and the
γ-form of :mod:`dmlsched.model.speed.pdors`) whose compute term τ·F/W
becomes

    τ·F · t(F/W) / t(F)

Decisions (the paper's jobs carry τ, not a GPU curve):

* the job's one-worker compute per step, τ·F (τ·straggler·F under BSP),
  stays what Eq. (1) says — the curve gives only the *shape*: how much of
  it is left when the F samples are split over W workers (t(F/W)/t(F)
  instead of 1/W).  So a job's length alone on one worker is unchanged and
  only what an extra worker is worth changes;
* a job takes the curve of the profiled model whose gradient size is
  nearest its own g on a log scale (the profile's ``grad_mb``; ties: the
  first by name) — a gradient identifies a model's size, the only trace of
  the model a PD-ORS job has;
* the per-worker batch is F/W as in Eq. (1) (not ⌈F/W⌉);
* async jobs (thesis (3.1)) train mini-batches of F on every worker,
  whatever W: their compute does not depend on W and is left as printed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import ClusterJob
from dmlsched.model.speed.pdors import comm_slots, is_internal, job_rate

__all__ = ["COMPUTE_HELP", "SaturatingSpeed", "StepCurve"]

COMPUTE_HELP = (
    "linear (Eq. (1): tau * F / W) | saturating (per-worker step max(t0, tau*b) + c fitted to "
    "../shared/profiles/h200-step-scaling.json) | PATH of a step-scaling JSON"
)


@dataclass(frozen=True)
class StepCurve:
    """One model's step time t(b) = max(t0, τ·b) + c, seconds (module docstring)."""

    name: str
    t0_s: float
    tau_s: float
    overhead_s: float
    grad_mb: float = float("nan")  # the model's gradient (matches jobs to curves)

    def __post_init__(self) -> None:
        for field, v in (("t0_s", self.t0_s), ("tau_s", self.tau_s), ("c", self.overhead_s)):
            if not (v >= 0 and math.isfinite(v)):
                raise InvalidInput(field, v, "finite and >= 0", self.name)
        if self.t0_s + self.overhead_s <= 0 and self.tau_s <= 0:
            raise InvalidInput("step curve", self.name, "some positive time")

    def seconds(self, batch: float) -> float:
        """t(b): seconds of one step of ``batch`` samples on one worker."""
        return max(self.t0_s, self.tau_s * batch) + self.overhead_s

    @property
    def saturation_batch(self) -> float:
        """b_sat = t0/τ: beyond it a step grows with the batch (∞ if it never does)."""
        return self.t0_s / self.tau_s if self.tau_s > 0 else math.inf

    def share(self, batch: float, workers: float) -> float:
        """t(F/W) / t(F): the part of a one-worker step's compute left with W workers."""
        return self.seconds(batch / workers) / self.seconds(batch)


@dataclass(frozen=True)
class SaturatingSpeed:
    """Eq. (1) with saturating compute (module docstring); the engine's ``SpeedModel``."""

    curves: tuple[StepCurve, ...]

    def __post_init__(self) -> None:
        if not self.curves:
            raise InvalidInput("step curves", 0, "at least one")
        for c in self.curves:
            if not (c.grad_mb > 0 and math.isfinite(c.grad_mb)):
                raise InvalidInput("grad_mb", c.grad_mb, "> 0 (matches jobs to curves)", c.name)

    def curve_of(self, job: ClusterJob) -> StepCurve:
        """The curve of the profiled model whose gradient is nearest the job's (log scale)."""
        g = math.log(job.grad_mb)
        return min(
            sorted(self.curves, key=lambda c: c.name), key=lambda c: abs(math.log(c.grad_mb) - g)
        )

    def rate(
        self,
        job: ClusterJob,
        machines: Sequence[int],
        workers: Sequence[int],
        ps: Sequence[int],
    ) -> float:
        """Samples per slot (sync) — Eq. (1), compute τ·F·t(F/W)/t(F); async as printed."""
        W, S = sum(workers), sum(ps)
        if W <= 0 or S <= 0:
            return 0.0
        if job.mode != "sync":
            return job_rate(job, machines, workers, ps)
        w_m = [m for m, w in zip(machines, workers, strict=True) if w > 0]
        s_m = [m for m, s in zip(machines, ps, strict=True) if s > 0]
        b = job.b_int if is_internal(w_m, s_m) else job.b_ext
        s_eff = min(S, W / job.gamma)  # PSs beyond W/γ carry nothing (pdors module docstring)
        F = job.batch
        compute = job.tau * job.straggler * F * self.curve_of(job).share(F, W)
        return F / (compute + comm_slots(2.0 * job.grad_mb / s_eff, b))
