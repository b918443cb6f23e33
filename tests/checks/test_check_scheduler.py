"""``dmlsched.check_scheduler`` finds what is wrong with a scheduler, and says so readably.

Each scheduler below breaks the contract in one way; the checker must fail
exactly the check that covers it, through the driver where it happens, with
the engine's message — and pass a scheduler that keeps it (the registry's
schedulers: tests/schedulers/test_contract.py).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import subprocess
import sys
from typing import Any, ClassVar

import pytest

import dmlsched
from dmlsched import check_scheduler
from dmlsched.checks import CheckReport, SchedulerCheckFailed
from dmlsched.checks import check as check_module
from dmlsched.checks.cheats import Cheat
from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import ClusterDecision, Placement


class OneMachineEach:
    """Admit each job on arrival: 1 worker + 1 PS on machine (job id mod H)."""

    name: ClassVar[str] = "one-machine-each"
    setting: ClassVar[str] = "cluster"

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers

    def reset(self, cluster: Any, horizon: int, rng: Any) -> None:
        self.machines_ = cluster.machines

    def decide(self, view: Any) -> ClusterDecision:
        jobs = (*view.active, *view.pending)
        w = self.workers
        return ClusterDecision({j: Placement((j % self.machines_,), (w,), (1,)) for j in jobs})


class MutatesView(OneMachineEach):
    name: ClassVar[str] = "mutates-view"

    def decide(self, view: Any) -> ClusterDecision:
        for job in view.arrivals:
            object.__setattr__(job, "epochs", 1)
        return super().decide(view)


class CountsRunsAcrossInstances(OneMachineEach):
    """Gives each job 1 or 2 workers by the number of runs any instance made: a global."""

    name: ClassVar[str] = "counts-runs-across-instances"
    runs: ClassVar[itertools.count] = itertools.count()

    def reset(self, cluster: Any, horizon: int, rng: Any) -> None:
        super().reset(cluster, horizon, rng)
        self.workers = 1 + next(self.runs) % 2


class RemembersLastRun(OneMachineEach):
    """Counts its own runs in an attribute reset does not clear: 1, then 2 workers a job."""

    name: ClassVar[str] = "remembers-last-run"

    def reset(self, cluster: Any, horizon: int, rng: Any) -> None:
        super().reset(cluster, horizon, rng)
        self.workers = getattr(self, "runs_", 0) + 1
        self.runs_ = self.workers


class OverCapacity(OneMachineEach):
    """Every job on machine 0 with F workers."""

    name: ClassVar[str] = "over-capacity"

    def decide(self, view: Any) -> ClusterDecision:
        alloc = {}
        for j in (*view.pending, *view.active):
            w = view.jobs[j].max_workers
            alloc[j] = Placement((0,), (w,), (view.jobs[j].min_ps(w),))
        return ClusterDecision(alloc)


class Raises(OneMachineEach):
    name: ClassVar[str] = "raises"

    def decide(self, view: Any) -> ClusterDecision:
        if view.slot == 2:
            raise ValueError("no plan for slot 2")
        return super().decide(view)


class Nameless:
    setting: ClassVar[str] = "cluster"

    def reset(self, cluster: Any, horizon: int, rng: Any) -> None: ...

    def decide(self, view: Any) -> ClusterDecision:
        return ClusterDecision({})


class TakesFifosName(OneMachineEach):
    name: ClassVar[str] = "fifo"


class ShortReset(OneMachineEach):
    name: ClassVar[str] = "short-reset"

    def reset(self, cluster: Any) -> None:  # type: ignore[override]  # the protocol's breach under test
        self.machines_ = cluster.machines


def _report(sched: Any, **kw: Any) -> CheckReport:
    return check_scheduler(sched, raise_on_failure=False, **kw)


def _failed(report: CheckReport) -> set[tuple[str, str | None]]:
    return {(r.check, r.driver) for r in report.failures}


def test_a_scheduler_that_keeps_the_contract_passes_as_instance_class_or_name() -> None:
    inst = OneMachineEach(workers=2)
    for sched in (inst, OneMachineEach, "fifo"):
        report = check_scheduler(sched, drivers=["simulate"])
        assert report.ok and not report.skipped, report.format()
        assert len(report.results) == 2 + 5 + 27  # class, contract, cheats of cluster
    assert not hasattr(inst, "machines_")  # the instance given is copied, never run
    assert check_scheduler("srtf", "edge-cloud").setting == "edge-cloud"


def test_a_view_mutated_by_decide_fails_through_every_driver_naming_the_field() -> None:
    report = _report(MutatesView)
    assert _failed(report) == {("view-unchanged", d) for d in ("simulate", "testbed", "service")}
    detail = report.failures[0].detail
    assert re.fullmatch(r"call \d+ \(slot \d+\) changed view\.arrivals\[0\]\.epochs", detail)
    assert "FAILED  view-unchanged" in str(report)


def test_state_shared_between_instances_fails_same_seed_same_bytes() -> None:
    report = _report(CountsRunsAcrossInstances, drivers=["simulate", "testbed"])
    assert {("same-seed-same-bytes", "simulate"), ("same-seed-same-bytes", "testbed")} <= _failed(
        report
    )
    sim = next(r for r in report.failures if r.driver == "simulate")
    assert "the second run differs: " in sim.detail and " then " in sim.detail


def test_state_that_reset_does_not_clear_fails_reset_restarts_only() -> None:
    report = _report(RemembersLastRun, drivers=["simulate"])
    assert _failed(report) == {("reset-restarts", "simulate")}


def test_an_invalid_decision_fails_valid_decisions_with_the_engines_message_per_driver() -> None:
    report = _report(OverCapacity)
    assert _failed(report) == {("valid-decisions", d) for d in ("simulate", "testbed", "service")}
    for r in report.failures:
        assert "invalid decision (scheduler=over-capacity" in r.detail and "Eq. 5" in r.detail
    # what needs an honest run is skipped, with the reason
    assert all("valid-decisions failed" in r.detail for r in report.skipped)
    assert len(report.skipped) == 3 * (2 + 27) + 1  # reset-restarts is the simulator's only


def test_an_exception_in_decide_is_reported_with_where_it_was_raised() -> None:
    report = _report(Raises, drivers=["simulate", "testbed", "service"])
    details = {r.driver: r.detail for r in report.failures if r.check == "valid-decisions"}
    assert set(details) == {"simulate", "testbed", "service"}
    assert "ValueError: no plan for slot 2 (test_check_scheduler.py:" in details["simulate"]
    assert "no plan for slot 2" in details["service"]  # the service logs it as its refusal


@pytest.mark.parametrize(
    ("sched", "problem"),
    [
        (Nameless, "ClassVar name is None"),
        (TakesFifosName, "name 'fifo' is registered to dmlsched.schedulers.cluster.fifo"),
        (ShortReset, "reset(static, horizon, rng) cannot be called"),
    ],
)
def test_class_level_breaches_fail_before_any_run(sched: Any, problem: str) -> None:
    report = _report(sched)
    assert report.failures and all(r.driver is None for r in report.results)
    assert any(problem in r.detail for r in report.failures), report.format()


def test_a_setting_asked_for_that_the_class_does_not_declare_fails() -> None:
    report = _report(OneMachineEach, setting="geo")
    assert ("name-and-setting", None) in _failed(report)
    assert "checked as 'geo'" in report.failures[0].detail


def _cheats(*cheats: Cheat) -> Any:
    return lambda setting: cheats


def test_a_lie_the_engine_accepts_fails_and_one_with_nothing_to_change_is_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The checker can fail on the engine's side too: a 'lie' that is in fact honest (a
    new, equal decision) is accepted; one that changes the run is not 'gaining nothing'."""
    monkeypatch.setattr(
        check_module,
        "cheats_of",
        _cheats(
            Cheat("new-equal-decision", "cluster", True, lambda s, v, d: dataclasses.replace(d)),
            Cheat("drops-every-placement", "cluster", False, lambda s, v, d: ClusterDecision({})),
            Cheat("never-lies", "cluster", True, lambda s, v, d: d),
            Cheat("wrong-reason", "cluster", True, lambda s, v, d: None, match="Eq. 42"),
        ),
    )
    report = _report("fifo", drivers=["simulate", "service"])
    by = {(r.check, r.driver): r for r in report.results}
    for driver in ("simulate", "service"):
        assert by["cheat:new-equal-decision", driver].status == "failed"
        assert by["cheat:new-equal-decision", driver].detail.startswith("accepted (")
        assert by["cheat:drops-every-placement", driver].status == "failed"
        detail = by["cheat:drops-every-placement", driver].detail
        assert detail.startswith("the lie changed the run: "), detail
        assert by["cheat:never-lies", driver].status == "skipped"
        assert by["cheat:wrong-reason", driver].status == "failed"
        assert "another reason than /Eq. 42/" in by["cheat:wrong-reason", driver].detail


def test_a_failure_raises_with_the_report_as_its_message() -> None:
    with pytest.raises(SchedulerCheckFailed) as err:
        check_scheduler(OverCapacity, drivers=["simulate"])
    assert not err.value.report.ok
    text = str(err.value)
    assert text.splitlines()[0].startswith("check_scheduler: over-capacity (cluster) — FAILED: ")
    assert "FAILED  valid-decisions" in text and "Eq. 5" in text
    assert "passed: class 2/2; simulate 1/32" in text  # view-unchanged


def test_every_check_is_listed_when_verbose() -> None:
    report = check_scheduler("local", "geo")
    lines = report.format(verbose=True).splitlines()
    assert len(lines) == 1 + len(report.results) + 1
    assert any("PASSED  cheat:geo-nan-transfer" in line for line in lines)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("no-such-scheduler",), "scheduler"),
        (("srtf",), "setting"),  # in cluster and edge-cloud
        (("fifo", "cluster-ish"), "setting"),
    ],
)
def test_arguments_that_name_nothing_are_invalid_input(args: tuple, field: str) -> None:
    with pytest.raises(InvalidInput) as err:
        check_scheduler(*args)
    assert err.value.field == field


def test_a_driver_the_setting_does_not_have_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="drivers of interval: simulate"):
        check_scheduler("esw", drivers=["service"])


def test_check_scheduler_is_public_and_cheap_to_import() -> None:
    assert "check_scheduler" in dmlsched.__all__
    code = (
        "import sys; from dmlsched import check_scheduler; "
        "print(sorted(m for m in sys.modules if m.startswith(('numpy', 'dmlsched.sim'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_docstrings_example_runs_as_written() -> None:
    import doctest

    import dmlsched.checks

    assert doctest.testmod(dmlsched.checks, raise_on_error=True).attempted == 2


def test_dmlsched_check_prints_the_report_and_exits_1_on_a_failure(
    plugin_sandbox: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from dmlsched.cli import main

    path = plugin_sandbox / "over.py"
    path.write_text(
        "from tests.checks.test_check_scheduler import OverCapacity as Base\n\n\n"
        "class Over(Base):\n    name = 'over-capacity-plugin'\n"
    )
    args = ["check", "over-capacity-plugin", "--plugin", str(path), "--driver", "simulate"]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert out.startswith("check_scheduler: over-capacity-plugin (cluster) — FAILED")
    assert "FAILED  valid-decisions" in out and "Eq. 5" in out
    assert main(["check", "fifo", "--driver", "simulate", "--seed", "1", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "seeds 1, 2" in out and "OK: " in out
