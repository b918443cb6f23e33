"""The scheduler contract as a library: :func:`check_scheduler` and what it runs.

* :mod:`.check` — the checks, their report and their error;
* :mod:`.cheats` — the cheat catalogue (one lie each, per setting);
* :mod:`.drivers` — one scheduler through each driver of its setting;
* :mod:`.replay`, :mod:`.tampering`, :mod:`.tiny` — recorded runs and a
  replaying scheduler, the lies it can tell, the tiny workloads.

This package sits above the engine, the testbed and the service (it drives
all three); nothing below it imports it.  Importing it is cheap: the
checks are imported when :func:`check_scheduler` is first called.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dmlsched.checks.check import CheckReport, CheckResult, SchedulerCheckFailed

__all__ = ["CheckReport", "CheckResult", "SchedulerCheckFailed", "check_scheduler"]


def check_scheduler(
    scheduler: Any,
    setting: str | None = None,
    *,
    drivers: Sequence[str] | None = None,
    seeds: Sequence[int] = (3,),
    raise_on_failure: bool = True,
) -> CheckReport:
    """Run the scheduler contract against ``scheduler``, through every driver of its setting.

    ``scheduler``: an instance (deep-copied before each run: a constructor
    only stores parameters), a class (instantiated without arguments) or a
    registered name (``setting`` tells which when several settings have it).
    ``setting``: default, the class's ``setting`` ClassVar.  ``drivers``:
    default, every driver of the setting — ``simulate``; for ``cluster`` also
    ``testbed`` (the executor loop with a fake executor and clock) and
    ``service`` (the slot loop on a temporary SQLite log).  ``seeds``: one
    tiny workload and run generator per seed.

    The checks (:mod:`dmlsched.checks.check` lists them): ClassVars ``name``
    and ``setting``; the protocol's methods; valid decisions; the view never
    mutated; same seed, same bytes; ``reset`` restarts a run; tampering with
    everything shown gains nothing; and the whole cheat catalogue of the
    setting (a job named twice, a decision of a subclass, counts that lie
    about their type, a decision over capacity, …) refused or gaining
    nothing, layered on the scheduler's own decisions.

    Returns a :class:`~dmlsched.checks.check.CheckReport` (``.ok``,
    ``.failures``; ``print(report)`` reads it out).  Raises
    :class:`~dmlsched.checks.check.SchedulerCheckFailed` (its message is the
    report; ``.report``) if a check failed, unless ``raise_on_failure=False``.
    Arguments that name no scheduler, setting or driver raise
    :class:`~dmlsched.errors.InvalidInput`.

    >>> from dmlsched import check_scheduler
    >>> print(check_scheduler("fifo", drivers=["simulate"]))  # doctest: +ELLIPSIS
    check_scheduler: fifo (cluster) — OK: ...
    """
    from dmlsched.checks.check import run_checks

    return run_checks(
        scheduler, setting, drivers=drivers, seeds=seeds, raise_on_failure=raise_on_failure
    )


def __getattr__(name: str) -> Any:
    if name in ("CheckReport", "CheckResult", "SchedulerCheckFailed"):
        from dmlsched.checks import check

        return getattr(check, name)
    raise AttributeError(f"module 'dmlsched.checks' has no attribute {name!r}")
