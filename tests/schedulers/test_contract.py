"""One contract over the whole registry: every scheduler, every setting.

In the spirit of Gymnasium's environment checker and scikit-learn's common
tests, every registered scheduler, on a tiny workload of its setting:

* makes only valid decisions (the engine raises otherwise) and never
  mutates the view it was handed (snapshots before and after each call);
* gives the same bytes — metrics, events, series — for the same seed;
* gains nothing by tampering with everything it was shown: replaying its own
  decisions while bending every field of every object in every view and in
  ``reset``'s arguments gives the honest run's bytes;
* is refused when its decision names a job twice or comes as a subclass.

The cheats of :mod:`tests.sim.test_boundary` go further, one lie at a time.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest

from dmlsched.errors import InvalidDecision
from dmlsched.schedulers.protocols import make_scheduler, registry
from dmlsched.sim.engine import simulate
from tests.sim.cheats import (
    Replay,
    Twice,
    clone,
    result_bytes,
    run_rng,
    snapshot,
    tiny,
    vandalize,
)

ALL = sorted(registry())
IDS = [f"{s}:{n}" for s, n in ALL]
FIELD = {
    "cluster": "allocations",
    "interval": "allocations",
    "edge-cloud": "dispatch",
    "geo": "placements",
}


@cache
def honest(setting: str, name: str, seed: int = 3) -> tuple[bytes, tuple, dict[str, float]]:
    """A guarded honest run: every view is snapshotted before and after ``decide``."""
    sched = make_scheduler(setting, name)
    inner = sched.decide
    decisions: list = []

    def decide(view: Any) -> Any:
        before = snapshot(view)
        out = inner(view)
        assert snapshot(view) == before, f"{name} mutated its view at call {len(decisions) + 1}"
        decisions.append(clone(out))
        return out

    sched.decide = decide
    res = simulate(setting, tiny(setting, seed), sched, run_rng(seed))
    return result_bytes(res), tuple(decisions), res.metrics


@pytest.mark.parametrize(("setting", "name"), ALL, ids=IDS)
def test_scheduler_makes_valid_decisions_without_mutating_the_view(setting: str, name: str) -> None:
    _, decisions, metrics = honest(setting, name)
    # NaN is allowed for undefined means (e.g. mean_jct with no completed job)
    assert decisions and metrics and not any(np.isinf(v) for v in metrics.values())


@pytest.mark.parametrize(("setting", "name"), ALL, ids=IDS)
def test_same_seed_gives_same_bytes(setting: str, name: str) -> None:
    res = simulate(setting, tiny(setting), make_scheduler(setting, name), run_rng())
    assert result_bytes(res) == honest(setting, name)[0]


@pytest.mark.parametrize(("setting", "name"), ALL, ids=IDS)
def test_tampering_with_everything_shown_gains_nothing(setting: str, name: str) -> None:
    base, decisions, _ = honest(setting, name)
    sched = Replay(
        setting,
        list(decisions),
        on_decide=lambda s, view, d: vandalize(view) or d,
        on_reset=lambda s, *static: vandalize(static),
    )
    assert result_bytes(simulate(setting, tiny(setting), sched, run_rng())) == base


@pytest.mark.parametrize(("setting", "name"), ALL, ids=IDS)
def test_a_decision_naming_a_job_twice_or_of_a_subclass_is_refused(setting: str, name: str) -> None:
    field = FIELD[setting]
    _, decisions, _ = honest(setting, name)
    if not any(getattr(d, field) for d in decisions):
        pytest.skip(f"{name} never fills {field} on the tiny workload")

    def twice(s: Replay, view: Any, d: Any) -> Any:
        if getattr(d, field):
            object.__setattr__(d, field, Twice(getattr(d, field)))
        return d

    with pytest.raises(InvalidDecision, match="twice"):
        simulate(setting, tiny(setting), Replay(setting, list(decisions), twice), run_rng())

    def subclass(s: Replay, view: Any, d: Any) -> Any:
        sub = type("Sub" + type(d).__name__, (type(d),), {})
        return sub(*(getattr(d, f) for f in d.__dataclass_fields__))

    with pytest.raises(InvalidDecision, match="expected exactly"):
        simulate(setting, tiny(setting), Replay(setting, list(decisions), subclass), run_rng())


def test_registry_names_are_unique_per_setting_and_nonempty() -> None:
    assert ("cluster", "fifo") in ALL and ("cluster", "drf") in ALL
    assert len(ALL) == len(set(ALL))
    assert {s for s, _ in ALL} == {"cluster", "interval", "edge-cloud", "geo"}
