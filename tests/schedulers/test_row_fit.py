"""The packed placement's one-machine count in Python floats against NumPy's count of every
machine (``placement._row_fit`` against ``placement._fit_count``), edge values included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dmlsched.schedulers._shared import placement

_VALUES = st.one_of(
    st.floats(-10, 100, allow_nan=False),
    st.sampled_from([0.0, -0.0, 1e-9, 2e-9, 1e300, -1e300, np.inf, -np.inf, np.nan, 2.0**63]),
)
_DEMANDS = st.one_of(
    st.floats(0, 10, allow_nan=False), st.sampled_from([0.0, 1e-9, 1e-12, 1e-300, 3.0])
)


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.lists(_VALUES, min_size=3, max_size=3), min_size=1, max_size=5),
    d=st.lists(_DEMANDS, min_size=3, max_size=3),
)
def test_a_machines_count_is_numpys(rows: list[list[float]], d: list[float]) -> None:
    left, dem = np.array(rows, dtype=float), np.array(d, dtype=float)
    with np.errstate(all="ignore"):  # NumPy's casts of nan and inf, which _row_fit copies
        want = placement._fit_count(left, dem)
        got = [placement._row_fit(left, m, dem) for m in range(len(rows))]
    assert got == want.tolist()


@settings(max_examples=200, deadline=None)
@given(
    free=st.lists(
        st.lists(st.integers(0, 8).map(float), min_size=2, max_size=2), min_size=1, max_size=6
    ),
    wd=st.lists(st.sampled_from([0.0, 1.0, 2.0, 0.5]), min_size=2, max_size=2),
    pd=st.lists(st.sampled_from([0.0, 1.0, 0.25]), min_size=2, max_size=2),
    workers=st.integers(0, 12),
    ps=st.integers(0, 4),
)
def test_packed_numpy_is_the_rule_counted_afresh_every_time(
    free: list[list[float]], wd: list[float], pd: list[float], workers: int, ps: int
) -> None:
    """Counting only the machine just used gives the placement of counting every machine
    before every choice (the rule as :func:`placement.place_packed` states it)."""
    f, w, p = np.array(free), np.array(wd), np.array(pd)
    assert placement.packed_numpy(f, w, p, workers, ps) == _afresh(f, w, p, workers, ps)


def _afresh(free, wd, pd, workers, ps):  # type: ignore[no-untyped-def]
    left = free.copy()
    w_cnt: dict[int, int] = {}
    s_cnt: dict[int, int] = {}
    need = workers
    while need > 0:
        fits = placement._fit_count(left, wd)
        m = int(np.argmax(fits))
        if fits[m] <= 0:
            return None
        k = int(min(fits[m], need))
        left[m] -= k * wd
        w_cnt[m] = w_cnt.get(m, 0) + k
        need -= k
    for _ in range(ps):
        fits = placement._fit_count(left, pd)
        used = [m for m in sorted(w_cnt) if fits[m] > 0]
        if used:
            m = used[0]
        else:
            m = int(np.argmax(fits))
            if fits[m] <= 0:
                return None
        left[m] -= pd
        s_cnt[m] = s_cnt.get(m, 0) + 1
    return placement.Placement.from_counts(w_cnt, s_cnt)
