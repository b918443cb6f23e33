"""The log of ``reproduce --all`` invocations: ``OUT/runs.csv``, one row per invocation.

A catalogue run takes hours and is resumed across several invocations; the
report lists them (commit, wall time, cells added, how each ended) so a
reader sees what computed its cells and what that cost.  An invocation that
logged itself only when it ended was missing whenever it was killed outright
(SIGKILL, a closed session, the machine going down): its cells were kept and
later attributed to nobody, and its wall time to nothing.  So:

* :class:`RunLog` writes the invocation's row when it starts (``ended`` is
  ``running``), keeps its wall time current every ``beat_s`` seconds and its
  cells after each experiment, and sets ``complete`` or ``stopped`` (Ctrl-C,
  an error) when it ends;
* the next invocation (the caller holds ``OUT``'s lock, so no other one is
  alive) marks a row still ``running`` as ``killed``, and gives it the cells
  found in the results that no row accounts for — they can only be its own,
  written after its last update;
* cells that no row accounts for and no killed row can take (a log from
  before rows were written at the start, or results copied in) get a row of
  their own, ``not logged``, with the count and no wall time: the report's
  total then says that part of the cost is unknown instead of omitting it.

Rows are rewritten whole through a temporary file and ``os.replace``, so a
kill mid-write leaves the old log or the new one, never half of either.
"""

from __future__ import annotations

import csv
import os
import threading
import time
from pathlib import Path
from types import TracebackType

__all__ = ["NOT_LOGGED", "RUNS", "RUN_FIELDS", "RunLog", "read_runs"]

RUNS = "runs.csv"
RUN_FIELDS = ("started_utc", "commit", "wall_s", "cells_added", "ended", "note")
#: ``ended`` of the row that carries cells no logged invocation accounts for
NOT_LOGGED = "not logged"
_UNLOGGED_NOTE = (
    "cells in results.csv that no logged invocation accounts for "
    "(runs that ended before they could log; wall time unknown)"
)


def read_runs(base: Path) -> list[dict[str, str]]:
    """The rows of ``base/runs.csv`` (none if there is no log)."""
    path = base / RUNS
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as f:
        return [{k: r.get(k) or "" for k in RUN_FIELDS} for r in csv.DictReader(f)]


def _write_runs(base: Path, rows: list[dict[str, str]]) -> None:
    base.mkdir(parents=True, exist_ok=True)
    tmp = base / f".{RUNS}.{os.getpid()}.tmp"
    with tmp.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=RUN_FIELDS, extrasaction="raise")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, base / RUNS)


def _count(v: str) -> int:
    try:
        return int(v)
    except ValueError:
        return 0


class RunLog:
    """This invocation's row of ``base/runs.csv``, from its start (see the module docstring).

    ``cells_now``: the whole cells in ``base``'s results when the invocation starts
    (every experiment's, not only the chosen ones: rows of other invocations count
    theirs).  Use as a context manager while holding ``base``'s lock; :meth:`cells`
    after each experiment, :meth:`end` before leaving.
    """

    def __init__(
        self, base: Path, started_utc: str, commit: str, cells_now: int, beat_s: float = 60.0
    ) -> None:
        self.base = base
        self.beat_s = beat_s
        self._start = time.monotonic()
        self._cells_before = cells_now
        self._row = {k: "" for k in RUN_FIELDS}
        self._row.update(
            started_utc=started_utc, commit=commit, wall_s="0", cells_added="0", ended="running"
        )
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def __enter__(self) -> RunLog:
        rows = read_runs(self.base)
        stale = [r for r in rows if r["ended"] == "running"]
        for r in stale:
            r["ended"] = "killed"
        gap = self._cells_before - sum(_count(r["cells_added"]) for r in rows)
        if gap and stale:
            stale[-1]["cells_added"] = str(_count(stale[-1]["cells_added"]) + gap)
        elif gap:
            row = {k: "" for k in RUN_FIELDS}
            row.update(cells_added=str(gap), ended=NOT_LOGGED, note=_UNLOGGED_NOTE)
            rows.append(row)
        self._rows = rows
        self._save()
        self._beat = threading.Thread(target=self._beats, name="runlog", daemon=True)
        self._beat.start()
        return self

    def __exit__(
        self,
        et: type[BaseException] | None,
        ev: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        if self._row["ended"] == "running":  # left without end(): an error or Ctrl-C
            self.end("stopped")

    def cells(self, cells_now: int) -> None:
        """The invocation's net cells so far, ``cells_now`` being the results' whole cells."""
        self._update(cells_added=str(cells_now - self._cells_before))

    def end(self, ended: str) -> None:
        """How the invocation ended (``complete`` / ``stopped``)."""
        self._update(ended=ended)

    def _beats(self) -> None:
        while not self._stop.wait(self.beat_s):
            self._update()

    def _update(self, **fields: str) -> None:
        with self._lock:
            self._row.update(fields)
            self._save()

    def _save(self) -> None:
        self._row["wall_s"] = f"{time.monotonic() - self._start:.0f}"
        _write_runs(self.base, [*self._rows, self._row])
