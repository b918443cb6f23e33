"""``curves.csv``: what a single number per run cannot show — each run's utilization over
time and its jobs' completion times — for the figures drawn beside ``results.csv``.

A cell function may return a :class:`CellResult` (its metrics and its curves)
instead of a plain metrics dict; the runner then appends the curves here, in
one write, *before* the cell's rows go to ``results.csv``, so every cell in
``results.csv`` has its curves.  Curves of a cell that a kill kept out of
``results.csv`` are ignored when read (:func:`read_curves` takes the cells
to keep) and dropped when the run resumes (:func:`prune_curves`), before the
cell is computed again.  Once the sweep is complete the file is rewritten
sorted, like ``results.csv``, so the same command gives the same bytes.

Columns::

    experiment,setting,scheduler,param,value,seed,curve,x,y

Curves (from :func:`run_curves`; each at most :data:`MAX_POINTS` points, so a
replay of 10^5 slots or jobs stays small):

* ``utilization`` — x = slot (the first of its bin), y = the mean share of
  capacity in use over the bin's slots and every resource;
* ``jct_cdf`` — x = job completion time (slots), y = the share of *all* the
  run's jobs finished within x (unfinished jobs never count, so the curve ends
  at the share completed).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.results import canonical_key

__all__ = [
    "CURVE_COLUMNS",
    "MAX_POINTS",
    "CellResult",
    "Curve",
    "append_curves",
    "prune_curves",
    "read_curves",
    "run_curves",
    "sort_curves",
]

CURVE_COLUMNS = ("experiment", "setting", "scheduler", "param", "value", "seed", "curve", "x", "y")
MAX_POINTS = 500

Curve = tuple[tuple[float, float], ...]  # (x, y) points in order


@dataclass(frozen=True)
class CellResult:
    """A cell's metrics (to ``results.csv``) and curves by name (to ``curves.csv``)."""

    metrics: dict[str, float]
    curves: Mapping[str, Curve] = field(default_factory=dict)


def run_curves(series: Mapping[str, Any]) -> dict[str, Curve]:
    """The curves of one run from its engine's ``RunResult.series`` (module docstring):
    ``utilization`` from a per-slot series (one value, or one per resource), and
    ``jct_cdf`` from per-job completion times (NaN: unfinished)."""
    out: dict[str, Curve] = {}
    util = series.get("utilization")
    if util is not None and np.size(util):
        u = np.asarray(util, dtype=float)
        per_slot = u.mean(axis=1) if u.ndim == 2 else u.reshape(-1)
        bins = np.array_split(np.arange(per_slot.size), min(per_slot.size, MAX_POINTS))
        out["utilization"] = tuple((float(b[0]), float(per_slot[b].mean())) for b in bins)
    jct = series.get("jct")
    if jct is not None and np.size(jct):
        j = np.asarray(jct, dtype=float)
        done = np.sort(j[np.isfinite(j)])
        n = j.size
        if done.size > MAX_POINTS:  # evenly spaced ranks, the last one always kept
            ranks = np.unique(np.round(np.linspace(0, done.size - 1, MAX_POINTS)).astype(int))
        else:
            ranks = np.arange(done.size)
        out["jct_cdf"] = tuple((float(done[r]), (int(r) + 1) / n) for r in ranks)
    return out


def append_curves(
    path: Path,
    experiment: str,
    setting: str,
    key: Any,
    param: str,
    curves: Mapping[str, Curve],
) -> None:
    """Append one cell's curves with a single write (``key``: its ``CellKey``)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if not path.exists() or path.stat().st_size == 0:
        w.writerow(CURVE_COLUMNS)
    head = [experiment, setting, key.scheduler, param, key.value, key.seed]
    for name in sorted(curves):
        for x, y in curves[name]:
            w.writerow([*head, name, repr(float(x)), repr(float(y))])
    with path.open("ab", buffering=0) as f:
        f.write(buf.getvalue().encode())
        os.fsync(f.fileno())


def _rows(path: Path) -> list[list[str]]:
    """The data rows of ``path``, checked; a line cut by a kill (no newline) is dropped."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("curves.csv", "undecodable bytes", "UTF-8 CSV", str(path)) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    elif lines:
        lines.pop()  # cut mid-line
    if not lines:
        return []
    if lines[0] != ",".join(CURVE_COLUMNS):
        raise InvalidInput("header", lines[0][:60], ",".join(CURVE_COLUMNS), f"{path}:1")
    rows = []
    for i, row in enumerate(csv.reader(lines[1:]), start=2):
        if len(row) != len(CURVE_COLUMNS):
            raise InvalidInput("row", ",".join(row)[:60], "9 fields", f"{path}:{i}")
        try:
            int(row[5]), float(row[7]), float(row[8])
        except ValueError:
            where = f"{path}:{i}"
            raise InvalidInput("row", ",".join(row)[:60], "seed, x, y numbers", where) from None
        rows.append(row)
    return rows


def _cell(row: list[str]) -> tuple[str, str, int]:
    return row[2], row[4], int(row[5])


def read_curves(
    path: Path, cells: set[tuple[str, str, int]] | None = None
) -> dict[tuple[str, str, int, str], np.ndarray]:
    """(scheduler, value, seed, curve) -> an (n, 2) array of its (x, y) points, for the
    ``cells`` (scheduler, value, seed) given (default: all)."""
    if not path.is_file():
        return {}
    out: dict[tuple[str, str, int, str], list[tuple[float, float]]] = {}
    for r in _rows(path):
        if cells is None or _cell(r) in cells:
            out.setdefault((*_cell(r), r[6]), []).append((float(r[7]), float(r[8])))
    return {k: np.array(v, dtype=float).reshape(-1, 2) for k, v in out.items()}


def prune_curves(path: Path, cells: set[tuple[str, str, int]]) -> None:
    """Keep only the curves of ``cells`` (those whole in results.csv) in ``path``."""
    if not path.is_file():
        return
    rows = _rows(path)
    kept = [r for r in rows if _cell(r) in cells]
    if len(kept) < len(rows) or not path.read_bytes().endswith(b"\n"):
        _write(path, kept)


def _write(path: Path, rows: list[list[str]]) -> None:
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(CURVE_COLUMNS)
        w.writerows(rows)
    os.replace(tmp, path)  # atomic: a kill leaves the old file or the new one


def sort_curves(path: Path, point_order: list[str], scheduler_order: list[str]) -> None:
    """Rewrite ``path`` in canonical order: point, scheduler, seed, curve."""
    if not path.is_file():
        return
    rows = _rows(path)
    rows.sort(key=canonical_key(point_order, scheduler_order))  # stable: points keep their order
    _write(path, rows)
