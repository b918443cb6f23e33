"""Export a ``cluster`` workload to a peer simulator's format (Pollux CSV, Gavel .trace).

So Pollux/Sia and Gavel can replay our jobs; :mod:`dmlsched.workloads.peers`
reads both back.  Mapping (inverse of the import where one exists):

* **what the job trains**: the workload's ``kinds`` (a peer import's Pollux
  application or Gavel job type); for a job without one (synthetic), the
  profiled application nearest to it — least |ln g − ln g_a| + |ln τ − ln τ_a|
  (τ in seconds per sample at the job's local batch, the import's rule; this
  needs the Pollux profiles);
* **time** = arrival slot × ``workload.slot_seconds`` (a job re-imported with
  the same slot length lands in the same slot);
* **GPUs** = ``requested_workers``, else min(F, 4) — one machine's GPUs, the
  documented default for jobs without a gang.

**Pollux** rows are written *inside the application's domain*
(:mod:`dmlsched.workloads.pollux_domain`): a row outside it is moved to the
nearest row inside (fewer GPUs if even the largest batch cannot feed them,
then the batch clamped) and counted in :attr:`ExportReport.clamped` — e.g. a
bert job on 4 GPUs with batch 11 becomes batch 16.  Pollux rows carry no
work: the application's epochs × dataset is implied, so a job's own E·K is
lost unless it came from a Pollux row.

**Gavel** lines use the 10-field form Gavel's ``parse_trace`` reads (job type,
command, working directory, steps flag, needs-data flag, total steps, scale
factor, priority weight 1, SLO −1, arrival seconds; README in
``../shared/peers/gavel``) and only job types and scale factors of Gavel's
table (:data:`~dmlsched.workloads.gavel_table.GAVEL_JOB_TYPES`): the model
is the application's (cifar10 → ResNet-18, imagenet → ResNet-50, bert →
Transformer, deepspeech2 → LM, ncf → Recommendation, yolov3 → CycleGAN);
the scale factor the largest measured one ≤ the job's GPUs; the per-worker
batch b the job's own (a Gavel job) or the measured one nearest ⌈F/W⌉ in
log scale; steps = ⌈E·K / b⌉ (a step is one worker's step of b samples).
The command is a placeholder (Gavel's simulator does not run it).

Export → import round-trips the job list for workloads imported from the
same format (tested as a property).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import ClusterJob, ClusterWorkload
from dmlsched.model.speed.measured import AppProfile
from dmlsched.workloads.gavel_table import GAVEL_JOB_TYPES, job_type_name, parse_job_type
from dmlsched.workloads.peers import POLLUX_COLUMNS, per_sample_seconds
from dmlsched.workloads.pollux_domain import clamp_to_domain
from dmlsched.workloads.profiles import APPLICATIONS, load_profiles

__all__ = ["FORMATS", "ExportReport", "export_workload", "gang_of", "nearest_application"]

FORMATS = ("pollux", "gavel")
_APP_TO_GAVEL = {
    "cifar10": "ResNet-18",
    "imagenet": "ResNet-50",
    "bert": "Transformer",
    "deepspeech2": "LM",
    "ncf": "Recommendation",
    "yolov3": "CycleGAN",
}


@dataclass(frozen=True)
class ExportReport:
    """What :func:`export_workload` wrote: jobs, and rows moved into the peer's domain."""

    jobs: int
    clamped: int  # Pollux rows moved into the domain; Gavel jobs given fewer GPUs


def gang_of(job: ClusterJob) -> int:
    return job.requested_workers or min(job.batch, 4)


def nearest_application(
    job: ClusterJob, slot_seconds: float, profiles: Mapping[str, AppProfile]
) -> str:
    """The profiled application closest in (ln g, ln τ) — see the module docstring."""
    tau_s = job.tau * slot_seconds
    w = gang_of(job)
    best, best_d = "", math.inf
    for name in sorted(APPLICATIONS):
        app = APPLICATIONS[name]
        ta = per_sample_seconds(profiles[name], w, job.batch)
        d = abs(math.log(max(job.grad_mb, 1e-9) / app.grad_mb)) + abs(math.log(tau_s / ta))
        if d < best_d - 1e-12:
            best, best_d = name, d
    return best


def _seconds(slot: int, slot_seconds: float) -> str:
    t = slot * slot_seconds
    return str(int(t)) if float(t).is_integer() else repr(float(t))


class _Kinds:
    """What each job trains: its recorded kind, else the nearest application."""

    def __init__(
        self, workload: ClusterWorkload, profiles: Mapping[str, AppProfile] | None
    ) -> None:
        self.workload = workload
        self.profiles = profiles

    def app(self, job: ClusterJob) -> str:
        kind = self.workload.kinds.get(job.id, "")
        if kind in APPLICATIONS:
            return kind
        parsed = parse_job_type(kind) if kind else None
        if parsed is not None:
            return GAVEL_JOB_TYPES[parsed[0]].application
        if self.profiles is None:
            self.profiles = load_profiles()
        return nearest_application(job, self.workload.slot_seconds, self.profiles)

    def gavel(self, job: ClusterJob) -> tuple[str, int | None]:
        """(Gavel model, the job's own per-worker batch if it is a Gavel job)."""
        kind = self.workload.kinds.get(job.id, "")
        parsed = parse_job_type(kind) if kind and kind not in APPLICATIONS else None
        if parsed is not None:
            return parsed
        return _APP_TO_GAVEL[self.app(job)], None


def _gavel_batch(model: str, own: int | None, job: ClusterJob, workers: int) -> int:
    m = GAVEL_JOB_TYPES[model]
    if m.batches is None:
        return m.default_batch
    if own is not None and own in m.batches:
        return own
    want = max(1.0, job.batch / workers)
    return min(m.batches, key=lambda b: (abs(math.log(b / want)), b))


def _pollux_rows(jobs: list[ClusterJob], kinds: _Kinds, secs: float) -> tuple[list, int]:
    rows, clamped = [], 0
    for j in jobs:
        app = kinds.app(j)
        r, b = clamp_to_domain(app, gang_of(j), max(j.batch, 1))
        clamped += (r, b) != (gang_of(j), j.batch)
        rows.append([f"{app}-{j.id}", _seconds(j.arrival, secs), app, r, b])
    return rows, clamped


def _gavel_lines(jobs: list[ClusterJob], kinds: _Kinds, secs: float) -> tuple[list[str], int]:
    lines, clamped = [], 0
    for j in jobs:
        model, own = kinds.gavel(j)
        m = GAVEL_JOB_TYPES[model]
        w = gang_of(j)
        scale = max(s for s in m.scales if s <= max(w, 1))
        clamped += scale != w
        b = _gavel_batch(model, own, j, scale)
        steps = max(1, math.ceil(j.total_work / b - 1e-9))
        jtype = job_type_name(model, b)
        lines.append(
            "\t".join(
                [
                    jtype,
                    f"dmlsched-export {model} --batch_size {b}",
                    m.workdir,
                    m.flag,
                    "0" if model == "A3C" else "1",
                    str(steps),
                    str(scale),
                    "1",
                    "-1",
                    f"{j.arrival * secs:.6f}",
                ]
            )
        )
    return lines, clamped


def export_workload(
    workload: ClusterWorkload,
    fmt: str,
    out: Path,
    profiles: Mapping[str, AppProfile] | None = None,
) -> ExportReport:
    """Write ``workload`` as ``fmt`` to ``out`` (jobs in id order, so a re-import
    numbers them the same way).  ``profiles``: the Pollux profiles, needed only
    for jobs without a recorded kind (default: ``../shared``)."""
    if fmt not in FORMATS:
        raise InvalidInput("format", fmt, " | ".join(FORMATS))
    jobs = sorted(workload.jobs, key=lambda j: j.id)
    kinds = _Kinds(workload, dict(profiles) if profiles is not None else None)
    secs = workload.slot_seconds
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "pollux":
        rows, clamped = _pollux_rows(jobs, kinds, secs)
        with out.open("w", newline="") as f:
            wr = csv.writer(f, lineterminator="\n")
            wr.writerow(POLLUX_COLUMNS)
            wr.writerows(rows)
    else:
        lines, clamped = _gavel_lines(jobs, kinds, secs)
        out.write_text("\n".join(lines) + "\n")
    return ExportReport(len(jobs), clamped)
