"""``results.csv``: long-form rows, appended as cells finish, sorted when complete.

Columns (DESIGN.md contract)::

    experiment,setting,scheduler,param,value,seed,metric,metric_value

A finished cell's rows are appended and flushed at once, so an interrupted
sweep loses nothing finished.  When every cell is present the file is
rewritten in canonical order (atomic replace) so the same command gives the
same bytes however the pool scheduled the cells.  Floats are written with
``repr`` (shortest round-trip form).
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dmlsched.errors import InvalidInput

__all__ = [
    "COLUMNS",
    "CellKey",
    "Row",
    "append_rows",
    "cell_rows",
    "done_cells",
    "read_results",
    "repair",
    "sort_results",
]

COLUMNS = ("experiment", "setting", "scheduler", "param", "value", "seed", "metric", "metric_value")
Row = tuple[str, str, str, str, str, int, str, float]


@dataclass(frozen=True, order=True)
class CellKey:
    scheduler: str
    value: str
    seed: int


def cell_rows(
    experiment: str, setting: str, key: CellKey, param: str, metrics: Mapping[str, float]
) -> list[Row]:
    return [
        (experiment, setting, key.scheduler, param, key.value, key.seed, m, float(v))
        for m, v in sorted(metrics.items())
    ]


def _fmt(row: Row) -> list[str]:
    return [*(str(x) for x in row[:7]), repr(float(row[7]))]


def append_rows(path: Path, rows: Iterable[Row]) -> None:
    """Append one cell's rows with a single write (so a kill cannot split the cell)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if not path.exists() or path.stat().st_size == 0:
        w.writerow(COLUMNS)
    for r in rows:
        w.writerow(_fmt(r))
    with path.open("ab", buffering=0) as f:
        f.write(buf.getvalue().encode())
        os.fsync(f.fileno())


def read_results(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise InvalidInput("results", str(path), "an existing results.csv")
    df = pd.read_csv(path, dtype={"value": str, "scheduler": str, "metric": str})
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise InvalidInput("results.csv columns", missing, ",".join(COLUMNS), str(path))
    return df


def repair(path: Path) -> int:
    """Drop a torn last line (a hard kill during a write); returns lines dropped.

    Each cell's rows are written with one ``write`` call on an unbuffered file
    (:func:`append_rows`), so a kill leaves whole cells or, at worst, a line
    without its newline — which this removes so the cell is recomputed.
    """
    if not path.exists() or path.stat().st_size == 0:
        return 0
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return 0
    keep = data[: data.rfind(b"\n") + 1]
    # drop every row of the torn cell (rows of one cell are contiguous at the end)
    lines = keep.decode().splitlines()
    torn = data[len(keep) :].decode(errors="replace").split(",")
    if len(torn) >= 6:
        cell = (torn[2], torn[4], torn[5])
        while len(lines) > 1 and tuple(lines[-1].split(",")[i] for i in (2, 4, 5)) == cell:
            lines.pop()
    path.write_text("\n".join(lines) + "\n")
    return 1


def done_cells(path: Path) -> set[CellKey]:
    """Cells already in ``path`` (a cell's rows are written together)."""
    if not path.exists() or path.stat().st_size == 0:
        return set()
    df = read_results(path)
    keys = df[["scheduler", "value", "seed"]].drop_duplicates()
    return {CellKey(str(s), str(v), int(e)) for s, v, e in keys.itertuples(index=False)}


def sort_results(path: Path, point_order: list[str], scheduler_order: list[str]) -> None:
    """Rewrite ``path`` in canonical order: point, scheduler, seed, metric."""
    with path.open(newline="") as f:
        rows = list(csv.reader(f))[1:]
    p_idx = {p: i for i, p in enumerate(point_order)}
    s_idx = {s: i for i, s in enumerate(scheduler_order)}
    rows.sort(
        key=lambda r: (
            p_idx.get(r[4], len(p_idx)),
            r[4],
            s_idx.get(r[2], len(s_idx)),
            r[2],
            int(r[5]),
            r[6],
        )
    )
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(COLUMNS)
        w.writerows(rows)
    os.replace(tmp, path)
