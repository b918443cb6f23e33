"""Flow-level simulation of PS jobs on capped links, by hand."""

from __future__ import annotations

import math

import pytest

from dmlsched.model.speed.flows import HEADER_BYTES, FlowJob, Network, step_seconds
from dmlsched.testbed.transport import HEADER

C = 1e6  # bytes/s on every NIC
G = 1e5 - HEADER_BYTES  # a push of 1e5 bytes with its header: 0.1 s alone
T1 = 0.1


def _net(h: int = 3, loop: float = math.inf, burst: float = 0.0) -> Network:
    return Network((C,) * h, (C,) * h, (loop,) * h, burst)


def _split(w: int, s: int = 1, wm: int = 0, pm: int = 1, compute: float = 0.0) -> FlowJob:
    return FlowJob((wm,) * w, (pm,) * s, G / s, compute)


@pytest.mark.parametrize("transport", ["fair", "fifo"])
def test_one_worker_pushes_then_pulls(transport):
    assert step_seconds([_split(1)], _net(), transport) == [pytest.approx(2 * T1)]
    # compute adds to the step
    assert step_seconds([_split(1, compute=0.05)], _net(), transport) == [pytest.approx(0.25)]


def test_fair_workers_share_the_nic_and_never_pipeline():
    # W workers to one PS: W flows at C/W each, then W replies: 2·W·t_one
    for w in (2, 3):
        assert step_seconds([_split(w)], _net(), "fair") == [pytest.approx(2 * w * T1)]


def test_fifo_workers_pipeline_push_and_pull():
    # one sender at a time: worker 0's next push overlaps the replies to the others,
    # so W workers take (W + 1)·t_one (the calibrated ω = 1)
    for w in (2, 3):
        assert step_seconds([_split(w)], _net(), "fifo") == [pytest.approx((w + 1) * T1)]


def test_two_jobs_on_the_same_links_halve_each_other():
    a, b = step_seconds([_split(1), _split(1)], _net(), "fair")
    assert a == pytest.approx(4 * T1) and b == pytest.approx(4 * T1)


def test_opposite_directions_do_not_interfere():
    # full duplex: 0 → 1 and 1 → 0 use different egress/ingress links... until the pulls
    a, b = step_seconds([_split(1), _split(1, wm=1, pm=0)], _net(), "fair")
    # push of one meets the pull of the other on every link, both in lockstep: no sharing
    assert a == pytest.approx(2 * T1) and b == pytest.approx(2 * T1)


def test_connections_not_jobs_share_a_link():
    # job A: 1 worker on m1 → 1 PS on m0; job B: 3 workers on m2 → 1 PS on m1.
    # m1's ingress carries B's 3 pushes and m1's egress A's push: A shares nothing with B
    # in the push phase; B's 3 replies leave m1 and A's reply enters m1: no sharing either.
    # With B's 3 workers on m1 instead, A's push shares m1's egress with 3 flows.
    alone = step_seconds([FlowJob((1,), (0,), G, 0.0)], _net(), "fair")[0]
    a, _ = step_seconds(
        [FlowJob((1,), (0,), G, 0.0), FlowJob((1, 1, 1), (2,), G, 0.0)], _net(), "fair"
    )
    assert alone == pytest.approx(2 * T1)
    assert a > 2.0 * alone  # one connection of four on m1's NIC, not one job of two


def test_jobs_on_other_links_are_simulated_alone():
    a, b = step_seconds([_split(2), _split(1, wm=2, pm=2)], _net(loop=C), "fair")
    assert a == pytest.approx(4 * T1) and b == pytest.approx(2 * T1)


def test_uncapped_links_cost_nothing():
    assert step_seconds([_split(1, wm=0, pm=0, compute=0.01)], _net(), "fair") == [
        pytest.approx(0.01)
    ]


def test_start_offsets_average_the_phase_of_fair_sharing():
    # in lockstep two jobs halve each other; half a step apart one pushes while the other
    # pulls (full duplex) and neither slows; the fluid model keeps any offset, so over
    # evenly spread offsets the slowdown is in between (linear in the offset: ≈ 1.5)
    a, b = step_seconds([_split(1), _split(1)], _net(), "fair", phases=8)
    assert 1.35 * 2 * T1 < a < 1.65 * 2 * T1 and b == pytest.approx(a, rel=0.05)
    # fifo settles into the alternation whatever the offset
    a, _ = step_seconds([_split(1), _split(1)], _net(), "fifo", phases=8)
    assert a == pytest.approx(2 * T1, rel=0.02)


def test_the_model_counts_the_transports_header():
    assert HEADER.size == HEADER_BYTES
