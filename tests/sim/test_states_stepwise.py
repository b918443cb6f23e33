"""Every slot-by-slot engine state (edge-cloud, geo, interval) driven by a driver written
here (:mod:`tests.sim.stepwise`, as the testbed and the service drive them) gives the bytes
of ``simulate``; the cheat catalogue of :mod:`tests.sim.test_boundary` is refused (or gains
nothing) alike; a refused decision leaves the state exactly as it was and the run goes on."""

from __future__ import annotations

from typing import Any

import pytest

from dmlsched.checks.replay import Replay, result_bytes
from dmlsched.checks.tiny import run_rng, tiny
from dmlsched.errors import InvalidDecision
from dmlsched.schedulers.protocols import make_scheduler, scheduler_names
from dmlsched.sim.engine import simulate
from tests.sim.stepwise import STATES, engine_snapshot, stepwise
from tests.sim.test_boundary import CHEATS, honest

SETTINGS = sorted(STATES)
RUNS = [(s, n) for s in SETTINGS for n in scheduler_names(s)]
STEP_CHEATS = [c for c in CHEATS if c.setting in STATES]


def _outcome(fn: Any) -> Any:
    try:
        return "ran", result_bytes(fn())
    except InvalidDecision as e:
        return "refused", str(e)


def test_every_slot_by_slot_setting_has_a_state() -> None:
    assert SETTINGS == ["edge-cloud", "geo", "interval"]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(("setting", "name"), RUNS)
def test_driving_the_state_step_by_step_gives_the_bytes_of_simulate(
    setting: str, name: str, seed: int
) -> None:
    wl = tiny(setting, seed)
    a = simulate(setting, wl, make_scheduler(setting, name), run_rng(seed))
    b = stepwise(setting, wl, make_scheduler(setting, name), run_rng(seed))
    assert result_bytes(a) == result_bytes(b)


@pytest.mark.parametrize("cheat", STEP_CHEATS, ids=[c.name for c in STEP_CHEATS])
def test_a_cheat_driven_step_by_step_is_refused_or_gains_nothing(cheat: Any) -> None:
    def run(driver: Any) -> Any:
        sched = Replay(cheat.setting, honest(cheat.setting)[1], cheat.on_decide, cheat.on_reset)
        return _outcome(lambda: driver(cheat.setting, tiny(cheat.setting), sched, run_rng()))

    got = run(stepwise)
    assert got == run(lambda *a: simulate(*a))
    assert got[0] == ("refused" if cheat.refused else "ran")
    if not cheat.refused:
        assert got[1] == honest(cheat.setting)[0]


@pytest.mark.parametrize("setting", SETTINGS)
def test_a_refused_decision_leaves_the_state_as_it_was_and_the_run_goes_on(setting: str) -> None:
    """Before each honest decision, every refused cheat of the catalogue is tried first."""
    refused = [c for c in STEP_CHEATS if c.setting == setting and c.refused and c.on_decide]
    decisions = honest(setting)[1]
    state = STATES[setting](tiny(setting), "replay")
    cheats = [Replay(setting, decisions, c.on_decide) for c in refused]
    for c in cheats:
        c.reset()
    caught: set[int] = set()
    while not state.over:
        view = state.reveal()
        before = engine_snapshot(state)
        for k, c in enumerate(cheats):
            c.calls_ = state.slot
            d = c.decide(view)
            try:
                state.judge(d)
                continue  # this cheat's trick does not apply in this slot
            except InvalidDecision as e:
                told = str(e)
            with pytest.raises(InvalidDecision) as e:
                state.accept(d)
            assert str(e.value) == told
            assert engine_snapshot(state) == before
            caught.add(k)
        state.accept(decisions[state.slot])
        state.credit()
    assert result_bytes(state.result()) == honest(setting)[0]
    assert len(caught) == len(refused)
