"""Drive an engine state slot by slot in the test itself (as the testbed and the service do),
so that what ``simulate`` gives can be compared with a driver that is not ``simulate``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dmlsched.checks.replay import snapshot
from dmlsched.sim.edge_cloud import EdgeCloudState
from dmlsched.sim.geo import GeoState
from dmlsched.sim.interval import IntervalState
from dmlsched.sim.run import RunResult

STATES: dict[str, Any] = {"edge-cloud": EdgeCloudState, "geo": GeoState, "interval": IntervalState}

#: (state, what accept returned) -> the work to credit (None: the engine's speed model)
Work = Callable[[Any, Any], Any]


def stepwise(
    setting: str, wl: Any, scheduler: Any, rng: np.random.Generator, work: Work | None = None
) -> RunResult:
    state = STATES[setting](wl, type(scheduler).name)
    scheduler.reset(*state.reset_args(), rng)
    while not state.over:
        view = state.reveal()
        plan = state.accept(scheduler.decide(view))
        state.credit(None if work is None else work(state, plan))
    return state.result()


def engine_snapshot(state: Any) -> Any:
    """A comparable copy of what the engine computes from: the state's attributes but the
    copies it shows schedulers (named ``*shown*``/``*view*``), which a cheat may bend."""
    return snapshot({k: v for k, v in vars(state).items() if "shown" not in k and "view" not in k})
