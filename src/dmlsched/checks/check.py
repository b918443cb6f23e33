"""``dmlsched.check_scheduler``: the contract every scheduler must pass, as a function.

In the spirit of Gymnasium's ``check_env`` and scikit-learn's
``check_estimator``: the checks the project's own schedulers pass (the
registry's contract test is this function over every registered scheduler)
run against any scheduler — an instance, a class or a registered name — on
the tiny workload of its setting (:func:`~.tiny.tiny`), through every driver
of that setting (:data:`~.drivers.DRIVERS`: ``simulate`` for all;
``cluster`` also the testbed's executor loop with a fake executor and clock,
and the service's slot loop on a temporary SQLite log).

The checks, in order (``driver`` — in the report — is empty for the first two):

* ``name-and-setting`` — ClassVars ``name`` (a non-empty string, not
  registered to another class) and ``setting`` (one of the four, and the
  one asked for);
* ``protocol`` — ``reset(static, horizon, rng)`` and ``decide(view)`` can be
  called with the protocol's arguments;
* ``valid-decisions`` — a run on the tiny workload ends without
  :class:`~dmlsched.errors.InvalidDecision` or an exception (no metric
  infinite);
* ``view-unchanged`` — no view is mutated by ``decide`` (snapshots before
  and after every call; the report names the first changed field);
* ``same-seed-same-bytes`` — a second run with a fresh scheduler and the same
  seed gives the same bytes (metrics, events, series; the testbed's
  executor calls; the service's committed log);
* ``reset-restarts`` — (``simulate``) the same object, ``reset`` and run
  again, gives the same bytes: learned state does not leak between runs;
* ``tampering-gains-nothing`` — replaying its decisions while bending every
  field of every object in every view and in ``reset``'s arguments gives
  the honest run's bytes;
* ``cheat:<name>`` — every cheat of the setting's catalogue
  (:mod:`.cheats`: a job named twice, a decision of a subclass, counts that
  lie about their type, a decision over capacity, tampering with what was
  shown, …) layered on its recorded decisions: a lie in the decision is
  refused with ``InvalidDecision`` (for the lie: the message matches), a lie
  about the view gains nothing.  A lie that found nothing to change in
  these decisions (e.g. a mapping it could repeat, when the scheduler never
  placed a job) is *skipped*, not passed.

Every check that needs a run is skipped on a driver whose honest run failed.

**Failure is an exception, as in scikit-learn and Gymnasium**:
:func:`check_scheduler` returns a :class:`CheckReport` when every check
passed and raises :class:`SchedulerCheckFailed` (holding the report; its
message is the report) when one failed — ``raise_on_failure=False``
returns the report either way (``report.ok``).  ``print(report)`` shows the
failures, with the driver and the engine's message, and a count of what
passed per driver; ``report.format(verbose=True)`` lists every check.
"""

from __future__ import annotations

import copy
import inspect
import math
import re
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from dmlsched.checks.cheats import Cheat, cheats_of
from dmlsched.checks.drivers import DRIVERS, DriverRun, run_driver
from dmlsched.checks.replay import Replay, clone, first_difference, snapshot
from dmlsched.checks.tampering import vandalize, vandalized
from dmlsched.checks.tiny import tiny
from dmlsched.errors import DmlschedError, InvalidInput
from dmlsched.schedulers.protocols import SETTINGS, make_scheduler, registry

__all__ = ["CheckReport", "CheckResult", "SchedulerCheckFailed", "run_checks"]

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


@dataclass(frozen=True)
class CheckResult:
    """One check of one scheduler, through one driver (``None``: of the class itself)."""

    check: str
    driver: str | None
    seed: int | None
    status: str  # "passed" | "failed" | "skipped"
    detail: str = ""


@dataclass(frozen=True)
class CheckReport:
    """What :func:`check_scheduler` found; ``print(report)`` reads it out."""

    scheduler: str
    setting: str
    drivers: tuple[str, ...]
    seeds: tuple[int, ...]
    results: tuple[CheckResult, ...]
    seconds: float

    @property
    def ok(self) -> bool:
        """No check failed (skipped ones do not count)."""
        return not self.failures

    @property
    def failures(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if r.status == FAILED)

    @property
    def skipped(self) -> tuple[CheckResult, ...]:
        """Checks that found nothing to check (e.g. a lie with nothing to change)."""
        return tuple(r for r in self.results if r.status == SKIPPED)

    def _count(self, status: str) -> int:
        return sum(r.status == status for r in self.results)

    def format(self, verbose: bool = False) -> str:
        """The report as text: a headline, the failures (every check if ``verbose``), and
        what passed, per driver."""
        head = (
            f"check_scheduler: {self.scheduler} ({self.setting}) — "
            f"{'OK' if self.ok else 'FAILED'}: {self._count(PASSED)} passed, "
            f"{self._count(FAILED)} failed, {self._count(SKIPPED)} skipped "
            f"(drivers {', '.join(self.drivers) or 'none'}; "
            f"seed{'s' if len(self.seeds) > 1 else ''} {', '.join(map(str, self.seeds))}; "
            f"{self.seconds:.1f} s)"
        )
        shown = self.results if verbose else [r for r in self.results if r.status != PASSED]
        width = max((len(r.check) for r in shown), default=0)
        lines = [head]
        for r in sorted(shown, key=lambda r: r.status != FAILED):
            where = (r.driver or "-") + (f" seed {r.seed}" if len(self.seeds) > 1 else "")
            text = f"  {r.status.upper():<7} {r.check:<{width}}  {where:<9}"
            lines.append(f"{text}  {r.detail}".rstrip())
        by_driver: dict[str, list[CheckResult]] = {}
        for r in self.results:
            by_driver.setdefault(r.driver or "class", []).append(r)
        lines.append(
            "  passed: "
            + "; ".join(
                f"{d} {sum(r.status == PASSED for r in rs)}/{len(rs)}"
                for d, rs in by_driver.items()
            )
        )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


class SchedulerCheckFailed(DmlschedError):
    """A scheduler failed :func:`check_scheduler`; ``report`` says which checks."""

    def __init__(self, report: CheckReport) -> None:
        self.report = report
        super().__init__(report.format())


@dataclass(frozen=True)
class _Subject:
    """The scheduler under check: its label, class, setting and a way to make a fresh one."""

    label: str
    cls: type
    setting: str
    make: Callable[[], Any]


def run_checks(
    scheduler: Any,
    setting: str | None = None,
    *,
    drivers: Sequence[str] | None = None,
    seeds: Sequence[int] = (3,),
    raise_on_failure: bool = True,
) -> CheckReport:
    """:func:`dmlsched.check_scheduler` (its docstring says what it takes and gives)."""
    start = time.perf_counter()
    subject = _subject(scheduler, setting)
    chosen = _drivers(subject.setting, drivers)
    seeds = tuple(int(s) for s in seeds)
    if not seeds:
        raise InvalidInput("seeds", seeds, "at least one seed")
    results = _class_checks(subject, setting)
    if not any(r.status == FAILED for r in results):
        for seed in seeds:
            wl = tiny(subject.setting, seed)
            for driver in chosen:
                results.extend(_driver_checks(subject, driver, wl, seed))
    report = CheckReport(
        subject.label,
        subject.setting,
        chosen,
        seeds,
        tuple(results),
        time.perf_counter() - start,
    )
    if raise_on_failure and not report.ok:
        raise SchedulerCheckFailed(report)
    return report


def _subject(scheduler: Any, setting: str | None) -> _Subject:
    if setting is not None and setting not in SETTINGS:
        raise InvalidInput("setting", setting, " | ".join(SETTINGS))
    if isinstance(scheduler, str):
        found = [s for (s, n) in registry(setting) if n == scheduler]
        if not found:
            names = sorted({n for (_, n) in registry(setting)})
            raise InvalidInput("scheduler", scheduler, "a registered name: " + ", ".join(names))
        if len(found) > 1:
            raise InvalidInput("setting", setting, f"one of {found} ({scheduler} is in each)")
        s = found[0]
        return _Subject(
            scheduler, registry(s)[(s, scheduler)], s, lambda: make_scheduler(s, scheduler)
        )
    make: Callable[[], Any]
    if isinstance(scheduler, type):
        cls, make = scheduler, scheduler
    else:
        cls, make = type(scheduler), partial(copy.deepcopy, scheduler)
    name = getattr(cls, "name", None)
    label: str = name if isinstance(name, str) and name else cls.__name__
    chosen = setting or getattr(cls, "setting", None)
    if chosen not in SETTINGS:
        raise InvalidInput(
            "setting", chosen, f"{' | '.join(SETTINGS)} (a ClassVar setting of {cls.__name__})"
        )
    return _Subject(label, cls, str(chosen), make)


def _drivers(setting: str, drivers: Sequence[str] | None) -> tuple[str, ...]:
    known = DRIVERS[setting]
    if drivers is None:
        return known
    if isinstance(drivers, str):
        drivers = (drivers,)
    for d in drivers:
        if d not in known:
            raise InvalidInput("drivers", d, f"drivers of {setting}: {' | '.join(known)}")
    return tuple(drivers)


def _class_checks(subject: _Subject, setting: str | None) -> list[CheckResult]:
    cls = subject.cls
    out: list[CheckResult] = []
    name, own = getattr(cls, "name", None), getattr(cls, "setting", None)
    problems = []
    if not (isinstance(name, str) and name):
        problems.append(f"ClassVar name is {name!r}, not a non-empty string")
    if own not in SETTINGS:
        problems.append(f"ClassVar setting is {own!r}, not one of {', '.join(SETTINGS)}")
    elif setting is not None and own != setting:
        problems.append(f"ClassVar setting is {own!r}, checked as {setting!r}")
    if isinstance(name, str) and own in SETTINGS:
        taken = registry(own).get((own, name))
        if taken is not None and taken is not cls:
            problems.append(
                f"name {name!r} is registered to {taken.__module__}.{taken.__qualname__}"
            )
    out.append(_result("name-and-setting", None, None, problems))
    try:
        probe = subject.make()
    except Exception as e:
        out.append(CheckResult("protocol", None, None, FAILED, f"cannot make one: {_raised(e)}"))
        return out
    problems = []
    for method, args in (("reset", ("static", "horizon", "rng")), ("decide", ("view",))):
        fn = getattr(probe, method, None)
        if not callable(fn):
            problems.append(f"no method {method}")
            continue
        try:
            inspect.signature(fn).bind(*args)
        except TypeError as e:
            problems.append(f"{method}({', '.join(args)}) cannot be called: {e}")
        except ValueError:  # no signature (a builtin): let the runs tell
            pass
    out.append(_result("protocol", None, None, problems))
    return out


def _result(check: str, driver: str | None, seed: int | None, problems: list[str]) -> CheckResult:
    return CheckResult(check, driver, seed, FAILED if problems else PASSED, "; ".join(problems))


def _raised(e: BaseException) -> str:
    """``TypeError: … (my_sched.py:12)``: the exception and where it was raised."""
    tb = traceback.extract_tb(e.__traceback__)
    where = f" ({Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
    return f"{type(e).__name__}: {e}{where}"


class _Guard:
    """Wraps a scheduler: clones every decision it returns and snapshots every view it is
    shown before and after ``decide`` (the first change is kept in ``mutation``)."""

    name = "guard"

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.decisions: list[Any] = []
        self.mutation: str | None = None

    def reset(self, *args: Any) -> None:
        self.inner.reset(*args)

    def decide(self, view: Any) -> Any:
        before = snapshot(view)
        out = self.inner.decide(view)
        if self.mutation is None:
            where = first_difference(before, snapshot(view))
            if where is not None:
                slot = getattr(view, "slot", "?")
                self.mutation = f"call {len(self.decisions) + 1} (slot {slot}) changed {where}"
        try:
            self.decisions.append(clone(out))
        except TypeError:  # not the setting's decision class: the engine refuses it
            self.decisions.append(out)
        return out

    def __getattr__(self, attr: str) -> Any:  # optional parts of a protocol (e.g. explain)
        return getattr(self.inner, attr)


def _guarded(subject: _Subject) -> tuple[Callable[[], Any], list[_Guard]]:
    """A factory of guarded schedulers, named as the subject's class, and what it made."""
    made: list[_Guard] = []
    cls = type(subject.cls.__name__, (_Guard,), {"name": subject.label})

    def make() -> Any:
        made.append(cls(subject.make()))
        return made[-1]

    return make, made


def _run(
    subject: _Subject, driver: str, make: Callable[[], Any], wl: Any, seed: int
) -> tuple[DriverRun | None, str | None]:
    """(the driver's run, None) or (None, the exception it ended in)."""
    try:
        return run_driver(subject.setting, driver, make, wl, seed), None
    except Exception as e:
        return None, _raised(e)


def _driver_checks(subject: _Subject, driver: str, wl: Any, seed: int) -> list[CheckResult]:
    make, made = _guarded(subject)
    honest, error = _run(subject, driver, make, wl, seed)
    out: list[CheckResult] = []
    problems = []
    if honest is None:
        problems.append(f"the run raised {error}")
    elif honest.refusal is not None:
        problems.append(f"the engine refused a decision: {honest.refusal}")
    elif any(isinstance(v, float) and math.isinf(v) for v in (honest.metrics or {}).values()):
        bad = [
            k
            for k, v in (honest.metrics or {}).items()
            if isinstance(v, float) and v in (math.inf, -math.inf)
        ]
        problems.append(f"metrics are infinite: {', '.join(sorted(bad))}")
    out.append(_result("valid-decisions", driver, seed, problems))
    mutation = next((g.mutation for g in made if g.mutation), None)
    out.append(_result("view-unchanged", driver, seed, [mutation] if mutation else []))
    rest = ["same-seed-same-bytes", "tampering-gains-nothing"]
    if driver == "simulate":
        rest.insert(1, "reset-restarts")
    cheats = cheats_of(subject.setting)
    if honest is None or problems or not made:
        why = "needs an honest run (valid-decisions failed)"
        out += [CheckResult(c, driver, seed, SKIPPED, why) for c in rest]
        out += [CheckResult(f"cheat:{c.name}", driver, seed, SKIPPED, why) for c in cheats]
        return out
    decisions = [d for g in made for d in g.decisions]

    again, error = _run(subject, driver, subject.make, wl, seed)
    out.append(_same("same-seed-same-bytes", driver, seed, honest, again, error))
    if driver == "simulate":
        inner = made[0].inner  # reset and run again: the same object
        repeat, error = _run(subject, driver, lambda: inner, wl, seed)
        out.append(_same("reset-restarts", driver, seed, honest, repeat, error))
    vandal = Cheat(
        "tampering-gains-nothing",
        subject.setting,
        False,
        on_decide=lambda s, view, d: vandalized(view, d),
        on_reset=lambda s, *static: vandalize(static),
    )
    out.append(_cheat(subject, driver, seed, wl, honest, decisions, vandal, check=vandal.name))
    for c in cheats:
        out.append(_cheat(subject, driver, seed, wl, honest, decisions, c))
    return out


def _same(
    check: str,
    driver: str,
    seed: int,
    honest: DriverRun,
    run: DriverRun | None,
    error: str | None,
) -> CheckResult:
    if run is None:
        return CheckResult(check, driver, seed, FAILED, f"the second run raised {error}")
    if run.refusal is not None:
        return CheckResult(
            check, driver, seed, FAILED, f"the second run was refused: {run.refusal}"
        )
    if run.fingerprint == honest.fingerprint:
        return CheckResult(check, driver, seed, PASSED)
    return CheckResult(check, driver, seed, FAILED, "the second run differs: " + _diff(honest, run))


def _diff(a: DriverRun, b: DriverRun) -> str:
    """Which metrics differ between two runs (or that their records do)."""
    if a.metrics and b.metrics:
        keys = sorted(
            k
            for k in a.metrics.keys() | b.metrics.keys()
            if repr(a.metrics.get(k)) != repr(b.metrics.get(k))
        )
        if keys:
            shown = ", ".join(
                f"{k} {a.metrics.get(k)!r} then {b.metrics.get(k)!r}" for k in keys[:3]
            )
            return shown + (f" (and {len(keys) - 3} more)" if len(keys) > 3 else "")
        return "same metrics, other events or series"
    return {
        "testbed": "other executor calls or completions",
        "service": "other committed ticks",
    }.get(a.driver, "other records")


def _cheat(
    subject: _Subject,
    driver: str,
    seed: int,
    wl: Any,
    honest: DriverRun,
    decisions: list[Any],
    cheat: Cheat,
    check: str | None = None,
) -> CheckResult:
    check = check or f"cheat:{cheat.name}"
    made: list[Replay] = []

    def make() -> Replay:
        made.append(Replay(subject.setting, decisions, cheat.on_decide, cheat.on_reset))
        return made[-1]

    run, error = _run(subject, driver, make, wl, seed)
    lies = sum(getattr(r, "lies_", 0) for r in made)
    if any(getattr(r, "exhausted_", False) for r in made):
        why = f"the run went on past the honest run's {len(decisions)} decisions"
        if cheat.refused:
            return CheckResult(check, driver, seed, FAILED, f"accepted, and {why}")
        return CheckResult(check, driver, seed, FAILED, f"the lie changed the run: {why}")
    if run is None:
        return CheckResult(check, driver, seed, FAILED, f"the replay raised {error}")
    if cheat.refused:
        if run.refusal is None:
            if lies == 0:
                why = "nothing to lie about in this scheduler's decisions on this workload"
                return CheckResult(check, driver, seed, SKIPPED, why)
            return CheckResult(check, driver, seed, FAILED, f"accepted ({lies} lying decisions)")
        if "invalid decision (scheduler=replay" not in run.refusal:
            return CheckResult(check, driver, seed, FAILED, f"ended otherwise: {run.refusal}")
        if cheat.match and not re.search(cheat.match, run.refusal):
            why = f"refused for another reason than /{cheat.match}/: {run.refusal}"
            return CheckResult(check, driver, seed, FAILED, why)
        return CheckResult(check, driver, seed, PASSED, run.refusal)
    if run.refusal is not None:
        return CheckResult(
            check, driver, seed, FAILED, f"an honest replay was refused: {run.refusal}"
        )
    if run.fingerprint != honest.fingerprint:
        return CheckResult(
            check, driver, seed, FAILED, "the lie changed the run: " + _diff(honest, run)
        )
    return CheckResult(check, driver, seed, PASSED)
