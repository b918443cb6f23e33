"""Result tables that read at any terminal width: schedulers as rows, metrics as columns,
the columns wrapped into as many tables as the width needs — a name is never cut.

Rich shrinks a table that is wider than the console by eliding its cells
("m…"); instead, :func:`wrapped_tables` measures every column (its header and
its widest cell) and packs whole columns, in order, into tables that fit.  A
single column wider than the console on its own folds its cells onto more
lines (``overflow="fold"``), which keeps every character.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.table import Table

__all__ = ["wrapped_tables"]

# rich's default box: a column costs its text plus one space of padding on each side and
# one rule; the table adds one more rule at its right edge
_PER_COLUMN = 3
_EDGE = 1


def _width(column: str, cells: Sequence[str]) -> int:
    return max([len(column), *(len(c) for c in cells)])


def wrapped_tables(
    title: str,
    row_name: str,
    rows: Sequence[str],
    columns: Sequence[str],
    cells: Mapping[tuple[str, str], str],
    width: int,
) -> list[Table]:
    """Tables of ``cells[(row, column)]`` with ``rows`` down the side, each at most
    ``width`` characters wide; the first carries ``title``, the others "(continued)"."""
    first = _width(row_name, rows) + _PER_COLUMN + _EDGE
    chunks: list[list[str]] = [[]]
    used = first
    for col in columns:
        w = _width(col, [cells.get((r, col), "") for r in rows]) + _PER_COLUMN
        if chunks[-1] and used + w > width:
            chunks.append([])
            used = first
        chunks[-1].append(col)
        used += w
    tables = []
    for i, chunk in enumerate(chunks):
        t = Table(title=title if i == 0 else "(continued)", title_justify="left")
        t.add_column(row_name, no_wrap=True, overflow="fold")
        for col in chunk:
            t.add_column(col, justify="right", overflow="fold")
        for r in rows:
            t.add_row(r, *(cells.get((r, col), "") for col in chunk))
        tables.append(t)
    return tables
