from __future__ import annotations

import pytest

from dmlsched.schedulers._shared.priority import (
    haprf_key,
    las_order,
    las_queue,
    srtf_order,
    starving,
)


def test_srtf_orders_by_remaining_time_then_arrival() -> None:
    assert srtf_order([1, 2, 3], {1: 5.0, 2: 2.0, 3: 2.0}, {1: 0, 2: 4, 3: 1}) == [3, 2, 1]


def test_las_queue_discretizes_attained_service() -> None:
    th = (10.0, 100.0)
    assert [las_queue(a, th) for a in (0, 9.9, 10, 99, 100, 1e6)] == [0, 0, 1, 1, 2, 2]
    with pytest.raises(ValueError, match="increase"):
        las_queue(1.0, (5.0, 5.0))


def test_las_order_is_fifo_inside_a_queue_and_promotion_jumps_to_the_top() -> None:
    att = {1: 50.0, 2: 5.0, 3: 60.0, 4: 500.0}
    arr = {1: 3, 2: 9, 3: 1, 4: 0}
    assert las_order([1, 2, 3, 4], att, arr, (10.0, 100.0)) == [2, 3, 1, 4]
    assert las_order([1, 2, 3, 4], att, arr, (10.0, 100.0), promoted={4}) == [4, 2, 3, 1]


def test_starvation_guard_needs_waiting_knob_times_execution() -> None:
    assert starving(16, 2, 8.0) and not starving(15, 2, 8.0)
    assert not starving(100, 0, 8.0) and not starving(100, 1, None)


def test_haprf_prefers_higher_average_processing_rate_then_fifo() -> None:
    # γ = n / (E D B): 2/10 > 1/10 = 3/30
    keys = {
        "a": haprf_key(1.0, 10.0, 5),
        "b": haprf_key(2.0, 10.0, 9),
        "c": haprf_key(3.0, 30.0, 1),
    }
    assert sorted(keys, key=keys.get) == ["b", "c", "a"]
    with pytest.raises(ValueError):
        haprf_key(0.0, 1.0, 0)
