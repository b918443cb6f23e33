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
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from dmlsched.errors import InvalidInput, short
from dmlsched.schedulers.plugins import PLUGIN_HELP
from dmlsched.workloads.registry import MAX_SIZE

__all__ = [
    "MAX_SEED",
    "MAX_SEEDS",
    "MAX_SEED_BASE",
    "MAX_WORKERS",
    "Jobs",
    "Machines",
    "Nodes",
    "Plugins",
    "Seed",
    "Seeds",
    "SkipBadRows",
    "Slots",
    "Wait",
    "Workers",
    "finite_positive",
    "int_range",
    "json_safe",
    "json_text",
    "writable_file",
]

MAX_SEEDS = 10_000  # seeds 0..N-1 of a sweep
MAX_SEED_BASE = 1_000_000_000  # the first seed of a sweep (--seed-base, --held-out)
MAX_SEED = 2**63 - 1  # one run's seed (numpy's SeedSequence takes any int >= 0)
MAX_WORKERS = 1024


def finite_positive(text: str | float | None) -> float | None:
    """Option parser: a finite number > 0 (a float range would let inf and nan pass)."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise typer.BadParameter(f"{short(text)} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"{short(text)} is not a finite number > 0")
    return value


def int_range(lo: int, hi: int) -> Callable[[str | int | None], int | None]:
    """Option parser: an integer in ``lo..hi``; every message shows the value given."""

    def parse(text: str | int | None) -> int | None:
        if text is None:  # the option was not given: its default stands
            return None
        try:
            value = int(text)
        except ValueError:
            raise typer.BadParameter(f"{short(text)} is not an integer") from None
        if not lo <= value <= hi:
            raise typer.BadParameter(f"{short(text)} is not an integer in {lo}..{hi}")
        return value

    return parse


def _size(help: str) -> Any:
    return typer.Option(parser=int_range(1, MAX_SIZE), help=f"{help} (1..{MAX_SIZE:,}).")


Jobs = Annotated[int | None, _size("Number of jobs; default: the workload's")]
Machines = Annotated[int | None, _size("Machines / servers / DCs / capacity units")]
Slots = Annotated[int | None, _size("Time slots T")]
Seeds = Annotated[
    int,
    typer.Option(
        parser=int_range(1, MAX_SEEDS), help=f"Number of seeds 0..N-1 (1..{MAX_SEEDS:,})."
    ),
]
Seed = Annotated[
    int, typer.Option(parser=int_range(0, MAX_SEED), help="Seed of the run (0..2^63-1).")
]
Workers = Annotated[
    int | None,
    typer.Option(
        parser=int_range(1, MAX_WORKERS),
        help=f"Process-pool size (default: all cores; 1..{MAX_WORKERS}).",
    ),
]
SkipBadRows = Annotated[
    bool, typer.Option(help="Skip malformed trace rows and count them in the notes.")
]
Nodes = Annotated[
    Path | None,
    typer.Option(help="Alibaba node list (file or folder) when not beside the pod list."),
]
Plugins = Annotated[list[str] | None, typer.Option("--plugin", help=PLUGIN_HELP)]
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
