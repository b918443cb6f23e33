"""Shared CLI options and input checks: every flag's domain is declared once.

A value outside its domain is refused by the parser (exit 2, one line naming
the flag and the value); ``0`` never stands for "the default" — a flag left
out is the default.  Commands import the ``Annotated`` aliases below instead
of re-declaring ``--jobs`` & co., and call :func:`writable_file` /
:func:`json_text` for outputs.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from dmlsched.errors import InvalidInput
from dmlsched.workloads.registry import MAX_SIZE

__all__ = [
    "MAX_SEED",
    "MAX_SEEDS",
    "MAX_WORKERS",
    "Jobs",
    "Machines",
    "Nodes",
    "Seed",
    "Seeds",
    "SkipBadRows",
    "SlotSeconds",
    "Slots",
    "Wait",
    "Workers",
    "finite_positive",
    "json_safe",
    "json_text",
    "writable_file",
]

MAX_SEEDS = 10_000  # seeds 0..N-1 of a sweep
MAX_SEED = 2**63 - 1  # one run's seed (numpy's SeedSequence takes any int >= 0)
MAX_WORKERS = 1024


def finite_positive(value: float | None) -> float | None:
    """Option callback: a finite number > 0 (click's FloatRange lets inf and nan pass)."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"{value!r} is not a finite number > 0")
    return value


Jobs = Annotated[
    int | None, typer.Option(min=1, max=MAX_SIZE, help="Number of jobs (default: the workload's).")
]
Machines = Annotated[
    int | None,
    typer.Option(min=1, max=MAX_SIZE, help="Machines / servers / DCs / capacity units."),
]
Slots = Annotated[int | None, typer.Option(min=1, max=MAX_SIZE, help="Time slots T.")]
Seeds = Annotated[int, typer.Option(min=1, max=MAX_SEEDS, help="Number of seeds (0..N-1).")]
Seed = Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the run.")]
Workers = Annotated[
    int | None,
    typer.Option(min=1, max=MAX_WORKERS, help="Process-pool size (default: all cores)."),
]
SlotSeconds = Annotated[
    float | None,
    typer.Option(
        callback=finite_positive,
        help="Slot length in seconds for pollux:/gavel: workloads (default 60).",
    ),
]
SkipBadRows = Annotated[
    bool, typer.Option(help="Skip malformed trace rows and count them in the notes.")
]
Nodes = Annotated[
    Path | None,
    typer.Option(help="Alibaba node list (file or folder) when not beside the pod list."),
]
Wait = Annotated[
    bool,
    typer.Option(help="If another run is writing to --out, wait for it instead of refusing."),
]


def writable_file(path: Path, field: str) -> Path:
    """``path`` can be written as a file (checked before any work is done)."""
    if path.is_dir():
        raise InvalidInput(field, str(path), "a file path (this is a folder)")
    parent = path.parent
    if not parent.is_dir():
        raise InvalidInput(field, str(path), "a file in an existing folder")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise InvalidInput(field, str(path), "a writable file")
    return path


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``None`` (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def json_text(value: Any, **kw: Any) -> str:
    """Valid JSON (RFC 8259): NaN and infinities become ``null``."""
    return json.dumps(json_safe(value), allow_nan=False, **kw)
