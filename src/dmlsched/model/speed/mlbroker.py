"""mlBroker worker model (Sec. 3.1): a worker of job i trains P_i GB per slot.

P_i is "the maximum input data size that it can train for the desired number
of epochs in each time slot", so the slot's data of a job need
⌈Σ_r D_i^r(t) / P_i⌉ workers ((8j) and Sec. 3.1), and the workers placed in
DC r' can absorb at most P_i y_i^{r'}(t) GB ((8a)).

Sec. 6.1 takes P_i ∈ [16, 66] GB from the TensorFlow ResNet-152 training
speed.  :func:`capacity_from_speed` makes that derivation explicit for the
Table 3 models: images/s × seconds per slot × epochs⁻¹ × GB per image.
"""

from __future__ import annotations

import math

__all__ = ["IMAGENET_GB_PER_IMAGE", "capacity_from_speed", "workers_needed"]

# ImageNet-12: ≈ 1.28 M training images in ≈ 140 GB.
IMAGENET_GB_PER_IMAGE = 140.0 / 1.28e6

_TOL = 1e-9


def workers_needed(total_gb: float, capacity: float) -> int:
    """⌈D / P⌉ with a relative tolerance (0 for no data)."""
    if total_gb <= 0:
        return 0
    return max(1, math.ceil(total_gb / capacity - _TOL))


def capacity_from_speed(
    images_per_s: float,
    slot_hours: float,
    epochs: float,
    gb_per_image: float = IMAGENET_GB_PER_IMAGE,
) -> float:
    """P_i = images/s · slot seconds / epochs · GB per image."""
    return images_per_s * slot_hours * 3600.0 / epochs * gb_per_image
