"""Drive an engine state slot by slot in the test itself (as the testbed and the service do),
so that what ``simulate`` gives can be compared with a driver that is not ``simulate``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dmlsched.sim.edge_cloud import EdgeCloudState
from dmlsched.sim.engine import RunResult

STATES: dict[str, Any] = {"edge-cloud": EdgeCloudState}

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
