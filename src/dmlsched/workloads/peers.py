"""Peer simulators' job lists as ``cluster``-setting workloads.

Two formats, read in place (``../shared/peers/``; never copied here):

* ``pollux:PATH`` — Pollux/Sia CSV ``name,time,application,num_replicas,
  batch_size`` (Pollux OSDI'21 artifact, ``simulator/workloads``);
* ``gavel:PATH`` — Gavel ``.trace``, tab-separated, in either form (see
  ``../shared/peers/gavel/README.md``): the older 7 fields of the traces there
  (job type, command, steps flag, needs-data flag, total steps, arrival
  seconds, scale factor) or the 10 fields Gavel's own ``parse_trace`` reads at
  commit c4fa400 (job type, command, working directory, steps flag,
  needs-data flag, total steps, scale factor, priority weight, SLO, arrival
  seconds).

Mappings (every one a decision; the numbers live in
:mod:`dmlsched.workloads.profiles`, :mod:`dmlsched.workloads.gavel_table` and
here):

* **time**: arrival slot a = ⌊time / slot_seconds⌋, ``slot_seconds``
  default 60 (Pollux's scheduling interval) — *not* the cluster model's
  3600-s slot (:data:`dmlsched.model.cluster.SLOT_SECONDS`); the workload
  carries it (``ClusterWorkload.slot_seconds``) and the engine hands it to
  schedulers.  Everything time-valued is converted into these slots: τ
  (slots per sample) = seconds per sample / slot_seconds; JCT metrics come
  out in slots (``mean_jct``) and seconds (``mean_jct_s``).  Eq. (1)'s
  transfer time uses :func:`~dmlsched.model.speed.pdors.comm_slots`, which
  assumes 3600-s slots, so bandwidths are *stored* as b · slot_seconds / 3600
  (the transfer then lasts the right number of our slots).
* **GPUs → workers**: ``num_replicas`` / scale factor is the job's gang,
  ``ClusterJob.requested_workers`` (one GPU per worker), which ``fifo``,
  ``tiresias`` and ``srtf`` give it.  These jobs synchronise by
  **all-reduce, not PSs**; the PS-based model gets one PS per job (γ =
  workers, no GPU): Eq. (1)'s per-step transfer 2g/b for S = 1 equals ring
  all-reduce's bandwidth term 2g(W−1)/(W b) up to the factor (W−1)/W.
* **Pollux rows** train the application's epochs over its dataset (E =
  epochs, K = samples per epoch, F = ``batch_size``); τ = per-sample compute
  time (step − sync time) / local batch of the *single-GPU* measurement
  (placement ``1``) at the job's local batch (after accumulation, see
  :mod:`dmlsched.model.speed.measured`); g = 4 B × the model's published
  parameter count.  Pollux's own simulator counts *statistical* epochs
  (goodput), so large batches need more real epochs there: ``speed="goodput"``
  does too; the other speed models count plain samples.
* **Gavel lines keep Gavel's sizes**: a step is one worker's step of the
  per-worker batch b of the job type (:mod:`dmlsched.workloads.gavel_table`),
  so E = 1, K = steps × b, F = b × scale factor; τ = 1 / (b × the table's
  single-GPU steps per second) of the job type on ``gpu`` (V100 by default);
  g is the nearest Pollux application's (ResNet-18 → cifar10, ResNet-50 →
  imagenet, Transformer → bert, LM → deepspeech2, Recommendation → ncf, A3C →
  cifar10, CycleGAN → yolov3; only Eq. (1)'s transfer term uses it).  A line
  whose (job type, scale factor) is not in the table for ``gpu`` cannot run
  in Gavel's simulator (KeyError there); it is left out and counted in the
  workload's notes (trace 51b7ef: CycleGAN on 8 GPUs — 17 of its 18 jobs
  remain).
* **cluster**: ``machines`` (default 16) × 4 GPUs, 48 vCPU, 192 GB, 900 GB
  (the Pollux testbed's AWS g4dn.12xlarge); a worker needs 1 GPU, 8 vCPU,
  32 GB; the PS 1 vCPU, 4 GB.  Bandwidths: b^(e) = 50 Gbps (the instance's
  network), b^(i) = 126 Gbps (PCIe 3.0 ×16 between a node's GPUs).
* **horizon** (``slots`` default): last arrival + 2 × the sum of every
  job's run time alone on its gang (slower of Eq. (1) and the measured
  model) + 1; the engine stops as soon as nothing is left.
* utility: u ≡ 1 (peers optimise JCT; ``total_utility`` = completed jobs).

``speed="measured"`` (default) attaches the peer's own measurements as
``workload.speed``: :class:`~dmlsched.model.speed.measured.MeasuredSpeed`
(Pollux profiles, per-step time by placement) for ``pollux:``,
:class:`~dmlsched.model.speed.gavel.GavelSpeed` (Gavel's table) for
``gavel:``.  ``"goodput"`` (``pollux:`` only) adds Pollux's statistical
epochs: each job's work becomes the samples of the steps Pollux's goodput
model needs at the batch it trains with on its requested GPUs
(:mod:`dmlsched.model.speed.goodput`, the artifact's validation traces read
by :mod:`dmlsched.workloads.pollux_validation`), run at the measured
throughput; Pollux's 30-s restart after each re-allocation is not modelled.
``"eq1"`` leaves PD-ORS Eq. (1).  ``profiles`` is the Pollux profiles folder
or Gavel's ``simulation_throughputs.json`` (default: ``../shared/peers``).

Malformed lines raise :class:`InvalidInput` naming file, line and field (the
CLI exits 2).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.limits import MAX_SIZE
from dmlsched.model.cluster import Cluster, ClusterJob, ClusterWorkload, SpeedModel
from dmlsched.model.speed.gavel import GavelSpeed
from dmlsched.model.speed.goodput import Validation, pollux_batch, statistical_steps
from dmlsched.model.speed.measured import AppProfile, MeasuredSpeed, accumulation, step_time
from dmlsched.model.speed.pdors import job_rate
from dmlsched.model.utility import Sigmoid
from dmlsched.workloads.builders import WorkloadParams, register_workload
from dmlsched.workloads.gavel_table import (
    GAVEL_JOB_TYPES,
    GPU_TYPES,
    job_type_name,
    load_gavel_table,
    parse_job_type,
)
from dmlsched.workloads.pollux_validation import load_validations
from dmlsched.workloads.profiles import APPLICATIONS, load_profiles
from dmlsched.workloads.textio import read_text

__all__ = [
    "B_EXT_GBPS",
    "B_INT_GBPS",
    "POLLUX_COLUMNS",
    "PeerRow",
    "build_gavel_workload",
    "build_pollux_workload",
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
GAVEL_FIELDS = (7, 10)  # the older traces' form and Gavel's parse_trace form (README)


@dataclass(frozen=True)
class PeerRow:
    """One peer job before conversion.

    ``kind``: the Pollux application, or the Gavel job type (normalised
    spelling, e.g. ``"ResNet-50 (batch size 64)"``); ``application``: the
    Pollux application (for a Gavel line, its model's nearest); ``line``:
    where it was read (1-based; 0 when built in code).
    """

    time: float
    application: str
    workers: int
    batch: int  # global batch F
    epochs: int
    samples: int  # per epoch
    kind: str = ""
    line: int = 0


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
        raise InvalidInput("workload", str(path), "an existing Pollux CSV file (docs/data.md)")
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
            rows.append(PeerRow(time, app, workers, batch, a.epochs, a.samples, app, line))
    if not rows:
        raise InvalidInput("jobs", 0, ">= 1 row", str(path))
    return rows


def read_gavel(path: Path) -> list[PeerRow]:
    """Lines of a Gavel ``.trace`` in the 7- or 10-field form (file:line on error)."""
    path = Path(path)
    if not path.is_file():
        raise InvalidInput("workload", str(path), "an existing Gavel .trace file (docs/data.md)")
    rows = []
    with io.StringIO(read_text(path, "workload")) as f:  # UTF-8, BOM or not
        for line, text in enumerate(f, start=1):
            text = text.rstrip("\n").rstrip("\r")
            if not text.strip():
                continue
            w = _where(path, line)
            parts = text.split("\t")
            if len(parts) == 7:
                jtype, _cmd, _flag, needs, steps, t, scale = parts
            elif len(parts) == 10:
                jtype, _cmd, _wd, _flag, needs, steps, scale, prio, slo, t = parts
                _num(prio, "priority_weight", w, integer=False, minimum=0)
                _num(slo, "SLO", w, integer=False, minimum=-math.inf)
            else:
                raise InvalidInput(
                    "fields", len(parts), "7 or 10 tab-separated fields (Gavel README)", w
                )
            parsed = parse_job_type(jtype)
            if parsed is None:
                raise InvalidInput(
                    "job_type", jtype, " | ".join(f"{k} (batch size N)" for k in GAVEL_JOB_TYPES), w
                )
            model, per_worker = parsed
            if per_worker < 1:
                raise InvalidInput("batch size", per_worker, ">= 1", w)
            if needs.strip() not in ("0", "1"):
                raise InvalidInput("needs_data_dir", needs, "0 | 1", w)
            n_steps = int(_num(steps, "total_steps", w, integer=True, minimum=1))
            time = _num(t, "arrival_time", w, integer=False, minimum=0)
            workers = int(_num(scale, "scale_factor", w, integer=True, minimum=1, maximum=MAX_SIZE))
            app = GAVEL_JOB_TYPES[model].application
            kind = job_type_name(model, per_worker)
            # a step is one worker's step of b samples (gavel_table's docstring)
            rows.append(
                PeerRow(
                    time, app, workers, per_worker * workers, 1, n_steps * per_worker, kind, line
                )
            )
    if not rows:
        raise InvalidInput("jobs", 0, ">= 1 line", str(path))
    return rows


def per_sample_seconds(prof: AppProfile, workers: int, batch: int) -> float:
    """τ in seconds: single-GPU compute time per sample at the job's local batch."""
    atomic, _ = accumulation(batch, workers, prof.max_local_bsz)
    st, sy = step_time(prof, (1,), atomic)
    lb = min(max(atomic, prof.min_local_bsz), int(prof.placements[(1,)][0][-1]))
    return max(st - sy, 1e-12) / lb


def _job(i: int, row: PeerRow, slot_seconds: float, tau_s: float) -> ClusterJob:
    app = APPLICATIONS[row.application]
    scale = slot_seconds / 3600.0  # see "time" in the module docstring
    return ClusterJob(
        id=i,
        arrival=math.floor(row.time / slot_seconds + 1e-9),
        epochs=row.epochs,
        samples=row.samples,
        batch=row.batch,
        grad_mb=app.grad_mb,
        tau=tau_s / slot_seconds,
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


SPEEDS = ("measured", "goodput", "eq1")


def _check(slot_seconds: float, speed: str, machines: int | None, speeds=SPEEDS) -> int:
    if not slot_seconds > 0 or not math.isfinite(slot_seconds):
        raise InvalidInput("slot_seconds", slot_seconds, "> 0")
    if speed not in speeds:
        raise InvalidInput("speed", speed, " | ".join(speeds))
    H = machines or 16
    if H < 1:
        raise InvalidInput("machines", H, ">= 1")
    return H


def _assemble(
    jobs: list[ClusterJob],
    rows: list[PeerRow],
    *,
    source: str,
    slot_seconds: float,
    machines: int,
    slots: int | None,
    measured: SpeedModel,
    speed: str,
    notes: tuple[str, ...] = (),
) -> ClusterWorkload:
    if slots is None:
        serial = 0.0
        for j in jobs:
            m, w, s = _packed_counts(j.requested_workers or 1)
            rates = [job_rate(j, m, w, s)]
            rates.append(job_rate(j, list(range(len(w) + 1)), [*w, 0], [0] * len(w) + [1]))
            rates.append(measured.rate(j, m, w, s))
            serial += j.total_work / max(min(rates), 1e-12)
        slots = max(j.arrival for j in jobs) + math.ceil(2 * serial) + 1
    return ClusterWorkload(
        jobs=tuple(sorted(jobs, key=lambda j: (j.arrival, j.id))),
        cluster=Cluster.uniform(machines, MACHINE),
        horizon=int(slots),
        source=source,
        notes=(
            f"slot_seconds={slot_seconds:g}",
            f"speed={speed}",
            "peer jobs synchronise by all-reduce, modelled as one PS per job (γ = workers)",
            *notes,
        ),
        speed=None if speed == "eq1" else measured,
        slot_seconds=slot_seconds,
        kinds={j.id: r.kind or r.application for j, r in zip(jobs, rows, strict=True)},
    )


def build_pollux_workload(
    rows: list[PeerRow],
    *,
    source: str,
    slot_seconds: float = 60.0,
    machines: int | None = None,
    slots: int | None = None,
    profiles: Mapping[str, AppProfile] | None = None,
    speed: str = "measured",
    validations: Mapping[str, Validation] | None = None,
) -> ClusterWorkload:
    """Pollux rows → workload (see the module docstring).

    ``validations``: the goodput model's traces (default: the artifact's, read in place).
    """
    H = _check(slot_seconds, speed, machines)
    profs = dict(profiles) if profiles is not None else load_profiles()
    jobs = [
        _job(i, r, slot_seconds, per_sample_seconds(profs[r.application], r.workers, r.batch))
        for i, r in enumerate(rows)
    ]
    notes: tuple[str, ...] = ()
    if speed == "goodput":
        vals = dict(validations) if validations is not None else load_validations()
        jobs = [
            _goodput_work(j, r, profs[r.application], vals[r.application])
            for j, r in zip(jobs, rows, strict=True)
        ]
        notes = (
            "work: Pollux's statistical epochs at each job's batch (goodput model, "
            "dmlsched.model.speed.goodput); no restart penalty",
        )
    measured = MeasuredSpeed(
        profs, {j.id: r.application for j, r in zip(jobs, rows, strict=True)}, slot_seconds
    )
    return _assemble(
        jobs,
        rows,
        source=source,
        slot_seconds=slot_seconds,
        machines=H,
        slots=slots,
        measured=measured,
        speed=speed,
        notes=notes,
    )


def _goodput_work(job: ClusterJob, row: PeerRow, prof: AppProfile, v: Validation) -> ClusterJob:
    """The job with E·K = the samples of its statistical steps (goodput model, (†)) at
    the batch Pollux trains with on the requested GPUs; E = the epochs trained."""
    batch = pollux_batch(row.batch, row.workers, prof.max_local_bsz, v)
    steps = statistical_steps(v, batch)
    atomic, accum = accumulation(row.batch, row.workers, prof.max_local_bsz)
    work = steps * row.workers * atomic * (accum + 1)  # samples of a step, as MeasuredSpeed
    return replace(job, epochs=v.max_epochs, samples=max(1, round(work / v.max_epochs)))


def build_gavel_workload(
    rows: list[PeerRow],
    *,
    source: str,
    slot_seconds: float = 60.0,
    machines: int | None = None,
    slots: int | None = None,
    table: Mapping[tuple[str, int], float] | None = None,
    gpu: str = "v100",
    speed: str = "measured",
) -> ClusterWorkload:
    """Gavel lines → workload at Gavel's sizes (see the module docstring).

    ``table``: (job type, scale) → steps/s on ``gpu`` (default: Gavel's file).
    """
    H = _check(slot_seconds, speed, machines, ("measured", "eq1"))
    if gpu not in GPU_TYPES:
        raise InvalidInput("gpu", gpu, " | ".join(GPU_TYPES))
    tab = dict(table) if table is not None else load_gavel_table(gpu=gpu)
    known = [(r.kind, r.workers) in tab and (r.kind, 1) in tab for r in rows]
    kept = [r for r, k in zip(rows, known, strict=True) if k]
    left = [r for r, k in zip(rows, known, strict=True) if not k]
    if not kept:
        raise InvalidInput(
            "jobs", 0, f">= 1 line whose (job type, scale) is in Gavel's {gpu} table"
        )
    jobs = []
    for i, r in enumerate(kept):
        per_worker = r.batch // r.workers
        jobs.append(_job(i, r, slot_seconds, 1.0 / (tab[(r.kind, 1)] * per_worker)))
    measured = GavelSpeed(
        tab,
        {j.id: (r.kind, r.batch // r.workers) for j, r in zip(jobs, kept, strict=True)},
        slot_seconds,
    )
    notes: tuple[str, ...] = (f"gpu={gpu}",)
    if left:
        where = ", ".join(f"line {r.line} ({r.kind} on {r.workers} GPUs)" for r in left)
        notes += (f"left out {len(left)} job(s) not in Gavel's {gpu} table: {where}",)
    return _assemble(
        jobs,
        kept,
        source=source,
        slot_seconds=slot_seconds,
        machines=H,
        slots=slots,
        measured=measured,
        speed=speed,
        notes=notes,
    )


def _options(p: WorkloadParams) -> dict:
    return dict(
        slot_seconds=float(p.extra.get("slot_seconds") or 60.0),
        machines=p.machines,
        slots=p.slots,
        speed=p.extra.get("speed") or "measured",
    )


def load_pollux(path: Path, profiles_dir: Path | None = None, **kw: Any) -> ClusterWorkload:
    """``pollux:PATH`` → workload; keywords as :func:`build_pollux_workload`."""
    if profiles_dir is not None:
        kw["profiles"] = load_profiles(Path(profiles_dir))
    return build_pollux_workload(
        read_pollux(Path(path)),
        source=f"pollux:{Path(path).name}",
        **kw,
    )


def load_gavel(path: Path, table_path: Path | None = None, **kw: Any) -> ClusterWorkload:
    """``gavel:PATH`` → workload; keywords as :func:`build_gavel_workload`."""
    if table_path is not None:
        kw["table"] = load_gavel_table(Path(table_path), str(kw.get("gpu", "v100")))
    return build_gavel_workload(
        read_gavel(Path(path)),
        source=f"gavel:{Path(path).name}",
        **kw,
    )


@register_workload("cluster", "pollux:")
def _pollux(p: WorkloadParams, rng: np.random.Generator) -> ClusterWorkload:
    if p.trace is None:
        raise InvalidInput("workload", "pollux:", "pollux:PATH")
    prof = p.extra.get("profiles")
    return load_pollux(p.trace, Path(prof) if prof else None, **_options(p))


@register_workload("cluster", "gavel:")
def _gavel(p: WorkloadParams, rng: np.random.Generator) -> ClusterWorkload:
    if p.trace is None:
        raise InvalidInput("workload", "gavel:", "gavel:PATH")
    prof = p.extra.get("profiles")
    return load_gavel(
        p.trace, Path(prof) if prof else None, gpu=p.extra.get("gpu") or "v100", **_options(p)
    )
