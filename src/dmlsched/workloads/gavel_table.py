"""Gavel's throughput table (read in place) and the job types it measures.

The file is Gavel's ``scheduler/simulation_throughputs.json`` (OSDI'20,
``stanford-futuredata/gavel`` commit ``c4fa400``, MIT; read from
``../shared/peers/gavel/simulation_throughputs.json``, see the README there):
per GPU type (``k80``, ``p100``, ``v100`` and ``*_unconsolidated``), keyed by
the string ``"('JOB TYPE', scale_factor)"``, the steps per second of the job
alone (key ``"null"``) and paired with another job (space sharing, unused
here).  :func:`load_gavel_table` keeps the ``"null"`` entries of one GPU type.

Gavel's simulator reads the table of the worker type the job runs on
(``scheduler.py``, ``_read_throughputs_for_job_type``: ``oracle_throughputs
[worker_type][job_type_key]['null']``) whatever the job's servers, so the
``*_unconsolidated`` tables are never consulted there; :data:`GPU_TYPES`
lists the three worker types.  A zero entry (K80, ResNet-50 at batch 128 on
2–8 GPUs) means the job cannot run; it is dropped like a missing one.

A Gavel "step" is one worker's step of its per-worker batch: Gavel hands each
of a job's ``scale_factor`` workers ``steps // scale_factor`` of the round's
steps (``scheduler.py``, ``simulate``) and its throughputs grow with the scale
factor accordingly (ResNet-18 at batch 32 on V100: 29.95 steps/s on 1 GPU,
340.0 on 8).  So a job of ``total_steps`` steps trains ``total_steps × b``
samples, b the per-worker batch of its type.

:data:`GAVEL_JOB_TYPES` is the grid of job types in the table — per model, the
per-worker batch sizes and the scale factors measured (every combination is
present for every GPU type) — as data, so an export can stay inside it without
the file; a test checks it against the file when ``../shared`` is present.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from dmlsched.errors import InvalidInput

__all__ = [
    "GAVEL_JOB_TYPES",
    "GPU_TYPES",
    "GavelModel",
    "default_gavel_table",
    "job_type_name",
    "load_gavel_table",
    "parse_job_type",
]

GPU_TYPES = ("v100", "p100", "k80")


@dataclass(frozen=True)
class GavelModel:
    """One Gavel model (Gavel's ``job_table.py`` at c4fa400 and the table's keys).

    * ``batches``: per-worker batch sizes in its job types (None: its type
      names no batch); ``scales``: scale factors measured;
    * ``default_batch``: per-worker batch of a type without one;
    * ``flag``, ``workdir``: its steps flag and working directory;
    * ``application``: the nearest Pollux-profiled application (same or
      similar model), used only for the gradient size g of Eq. (1) and to
      export to Pollux's format.
    """

    batches: tuple[int, ...] | None
    scales: tuple[int, ...]
    default_batch: int
    flag: str
    workdir: str
    application: str


# Every model × batch × scale below is a key of simulation_throughputs.json at
# c4fa400 (a test checks it against the file).  A3C's command runs 4 worker
# processes (``--workers 4``) and CycleGAN's sets no batch (CycleGAN's usual
# 1): their "batch" only scales the sample count, never a job's time.
GAVEL_JOB_TYPES: dict[str, GavelModel] = {
    "ResNet-18": GavelModel(
        (16, 32, 64, 128, 256),
        (1, 2, 4, 8),
        32,
        "--num_steps",
        "image_classification/cifar10",
        "cifar10",
    ),
    "ResNet-50": GavelModel(
        (16, 32, 64, 128),
        (1, 2, 4, 8),
        32,
        "--num_minibatches",
        "image_classification/imagenet",
        "imagenet",
    ),
    "Transformer": GavelModel(
        (16, 32, 64, 128, 256), (1, 2, 4, 8), 64, "-step", "translation", "bert"
    ),
    "LM": GavelModel(
        (5, 10, 20, 40, 80), (1, 2, 4, 8), 20, "--steps", "language_modeling", "deepspeech2"
    ),
    "Recommendation": GavelModel(
        (512, 1024, 2048, 4096, 8192), (1,), 2048, "-n", "recommendation", "ncf"
    ),
    "A3C": GavelModel(None, (1,), 4, "--max-steps", "rl", "cifar10"),
    "CycleGAN": GavelModel(None, (1,), 1, "--n_steps", "cyclegan", "yolov3"),
}
_TYPE = re.compile(r"^(?P<model>[^()]+?)(?: \(batch size (?P<bs>\d+)\))?$")


def parse_job_type(job_type: str) -> tuple[str, int] | None:
    """(model, per-worker batch) of a Gavel job type string, None if not one."""
    m = _TYPE.match(job_type.strip())
    if not m or m.group("model") not in GAVEL_JOB_TYPES:
        return None
    model = m.group("model")
    bs = m.group("bs")
    if bs is None:
        return model, GAVEL_JOB_TYPES[model].default_batch
    return model, int(bs)


def job_type_name(model: str, batch: int) -> str:
    """Gavel's spelling: ``"Model (batch size b)"``, or the bare model without batches."""
    if GAVEL_JOB_TYPES[model].batches is None:
        return model
    return f"{model} (batch size {batch})"


def default_gavel_table() -> Path | None:
    """``<repo>/../shared/peers/gavel/simulation_throughputs.json`` if present."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        cand = parent / "shared" / "peers" / "gavel" / "simulation_throughputs.json"
        if cand.is_file():
            return cand
    return None


_CACHE: dict[tuple, dict[tuple[str, int], float]] = {}


def load_gavel_table(path: Path | None = None, gpu: str = "v100") -> dict[tuple[str, int], float]:
    """(job type, scale factor) → steps per second alone on ``gpu`` GPUs (> 0 only).

    Parsed once per process, file (path, size, mtime) and GPU type.
    """
    if gpu not in GPU_TYPES:
        raise InvalidInput("gpu", gpu, " | ".join(GPU_TYPES))
    p = path or default_gavel_table()
    if p is None or not Path(p).is_file():
        raise InvalidInput(
            "profiles",
            str(p) if p else "(none found)",
            "Gavel's simulation_throughputs.json in ../shared/peers/gavel beside the "
            "checkout — docs/data.md says where to get it — or --profiles PATH",
        )
    p = Path(p).resolve()
    st = p.stat()
    key = (str(p), st.st_size, st.st_mtime_ns, gpu)
    hit = _CACHE.get(key)
    if hit is None:
        try:
            raw = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            raise InvalidInput("profiles", str(p), f"a JSON file ({e})") from None
        if not isinstance(raw, dict) or not isinstance(raw.get(gpu), dict):
            raise InvalidInput("profiles", str(p), f"Gavel's table with a {gpu!r} entry")
        hit = {}
        for k, v in raw[gpu].items():
            try:
                jt, scale = ast.literal_eval(k)
                thr = float(v["null"])
            except (ValueError, SyntaxError, TypeError, KeyError):
                raise InvalidInput(
                    "job type key", k, "('JOB TYPE', scale) → {'null': x}", str(p)
                ) from None
            if math.isfinite(thr) and thr > 0:
                hit[(str(jt), int(scale))] = thr
        _CACHE[key] = hit
    return dict(hit)
