"""A scheduler loaded with ``--plugin`` that lies is refused by every driver (issue 27).

The plugin (:data:`CHEATER`) runs an honest scheduler and tells one lie of the cheat
catalogue (:mod:`dmlsched.checks.cheats`) on each of its decisions: changed job fields
it then relies on, zeroed demands, a decision over capacity, counts that lie about
their type, ...  ``dmlsched run`` (the simulator) refuses it with ``InvalidDecision``
in every setting; the testbed's loop refuses it (the catalogue through
``run_cluster`` with the fake executor and clock, the scheduler loaded through the
plugin mechanism; and once the real ``dmlsched testbed run``, which never starts a
training process for it); a real ``dmlsched serve`` refuses it and commits nothing
over capacity to its log.  The real processes run the whole catalogue too, most of it
under the ``slow`` marker.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from dmlsched.checks.cheats import Cheat, cheats_of
from dmlsched.checks.drivers import run_driver
from dmlsched.checks.tiny import tiny
from dmlsched.cli import main
from dmlsched.schedulers.plugins import load_plugin
from dmlsched.schedulers.protocols import SETTINGS, make_scheduler

HONEST = {"cluster": "fifo", "interval": "esw", "edge-cloud": "a-online", "geo": "local"}

CHEATER = """
from typing import ClassVar

from dmlsched.checks.cheats import CHEATS
from dmlsched.checks.replay import clone
from dmlsched.schedulers.protocols import make_scheduler

CHEAT = next(c for c in CHEATS if c.name == {cheat!r})


class Cheater:
    \"\"\"{honest}, whose every decision tells the lie {cheat}.\"\"\"

    name: ClassVar[str] = "cheater"
    setting: ClassVar[str] = {setting!r}

    def reset(self, static, horizon, rng):
        self.honest_ = make_scheduler({setting!r}, {honest!r})
        self.honest_.reset(static, horizon, rng)
        self.state_ = {{}}  # the hooks keep what they need here
        if CHEAT.on_reset is not None:
            CHEAT.on_reset(self, static, horizon, rng)

    def decide(self, view):
        d = clone(self.honest_.decide(view))
        return d if CHEAT.on_decide is None else CHEAT.on_decide(self, view, d)
"""

REFUSED = [c for s in SETTINGS for c in cheats_of(s) if c.refused]
# lies told about a decision the engine already accepted (refused at the next decision):
# the executor has run the engine's copy of the accepted placements meanwhile
LIES_AFTER_ACCEPTANCE = {"placement-grown-in-place-after-validation"}
IDS = [c.name for c in REFUSED]
CLUSTER = [c for c in REFUSED if c.setting == "cluster"]


def cheater(folder: Path, cheat: Cheat, honest: str | None = None) -> str:
    """The plugin file of a scheduler telling ``cheat``'s lie over ``honest`` (by default
    the setting's :data:`HONEST`)."""
    path = folder / "cheater.py"
    honest = honest or HONEST[cheat.setting]
    path.write_text(
        textwrap.dedent(CHEATER).format(cheat=cheat.name, setting=cheat.setting, honest=honest)
    )
    return str(path)


def _refusal(text: str, cheat: Cheat) -> None:
    assert "invalid decision (scheduler=cheater" in text, text
    if cheat.match:
        assert re.search(cheat.match, text), text


@pytest.mark.parametrize("cheat", REFUSED, ids=IDS)
def test_dmlsched_run_refuses_a_lying_plugin(
    plugin_sandbox: Path, capsys: pytest.CaptureFixture[str], cheat: Cheat
) -> None:
    path = cheater(plugin_sandbox, cheat)
    size = ["--jobs", "6", "--machines", "3", "--slots", "8"]
    args = ["run", "--plugin", path, "--scheduler", "cheater", "--setting", cheat.setting, *size]
    assert main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    _refusal(err[-1], cheat)


@pytest.mark.parametrize("cheat", CLUSTER, ids=[c.name for c in CLUSTER])
def test_the_testbed_loop_refuses_a_lying_plugin(plugin_sandbox: Path, cheat: Cheat) -> None:
    load_plugin(cheater(plugin_sandbox, cheat))
    run = run_driver(
        "cluster", "testbed", lambda: make_scheduler("cluster", "cheater"), tiny("cluster")
    )
    assert run.refusal is not None, f"the testbed accepted {cheat.name}"
    _refusal(run.refusal, cheat)


def _catalogue(fast: list[str]) -> list[Any]:
    """The cluster catalogue's refused cheats, those not in ``fast`` marked slow (each is a
    real process: ``make test-slow`` runs them all)."""
    return [
        pytest.param(c, id=c.name, marks=() if c.name in fast else pytest.mark.slow)
        for c in CLUSTER
    ]


@pytest.mark.parametrize("cheat", _catalogue(["zeroed-demands-packed-on-machine-0"]))
def test_dmlsched_testbed_run_refuses_a_lying_plugin_before_any_training_starts(
    plugin_sandbox: Path, capsys: pytest.CaptureFixture[str], cheat: Cheat
) -> None:
    out, state = plugin_sandbox / "out", plugin_sandbox / "state"
    args = [
        "testbed",
        "run",
        "--plugin",
        cheater(plugin_sandbox, cheat, honest="drf"),  # FIFO places none of these jobs
        "--scheduler",
        "cheater",
        "--jobs",
        "3",
        "--machines",
        "2",
        "--slots",
        "4",
        "--slot-seconds",
        "0.5",
        "--state-dir",
        str(state),
        "--out",
        str(out),
    ]
    assert main(args) == 1
    _refusal(capsys.readouterr().err.strip().splitlines()[-1], cheat)
    if cheat.name not in LIES_AFTER_ACCEPTANCE:
        assert not list((out / "run").rglob("inc-*")), "a training process was started"
    assert not [p for p in state.iterdir() if p.suffix == ".json"], "the run left state behind"


# ---------------------------------------------------------------- a real `dmlsched serve`


SERVE_CHEATS = [
    "zeroed-demands-packed-on-machine-0",
    "every-job-on-machine-0-over-capacity",
    "astronomical-worker-count",
    "placement-grown-in-place-after-validation",
]


def _usage_over_capacity(records: list[Any]) -> list[str]:
    """Every committed tick whose placements use more than a machine has."""
    capacity: dict[int, np.ndarray] = {}
    names: dict[str, int] = {}
    demand: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    over = []
    for r in records:
        if r.kind == "machine":
            h = names.setdefault(r.body["name"], len(names))
            capacity[h] = np.asarray(r.body["capacity"], float)
        elif r.kind == "submit":
            req = r.body["request"]
            demand[r.body["job"]] = (np.asarray(req["worker_demand"]), np.asarray(req["ps_demand"]))
        elif r.kind == "tick":
            usage = {h: np.zeros_like(c) for h, c in capacity.items()}
            for j, (machines, workers, ps) in r.body["alloc"].items():
                wd, pd = demand[int(j)]
                for h, w, s in zip(machines, workers, ps, strict=True):
                    usage[h] = usage[h] + w * wd + s * pd
            over += [
                f"slot {r.body.get('slot')}: machine {h} uses {u} > {capacity[h]}"
                for h, u in usage.items()
                if (u > capacity[h] * (1 + 1e-9)).any()
            ]
    return over


@pytest.mark.parametrize("cheat", _catalogue(SERVE_CHEATS))
def test_dmlsched_serve_refuses_a_lying_plugin_and_commits_nothing_over_capacity(
    plugin_sandbox: Path, cheat: Cheat
) -> None:
    from dmlsched.service.loadtest import JOB, ServiceProcess
    from dmlsched.service.store import open_store

    db = plugin_sandbox / "service.db"
    plugin = cheater(plugin_sandbox, cheat)
    args = ["--plugin", plugin, "--scheduler", "cheater", "--db", str(db), "--manual-clock"]
    svc = ServiceProcess(args, plugin_sandbox, token="tok")
    svc.start()
    try:
        for i in range(2):
            machine = {"name": f"m{i}", "capacity": [4.0, 16.0, 64.0, 100.0]}
            post = httpx.post(svc.url + "/v1/machines", json=machine, headers=svc.headers())
            post.raise_for_status()
        for ticks, epochs in ((1, 20), (2, 40), (3, 30)):
            job = {**JOB, "epochs": epochs}
            httpx.post(svc.url + "/v1/jobs", json=job, headers=svc.headers()).raise_for_status()
            tick = httpx.post(svc.url + "/v1/tick", params={"n": ticks}, headers=svc.headers())
            tick.raise_for_status()
    finally:
        svc.stop()
    store = open_store(str(db))
    try:
        records = list(store.records())
    finally:
        store.close()
    config = records[0]
    assert config.kind == "config" and config.body["plugins"] == [str(Path(plugin).resolve())]
    ticks = [r.body for r in records if r.kind == "tick"]
    errors = [t["error"] for t in ticks if t.get("error")]
    assert ticks and errors, json.dumps(ticks)[:2000]
    for e in errors:
        _refusal(e, cheat)
    assert not _usage_over_capacity(records)
    assert all(t["alloc"] == {} for t in ticks if t.get("error"))


def test_the_log_check_finds_a_tick_over_capacity() -> None:
    from dmlsched.service.store import Record

    records = [
        Record(1, "machine", {"name": "m0", "capacity": [4.0, 16.0, 64.0, 100.0]}),
        Record(
            2,
            "submit",
            {"job": 0, "request": {"worker_demand": [1, 2, 4, 5], "ps_demand": [0, 1, 2, 2]}},
        ),
        Record(3, "tick", {"slot": 0, "alloc": {"0": [[0], [4], [1]]}}),
        Record(4, "tick", {"slot": 1, "alloc": {"0": [[0], [5], [1]]}}),
    ]
    assert _usage_over_capacity(records[:3]) == []
    assert [line.split(":")[0] for line in _usage_over_capacity(records)] == ["slot 1"]
