"""Progress a person can watch: units done (cells of a sweep, benchmarks), the run in
this process (slots, jobs admitted and completed), elapsed time and an ETA.

On a terminal, a live rich display on stderr; otherwise (a log file, a pipe,
CI) one plain line on stderr every ``every`` seconds from a timer — also while
nothing reports, e.g. when every cell runs in a worker process — and one when
the command ends, so a redirected run is never silent for long.

The ETA is the command's own completed work projected to the rest: none
before the first unit has finished here ("ETA after the first cell"), then
the time the finished units took each, times the units left, counted down
until the next one finishes.  Units a previous run kept (a resumed sweep) took
no time here and do not count as speed.  A single simulation gets no ETA: the
engine jumps over idle slots and ends at the last job, not at the horizon, so
its slot count says little about the time left.

The engines report through a plain callback (:data:`Tick`), set for the runs
of a command with :func:`dmlsched.sim.engine.watching`; this module only
draws.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

__all__ = ["Reporter", "Tick"]

#: engine callback: (slot reached, horizon, jobs admitted so far, jobs completed so far)
Tick = Callable[[int, int, int, int], None]


def _secs(seconds: float) -> str:
    s = round(seconds)
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class _EtaColumn(ProgressColumn):
    """The reporter's ETA beside its unit task (blank beside the run's)."""

    def __init__(self, reporter: Reporter) -> None:
        super().__init__()
        self.reporter = reporter

    def render(self, task: Task) -> Text:
        if task.id != self.reporter._unit_task:
            return Text("")
        return Text(self.reporter.eta(short=True), style="progress.remaining")


class Reporter:
    """Units done by one command and slot progress of the run in this process.

    ``live``: None = a live display when ``stream`` is a terminal.  ``unit`` names
    what :meth:`cells` counts ("cells", "benchmarks").  Use as a context manager;
    :meth:`cells` updates the count, :meth:`doing` says what is under way,
    :meth:`run` returns the :data:`Tick` for one simulation.
    """

    def __init__(
        self,
        label: str,
        *,
        stream: IO[str] | None = None,
        live: bool | None = None,
        every: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        unit: str = "cells",
    ) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        console = Console(file=self.stream)
        self.live = console.is_terminal if live is None else live
        self.every = every
        self.clock = clock
        self.unit = unit
        self._start = clock()
        self._last_line = -float("inf")
        self._dirty = False
        self._lock = threading.RLock()  # the timer thread and the caller both print
        self._cells: tuple[int, int] | None = None
        # units already done when this command started (a resumed run): they took no
        # time here, so the ETA counts only the units finished since
        self._cells_before: int | None = None
        self._first_at: float | None = None  # when this command's count was first told
        self._done_at: float | None = None  # when the last unit finished here
        self._doing = ""
        self._run: dict[str, Any] | None = None
        self._progress: Progress | None = None
        if self.live:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(bar_width=20),
                MofNCompleteColumn(),
                TextColumn("{task.fields[extra]}"),
                TimeElapsedColumn(),
                _EtaColumn(self),
                console=console,
                transient=False,
            )
        self._unit_task: Any = None
        self._run_task: Any = None
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None

    def __enter__(self) -> Reporter:
        if not self.live and self.every > 0:
            self._timer = threading.Thread(target=self._beat, name="progress", daemon=True)
            self._timer.start()
        return self

    def _beat(self) -> None:
        """Timer thread: a line whenever ``every`` seconds passed without one."""
        while not self._stop.wait(self.every / 4):
            with self._lock:
                if self.clock() - self._last_line >= self.every:
                    self._line(force=True)

    def _started(self) -> Progress | None:
        """The live display, started at its first update: input errors found before
        any work print their one line without a progress bar around it."""
        if self._progress is not None and not self._progress.live.is_started:
            self._progress.start()
        return self._progress

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        if self._timer is not None:
            self._timer.join()
            self._timer = None
        with self._lock:
            if self._progress is not None:
                if self._progress.live.is_started:
                    self._progress.stop()
                self._progress = None
            elif self._dirty:  # the last state was not printed yet
                self._line(force=True)

    # -- units ---------------------------------------------------------------
    def cells(self, done: int, total: int) -> None:
        """``done`` of ``total`` units (a sweep's scheduler × point × seed) finished."""
        with self._lock:
            now = self.clock()
            if self._cells_before is None:
                self._cells_before, self._first_at = done, now
            elif self._cells is not None and done > self._cells[0]:
                self._done_at = now
            self._cells = (done, total)
            if (prog := self._started()) is not None:
                if self._unit_task is None:  # starts at ``done``: resumed units are no speed
                    self._unit_task = prog.add_task(
                        self.label, total=total, completed=done, extra=self._extra()
                    )
                prog.update(self._unit_task, completed=done, total=total, extra=self._extra())
            else:
                self._line(force=done == total)

    def doing(self, text: str) -> None:
        """What is under way now (e.g. the benchmark running), shown beside the count."""
        with self._lock:
            self._doing = text
            if self._progress is not None and self._unit_task is not None:
                self._progress.update(self._unit_task, extra=self._extra())

    def _extra(self) -> str:
        return self.unit + (f" · {self._doing}" if self._doing else "")

    def eta(self, short: bool = False) -> str:
        """ "ETA …" from the units finished by this command (module docstring); before the
        first, "ETA after the first cell" (``short``: "ETA --", for the live display)."""
        with self._lock:
            if self._cells is None:
                return ""
            done, total = self._cells
            if done >= total:
                return "done"
            here = done - (self._cells_before or 0)
            if here <= 0 or self._done_at is None or self._first_at is None:
                first = f"ETA after the first {self.unit.removesuffix('s')}"
                return "ETA --" if short else first
            each = (self._done_at - self._first_at) / here
            end = self._done_at + each * (total - done)
            return f"ETA {_secs(max(0.0, end - self.clock()))}"

    # -- one run -------------------------------------------------------------
    def run(self, label: str) -> Tick:
        """The engine callback for the simulation ``label`` about to start here."""
        state: dict[str, Any] = {"label": label, "slot": 0, "T": 0, "admitted": 0, "completed": 0}
        with self._lock:
            self._run = state
            if (prog := self._started()) is not None:
                if self._run_task is not None:
                    prog.remove_task(self._run_task)
                self._run_task = prog.add_task(label, total=None, extra="")

        def tick(slot: int, horizon: int, admitted: int, completed: int) -> None:
            # called every slot a run steps: no lock unless a line is due (see _line)
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

    # -- plain lines ---------------------------------------------------------
    def _line(self, force: bool = False) -> None:
        now = self.clock()
        if not force and now - self._last_line < self.every:
            self._dirty = True
            return
        with self._lock:
            self._print(now)

    def _print(self, now: float) -> None:
        self._last_line = now
        self._dirty = False
        parts = [f"{self.label}:"]
        if self._cells is not None:
            done, total = self._cells
            doing = f" ({self._doing})" if self._doing and done < total else ""
            parts.append(f"{done}/{total} {self.unit}{doing}, {self.eta()};")
        if self._run is not None and self._run["T"]:
            r = self._run
            parts.append(
                f"{r['label']} slot {r['slot']}/{r['T']}, {r['admitted']} admitted, "
                f"{r['completed']} completed;"
            )
        parts.append(f"{_secs(now - self._start)} elapsed")
        print(" ".join(parts), file=self.stream, flush=True)
