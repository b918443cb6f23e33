"""Scheduler parameters are checked against the constructor's hints when the scheduler
is made, over the whole registry: every default passes, a value of the wrong type is
refused naming the scheduler and the parameter, and the value is passed on unchanged."""

from __future__ import annotations

import inspect
import json
import re

import pytest

from dmlsched.errors import InvalidInput
from dmlsched.schedulers.params import _adapters, _hints
from dmlsched.schedulers.protocols import SETTINGS, make_scheduler, registry

REGISTERED = sorted((s, n) for s in SETTINGS for (_, n) in registry(s))


def _defaults(cls: type) -> dict[str, object]:
    """Each checked parameter's default, from the constructor declaring it."""
    out: dict[str, object] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if not inspect.isfunction(init):
            continue
        for p in inspect.signature(init).parameters.values():
            if p.default is not p.empty:
                out.setdefault(p.name, p.default)
    return {k: v for k, v in out.items() if k in _adapters(cls)}


@pytest.mark.parametrize(("setting", "name"), REGISTERED)
def test_every_default_passes_its_own_hint(setting: str, name: str) -> None:
    cls = registry(setting)[(setting, name)]
    defaults = _defaults(cls)
    make_scheduler(setting, name, **defaults)  # as if a user had typed every default


@pytest.mark.parametrize(("setting", "name"), REGISTERED)
def test_a_value_of_the_wrong_type_is_refused_naming_the_parameter(setting: str, name: str) -> None:
    cls = registry(setting)[(setting, name)]
    for key in _defaults(cls):
        if "Any" in str(_hints(cls)[key]):
            continue
        with pytest.raises(InvalidInput, match=re.escape(f"invalid {name} parameter {key}=")):
            make_scheduler(setting, name, **{key: {"not": "this"}})


def test_json_from_a_command_line_is_read_strictly_and_passed_on_unchanged() -> None:
    for bad in ('"3"', "3.5", "true"):
        with pytest.raises(InvalidInput, match="fifo parameter max_workers"):
            make_scheduler("cluster", "fifo", max_workers=json.loads(bad))
    with pytest.raises(InvalidInput, match=r"parameter cloud_overflow=1 .*bool"):
        make_scheduler("edge-cloud", "srtf", cloud_overflow=1)
    # a list for a tuple, an int for a float: well typed, and passed on as given
    s = make_scheduler("edge-cloud", "tiresias-l", thresholds=[1, 2.5], promote_knob=3)
    assert tuple(s.thresholds) == (1, 2.5) and type(s.promote_knob) is int
    # values that are not JSON (a Python caller's objects) are the caller's business
    make_scheduler("cluster", "oasis", history=())
