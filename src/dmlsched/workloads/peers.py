"""Peer simulators' job lists as ``cluster``-setting workloads.

Two formats, read in place (``../shared/peers/``; never copied here):

* ``pollux:PATH`` — Pollux/Sia CSV ``name,time,application,num_replicas,
  batch_size`` (Pollux OSDI'21 artifact, ``simulator/workloads``);
* ``gavel:PATH`` — Gavel ``.trace``: seven tab-separated fields per line
  (job type "Model (batch size b)", command, steps flag, needs-data flag,
  total steps, arrival seconds, scale factor).

Mappings (every one a decision; the numbers live in
:mod:`dmlsched.workloads.profiles` and here):

* **time**: arrival slot a = ⌊time / slot_seconds⌋, ``slot_seconds``
  default 60 (Pollux's scheduling interval) — *not* the cluster model's
  3600-s slot (:data:`dmlsched.model.cluster.SLOT_SECONDS`).  Everything
  time-valued is converted into these slots: τ (slots per sample) =
  seconds per sample / slot_seconds; JCT metrics come out in slots
  (× slot_seconds for seconds).  Eq. (1)'s transfer time uses
  :func:`~dmlsched.model.speed.pdors.comm_slots`, which assumes 3600-s slots,
  so bandwidths are *stored* as b · slot_seconds / 3600 (the transfer then
  lasts the right number of our slots).
* **GPUs → workers**: ``num_replicas`` / scale factor is the job's gang,
  ``ClusterJob.requested_workers`` (one GPU per worker).  These jobs
  synchronise by **all-reduce, not PSs**; the PS-based model gets one PS per
  job (γ = workers, no GPU): Eq. (1)'s per-step transfer 2g/b for S = 1 equals
  ring all-reduce's bandwidth term 2g(W−1)/(W b) up to the factor (W−1)/W.
* **application → model parameters**: τ = per-sample compute time
  (step − sync time) / local batch of the *single-GPU* measurement
  (placement ``1``) at the job's local batch (after accumulation, see
  :mod:`dmlsched.model.speed.measured`); g = 4 B × the model's published
  parameter count.  Gavel job types map to the nearest profiled application:
  ResNet-18 → cifar10 (same model), ResNet-50 → imagenet (same model),
  Transformer → bert, LM → deepspeech2 (recurrent), Recommendation → ncf,
  A3C → cifar10 (small conv net), CycleGAN → yolov3 (large conv net, small
  batch); A3C and CycleGAN carry no batch in their type: 4 and 1.
* **steps/epochs → work**: Pollux rows train the application's epochs over
  its dataset (E = epochs, K = samples per epoch, F = ``batch_size``);
  Pollux's own simulator counts *statistical* epochs (goodput), so large
  batches need more real epochs there — we count plain samples.  Gavel lines
  train ``steps`` iterations of global batch F = b × scale (b is the
  per-worker batch): E = 1, K = steps × F.
* **cluster**: ``machines`` (default 16) × 4 GPUs, 48 vCPU, 192 GB, 900 GB
  (the Pollux testbed's AWS g4dn.12xlarge); a worker needs 1 GPU, 8 vCPU,
  32 GB; the PS 1 vCPU, 4 GB.  Bandwidths: b^(e) = 50 Gbps (the instance's
  network), b^(i) = 126 Gbps (PCIe 3.0 ×16 between a node's GPUs).
* **horizon** (``slots`` default): last arrival + 2 × the sum of every
  job's run time alone on its gang (slower of Eq. (1) and, when loaded, the
  measured model) + 1; the engine stops as soon as nothing is left.
* utility: u ≡ 1 (peers optimise JCT; ``total_utility`` = completed jobs).

``speed="measured"`` attaches :class:`~dmlsched.model.speed.measured.
MeasuredSpeed` (per-step time from the profiles) as ``workload.speed``;
``"eq1"`` (default) leaves PD-ORS Eq. (1).

Malformed lines raise :class:`InvalidInput` naming file, line and field (the
CLI exits 2).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dmlsched.config import MAX_SIZE
from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import Cluster, ClusterJob, ClusterWorkload
from dmlsched.model.speed.measured import AppProfile, MeasuredSpeed, accumulation, step_time
from dmlsched.model.speed.pdors import job_rate
from dmlsched.model.utility import Sigmoid
from dmlsched.workloads.profiles import APPLICATIONS, load_profiles
from dmlsched.workloads.registry import WorkloadParams, register_workload
from dmlsched.workloads.textio import read_text

__all__ = [
    "B_EXT_GBPS",
    "B_INT_GBPS",
    "GAVEL_MODELS",
    "PeerRow",
    "build_peer_workload",
    "load_gavel",
    "load_pollux",
    "per_sample_seconds",
    "read_gavel",
    "read_pollux",
]

GPUS_PER_MACHINE = 4
MACHINE = (4.0, 48.0, 192.0, 900.0)
WORKER = (1.0, 8.0, 32.0, 0.0)
PS = (0.0, 1.0, 4.0, 0.0)
B_EXT_GBPS = 50.0
B_INT_GBPS = 126.0
POLLUX_COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")
# Gavel model → (nearest profiled application, default per-worker batch, steps flag)
GAVEL_MODELS: dict[str, tuple[str, int, str]] = {
    "ResNet-18": ("cifar10", 32, "--num_steps"),
    "ResNet-50": ("imagenet", 32, "--num_minibatches"),
    "Transformer": ("bert", 64, "-step"),
    "LM": ("deepspeech2", 20, "--steps"),
    "Recommendation": ("ncf", 2048, "-n"),
    "A3C": ("cifar10", 4, "--max-steps"),
    "CycleGAN": ("yolov3", 1, "--n_steps"),
}
_GAVEL_TYPE = re.compile(r"^(?P<model>[^()]+?)(?: \(batch size (?P<bs>\d+)\))?$")


@dataclass(frozen=True)
class PeerRow:
    """One peer job before conversion: seconds, application, gang, batch, work."""

    time: float
    application: str
    workers: int
    batch: int  # global batch F
    epochs: int
    samples: int  # per epoch


def _where(path: Path, line: int) -> str:
    return f"{path}:{line}"


def _num(
    v: str, field: str, where: str, *, integer: bool, minimum: float, maximum: float = math.inf
) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise InvalidInput(field, v, "a number", where) from None
    if not math.isfinite(x) or not minimum <= x <= maximum or (integer and x != int(x)):
        kind = "an integer" if integer else "a number"
        top = f" and <= {maximum:g}" if math.isfinite(maximum) else ""
        raise InvalidInput(field, v, f"{kind} >= {minimum:g}{top}", where)
    return x


def read_pollux(path: Path) -> list[PeerRow]:
    """Rows of a Pollux/Sia workload CSV, validated (file:line on error)."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInput("workload", str(path), "an existing Pollux CSV file")
    rows = []
    with io.StringIO(read_text(path, "workload"), newline="") as f:  # UTF-8, BOM or not
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None or tuple(h.strip() for h in header) != POLLUX_COLUMNS:
            raise InvalidInput("header", header, ",".join(POLLUX_COLUMNS), _where(path, 1))
        for line, rec in enumerate(reader, start=2):
            if not rec or all(not c.strip() for c in rec):
                continue
            w = _where(path, line)
            if len(rec) != len(POLLUX_COLUMNS):
                raise InvalidInput("columns", len(rec), f"{len(POLLUX_COLUMNS)} values", w)
            name, t, app, reps, bs = (c.strip() for c in rec)
            if not name:
                raise InvalidInput("name", name, "a non-empty job name", w)
            time = _num(t, "time", w, integer=False, minimum=0)
            if app not in APPLICATIONS:
                raise InvalidInput("application", app, " | ".join(APPLICATIONS), w)
            workers = int(_num(reps, "num_replicas", w, integer=True, minimum=1, maximum=MAX_SIZE))
            batch = int(_num(bs, "batch_size", w, integer=True, minimum=workers))
            a = APPLICATIONS[app]
            rows.append(PeerRow(time, app, workers, batch, a.epochs, a.samples))
    if not rows:
        raise InvalidInput("jobs", 0, ">= 1 row", str(path))
    return rows


def read_gavel(path: Path) -> list[PeerRow]:
    """Lines of a Gavel ``.trace``, validated (file:line on error)."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInput("workload", str(path), "an existing Gavel .trace file")
    rows = []
    with io.StringIO(read_text(path, "workload")) as f:  # UTF-8, BOM or not
        for line, text in enumerate(f, start=1):
            text = text.rstrip("\n").rstrip("\r")
            if not text.strip():
                continue
            w = _where(path, line)
            parts = text.split("\t")
            if len(parts) != 7:
                raise InvalidInput("fields", len(parts), "7 tab-separated fields", w)
            jtype, _cmd, _flag, needs, steps, t, scale = parts
            m = _GAVEL_TYPE.match(jtype.strip())
            if not m or m.group("model") not in GAVEL_MODELS:
                raise InvalidInput(
                    "job_type", jtype, " | ".join(f"{k} (batch size N)" for k in GAVEL_MODELS), w
                )
            app, default_bs, _ = GAVEL_MODELS[m.group("model")]
            per_worker = int(m.group("bs")) if m.group("bs") else default_bs
            if per_worker < 1:
                raise InvalidInput("batch size", per_worker, ">= 1", w)
            if needs.strip() not in ("0", "1"):
                raise InvalidInput("needs_data_dir", needs, "0 | 1", w)
            n_steps = int(_num(steps, "total_steps", w, integer=True, minimum=1))
            time = _num(t, "arrival_time", w, integer=False, minimum=0)
            workers = int(_num(scale, "scale_factor", w, integer=True, minimum=1, maximum=MAX_SIZE))
            batch = per_worker * workers
            rows.append(PeerRow(time, app, workers, batch, 1, n_steps * batch))
    if not rows:
        raise InvalidInput("jobs", 0, ">= 1 line", str(path))
    return rows


def per_sample_seconds(prof: AppProfile, workers: int, batch: int) -> float:
    """τ in seconds: single-GPU compute time per sample at the job's local batch."""
    atomic, _ = accumulation(batch, workers, prof.max_local_bsz)
    st, sy = step_time(prof, (1,), atomic)
    lb = min(max(atomic, prof.min_local_bsz), int(prof.placements[(1,)][0][-1]))
    return max(st - sy, 1e-12) / lb


def _job(
    i: int, row: PeerRow, slot_seconds: float, profiles: Mapping[str, AppProfile]
) -> ClusterJob:
    app = APPLICATIONS[row.application]
    scale = slot_seconds / 3600.0  # see "time" in the module docstring
    return ClusterJob(
        id=i,
        arrival=math.floor(row.time / slot_seconds + 1e-9),
        epochs=row.epochs,
        samples=row.samples,
        batch=row.batch,
        grad_mb=app.grad_mb,
        tau=per_sample_seconds(profiles[row.application], row.workers, row.batch) / slot_seconds,
        gamma=float(row.workers),
        worker_demand=WORKER,
        ps_demand=PS,
        b_int=B_INT_GBPS * scale,
        b_ext=B_EXT_GBPS * scale,
        utility=Sigmoid(1.0, 0.0, 0.0),
        requested_workers=row.workers,
    )


def _packed_counts(workers: int) -> tuple[list[int], list[int], list[int]]:
    n = max(1, math.ceil(workers / GPUS_PER_MACHINE))
    ws = [GPUS_PER_MACHINE] * (n - 1) + [workers - GPUS_PER_MACHINE * (n - 1)]
    return list(range(n)), ws, [1] + [0] * (n - 1)


def build_peer_workload(
    rows: list[PeerRow],
    *,
    source: str,
    slot_seconds: float = 60.0,
    machines: int | None = None,
    slots: int | None = None,
    profiles: Mapping[str, AppProfile] | None = None,
    speed: str = "eq1",
) -> ClusterWorkload:
    """Convert validated rows into a workload (see the module docstring)."""
    if not slot_seconds > 0 or not math.isfinite(slot_seconds):
        raise InvalidInput("slot_seconds", slot_seconds, "> 0")
    if speed not in ("eq1", "measured"):
        raise InvalidInput("speed", speed, "eq1 | measured")
    H = machines or 16
    if H < 1:
        raise InvalidInput("machines", H, ">= 1")
    profs = dict(profiles) if profiles is not None else load_profiles()
    jobs = [_job(i, r, slot_seconds, profs) for i, r in enumerate(rows)]
    measured = MeasuredSpeed(
        profs, {j.id: r.application for j, r in zip(jobs, rows, strict=True)}, slot_seconds
    )
    if slots is None:
        serial = 0.0
        for j in jobs:
            m, w, s = _packed_counts(j.requested_workers or 1)
            rates = [job_rate(j, m, w, s)]
            rates.append(job_rate(j, list(range(len(w) + 1)), [*w, 0], [0] * len(w) + [1]))
            rates.append(measured.rate(j, m, w, s))
            serial += j.total_work / max(min(rates), 1e-12)
        slots = max(j.arrival for j in jobs) + math.ceil(2 * serial) + 1
        if slots > MAX_SIZE:  # the engine keeps per-slot arrays: refuse, do not exhaust memory
            raise InvalidInput(
                "slots", slots, f"<= {MAX_SIZE} (computed from {source}; pass --slots)"
            )
    return ClusterWorkload(
        jobs=tuple(sorted(jobs, key=lambda j: (j.arrival, j.id))),
        cluster=Cluster.uniform(H, MACHINE),
        horizon=int(slots),
        source=source,
        notes=(
            f"slot_seconds={slot_seconds:g}",
            f"speed={speed}",
            "peer jobs synchronise by all-reduce, modelled as one PS per job (γ = workers)",
        ),
        speed=measured if speed == "measured" else None,
    )


def _options(p: WorkloadParams) -> dict:
    prof = p.extra.get("profiles")
    return dict(
        slot_seconds=float(p.extra.get("slot_seconds") or 60.0),
        machines=p.machines,
        slots=p.slots,
        profiles=load_profiles(Path(prof)) if prof else None,
        speed=p.extra.get("speed", "eq1"),
    )


def load_pollux(path: Path, **kw: object) -> ClusterWorkload:
    """``pollux:PATH`` → workload; keywords as :func:`build_peer_workload`."""
    return build_peer_workload(read_pollux(Path(path)), source=f"pollux:{Path(path).name}", **kw)  # type: ignore[arg-type]


def load_gavel(path: Path, **kw: object) -> ClusterWorkload:
    """``gavel:PATH`` → workload; keywords as :func:`build_peer_workload`."""
    return build_peer_workload(read_gavel(Path(path)), source=f"gavel:{Path(path).name}", **kw)  # type: ignore[arg-type]


@register_workload("cluster", "pollux:")
def _pollux(p: WorkloadParams, rng: np.random.Generator) -> ClusterWorkload:
    if p.trace is None:
        raise InvalidInput("workload", "pollux:", "pollux:PATH")
    return load_pollux(p.trace, **_options(p))


@register_workload("cluster", "gavel:")
def _gavel(p: WorkloadParams, rng: np.random.Generator) -> ClusterWorkload:
    if p.trace is None:
        raise InvalidInput("workload", "gavel:", "gavel:PATH")
    return load_gavel(p.trace, **_options(p))
