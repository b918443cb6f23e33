"""The Pollux artifact's validation traces (read in place) for the goodput work model.

Files: ``<dir>/<application>/validation-<M>.csv`` with the header
``progress,iteration,metric,grad_sqr,grad_var`` — one file per batch size M
the authors trained, one row per epoch (``../shared/peers/pollux-osdi21/
simulator/traces``; Apache-2.0, petuum/adaptdl ``osdi21-artifact``).  Only
``progress``, ``grad_sqr`` and ``grad_var`` are used
(:mod:`dmlsched.model.speed.goodput`).  Malformed lines raise
:class:`InvalidInput` naming file, line and field.

Epochs: the application's ``max_epochs`` (:data:`dmlsched.workloads.profiles.
APPLICATIONS`, the simulator's values); every file must hold at least that many rows.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.speed.goodput import Validation
from dmlsched.workloads.profiles import APPLICATIONS

__all__ = ["default_validation_dir", "load_validation", "load_validations"]

_COLUMNS = ("progress", "iteration", "metric", "grad_sqr", "grad_var")
_FILE = re.compile(r"validation-(\d+)\.csv$")


def default_validation_dir() -> Path | None:
    """``<repo>/../shared/peers/pollux-osdi21/simulator/traces`` if present."""
    for parent in Path(__file__).resolve().parents:
        cand = parent / "shared" / "peers" / "pollux-osdi21" / "simulator" / "traces"
        if cand.is_dir():
            return cand
    return None


def _read(path: Path, epochs: int) -> np.ndarray:
    """(progress, grad_sqr, grad_var) × the first ``epochs`` rows."""
    rows = []
    with path.open(newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None or tuple(h.strip() for h in header) != _COLUMNS:
            raise InvalidInput("header", header, ",".join(_COLUMNS), f"{path}:1")
        for line, rec in enumerate(reader, start=2):
            if not rec:
                continue
            if len(rec) != len(_COLUMNS):
                raise InvalidInput("columns", len(rec), f"{len(_COLUMNS)} values", f"{path}:{line}")
            vals = []
            for name in ("progress", "grad_sqr", "grad_var"):
                text = rec[_COLUMNS.index(name)]
                try:
                    x = float(text)
                except ValueError:
                    raise InvalidInput(name, text, "a number", f"{path}:{line}") from None
                if not np.isfinite(x) or x < 0:
                    raise InvalidInput(name, text, "a finite number >= 0", f"{path}:{line}")
                vals.append(x)
            rows.append(vals)
    if len(rows) < epochs:
        raise InvalidInput("rows", len(rows), f">= {epochs} epochs", str(path))
    return np.array(rows[:epochs], dtype=float).T


def load_validation(directory: Path, name: str) -> Validation:
    """One application's traces from ``directory/name``."""
    if name not in APPLICATIONS:
        raise InvalidInput("application", name, " | ".join(APPLICATIONS))
    epochs = APPLICATIONS[name].epochs
    files = {}
    for f in sorted((directory / name).glob("validation-*.csv")):
        m = _FILE.search(f.name)
        if m:
            files[int(m.group(1))] = f
    if not files:
        raise InvalidInput("validation", str(directory / name), "validation-<M>.csv files")
    sizes = tuple(sorted(files))
    data = np.stack([_read(files[m], epochs) for m in sizes])  # sizes × 3 × epochs
    return Validation(name, sizes, data[:, 0], data[:, 1], data[:, 2], epochs)


_CACHE: dict[str, dict[str, Validation]] = {}


def load_validations(directory: Path | None = None) -> dict[str, Validation]:
    """Every application's traces (default: shared), parsed once per process and folder."""
    d = directory or default_validation_dir()
    if d is None or not Path(d).is_dir():
        raise InvalidInput(
            "validation",
            str(d) if d else "(none found)",
            "the Pollux validation traces: ../shared/peers/pollux-osdi21/simulator/traces",
        )
    key = str(Path(d).resolve())
    if key not in _CACHE:
        _CACHE[key] = {name: load_validation(Path(d), name) for name in APPLICATIONS}
    return dict(_CACHE[key])
