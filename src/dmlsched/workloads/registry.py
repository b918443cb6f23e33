"""Named workloads per setting, so the CLI and experiments never branch on names.

A builder takes :class:`WorkloadParams` and the run's workload generator and
returns the setting's workload object (what its engine's ``simulate``
accepts).  Register with ``@register_workload(setting, name)``
(:mod:`dmlsched.workloads.builders`); every setting
registers at least ``"synthetic"`` (the contract test builds a tiny one with
``jobs=4, machines=3, slots=6``).

A workload's ``notes`` say where its data came from.  A note that starts
with :data:`WARNING` reports a fallback that changes the data (e.g. a trace
field that could not be used); the CLI prints those on stderr, and every
note goes into ``config.json`` and ``summary.md``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.limits import MAX_SIZE
from dmlsched.workloads.builders import (
    BUILDERS,
    WARNING,
    WorkloadParams,
    register_workload,
    warning_notes,
)

__all__ = [
    "MAX_SIZE",
    "WARNING",
    "WorkloadParams",
    "build_workload",
    "register_workload",
    "warning_notes",
    "workload_names",
]


def _load() -> None:
    import dmlsched.workloads.builtin  # noqa: F401


def workload_names(setting: str) -> list[str]:
    _load()
    return sorted(n for (s, n) in BUILDERS if s == setting)


def build_workload(
    setting: str, name: str, params: WorkloadParams, rng: np.random.Generator
) -> Any:
    """The named workload; a path-like ``name`` is a job-spec file (see ``files``).

    ``KIND:PATH`` (e.g. ``pollux:/x/workload-6.csv``, ``gavel:/x/a.trace``)
    calls the builder registered as ``"KIND:"`` with ``params.trace = PATH``.
    """
    _load()
    kind, sep, rest = name.partition(":")
    if sep and (setting, kind + ":") in BUILDERS:
        if not rest:
            raise InvalidInput("workload", name, f"{kind}:PATH")
        return BUILDERS[(setting, kind + ":")](replace(params, trace=Path(rest)), rng)
    if (setting, name) not in BUILDERS and Path(name).suffix.lower() in (".json", ".csv"):
        if setting != "cluster":
            raise InvalidInput("workload", name, "job-spec files are for --setting cluster")
        from dmlsched.workloads.files import load_job_file

        return load_job_file(Path(name), params.machines, params.slots)
    if (setting, name) not in BUILDERS:
        raise InvalidInput("workload", name, " | ".join(workload_names(setting)) + " | PATH")
    return BUILDERS[(setting, name)](params, rng)
