"""Progress lines: the ETA of a resumed command counts only the cells computed here."""

from __future__ import annotations

import io

from dmlsched.progress import Reporter


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _lines(resumed: int) -> list[str]:
    out, clock = io.StringIO(), _Clock()
    with Reporter("sweep", stream=out, live=False, every=0.0, clock=clock) as rep:
        rep.cells(resumed, 100)  # at start: cells a previous run kept
        clock.now = 10.0
        rep.cells(resumed + 10, 100)  # 10 cells in 10 s here
    return out.getvalue().splitlines()


def test_a_fresh_run_estimates_from_its_own_rate() -> None:
    assert "ETA 90 s" in _lines(0)[1]  # 90 left at 1 cell/s


def test_a_resumed_run_does_not_count_the_kept_cells_as_speed() -> None:
    line = _lines(50)[1]
    assert "60/100 cells" in line
    assert "ETA 40 s" in line  # 40 left at 1 cell/s, not 10 s / 60 × 40 ≈ 7 s


def test_no_eta_before_the_first_cell_has_finished() -> None:
    out, clock = io.StringIO(), _Clock()
    with Reporter("sweep", stream=out, live=False, every=0.0, clock=clock) as rep:
        rep.cells(0, 18)
        clock.now = 156.0  # 2 min 36 s without a finished cell: still no guess
        rep.cells(0, 18)
        assert rep.eta(short=True) == "ETA --"  # the live display's column: fits 80 columns
    lines = out.getvalue().splitlines()
    assert all("ETA after the first cell" in line for line in lines)
    assert "2 min 36 s elapsed" in lines[-1]


def test_the_eta_counts_down_from_the_work_done_between_cells() -> None:
    out, clock = io.StringIO(), _Clock()
    rep = Reporter("sweep", stream=out, live=False, every=0.0, clock=clock)
    rep.cells(0, 10)
    clock.now = 10.0
    rep.cells(1, 10)
    assert rep.eta() == "ETA 90 s"  # 9 cells left at 10 s each
    clock.now = 40.0
    assert rep.eta() == "ETA 60 s"  # no cell since: the same finish time, 30 s nearer
    clock.now = 500.0
    assert rep.eta() == "ETA 0 s"
    rep.cells(10, 10)
    assert rep.eta() == "done"


def test_a_timer_prints_lines_while_nothing_reports() -> None:
    """Cells that run in worker processes tell the parent nothing until they end."""
    import time

    out = io.StringIO()
    with Reporter("sweep", stream=out, live=False, every=0.05) as rep:
        rep.cells(0, 4)
        time.sleep(0.5)
    lines = out.getvalue().splitlines()
    assert len(lines) >= 4 and all(line.startswith("sweep: 0/4 cells") for line in lines)


def test_a_single_run_shows_slots_and_jobs_but_no_eta() -> None:
    """The engine ends at the last job, not at the horizon: slots say little of the time left."""
    out, clock = io.StringIO(), _Clock()
    with Reporter("run", stream=out, live=False, every=0.0, clock=clock) as rep:
        tick = rep.run("fifo")
        tick(5, 1000, 3, 1)
    line = out.getvalue().splitlines()[-1]
    assert "fifo slot 5/1000, 3 admitted, 1 completed" in line and "ETA" not in line


def test_other_units_and_what_is_under_way_are_named() -> None:
    out, clock = io.StringIO(), _Clock()
    with Reporter("bench", stream=out, live=False, every=0.0, clock=clock, unit="benchmarks") as r:
        r.doing("pdors-scale")
        r.cells(0, 3)
    assert "0/3 benchmarks (pdors-scale), ETA after the first benchmark;" in out.getvalue()
