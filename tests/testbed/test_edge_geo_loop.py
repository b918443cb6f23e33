"""The closed-loop testbed runs of ``edge-cloud`` and ``geo`` (:mod:`dmlsched.testbed.edge_geo`),
driven with a fake clock and executor (no process): at the model's speed they give what
``simulate`` gives; slower, the scheduler sees the measured progress; impossible progress is
refused; the cheat catalogue is refused or gains nothing as in the simulator."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from dmlsched.checks.replay import Replay, result_bytes
from dmlsched.checks.tiny import run_rng, tiny
from dmlsched.errors import InvalidDecision, InvalidReport
from dmlsched.model.cluster import Placement
from dmlsched.model.speed.aonline import processing_capacity
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.testbed.edge_geo import run_edge_cloud, run_geo
from dmlsched.testbed.fake import FakeClock, FakeExecutor
from dmlsched.testbed.runtime import TrainSpec
from dmlsched.testbed.workload import testbed_edge_workload as edge_workload
from tests.sim.test_boundary import CHEATS, honest

S = 10.0


class Recorded:
    """Wraps a scheduler; remembers each dispatched job's ζ (all chunks in the cloud)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = type(inner).name
        self.zeta: dict[int, int] = {}

    def reset(self, system: Any, *rest: Any) -> None:
        self.cloud = system.servers
        self.inner.reset(system, *rest)

    def decide(self, view: Any) -> Any:
        d = self.inner.decide(view)
        for j, places in d.dispatch.items():
            self.zeta[j] = int(all(s == self.cloud for s, _ in places))
        return d


def _edge(wl: Any, sched: Any, speed: float = 1.0, **kw: Any) -> Any:
    """The edge-cloud loop with a fake whose workers each train n_j × ``speed`` per slot."""
    rec = Recorded(sched)
    jobs = {j.id: j for j in wl.jobs}

    def rate(j: int, p: Placement) -> float:
        job = jobs[j]
        return speed * sum(p.workers) * processing_capacity(job, rec.zeta[j], wl.system.speedup)

    clock = FakeClock()
    ex = FakeExecutor(dict.fromkeys(jobs, math.inf), rate, clock, S)
    specs = {j: TrainSpec(job=j, target=1e15) for j in jobs}
    type(rec).name = rec.name  # the loop names the run after type(scheduler).name
    return run_edge_cloud(wl, rec, None, specs, S, executor=ex, clock=clock, **kw), ex


def _same_run(a: Any, b: Any) -> None:
    """Same completions, JCTs, preemptions and events; Eq. (3)'s flow to the last ulp or so
    (a fake's job rate ÷ its chunks is n_j up to rounding)."""
    ma, mb = a.metrics, b.metrics
    for k in ("total_jct", "completed_jobs", "preemptions", "makespan", "utilization"):
        assert ma[k] == mb[k], k
    assert ma["fractional_flow"] == pytest.approx(mb["fractional_flow"], rel=1e-12)
    assert a.events == b.events


@pytest.mark.parametrize("name", ["a-online", "srtf", "tiresias-l", "batchsche"])
@pytest.mark.parametrize("seed", [1, 2])
def test_edge_cloud_at_the_models_speed_runs_as_simulate_does(name: str, seed: int) -> None:
    wl = tiny("edge-cloud", seed)
    run, ex = _edge(wl, make_scheduler("edge-cloud", name))
    _same_run(
        run.result, simulate("edge-cloud", wl, make_scheduler("edge-cloud", name), run_rng(0))
    )
    assert run.slots_run == len(run.plans) and ex.applied


def test_edge_cloud_slower_than_the_model_finishes_later_and_the_scheduler_sees_it() -> None:
    wl = edge_workload(
        3, np.random.default_rng(0), slot_seconds=S, edge_step_s=0.3, cloud_step_s=0.1
    )
    seen: list[float] = []
    inner = make_scheduler("edge-cloud", "srtf")

    class Spy:
        name = "srtf"

        def reset(self, *a: Any) -> None:
            inner.reset(*a)

        def decide(self, view: Any) -> Any:
            seen.extend(float(r.sum()) for r in view.remaining.values())
            return inner.decide(view)

    fast, _ = _edge(wl, make_scheduler("edge-cloud", "srtf"))
    slow, _ = _edge(wl, Spy(), speed=0.5)
    assert slow.result.metrics["total_jct"] > fast.result.metrics["total_jct"]
    assert slow.result.metrics["completed_jobs"] == fast.result.metrics["completed_jobs"]
    assert any(x != int(x) for x in seen)  # measured, fractional progress was shown


def test_edge_cloud_work_beyond_what_a_worker_can_do_is_refused() -> None:
    with pytest.raises(InvalidReport, match="source=testbed") as e:
        _edge(tiny("edge-cloud", 1), make_scheduler("edge-cloud", "srtf"), speed=5.0)
    assert "can do" in e.value.detail


# ---------------------------------------------------------------- geo


def _geo(wl: Any, sched: Any, apply_seconds: float = 0.0) -> Any:
    clock = FakeClock()
    ids = [j.id for j in wl.jobs]
    never_done = dict.fromkeys(ids, math.inf)
    ex = FakeExecutor(never_done, lambda j, p: float(sum(p.workers)), clock, S, apply_seconds)
    specs = {j: TrainSpec(job=j, target=1e15) for j in ids}
    return run_geo(wl, sched, None, specs, S, executor=ex, clock=clock, mover=lambda t, moves: list)


@pytest.mark.parametrize("name", ["local", "central", "mlbroker", "oasis-geo"])
def test_geo_with_workers_that_run_the_whole_slot_gives_the_bytes_of_simulate(name: str) -> None:
    wl = tiny("geo", 2)
    run = _geo(wl, make_scheduler("geo", name))
    expect = simulate("geo", wl, make_scheduler("geo", name), run_rng(0))
    assert result_bytes(run.result) == result_bytes(expect)
    assert run.unprocessed == {}


def test_geo_workers_that_run_half_the_slot_leave_data_that_is_routed_again() -> None:
    wl = tiny("geo", 2)
    full = _geo(wl, make_scheduler("geo", "local"))
    half = _geo(wl, make_scheduler("geo", "local"), apply_seconds=S / 2)
    assert half.result.metrics["workers"] > full.result.metrics["workers"]
    assert sum(half.unprocessed.values()) > 0
    moved = {k: w for k, w in half.work.items() if w > 0}
    assert moved and all(w <= full.work[k] * 1.5 for k, w in moved.items())


# ---------------------------------------------------------------- the cheat catalogue

LOOP_CHEATS = [c for c in CHEATS if c.setting in ("edge-cloud", "geo")]


@pytest.mark.parametrize("cheat", LOOP_CHEATS, ids=[c.name for c in LOOP_CHEATS])
def test_a_cheat_on_the_testbed_loop_is_refused_or_gains_nothing(cheat: Any) -> None:
    def run(on_decide: Any, on_reset: Any) -> Any:
        sched = Replay(cheat.setting, honest(cheat.setting)[1], on_decide, on_reset)
        wl = tiny(cheat.setting)
        return (_edge(wl, sched)[0] if cheat.setting == "edge-cloud" else _geo(wl, sched)).result

    if cheat.refused:
        with pytest.raises(InvalidDecision, match=cheat.match) as e:
            run(cheat.on_decide, cheat.on_reset)
        assert e.value.scheduler == "replay"
    else:
        got, fair = run(cheat.on_decide, cheat.on_reset), run(None, None)
        assert got.metrics == fair.metrics and got.events == fair.events


def test_what_a_run_reports_is_what_its_slots_measured_not_its_processes_stopping() -> None:
    class SlowStop(FakeExecutor):
        """Stopping the processes takes 3 s, in which they go on training."""

        def close(self) -> None:
            self.clock.sleep(3.0)
            super().close()

    wl = tiny("edge-cloud", 1)
    jobs = {j.id: j for j in wl.jobs}
    clock = FakeClock()
    ex = SlowStop(dict.fromkeys(jobs, math.inf), lambda j, p: float(sum(p.workers)), clock, S)
    seen: list[dict] = []
    measure = ex.measure
    ex.measure = lambda: seen.append(measure()) or seen[-1]  # type: ignore[method-assign]
    specs = {j: TrainSpec(job=j, target=1e15) for j in jobs}
    run = run_edge_cloud(wl, make_scheduler("edge-cloud", "srtf"), None, specs, S,
                         executor=ex, clock=clock)  # fmt: skip
    after = measure()
    assert run.status == seen[-1]
    assert any(after[j].work > seen[-1][j].work for j in after)  # they did train on
