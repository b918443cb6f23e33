"""Timing figures for ``dmlsched bench --json``; one module per area registers its own.

A benchmark is a function returning ``{figure_name: value}`` (seconds,
milliseconds or a rate, as its name says).  They run outside ``make test``.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from pkgutil import iter_modules

__all__ = ["BENCHMARKS", "benchmark", "run_all"]

Bench = Callable[[], dict[str, float]]
BENCHMARKS: dict[str, Bench] = {}
OPT_IN: set[str] = set()  # too long for a default run; ask with --only NAME


def benchmark(name: str, *, default: bool = True) -> Callable[[Bench], Bench]:
    def deco(fn: Bench) -> Bench:
        BENCHMARKS[name] = fn
        if not default:
            OPT_IN.add(name)
        return fn

    return deco


def load() -> dict[str, Bench]:
    for m in iter_modules(__path__):
        import_module(f"{__name__}.{m.name}")
    return BENCHMARKS


def run_all(only: list[str] | None = None) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, fn in load().items():
        if (only and name not in only) or (not only and name in OPT_IN):
            continue
        out.update(fn())
    return out
