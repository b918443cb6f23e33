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
