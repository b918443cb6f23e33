"""Progress a person can watch: cells done, and inside a long run slots done, jobs
admitted and completed, and an ETA.

On a terminal, a live rich display on stderr; otherwise (a log file, a pipe,
CI) one plain line on stderr at most every ``every`` seconds, plus one when a
run or the command ends, so a redirected run is never silent for long.

The engines report through a plain callback (:data:`Tick`), set for the runs
of a command with :func:`dmlsched.sim.engine.watching`; this module only
draws.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = ["Reporter", "Tick"]

#: engine callback: (slot reached, horizon, jobs admitted so far, jobs completed so far)
Tick = Callable[[int, int, int, int], None]


def _eta(elapsed: float, done: float, total: float) -> str:
    if done <= 0 or total <= done:
        return "ETA --" if total > done else "done"
    left = elapsed / done * (total - done)
    return f"ETA {_secs(left)}"


def _secs(seconds: float) -> str:
    s = round(seconds)
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class Reporter:
    """Cell progress of one command and slot progress of the run in this process.

    ``live``: None = a live display when ``stream`` is a terminal.  Use as a
    context manager; :meth:`cells` updates the cell count, :meth:`run`
    returns the :data:`Tick` for one simulation.
    """

    def __init__(
        self,
        label: str,
        *,
        stream: IO[str] | None = None,
        live: bool | None = None,
        every: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        console = Console(file=self.stream)
        self.live = console.is_terminal if live is None else live
        self.every = every
        self.clock = clock
        self._start = clock()
        self._last_line = -float("inf")
        self._dirty = False
        self._cells: tuple[int, int] | None = None
        # cells already done when this command started (a resumed run): they took
        # no time here, so the ETA counts only the cells computed since
        self._cells_before: int | None = None
        self._run: dict[str, Any] | None = None
        self._progress: Progress | None = None
        if self.live:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[extra]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=console,
                transient=False,
            )
        self._cell_task: Any = None
        self._run_task: Any = None

    def __enter__(self) -> Reporter:
        return self

    def _started(self) -> Progress | None:
        """The live display, started at its first update: input errors found before
        any work print their one line without a progress bar around it."""
        if self._progress is not None and not self._progress.live.is_started:
            self._progress.start()
        return self._progress

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._progress is not None:
            if self._progress.live.is_started:
                self._progress.stop()
            self._progress = None
        elif self._dirty:  # the last state was not printed yet
            self._line(force=True)

    # -- cells -------------------------------------------------------------
    def cells(self, done: int, total: int) -> None:
        """``done`` of ``total`` cells (scheduler × point × seed) finished."""
        self._cells = (done, total)
        if self._cells_before is None:
            self._cells_before = done
        if (prog := self._started()) is not None:
            if self._cell_task is None:  # starts at ``done``: resumed cells are no speed
                self._cell_task = prog.add_task(
                    self.label, total=total, completed=done, extra="cells"
                )
            prog.update(self._cell_task, completed=done, total=total)
        else:
            self._line(force=done == total)

    # -- one run -----------------------------------------------------------
    def run(self, label: str) -> Tick:
        """The engine callback for the simulation ``label`` about to start here."""
        state: dict[str, Any] = {"label": label, "start": self.clock(), "slot": 0, "T": 0}
        state.update(admitted=0, completed=0)
        self._run = state
        if (prog := self._started()) is not None:
            if self._run_task is not None:
                prog.remove_task(self._run_task)
            self._run_task = prog.add_task(label, total=None, extra="")

        def tick(slot: int, horizon: int, admitted: int, completed: int) -> None:
            state.update(slot=slot, T=horizon, admitted=admitted, completed=completed)
            if self._progress is not None:
                self._progress.update(
                    self._run_task,
                    completed=slot,
                    total=horizon,
                    extra=f"slots · {admitted} admitted · {completed} completed",
                )
            else:
                self._line()

        return tick

    # -- plain lines -------------------------------------------------------
    def _line(self, force: bool = False) -> None:
        now = self.clock()
        if not force and now - self._last_line < self.every:
            self._dirty = True
            return
        self._last_line = now
        self._dirty = False
        parts = [f"{self.label}:"]
        if self._cells is not None:
            done, total = self._cells
            parts.append(f"{done}/{total} cells,")
        if self._run is not None and self._run["T"]:
            r = self._run
            parts.append(
                f"{r['label']} slot {r['slot']}/{r['T']}, {r['admitted']} admitted, "
                f"{r['completed']} completed, {_eta(now - r['start'], r['slot'], r['T'])};"
            )
        elif self._cells is not None:
            done, total = self._cells
            before = self._cells_before or 0
            parts.append(_eta(now - self._start, done - before, total - before) + ";")
        parts.append(f"{_secs(now - self._start)} elapsed")
        print(" ".join(parts), file=self.stream, flush=True)
