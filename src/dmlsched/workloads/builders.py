"""The table of named workloads: what a builder takes and how it registers.

A builder takes :class:`WorkloadParams` and the run's workload generator and
returns the setting's workload object (what its engine's ``simulate``
accepts).  Each setting's module registers its builders here with
``@register_workload(setting, name)``; :mod:`dmlsched.workloads.registry`
builds them by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.limits import MAX_SIZE

__all__ = [
    "BUILDERS",
    "WARNING",
    "Builder",
    "WorkloadParams",
    "register_workload",
    "warning_notes",
]

WARNING = "WARNING: "


def warning_notes(notes: Iterable[str]) -> list[str]:
    """The notes that report a fallback (they start with :data:`WARNING`)."""
    return [n for n in notes if n.startswith(WARNING)]


@dataclass(frozen=True)
class WorkloadParams:
    """Size knobs shared by all settings; ``None`` = the setting's default.

    ``machines`` means machines (cluster), servers (edge-cloud), data
    centers (geo) or capacity units (interval).  ``extra`` carries
    setting-specific options (e.g. ``mix``, ``mode``, ``skip_bad_rows``).
    """

    jobs: int | None = None
    machines: int | None = None
    slots: int | None = None
    trace: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # 0 is not "the default": a size given is a size meant (None is the default)
        for name in ("jobs", "machines", "slots"):
            v = getattr(self, name)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int | np.integer):
                raise InvalidInput(name, v, f"an integer in 1..{MAX_SIZE}")
            if not 1 <= v <= MAX_SIZE:
                raise InvalidInput(name, v, f"an integer in 1..{MAX_SIZE}")


Builder = Callable[[WorkloadParams, np.random.Generator], Any]
BUILDERS: dict[tuple[str, str], Builder] = {}


def register_workload(setting: str, name: str) -> Callable[[Builder], Builder]:
    def deco(fn: Builder) -> Builder:
        BUILDERS[(setting, name)] = fn
        return fn

    return deco
