"""``simulate(setting, …)``: every setting's engine, picked by setting.

Each setting's engine (:mod:`dmlsched.sim.cluster`, :mod:`~dmlsched.sim.edge_cloud`,
:mod:`~dmlsched.sim.geo`, :mod:`~dmlsched.sim.interval`) provides
``simulate_<setting>(workload, scheduler, rng, *, progress=None) -> RunResult``
(:mod:`dmlsched.sim.run`); experiments and the CLI call :func:`simulate` and
never branch on the setting.  This module sits above the engines (it imports
them; they import nothing of it).

Progress: an engine calls ``progress(slot, horizon, admitted, completed)``
after each decision it asks for (``None``: no reporting).  A command that
wants to show the runs it makes in this process wraps them in
:func:`watching` with a :class:`dmlsched.progress.Reporter`-like object (its
``run(label)`` gives the callback); :func:`simulate` then passes each run's
callback down, so the many experiment cells that call :func:`simulate` need
no parameter for it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from importlib import import_module
from typing import TYPE_CHECKING, Any, Protocol

from dmlsched.errors import InvalidInput
from dmlsched.sim.run import Progress, RunResult

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ENGINES", "Watcher", "engine", "simulate", "watching"]


class Watcher(Protocol):
    """What :func:`watching` takes: a callback per run, by label."""

    def run(self, label: str) -> Progress: ...


_WATCHER: ContextVar[Watcher | None] = ContextVar("dmlsched_watcher", default=None)


@contextmanager
def watching(watcher: Watcher | None) -> Iterator[None]:
    """Report every :func:`simulate` run in this context to ``watcher``."""
    token = _WATCHER.set(watcher)
    try:
        yield
    finally:
        _WATCHER.reset(token)


#: each setting's engine, by the setting's name: (module, function), imported on first
#: use so that a run loads only its own setting's engine
ENGINES: dict[str, tuple[str, str]] = {
    "cluster": ("dmlsched.sim.cluster.simulate", "simulate_cluster"),
    "edge-cloud": ("dmlsched.sim.edge_cloud", "simulate_edge_cloud"),
    "geo": ("dmlsched.sim.geo", "simulate_geo"),
    "interval": ("dmlsched.sim.interval", "simulate_interval"),
}


def engine(setting: str) -> Callable[..., RunResult]:
    """The setting's ``simulate_<setting>`` (:data:`ENGINES`)."""
    if setting not in ENGINES:
        raise InvalidInput("setting", setting, " | ".join(sorted(ENGINES)))
    module, function = ENGINES[setting]
    run: Callable[..., RunResult] = getattr(import_module(module), function)
    return run


def simulate(
    setting: str,
    workload: Any,
    scheduler: Any,
    rng: np.random.Generator,
    *,
    progress: Progress | None = None,
    record_events: bool = True,
) -> RunResult:
    """Run ``scheduler`` on ``workload`` with the setting's engine (see module docstring);
    ``record_events=False`` leaves the event log empty (long runs: one allocate event per
    job and slot)."""
    run = engine(setting)
    if progress is None:
        watcher = _WATCHER.get()
        if watcher is not None:
            progress = watcher.run(f"{getattr(type(scheduler), 'name', type(scheduler).__name__)}")
    kw: dict[str, Any] = {} if record_events else {"record_events": False}
    if progress is not None:
        kw["progress"] = progress
    with _young_objects_batched():
        return run(workload, scheduler, rng, **kw)


#: Young objects the cyclic garbage collector lets pile up during a run before a pass.
GC_BATCH = 100_000
#: Young passes before a pass over the middle generation (Python's default: 10).
GC_OLDER = 100
_gc_lock = threading.Lock()
_gc_state: list[Any] = [0, None]  # runs under way, thresholds to restore


@contextmanager
def _young_objects_batched() -> Iterator[None]:
    """Collect cyclic garbage in larger batches while a run is under way.

    A run allocates millions of container objects that live to its end (job
    copies, placements, the engines' records) and makes almost no cycles.
    With Python's default thresholds (a pass every 700 allocations) the
    collector spends a large share of a long run passing over them again and
    again, mostly in full passes over every live object (docs/benchmarks.md).
    Young cycles are still found, in batches of :data:`GC_BATCH`; the older
    generations are scanned only after :data:`GC_OLDER` young passes (after
    Python's 10, each middle-generation pass of a long run goes over up to a
    million survivors).  The thresholds are restored when the last concurrent
    run ends.
    """
    with _gc_lock:
        if _gc_state[0] == 0:
            _gc_state[1] = gc.get_threshold()
            g0, g1, g2 = _gc_state[1]
            gc.set_threshold(max(g0, GC_BATCH), max(g1, GC_OLDER), g2)
        _gc_state[0] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_state[0] -= 1
            if _gc_state[0] == 0:
                gc.set_threshold(*_gc_state[1])
