"""The rows Pollux's simulator accepts: each application's batch and GPU domain.

A Pollux/Sia row (application, ``num_replicas`` R, ``batch_size`` B) runs in
the Pollux simulator's Tiresias/Optimus modes only inside a domain its
``applications.py`` and ``simulator.py`` imply (petuum/adaptdl,
``simulator/``, read at master commit de25dcc; of the osdi21-artifact branch
that ``../shared`` cites, only the profiles and workloads are at hand):

* **B ≥ the smallest batch with a validation trace** — the statistical
  efficiency of a batch is interpolated between the validation traces
  (``_validated_batch_sizes`` asserts a trace at or below B);
* **B ≥ R × the smallest profiled local batch** — the per-GPU batch ⌈B/R⌉
  is looked up in ``placements.csv`` by linear interpolation, which raises
  (``interp1d``) or yields NaN (``LinearNDInterpolator``, then an assertion)
  below the smallest measured local batch;
* **B ≤ the largest batch** — Pollux caps the per-GPU batch at
  ``max_batch_size`` ÷ (R × accumulation steps) itself; we require B within
  the bound so that a row means what it says;
* **R ≤ 64** — the simulator's cluster, 16 nodes × 4 GPUs
  (``get_configurations``: "Assuming a cluster of 16 nodes each with 4
  GPUs"); a larger gang never runs.

Bounds per application (:data:`POLLUX_DOMAIN`), all data:

==========  ===========  ===========  ===========================
app         smallest B   largest B    smallest local batch (GPU)
==========  ===========  ===========  ===========================
bert              12          384                4
cifar10          256        4,096               32
deepspeech2      160          640               10
imagenet         200        6,400               20
ncf              256       32,768               32
yolov3             8          128                4
==========  ===========  ===========  ===========================

Sources: smallest B = the smallest ``validation-<B>.csv`` under
``simulator/traces/<app>/`` (de25dcc); largest B = the larger of the largest
such file and the largest ``batch_size`` the artifact's own eight workloads
submit for the application (``../shared/peers/pollux-osdi21/workloads``:
cifar10 4,096, imagenet 6,400, ncf 32,768 — rows the artifact runs, so within
its domain); smallest local batch = the smallest ``local_bsz`` in the
application's ``placements.csv`` (``../shared/peers/pollux-osdi21/profiles``;
a test checks these against the files).  Above the domain's lower bounds,
⌈B/R⌉ after Pollux's gradient accumulation stays within every measured
placement's local-batch range (tested on the real profiles).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dmlsched.errors import InvalidInput

__all__ = ["MAX_REPLICAS", "POLLUX_DOMAIN", "Domain", "clamp_to_domain", "domain_violations"]

MAX_REPLICAS = 64  # 16 nodes x 4 GPUs, the Pollux simulator's cluster


@dataclass(frozen=True)
class Domain:
    """One application's bounds (see the module docstring for sources)."""

    min_batch: int
    max_batch: int
    min_local: int

    @property
    def max_replicas(self) -> int:
        """Most GPUs a row can ask for: every GPU needs ``min_local`` samples."""
        return min(MAX_REPLICAS, self.max_batch // self.min_local)


POLLUX_DOMAIN: dict[str, Domain] = {
    "bert": Domain(12, 384, 4),
    "cifar10": Domain(256, 4096, 32),
    "deepspeech2": Domain(160, 640, 10),
    "imagenet": Domain(200, 6400, 20),
    "ncf": Domain(256, 32768, 32),
    "yolov3": Domain(8, 128, 4),
}


def _domain(app: str) -> Domain:
    if app not in POLLUX_DOMAIN:
        raise InvalidInput("application", app, " | ".join(POLLUX_DOMAIN))
    return POLLUX_DOMAIN[app]


def domain_violations(app: str, replicas: int, batch: int) -> list[str]:
    """Why a row (app, R, B) is outside Pollux's domain; empty when inside."""
    d = _domain(app)
    out = []
    if not 1 <= replicas <= MAX_REPLICAS:
        out.append(f"num_replicas {replicas} outside [1, {MAX_REPLICAS}]")
    if batch < d.min_batch:
        out.append(f"batch_size {batch} < {d.min_batch}, the smallest validated batch")
    if batch > d.max_batch:
        out.append(f"batch_size {batch} > {d.max_batch}, the largest batch")
    if batch < replicas * d.min_local:
        out.append(
            f"batch_size {batch} < {replicas} GPUs × {d.min_local}, the smallest local batch"
        )
    return out


def clamp_to_domain(app: str, replicas: int, batch: int) -> tuple[int, int]:
    """The nearest row inside the domain: fewer GPUs if needed, then B clamped.

    R' = min(R, the most GPUs any batch allows); B' = B clamped to
    [max(smallest B, R' × smallest local batch), largest B].
    """
    d = _domain(app)
    r = max(1, min(int(replicas), d.max_replicas))
    lo = max(d.min_batch, r * d.min_local)
    b = min(max(int(batch), lo), d.max_batch)
    assert not domain_violations(app, r, b), (app, r, b)
    return r, b


def pollux_local_batch(app: str, replicas: int, batch: int, max_local: int) -> tuple[int, int]:
    """(atomic local batch, accumulation steps) as Pollux's ``update_local_bsz``.

    For a fixed target batch: l = ⌈B/R⌉; ``accum`` = ⌈l / max_local⌉ − 1, at
    least 1 on one GPU above the smallest validated batch; atomic =
    ⌈l / (accum + 1)⌉, capped at ⌊largest B / (R (accum + 1))⌋.
    """
    d = _domain(app)
    local = math.ceil(batch / replicas - 1e-8)
    accum = math.ceil(local / max_local - 1e-8) - 1
    if replicas == 1 and batch > d.min_batch:
        accum = max(1, accum)
    atomic = math.ceil(local / (accum + 1) - 1e-8)
    atomic = min(atomic, d.max_batch // (replicas * (accum + 1)))
    return atomic, accum
