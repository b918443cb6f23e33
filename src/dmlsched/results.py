"""``results.csv``: long-form rows, appended as cells finish, sorted when complete.

Columns (DESIGN.md contract)::

    experiment,setting,scheduler,param,value,seed,metric,metric_value

A finished cell's rows are appended and flushed at once, so an interrupted
sweep loses nothing finished.  When every cell is present the file is
rewritten in canonical order (atomic replace) so the same command gives the
same bytes however the pool scheduled the cells.  Floats are written with
``repr`` (shortest round-trip form).

Reading is strict (:func:`scan_results`): a corrupt file is
:class:`~dmlsched.errors.InvalidInput` naming ``file:line``, never a partial
summary; a last cell cut by a kill is set apart so a resume recomputes it and
a report says it is missing.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:  # a DataFrame only on demand (frame): pandas is slow to import
    import pandas as pd

from dmlsched.errors import InvalidInput

__all__ = [
    "COLUMNS",
    "PROVENANCE",
    "CellKey",
    "Provenance",
    "Row",
    "Scan",
    "append_provenance",
    "append_rows",
    "canonical_key",
    "cell_rows",
    "columns",
    "done_cells",
    "drop_cells",
    "frame",
    "groups",
    "read_provenance",
    "read_results",
    "repair",
    "scan_results",
    "sort_results",
    "write_provenance",
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


@dataclass(frozen=True)
class Scan:
    """``results.csv`` read strictly: the rows of whole cells, and what was left out.

    ``cut`` is the last cell when a kill cut it (a line without its newline, or
    fewer metric rows than the same scheduler's other cells: a cell's rows are
    written sorted by metric, so a cut leaves a prefix); its rows are not in
    ``rows``.  ``torn`` says the file does not end with a newline.  ``lines``
    is the number of lines whole cells occupy (header included), i.e. where
    the file is cut back to.
    """

    rows: tuple[Row, ...]
    cut: CellKey | None
    torn: bool
    lines: int


def _bad(path: Path, line: int, field: str, value: object, allowed: str) -> InvalidInput:
    return InvalidInput(field, value, allowed, f"{path}:{line}")


def scan_results(path: Path) -> Scan:
    """Read and check every line of ``path`` (see :class:`Scan`).

    A corrupt file — not UTF-8, a wrong header, a row with the wrong number of
    fields, a seed or value that is not a number, one cell written twice (two
    runs into one folder) — raises :class:`InvalidInput` naming ``file:line``.
    """
    if not path.is_file():
        raise InvalidInput("results", str(path), "an existing results.csv")
    data = path.read_bytes()
    if not data:
        return Scan((), None, False, 0)
    torn = not data.endswith(b"\n")
    raw_lines = data.split(b"\n")
    if not torn:
        raw_lines.pop()  # the empty string after the final newline
    expect = ",".join(COLUMNS)
    rows: list[Row] = []
    ends: list[int] = []  # line number of each row
    seen: dict[tuple[str, str, int, str], int] = {}
    last = len(raw_lines)
    for i, raw in enumerate(raw_lines, start=1):
        if torn and i == last and i > 1:
            break  # the cut line: dealt with below
        try:
            text = raw.decode("utf-8-sig" if i == 1 else "utf-8")
        except UnicodeDecodeError:
            raise _bad(path, i, "results.csv", raw[:40], "UTF-8 CSV written by dmlsched") from None
        if i == 1:
            if text.rstrip("\r") != expect:
                raise _bad(path, 1, "header", text[:60], expect)
            continue
        try:
            fields = next(csv.reader([text]))
        except (csv.Error, StopIteration):
            raise _bad(path, i, "row", text[:60], "a CSV row") from None
        if len(fields) != len(COLUMNS):
            raise _bad(path, i, "row", text[:60], f"{len(COLUMNS)} fields, got {len(fields)}")
        try:
            seed = int(fields[5])
        except ValueError:
            raise _bad(path, i, "seed", fields[5], "an integer") from None
        try:
            value = float(fields[7])
        except ValueError:
            raise _bad(path, i, "metric_value", fields[7], "a number") from None
        key = (fields[2], fields[4], seed, fields[6])
        if key in seen:
            raise _bad(
                path,
                i,
                "row",
                f"{fields[2]},{fields[4]},seed {seed},{fields[6]}",
                f"each cell once (also on line {seen[key]}; did two runs write here?)",
            )
        seen[key] = i
        rows.append((fields[0], fields[1], fields[2], fields[3], fields[4], seed, fields[6], value))
        ends.append(i)
    if torn and last == 1:
        return Scan((), None, True, 0)  # even the header was cut
    cut = _cut_cell(rows, torn, raw_lines[-1] if torn else b"")
    if cut is not None:
        while rows and CellKey(rows[-1][2], rows[-1][4], rows[-1][5]) == cut:
            rows.pop()
            ends.pop()
    return Scan(tuple(rows), cut, torn, ends[-1] if ends else 1)


def _cut_cell(rows: list[Row], torn: bool, tail: bytes) -> CellKey | None:
    """The last cell if a kill cut it short (see :class:`Scan`), else ``None``."""
    if torn:
        parts = tail.decode("utf-8", errors="replace").split(",")
        if len(parts) >= 6:
            key = CellKey(parts[2], parts[4], _int(parts[5]))
            if not rows or CellKey(rows[-1][2], rows[-1][4], rows[-1][5]) != key:
                return key  # the cut line starts a new cell: the rows before it are whole
        # the cut line continues the last cell, or is too short to say: drop that cell
        return CellKey(rows[-1][2], rows[-1][4], rows[-1][5]) if rows else None
    if not rows:
        return None
    last = CellKey(rows[-1][2], rows[-1][4], rows[-1][5])
    metrics: dict[CellKey, list[str]] = {}
    for r in rows:
        if r[2] == last.scheduler:
            metrics.setdefault(CellKey(r[2], r[4], r[5]), []).append(r[6])
    mine = metrics.pop(last)
    full = max(metrics.values(), key=len, default=mine)
    return last if len(mine) < len(full) and full[: len(mine)] == mine else None


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return -1


def read_results(path: Path) -> pd.DataFrame:
    """The whole cells of ``path`` as a DataFrame (:func:`scan_results`'s checks)."""
    return frame(scan_results(path).rows)


def frame(rows: Iterable[Row]) -> pd.DataFrame:
    import pandas as pd

    df = pd.DataFrame(list(rows), columns=list(COLUMNS))
    return df.astype({"seed": "int64", "metric_value": "float64"})


Columns = dict[str, list]


def columns(data: Iterable[Row] | pd.DataFrame) -> Columns:
    """A results table as one list per column, from rows or a DataFrame.

    The summary and the console table read results this way, so a command
    that draws no plots and checks no claims never imports pandas (slow to import);
    a DataFrame's columns are taken as named.
    """
    if hasattr(data, "columns"):
        df = cast("pd.DataFrame", data)
        return {str(c): df[c].tolist() for c in df.columns}
    rows = list(data)
    return {c: [r[i] for r in rows] for i, c in enumerate(COLUMNS)}


def groups(cols: Columns, *keys: str) -> dict[tuple, list[float]]:
    """``metric_value`` by the values of the ``keys`` columns (rows in order in a group)."""
    by = zip(*(cols[k] for k in keys), strict=True)
    out: dict[tuple, list[float]] = {}
    for key, x in zip(by, cols["metric_value"], strict=True):
        out.setdefault(key, []).append(x)
    return out


def repair(path: Path) -> int:
    """Drop a cut last cell (a hard kill during a write); returns cells dropped (0 or 1).

    Each cell's rows are written with one ``write`` call on an unbuffered file
    (:func:`append_rows`), so a kill leaves whole cells or, at worst, one cell
    cut short — which this removes so the cell is recomputed.
    """
    if not path.exists() or path.stat().st_size == 0:
        return 0
    scan = scan_results(path)
    if scan.cut is None and not scan.torn:
        return 0
    keep = path.read_bytes().split(b"\n")[: scan.lines]
    tmp = path.with_suffix(".csv.tmp")
    tmp.write_bytes(b"\n".join(keep) + b"\n" if keep else b"")
    os.replace(tmp, path)
    return 1


def done_cells(path: Path) -> set[CellKey]:
    """Whole cells already in ``path`` (a cell's rows are written together)."""
    if not path.exists() or path.stat().st_size == 0:
        return set()
    return {CellKey(r[2], r[4], r[5]) for r in scan_results(path).rows}


def canonical_key(
    point_order: list[str], scheduler_order: list[str]
) -> Callable[[list[str]], tuple[int, str, int, str, int, str]]:
    """Sort key of a results-shaped CSV row (``results.csv``, ``curves.csv``): point in
    ``point_order``, scheduler in ``scheduler_order`` (unknown ones after, by name), seed,
    then column 6 (the metric or the curve)."""
    p_idx = {p: i for i, p in enumerate(point_order)}
    s_idx = {s: i for i, s in enumerate(scheduler_order)}

    def key(r: list[str]) -> tuple[int, str, int, str, int, str]:
        return (
            p_idx.get(r[4], len(p_idx)),
            r[4],
            s_idx.get(r[2], len(s_idx)),
            r[2],
            int(r[5]),
            r[6],
        )

    return key


def sort_results(path: Path, point_order: list[str], scheduler_order: list[str]) -> None:
    """Rewrite ``path`` in canonical order: point, scheduler, seed, metric."""
    with path.open(newline="") as f:
        rows = list(csv.reader(f))[1:]
    rows.sort(key=canonical_key(point_order, scheduler_order))
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(COLUMNS)
        w.writerows(rows)
    os.replace(tmp, path)


#: beside results.csv: the fingerprint of the code and inputs behind each cell
PROVENANCE = "provenance.csv"
_PROV_COLUMNS = ("scheduler", "value", "seed", "fingerprint", "made")


@dataclass(frozen=True)
class Provenance:
    """What computed one cell: its fingerprint and the scheduler modules it made
    (:mod:`dmlsched.experiments.provenance`)."""

    fingerprint: str
    made: tuple[str, ...]


def append_provenance(path: Path, key: CellKey, prov: Provenance) -> None:
    """Append one cell's provenance row (one write; the last row of a cell wins)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if not path.exists() or path.stat().st_size == 0:
        w.writerow(_PROV_COLUMNS)
    w.writerow([key.scheduler, key.value, key.seed, prov.fingerprint, " ".join(prov.made)])
    with path.open("ab", buffering=0) as f:
        f.write(buf.getvalue().encode())
        os.fsync(f.fileno())


def read_provenance(path: Path) -> dict[CellKey, Provenance]:
    """Cell → its last recorded provenance; a torn or malformed row is left out (that
    cell then has none and is recomputed)."""
    if not path.is_file():
        return {}
    out: dict[CellKey, Provenance] = {}
    text = path.read_bytes().decode("utf-8", errors="replace")
    lines = text.split("\n")
    if not text.endswith("\n"):
        lines = lines[:-1]  # a cut last row
    for fields in csv.reader(lines[1:]):
        if len(fields) != len(_PROV_COLUMNS):
            continue
        try:
            key = CellKey(fields[0], fields[1], int(fields[2]))
        except ValueError:
            continue
        out[key] = Provenance(fields[3], tuple(fields[4].split()))
    return out


def drop_cells(results: Path, keys: set[CellKey]) -> int:
    """Remove the rows of ``keys`` from ``results`` (atomic); returns cells dropped."""
    if not keys or not results.exists():
        return 0
    with results.open(newline="") as f:
        rows = list(csv.reader(f))
    head, body = rows[:1], rows[1:]
    keep = [r for r in body if CellKey(r[2], r[4], int(r[5])) not in keys]
    dropped = {CellKey(r[2], r[4], int(r[5])) for r in body} & keys
    tmp = results.with_suffix(".csv.tmp")
    with tmp.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerows(head + keep)
    os.replace(tmp, results)
    return len(dropped)


def write_provenance(path: Path, cells: Mapping[CellKey, Provenance]) -> None:
    """Rewrite ``path`` with ``cells`` in canonical order (atomic)."""
    tmp = path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(_PROV_COLUMNS)
        for key in sorted(cells):
            p = cells[key]
            w.writerow([key.scheduler, key.value, key.seed, p.fingerprint, " ".join(p.made)])
    os.replace(tmp, path)
