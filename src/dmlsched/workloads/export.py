"""Export a ``cluster`` workload to a peer simulator's format (Pollux CSV, Gavel .trace).

So Pollux/Sia and Gavel can replay our jobs; :mod:`dmlsched.workloads.peers`
reads both back.  Mapping (inverse of the import where one exists):

* **application**: the profiled application nearest to the job — least
  |ln g − ln g_a| + |ln τ − ln τ_a| (τ in seconds per sample: ``tau`` ×
  ``slot_seconds``; τ_a at the job's local batch, the import's rule), so an
  imported job maps back to its own application;
* **time** = arrival slot × ``slot_seconds`` (a job re-imported with the same
  slot length lands in the same slot);
* **GPUs** (``num_replicas`` / scale factor) = ``requested_workers``, else
  min(F, 4) — one machine's GPUs, documented default for jobs without a gang;
* **Pollux** ``batch_size`` = F.  Pollux rows carry no work: the
  application's epochs × dataset is implied, so a job's own E·K is lost
  unless it came from a Pollux row;
* **Gavel**: job type "<model> (batch size b)" with b = ⌈F / W⌉ per worker and
  the application's Gavel model (cifar10 → ResNet-18, imagenet → ResNet-50,
  bert → Transformer, deepspeech2 → LM, ncf → Recommendation, yolov3 →
  CycleGAN); steps = ⌈E·K / (b·W)⌉; the command field is a placeholder
  (Gavel's simulator does not run it).

Export → import round-trips the job list for workloads imported from the
same format (tested as a property).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import ClusterJob, ClusterWorkload
from dmlsched.model.speed.measured import AppProfile
from dmlsched.workloads.peers import GAVEL_MODELS, POLLUX_COLUMNS, per_sample_seconds
from dmlsched.workloads.profiles import APPLICATIONS, load_profiles

__all__ = ["FORMATS", "export_workload", "gang_of", "nearest_application", "slot_seconds_of"]

FORMATS = ("pollux", "gavel")
_APP_TO_GAVEL = {
    "cifar10": "ResNet-18",
    "imagenet": "ResNet-50",
    "bert": "Transformer",
    "deepspeech2": "LM",
    "ncf": "Recommendation",
    "yolov3": "CycleGAN",
}


def slot_seconds_of(workload: ClusterWorkload, default: float) -> float:
    """The slot length a peer import recorded in ``notes``, else ``default``."""
    for n in workload.notes:
        if n.startswith("slot_seconds="):
            return float(n.split("=", 1)[1])
    return default


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


def export_workload(
    workload: ClusterWorkload,
    fmt: str,
    out: Path,
    slot_seconds: float,
    profiles: Mapping[str, AppProfile] | None = None,
) -> int:
    """Write ``workload`` as ``fmt`` to ``out``; returns the number of jobs written.

    Jobs are written in id order so a re-import numbers them the same way.
    """
    if fmt not in FORMATS:
        raise InvalidInput("format", fmt, " | ".join(FORMATS))
    if not slot_seconds > 0:
        raise InvalidInput("slot_seconds", slot_seconds, "> 0")
    profs = dict(profiles) if profiles is not None else load_profiles()
    jobs = sorted(workload.jobs, key=lambda j: j.id)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "pollux":
        with out.open("w", newline="") as f:
            wr = csv.writer(f, lineterminator="\n")
            wr.writerow(POLLUX_COLUMNS)
            for j in jobs:
                app = nearest_application(j, slot_seconds, profs)
                w = gang_of(j)
                wr.writerow(
                    [f"{app}-{j.id}", _seconds(j.arrival, slot_seconds), app, w, max(j.batch, w)]
                )
    else:
        lines = []
        for j in jobs:
            app = nearest_application(j, slot_seconds, profs)
            model = _APP_TO_GAVEL[app]
            w = gang_of(j)
            b = max(1, math.ceil(j.batch / w - 1e-9))
            steps = max(1, math.ceil(j.total_work / (b * w) - 1e-9))
            flag = GAVEL_MODELS[model][2]
            lines.append(
                "\t".join(
                    [
                        f"{model} (batch size {b})",
                        f"dmlsched-export {model} %s --batch_size {b}",
                        flag,
                        "1",
                        str(steps),
                        f"{j.arrival * slot_seconds:.6f}",
                        str(w),
                    ]
                )
            )
        out.write_text("\n".join(lines) + "\n")
    return len(jobs)
