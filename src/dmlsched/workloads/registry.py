"""Named workloads per setting, so the CLI and experiments never branch on names.

A builder takes :class:`WorkloadParams` and the run's workload generator and
returns the setting's workload object (what its engine's ``simulate``
accepts).  Register with ``@register_workload(setting, name)``; every setting
registers at least ``"synthetic"`` (the contract test builds a tiny one with
``jobs=4, machines=3, slots=6``).

A workload's ``notes`` say where its data came from.  A note that starts
with :data:`WARNING` reports a fallback that changes the data (e.g. a trace
field that could not be used); the CLI prints those on stderr, and every
note goes into ``config.json`` and ``summary.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.limits import MAX_SIZE

__all__ = [
    "MAX_SIZE",
    "WARNING",
    "WorkloadParams",
    "build_workload",
    "register_workload",
    "warning_notes",
    "workload_names",
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
_BUILDERS: dict[tuple[str, str], Builder] = {}


def register_workload(setting: str, name: str) -> Callable[[Builder], Builder]:
    def deco(fn: Builder) -> Builder:
        _BUILDERS[(setting, name)] = fn
        return fn

    return deco


def _load() -> None:
    import dmlsched.workloads.builtin  # noqa: F401


def workload_names(setting: str) -> list[str]:
    _load()
    return sorted(n for (s, n) in _BUILDERS if s == setting)


def build_workload(
    setting: str, name: str, params: WorkloadParams, rng: np.random.Generator
) -> Any:
    """The named workload; a path-like ``name`` is a job-spec file (see ``files``).

    ``KIND:PATH`` (e.g. ``pollux:/x/workload-6.csv``, ``gavel:/x/a.trace``)
    calls the builder registered as ``"KIND:"`` with ``params.trace = PATH``.
    """
    _load()
    kind, sep, rest = name.partition(":")
    if sep and (setting, kind + ":") in _BUILDERS:
        if not rest:
            raise InvalidInput("workload", name, f"{kind}:PATH")
        return _BUILDERS[(setting, kind + ":")](replace(params, trace=Path(rest)), rng)
    if (setting, name) not in _BUILDERS and Path(name).suffix.lower() in (".json", ".csv"):
        if setting != "cluster":
            raise InvalidInput("workload", name, "job-spec files are for --setting cluster")
        from dmlsched.workloads.files import load_job_file

        return load_job_file(Path(name), params.machines, params.slots)
    if (setting, name) not in _BUILDERS:
        raise InvalidInput("workload", name, " | ".join(workload_names(setting)) + " | PATH")
    return _BUILDERS[(setting, name)](params, rng)
