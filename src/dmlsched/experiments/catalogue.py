"""The experiment catalogue: one declarative :class:`Experiment` per paper figure.

An experiment sweeps one parameter over ``points``; each (scheduler, point,
seed) *cell* is independent and yields metrics by name.  Definitions live in
``dmlsched.experiments.defs.<paper>`` modules that call :func:`register`;
importing :mod:`dmlsched.experiments.defs` loads them all.

A cell, by default (:func:`default_cell`): ``build(point, seed, quick)`` makes
the workload (must depend only on its arguments, so every scheduler sees the
same instance), the scheduler is made from the registry with
``scheduler_params``, and the setting's engine runs it with
``make_rng(seed)``'s second child stream.

A *series* is one label in ``schedulers`` (a column of the results).  By
default the label is a registry name; ``series`` maps other labels to a
registry name and constructor arguments, so one scheduler can appear twice
with different readings (``"esw-knapsack": ("esw", {"admission":
"knapsack"})``) or with one option switched off (the ablations).
:meth:`Experiment.make_scheduler` resolves a label.

Experiments whose metrics need more
than one run (ratios to an optimum, gains over a baseline) pass their own
``cell`` function; it must be a module-level function (picklable) and
deterministic in (scheduler, point, seed, quick).  It returns the metrics, or
a :class:`~dmlsched.experiments.curves.CellResult` with curves beside them
(``curves.csv``: utilization over time, the JCT distribution).

Claims are decided on paired statistics over seeds (:mod:`.claims`).

``paper`` holds the values the paper (or a peer simulator) *prints* for the
figure — a number, or a range the text states — each with where it is
printed; the report draws them beside ours.  Values read off a plot are not
data and are not entered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dmlsched.errors import InvalidInput
from dmlsched.experiments.claims import Claim
from dmlsched.experiments.curves import CellResult
from dmlsched.rng import make_rng, spawn

__all__ = [
    "Experiment",
    "PaperValue",
    "all_experiments",
    "default_cell",
    "get",
    "memo",
    "register",
]

Point = float | int | str
Cell = Callable[["Experiment", str, Point, int, bool], dict[str, float] | CellResult]


@dataclass(frozen=True)
class PaperValue:
    """A value the paper prints for ``metric`` of ``scheduler`` at ``points``.

    ``value`` is a number, or ``(low, high)`` for a range the text states;
    ``source`` says where it is printed (e.g. "Table 4", "Sec. V text on Fig. 10").
    """

    metric: str
    scheduler: str
    points: tuple[Point, ...]
    value: float | tuple[float, float]
    source: str

    def at(self, point: Point) -> bool:
        return str(point) in {str(p) for p in self.points}


@dataclass(frozen=True)
class Experiment:
    """A figure or table to reproduce.

    * ``param`` / ``points`` / ``quick_points`` — the sweep (x-axis);
    * ``schedulers`` — registry names (the setting's);
    * ``metrics`` — what the report tabulates and plots (first = main);
    * ``build(point, seed, quick)`` — the workload for a cell;
    * ``claims`` — the paper's statements this run checks;
    * ``scheduler_params`` — constructor arguments per scheduler name;
    * ``series`` — label → (registry name, constructor arguments) for labels
      that are not registry names (module docstring);
    * ``cell`` — optional replacement of :func:`default_cell`;
    * ``plot`` — "line" (metric vs param per scheduler) or "bar";
    * ``paper`` — the values the paper prints (:class:`PaperValue`);
    * ``opt_in`` — runs real processes (the testbed): left out of
      ``reproduce --all`` unless ``--only`` names it;
    * ``same_runs_as`` — the ID of an experiment whose cells are this one's
      (same setting, workloads, cell function, scheduler parameters; its
      points and schedulers among that one's; this one only tabulates other
      metrics): ``reproduce --all`` copies that experiment's cells instead of
      computing them again.  A catalogue test checks the two agree on
      everything a cell reads.
    """

    id: str
    setting: str
    title: str
    param: str
    points: tuple[Point, ...]
    quick_points: tuple[Point, ...]
    schedulers: tuple[str, ...]
    metrics: tuple[str, ...]
    build: Callable[[Point, int, bool], Any]
    claims: tuple[Claim, ...] = ()
    scheduler_params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    series: Mapping[str, tuple[str, Mapping[str, Any]]] = field(default_factory=dict)
    cell: Cell | None = None
    default_seeds: int = 5
    plot: str = "line"
    reproduces: str = ""
    paper: tuple[PaperValue, ...] = ()
    opt_in: bool = False
    same_runs_as: str = ""

    def run_cell(self, scheduler: str, point: Point, seed: int, quick: bool) -> dict[str, float]:
        """The cell's metrics (its curves, if its function gives any, are left out)."""
        return self.run_cell_curves(scheduler, point, seed, quick).metrics

    def run_cell_curves(self, scheduler: str, point: Point, seed: int, quick: bool) -> CellResult:
        """The cell's metrics and curves (none unless its function gives them)."""
        fn = self.cell or default_cell
        out = fn(self, scheduler, point, seed, quick)
        return out if isinstance(out, CellResult) else CellResult(out)

    def sweep(self, quick: bool) -> tuple[Point, ...]:
        return self.quick_points if quick else self.points

    def resolve(self, label: str, **extra: Any) -> tuple[str, dict[str, Any]]:
        """(registry name, constructor arguments) of the series ``label``; ``extra`` on top."""
        if label in self.series:
            name, params = self.series[label]
            kw = dict(params)
        else:
            name, kw = label, {}
        kw.update(self.scheduler_params.get(label, {}))
        kw.update(extra)
        return name, kw

    def make_scheduler(self, label: str, **extra: Any) -> Any:
        """A fresh scheduler for the series ``label`` (:meth:`resolve`)."""
        from dmlsched.schedulers.protocols import make_scheduler

        name, kw = self.resolve(label, **extra)
        return make_scheduler(self.setting, name, **kw)


def default_cell(
    exp: Experiment, scheduler: str, point: Point, seed: int, quick: bool
) -> dict[str, float]:
    """Build the workload, run the series ``scheduler``, return its metrics."""
    from dmlsched.sim.engine import simulate

    workload = exp.build(point, seed, quick)
    sched = exp.make_scheduler(scheduler)
    _, sched_rng = spawn(make_rng(seed), 2)
    return simulate(exp.setting, workload, sched, sched_rng).metrics


_MEMO: dict[tuple[str, str, str, int, bool], Any] = {}
_MEMO_SIZE = 64


def memo(
    kind: str, exp: Experiment, point: Point, seed: int, quick: bool, make: Callable[[], Any]
) -> Any:
    """``make()`` once per (kind, experiment, point, seed, size) in this process.

    For what every series of a cell divides by — a reference run (OASiS for a
    gain), an optimum (a MILP for a ratio) — so a cell function computes it
    once for all the series a worker process runs on that instance.  ``make``
    must be deterministic in the key (as cells are).
    """
    key = (kind, exp.id, str(point), int(seed), bool(quick))
    if key not in _MEMO:
        if len(_MEMO) >= _MEMO_SIZE:
            _MEMO.clear()
        _MEMO[key] = make()
    return _MEMO[key]


_CATALOGUE: dict[str, Experiment] = {}


def register(exp: Experiment) -> Experiment:
    if exp.id in _CATALOGUE:
        raise ValueError(f"experiment {exp.id} registered twice")
    _CATALOGUE[exp.id] = exp
    return exp


def _load() -> None:
    import dmlsched.experiments.defs  # noqa: F401


def all_experiments() -> list[Experiment]:
    _load()
    return list(_CATALOGUE.values())


def get(exp_id: str) -> Experiment:
    _load()
    if exp_id not in _CATALOGUE:
        raise InvalidInput("experiment", exp_id, "one of `dmlsched reproduce --list`")
    return _CATALOGUE[exp_id]
