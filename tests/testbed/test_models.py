"""Pure parts of the testbed: token buckets, the calibrated speed forms, profiles."""

from __future__ import annotations

import dataclasses
import json
import time

import numpy as np
import pytest

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import ClusterJob
from dmlsched.model.speed.calibrated import (
    CalibratedSpeed,
    eq1_step,
    link_times,
    links_step,
    one_worker_ext,
)
from dmlsched.testbed.shaping import TokenBuckets
from dmlsched.workloads.speed_profile import PROFILE_FORMAT, load_speed_profile


def test_token_bucket_holds_the_rate_of_one_flow(tmp_path):
    tb = TokenBuckets.create(tmp_path / "tb", [8e6, 0.0], burst_bytes=16 * 1024)  # 1 MB/s
    t0 = time.monotonic()
    sent = 0
    while sent < 400_000:
        wait = tb.reserve((0, 4), 16 * 1024)  # egress of machine 0, ingress of machine 1
        if wait > 0:
            time.sleep(wait)
        sent += 16 * 1024
    rate = sent / (time.monotonic() - t0)
    assert 0.85e6 < rate < 1.15e6


def test_unlimited_buckets_never_wait(tmp_path):
    tb = TokenBuckets.create(tmp_path / "tb", [0.0], burst_bytes=1024)
    assert tb.reserve((0, 1, 2), 10**9) == 0.0


def test_eq1_step_by_hand():
    # F = 64, W = 2, S = 1, τ = 10 µs, g/b = 5 ms: 32·1e-5 + 2·5e-3 = 10.32 ms
    assert eq1_step(64, 2, 1, True, 1e-5, 5e-3, 1.0) == pytest.approx(0.01032)
    assert eq1_step(64, 2, 2, False, 1e-5, 0.0, 8e-3) == pytest.approx(32e-5 + 8e-3)


def test_link_times_count_the_shared_bottleneck():
    # two workers on machine 0, one PS on machine 1: machine 1 receives 2·g per push
    t_ext, t_int = link_times((2, 0), (0, 1), (1e6, 1e6), (0.0, 0.0), 1e5)
    assert t_ext == pytest.approx(0.2) and t_int == 0.0
    # co-located 2 workers + 2 PSs, loopback 1 MB/s: w·s·g/S = 2·2·1e5/2 bytes
    t_ext, t_int = link_times((2,), (2,), (1e6,), (1e6,), 1e5)
    assert t_ext == 0.0 and t_int == pytest.approx(0.2)
    step = links_step(64, (2,), (2,), (1e6,), (1e6,), 1e5, 1e-5, 2.0, 1.5, 0.001)
    assert step == pytest.approx(32e-5 + 2 * 0.2 * 1.5 + 0.001)


def test_overlap_and_pipeline_terms_by_hand():
    # mixed: a worker on machine 0 with the PS (loopback), one on machine 1 (NIC), 1 MB/s each
    # e = 2·0.1 s, i = 2·0.1 s; κ = 0 → max = 0.2 s; κ = 1 → sum = 0.4 s
    args = (64, (1, 1), (1, 0), (1e6, 1e6), (1e6, 1e6), 1e5, 0.0, 1.0, 1.0, 0.0)
    assert links_step(*args, overlap=0.0) == pytest.approx(0.2)
    assert links_step(*args, overlap=1.0) == pytest.approx(0.4)
    # split W = 3 → 1 PS: t_ext = 0.3 s, t_one = 0.1 s; ω = 1 → 2·0.3 − 0.2 = 0.4 s = (W + 1)·t_one
    args = (64, (3, 0), (0, 1), (1e6, 1e6), (0.0, 0.0), 1e5, 0.0, 1.0, 1.0, 0.0)
    assert one_worker_ext((3, 0), (0, 1), (1e6, 1e6), 1e5) == pytest.approx(0.1)
    assert links_step(*args, pipeline=1.0) == pytest.approx(0.4)
    assert links_step(*args, pipeline=0.0) == pytest.approx(0.6)
    assert links_step(*args) == pytest.approx(0.6)  # defaults: the form as first fitted


def _job(mode="sync"):
    return ClusterJob(
        id=0,
        arrival=0,
        epochs=1,
        samples=100,
        batch=64,
        grad_mb=0.08,
        tau=1e-6,
        gamma=1,
        worker_demand=(0, 1, 1, 1),
        ps_demand=(0, 1, 1, 1),
        b_int=1.0,
        b_ext=0.1,
        mode=mode,
    )


def test_calibrated_speed_is_samples_per_slot():
    sp = CalibratedSpeed("eq1", 10.0, 1e-5, 8e4, g_over_b_int=1e-3, g_over_b_ext=1e-2)
    step = eq1_step(64, 2, 1, True, 1e-5, 1e-3, 1e-2)
    assert sp.rate(_job(), (0,), (2,), (1,)) == pytest.approx(64 / step * 10.0)
    split = eq1_step(64, 2, 1, False, 1e-5, 1e-3, 1e-2)
    assert sp.rate(_job(), (0, 1), (2, 0), (0, 1)) == pytest.approx(64 / split * 10.0)
    assert sp.rate(_job(), (0,), (0,), (1,)) == 0.0


def test_eq1_profile_scales_external_time_with_the_cap(tmp_path):
    prof = {
        "format": PROFILE_FORMAT,
        "default": "eq1",
        "slot_seconds": 10.0,
        "ext_mbit": [20.0],
        "int_mbit": [0.0],
        "grad_bytes": 8e4,
        "forms": {"eq1": {"batch_tau_s": 1e-5, "g_over_b_int": 1e-3, "g_over_b_ext": 1e-2}},
    }
    path = tmp_path / "p.json"
    path.write_text(json.dumps(prof))
    at20 = load_speed_profile(path)
    at40 = load_speed_profile(path, ext_mbit=(40.0,))
    r20 = at20.rate(_job(), (0, 1), (1, 0), (0, 1))
    r40 = at40.rate(_job(), (0, 1), (1, 0), (0, 1))
    assert 64 / r40 * 10 == pytest.approx(64e-5 + 2 * 0.5e-2)
    assert r40 > r20


def test_a_bad_profile_names_the_field(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"format": "other"}))
    with pytest.raises(InvalidInput, match="format"):
        load_speed_profile(path)
    with pytest.raises(InvalidInput, match="speed"):
        load_speed_profile(tmp_path / "missing.json")


def _one_mbyte_links() -> CalibratedSpeed:
    """A `links` profile with 1 MB/s external links, an uncapped loopback, τ = 0, no overhead."""
    return CalibratedSpeed(
        "links",
        10.0,
        0.0,
        1e5,
        inv_eta_ext=1.0,
        inv_eta_int=1.0,
        overhead_s=0.0,
        ext_mbit=(8.0,),
        int_mbit=(0.0,),
    )


def test_links_profile_predicts_the_shared_link():
    sp = _one_mbyte_links()
    # two workers on machine 0 push 2 × 1e5 bytes to the PS on machine 1 at 1 MB/s: 0.2 s,
    # pull the same back: a step of 0.4 s, 64 samples → 160 samples/s, 1,600 per 10-s slot
    assert sp.rate(_job(), (0, 1), (2, 0), (0, 1)) == pytest.approx(1600.0)
    assert sp.step_seconds(64, (0,), (2,), (1,)) == 0.0 + 0.0  # uncapped loopback, τ = 0


def test_jobs_sharing_a_saturated_link_slow_each_other_down():
    import dataclasses

    from dmlsched.model.cluster import Placement

    sp = _one_mbyte_links()  # ω = 0: the links share their flows max-min fairly
    split = Placement((0, 1), (1, 0), (0, 1))  # 0.2 s a step alone (1e5 B each way at 1 MB/s)
    alone = sp.rate(_job(), split.machines, split.workers, split.ps)
    a, b = sp.slot_rates([(_job(), split), (_job(), split)])
    # two jobs on the same two links: twice as slow when they push at once, not slowed when
    # one pushes while the other pulls (full duplex); over start offsets, in between
    assert alone / 1.7 < a < alone / 1.3 and b == pytest.approx(a, rel=0.05)
    # in arrival order (ω = 1) they settle into that alternation
    fifo = dataclasses.replace(sp, pipeline=1.0)
    a1, _ = fifo.slot_rates([(_job(), split), (_job(), split)])
    assert a1 > 0.95 * fifo.rate(_job(), split.machines, split.workers, split.ps)
    # a job on other machines is not slowed
    other = Placement((2, 3), (1, 0), (0, 1))
    _, c = sp.slot_rates([(_job(), split), (_job(), other)])
    assert c == pytest.approx(alone)
    # four connections through machine 1's NIC (3 workers → PS, the other job's worker)
    busy = Placement((1, 2), (3, 0), (0, 1))
    d, _ = sp.slot_rates([(_job(), Placement((1, 0), (1, 0), (0, 1))), (_job(), busy)])
    assert d < alone / 1.7


def test_calibration_fit_recovers_the_links_constants():
    # probes generated by the links form itself: the nonlinear fit must find κ and ω again
    from dmlsched.testbed.calibrate import Probe, _plan, _predict, fit

    g = 76_840.0
    truth = np.array([3e-5, 1.1, 0.95, 2e-3, 0.2, 0.6])
    probes = [
        Probe(p.workers, p.ps, p.cap_mbit, _predict("links", truth, p, g, 50.0))
        for p in _plan([5.0, 10.0, 20.0])
    ]
    x = fit(probes, g, 50.0)["links"]
    for p in probes:
        assert _predict("links", x, p, g, 50.0) == pytest.approx(p.step_s, rel=1e-4)
    assert x[4] == pytest.approx(0.2, abs=1e-3) and x[5] == pytest.approx(0.6, abs=1e-3)


def test_the_namespace_prefix_comes_from_the_environment(monkeypatch):
    from dmlsched.testbed import state

    monkeypatch.setenv(state.PREFIX_ENV, "dmtb")
    assert state._prefix() == "dmtb-"
    monkeypatch.delenv(state.PREFIX_ENV)
    assert state._prefix() == "dmlt-"
    monkeypatch.setenv(state.PREFIX_ENV, "Bad-Name")
    with pytest.raises(InvalidInput, match=state.PREFIX_ENV):
        state._prefix()


def _profile_with_slow_told_eq1() -> dict:
    """A `links` profile whose told Eq. (1) (``scheduler_eq1``) is 8× slower on a remote PS
    than its fit: the shape calibration gives, bounding every probe from above."""
    return {
        "format": PROFILE_FORMAT,
        "default": "links",
        "slot_seconds": 20.0,
        "ext_mbit": [10.0],
        "int_mbit": [50.0],
        "grad_bytes": 76_840.0,
        "scheduler_eq1": {"batch_tau_s": 0.0, "g_over_b_int": 0.05, "g_over_b_ext": 0.6},
        "forms": {
            "eq1": {"batch_tau_s": 0.0, "g_over_b_int": 0.0187, "g_over_b_ext": 0.075},
            "links": {
                "batch_tau_s": 0.0,
                "inv_eta_ext": 1.0,
                "inv_eta_int": 1.0,
                "overhead_s": 0.001,
            },
        },
    }


def test_the_engine_bounds_measured_work_by_the_profile_not_by_what_schedulers_are_told():
    from dmlsched.errors import InvalidReport
    from dmlsched.model.cluster import ClusterDecision, Placement
    from dmlsched.model.speed.pdors import job_rate
    from dmlsched.sim.cluster import ClusterState
    from dmlsched.sim.drive import MEASURED_SLACK
    from dmlsched.testbed.workload import testbed_workload

    prof = _profile_with_slow_told_eq1()
    tw = testbed_workload(1, 2, 5, np.random.default_rng(0), slot_seconds=20.0, profile=prof)
    job = dataclasses.replace(tw.workload.jobs[0], arrival=0)
    wl = dataclasses.replace(tw.workload, jobs=(job,))
    split = Placement((0, 1), (1, 0), (0, 1))  # one worker, its PS on the other machine
    told = job_rate(job, split.machines, split.workers, split.ps)
    engine = wl.speed
    assert engine is not None and engine.form == "links"
    real = engine.rate(job, split.machines, split.workers, split.ps)
    assert real > MEASURED_SLACK * told  # the told constants are far too slow for this

    def placed() -> ClusterState:
        state = ClusterState(wl, "s")
        state.reveal()
        state.accept(ClusterDecision({job.id: split}))
        return state

    # what the processes really did on that placement is credited ...
    assert placed().credit({job.id: real}).per_slot == {job.id: real}
    # ... and the bound still holds, at the engine's own rate
    with pytest.raises(InvalidReport, match="can do in 1 slot"):
        placed().credit({job.id: real * MEASURED_SLACK * 1.01}, source="testbed")
    # without a profile the engine's model is Eq. (1) on the nominal constants
    nominal = testbed_workload(1, 2, 5, np.random.default_rng(0), slot_seconds=20.0)
    assert nominal.workload.speed is None


def test_a_shaped_channel_measures_its_pacing_lag(tmp_path):
    import socket
    import threading

    from dmlsched.testbed.transport import Channel

    tb = TokenBuckets.create(tmp_path / "tb", [8e6, 0.0], burst_bytes=4096)  # 1 MB/s
    srv = socket.create_server(("127.0.0.1", 0))
    a = socket.create_connection(srv.getsockname())
    b, _ = srv.accept()
    srv.close()
    got = []
    reader = threading.Thread(target=lambda: got.extend(Channel(b).recv() for _ in "xy"))
    reader.start()
    ch = Channel(a, tb, (0, 4))
    payload = np.zeros(50_000, dtype=np.float32)  # 200,000 B: four 64 KB chunks
    ch.send(2, payload=payload)
    # the header's chunk starts a message; each of the four payload chunks continues it
    assert ch.lag_n == 4
    ch.send(2, payload=payload)
    reader.join(timeout=10)
    assert ch.lag_n == 8 and len(got) == 2
    assert 0.0 <= ch.lag_s / ch.lag_n < 0.05  # late by the sleep's overshoot, not by a rate
    a.close()
    b.close()


def test_calibration_records_the_buckets_and_the_probes_mean_lag(tmp_path):
    from dmlsched.testbed.calibrate import _pacing
    from dmlsched.testbed.emulation import BUCKET_BYTES

    for job, (lag, n) in enumerate(((0.003, 10), (0.001, 30))):
        inc = tmp_path / f"job-{job}" / "inc-0"
        inc.mkdir(parents=True)
        (inc / "ps-0.json").write_text(json.dumps({"pace_lag_s": lag, "pace_lag_n": n}))
    (tmp_path / "job-2" / "inc-0").mkdir(parents=True)
    (tmp_path / "job-2" / "inc-0" / "ps-0.json").write_text("{not json")  # a torn write
    assert _pacing([tmp_path]) == {
        "bucket_bytes": float(BUCKET_BYTES),
        "lag_s": pytest.approx(0.004 / 40),
        "chunks": 40,
    }
    assert _pacing([tmp_path / "none"])["lag_s"] == 0.0


def test_the_profile_s_pacing_reaches_the_flow_model(tmp_path):
    from dmlsched.workloads.speed_profile import profile_speed

    prof = {
        "format": PROFILE_FORMAT,
        "default": "links",
        "slot_seconds": 20.0,
        "ext_mbit": [10.0],
        "grad_bytes": 76_840.0,
        "forms": {"links": {"batch_tau_s": 0.0, "overhead_s": 0.0024}},
    }
    plain = profile_speed(prof)
    assert (plain.bucket_bytes, plain.pacing_lag_s, plain.network(3).burst_bytes) == (0, 0, 0)
    paced = profile_speed({**prof, "pacing": {"bucket_bytes": 4096, "lag_s": 2.3e-4}})
    assert paced.network(3).burst_bytes == 4096.0 and paced.pacing_lag_s == 2.3e-4
    with pytest.raises(InvalidInput, match="pacing_lag_s"):
        profile_speed({**prof, "pacing": {"lag_s": -1.0}})
