"""Event log: what happened, slot by slot, exportable as CSV."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import astuple, dataclass, fields
from pathlib import Path

__all__ = ["Event", "write_events_csv"]


@dataclass(frozen=True)
class Event:
    """kind ∈ arrive, admit, reject, allocate, complete (settings may add more)."""

    slot: int
    kind: str
    job: int
    detail: str = ""


def write_events_csv(events: Iterable[Event], path: Path) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow([fl.name for fl in fields(Event)])
        for e in events:
            w.writerow(astuple(e))
