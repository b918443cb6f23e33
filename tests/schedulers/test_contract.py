"""One contract over the whole registry: ``dmlsched.check_scheduler`` on every registered
scheduler, through every driver of its setting.

In the spirit of scikit-learn's ``parametrize_with_checks``: the checks a user
runs on an out-of-tree scheduler are the ones ours pass (valid decisions on a
tiny workload, the view never mutated, same seed → same bytes, ``reset``
restarts a run, tampering with everything shown gains nothing, the whole cheat
catalogue of the setting refused or gaining nothing — see
:mod:`dmlsched.checks.check`).  One test per (scheduler, driver); a failure's
message is the checker's report.
"""

from __future__ import annotations

import pytest

from dmlsched import check_scheduler
from dmlsched.checks.drivers import DRIVERS
from dmlsched.schedulers.protocols import registry

ALL = sorted(registry())
CASES = [(s, n, d) for s, n in ALL for d in DRIVERS[s]]


@pytest.mark.parametrize(
    ("setting", "name", "driver"), CASES, ids=[f"{s}:{n}:{d}" for s, n, d in CASES]
)
def test_every_registered_scheduler_passes_the_checker_through_every_driver(
    setting: str, name: str, driver: str
) -> None:
    report = check_scheduler(name, setting, drivers=[driver])
    assert report.ok and not report.skipped, report.format()


def test_registry_names_are_unique_per_setting_and_nonempty() -> None:
    assert ("cluster", "fifo") in ALL and ("cluster", "drf") in ALL
    assert len(ALL) == len(set(ALL))
    assert {s for s, _ in ALL} == {"cluster", "interval", "edge-cloud", "geo"}
