"""One protocol per setting, and the registry every scheduler joins.

Contract for every scheduler (whatever the setting):

* The constructor only stores parameters (scikit-learn style); ``reset`` is
  called once per run with the static instance data and the run's generator;
  learned state lives in attributes ending in ``_``.
* The engine hands a *read-only view* per decision, built from copies made
  for the scheduler (:mod:`dmlsched.sim.boundary`); a scheduler must not
  mutate it (the contract test checks), and if it does, only its own view
  changes — the engine computes from copies of its own.
* The returned decision is read once by the engine — the setting's decision
  and placement classes exactly, ids and counts as ``int`` or numpy integers,
  each job at most once per mapping — and validated; an invalid one raises
  :class:`~dmlsched.errors.InvalidDecision`, it is never clipped.
* All randomness comes from the generator given to ``reset``.

The four protocols have one shape — ``reset(static data, horizon, rng)``
once per run, then ``decide(view) -> decision`` — and differ only in the
types, which live in :mod:`dmlsched.model` (``model/<setting>.py`` for jobs,
system and decision; :mod:`dmlsched.model.views` for the views).  This module
imports nothing above ``model``: the engines in :mod:`dmlsched.sim` depend on
it, never the other way round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from dmlsched.errors import InvalidInput
from dmlsched.schedulers.params import check_params
from dmlsched.schedulers.plugins import load_installed
from dmlsched.schedulers.registration import (
    SETTINGS,
    load_builtin,
    load_named,
    register,
    registered,
)

if TYPE_CHECKING:  # annotations only: a run imports only its own setting's model
    import numpy as np

    from dmlsched.model.cluster import Cluster, ClusterDecision
    from dmlsched.model.edge_cloud import EdgeCloud, EdgeCloudDecision
    from dmlsched.model.geo import GeoDecision, GeoSites
    from dmlsched.model.interval import IntervalDecision
    from dmlsched.model.reasons import Reason
    from dmlsched.model.views import ClusterView, EdgeCloudView, GeoView, IntervalView

__all__ = [
    "SETTINGS",
    "ClusterScheduler",
    "EdgeCloudScheduler",
    "Explains",
    "GeoScheduler",
    "IntervalScheduler",
    "Scheduler",
    "make_scheduler",
    "on_make",
    "register",
    "registry",
    "scheduler_names",
]


@runtime_checkable
class Scheduler(Protocol):
    name: ClassVar[str]
    setting: ClassVar[str]


@runtime_checkable
class ClusterScheduler(Scheduler, Protocol):
    """``cluster`` (PD-ORS setting): ``decide(view)`` once per slot.

    Returns a :class:`~dmlsched.model.cluster.ClusterDecision`: admit/reject of
    pending jobs and this slot's placement per job.  Schedulers that plan ahead
    (PD-ORS commits a whole schedule at admission) keep their plan and return
    the current slot's part; they must drop jobs the view reports as finished.

    **Reasons (optional, backward-compatible).**  A scheduler may also define
    ``explain(view, jobs) -> Mapping[int, Reason]`` (:class:`Explains`).  It is
    called right after ``decide(view)``, with the same view, for ``jobs`` —
    the pending and active jobs the decision placed nowhere, and the ones it
    rejected — and returns a :class:`~dmlsched.model.reasons.Reason` (a code
    of :data:`~dmlsched.model.reasons.CODES` and one line with the numbers,
    e.g. ``insufficient gpu on every machine: need 8, largest free 7``) for
    each job it can explain; a job it leaves out is "unexplained".  It must
    not change what later decisions are: the service calls it every slot,
    ``simulate`` never.  Every registered ``cluster`` scheduler explains.
    """

    def reset(self, cluster: Cluster, horizon: int, rng: np.random.Generator) -> None: ...

    def decide(self, view: ClusterView) -> ClusterDecision: ...


@runtime_checkable
class Explains(Protocol):
    """A scheduler that says why jobs are not running (see :class:`ClusterScheduler`)."""

    def explain(self, view: ClusterView, jobs: Sequence[int]) -> Mapping[int, Reason]: ...


@runtime_checkable
class IntervalScheduler(Scheduler, Protocol):
    """``interval`` (SMD setting): one decision per run.

    ``decide(view)`` sees the interval's jobs and returns an
    :class:`~dmlsched.model.interval.IntervalDecision` admitting jobs with
    (w[i], p[i]) each (Eq. (2)–(3), positive integers).
    """

    def reset(
        self, capacity: np.ndarray, resources: tuple[str, ...], rng: np.random.Generator
    ) -> None: ...

    def decide(self, view: IntervalView) -> IntervalDecision: ...


@runtime_checkable
class EdgeCloudScheduler(Scheduler, Protocol):
    """``edge-cloud`` (A_online setting): ``decide(view)`` once per slot.

    Returns an :class:`~dmlsched.model.edge_cloud.EdgeCloudDecision`: dispatch
    (each chunk's worker, fixed forever), the chunks trained this slot and one
    PS per training job.  Schedulers that plan ahead (A_online fixes a chunk's
    worker and HAPRF order at arrival) keep their plan and return the slot's
    part; they read completion from ``view.remaining``/``view.finished``.
    """

    def reset(self, system: EdgeCloud, horizon: int, rng: np.random.Generator) -> None: ...

    def decide(self, view: EdgeCloudView) -> EdgeCloudDecision: ...


@runtime_checkable
class GeoScheduler(Scheduler, Protocol):
    """``geo`` (mlBroker setting): ``decide(view)`` once per slot.

    Returns a :class:`~dmlsched.model.geo.GeoDecision` with a placement for
    every active job (workers y_i^r(t), PS site, data moves q_i^{rr'}(t)); the
    engine derives g, v, z and prices the slot.
    """

    def reset(self, sites: GeoSites, horizon: int, rng: np.random.Generator) -> None: ...

    def decide(self, view: GeoView) -> GeoDecision: ...


def registry(setting: str | None = None) -> dict[tuple[str, str], type]:
    """Registered schedulers by (setting, name): all, or one setting's — the built-in
    ones, those of installed plugins (entry point group ``dmlsched.schedulers``,
    :mod:`dmlsched.schedulers.plugins`) and those registered by loaded ``--plugin`` s."""
    load_builtin(setting)
    load_installed()
    return registered(setting)


def scheduler_names(setting: str | None = None) -> list[str]:
    return [n for (s, n) in registry(setting) if setting is None or s == setting]


#: called with each class make_scheduler instantiates (dmlsched.experiments.provenance)
_MADE_HOOKS: list[Callable[[type], None]] = []


def on_make(hook: Callable[[type], None]) -> None:
    """Call ``hook(cls)`` whenever :func:`make_scheduler` instantiates ``cls`` (once per hook)."""
    if hook not in _MADE_HOOKS:
        _MADE_HOOKS.append(hook)


def make_scheduler(setting: str, name: str, **params: Any) -> Any:
    """Instantiate a registered scheduler; unknown names are an InvalidInput."""
    if setting not in SETTINGS:
        raise InvalidInput("setting", setting, " | ".join(SETTINGS))
    load_named(setting, name)  # the scheduler's own module, when named like it (fifo)
    reg = registered(setting)
    if (setting, name) not in reg:
        load_builtin(setting)
        reg = registered(setting)
    if (setting, name) not in reg:  # no plugin can take a built-in name: scan only for others
        reg = registry(setting)
    if (setting, name) not in reg:
        raise InvalidInput("scheduler", name, " | ".join(scheduler_names(setting)) or "none yet")
    cls: Callable[..., Any] = reg[(setting, name)]
    if _MADE_HOOKS:  # an experiment cell records which schedulers' code computed it
        for hook in _MADE_HOOKS:
            hook(reg[(setting, name)])
    check_params(name, cls, params)
    try:
        return cls(**params)
    except TypeError as e:
        raise InvalidInput(f"{name} parameters", params, str(e)) from e
