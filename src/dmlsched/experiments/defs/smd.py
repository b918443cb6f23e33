"""SMD paper (Yu, Wu, Ji, Liu), Sec. V: Figs. 7–12 in the ``interval`` setting.

Sync and async: Figs. 7/9 are Async-SGD and 8/10 Sync-SGD, as in the paper.
Figs. 11 and 12 show both modes in one figure, so their points are strings
``"<mode>:<jobs>"`` (e.g. ``"async:10"``, ``"sync:10"``).

Setup decisions (the paper leaves them open):

* Figs. 7–8: I = 50 jobs, capacity 1–5 units (``machines``); Figs. 9–10:
  jobs 10–50 at 3 units (the paper does not state the capacity).
* Fig. 11: capacity 1000 × an instance (:func:`instance_capacity`), so every
  job fits and the ratio measures the inner problem; the optimum enumerates
  all (w, p) (:mod:`dmlsched.offline.interval`).  ESW and Optimus (first-come)
  run too, as simple references for the 95% bound (VACUOUS if they pass it).
* Fig. 12: jobs 40–200, capacity 1000 × an instance, ε1 = 0.01.
* ε1 = 0.01 (Sec. V) in full runs; ``--quick`` runs use ε1 = 0.05 to fit the
  one-minute budget (Alg. 1's grid is ~25× smaller per 2-D grid).
  M_δ = 1 and F = 10 always.

Series: ``smd`` (the paper as printed), ``smd+`` (our options, see
:mod:`dmlsched.schedulers.interval.smd`), and both readings of the baselines'
admission, which the paper leaves open: ``esw`` / ``optimus`` admit first-come
(submission order), ``esw-knapsack`` / ``optimus-knapsack`` admit by SMD's
own MKP (16) over their utilities.  Fig. 7–10's claim is checked against
each reading.

Metrics: ``total_utility``, ``used_resource_ratio`` (engine), and
``approx_ratio`` = total utility ÷ the optimum (Fig. 11; computed for
every scheduler of that experiment).  An instance where the optimum earns
nothing has no ratio: the cell is NaN and the report counts it as excluded.

Measured (``--quick``, seeds 0–2), total utility at Fig. 7's 1 / 3 units:
SMD 231.8 / 481.0, smd+ 231.8 / 481.7; first-come ESW 57.4 / 136.6, Optimus
66.2 / 155.9; knapsack ESW 217.8 / 458.3, Optimus 232.5 / 481.7.  The
admission reading decides the verdict: against first-come baselines SMD
wins everywhere (Figs. 7–10), against knapsack admission Optimus ties or
beats it at every point.  Fig. 11: SMD 0.997–1.000 of the optimum, smd+
1.000.  Fig. 12 (used ÷ specified): SMD 0.66–0.76, smd+ 0.32–0.45.
"""

from __future__ import annotations

import math
from typing import Any

from dmlsched.experiments.catalogue import Experiment, Point, memo, register
from dmlsched.experiments.claims import Beats, Bound, Report, Trend
from dmlsched.model.interval import IntervalWorkload
from dmlsched.rng import make_rng, spawn
from dmlsched.workloads.interval import instance_capacity, synthetic_interval

__all__ = ["smd_cell"]

FULL_EPS = 0.01
QUICK_EPS = 0.05
SCHEDULERS = ("smd", "smd+", "esw", "optimus", "esw-knapsack", "optimus-knapsack")
SERIES = {
    "esw-knapsack": ("esw", {"admission": "knapsack"}),
    "optimus-knapsack": ("optimus", {"admission": "knapsack"}),
}
_EPS_OF = ("smd", "smd+")  # series whose ε1 follows the run size
UNITS_VS_JOBS = 3.0
BIG_CAPACITY_INSTANCES = 1000


def _mode_jobs(point: Point) -> tuple[bool, int]:
    mode, jobs = str(point).split(":")
    return mode == "sync", int(jobs)


def build_fig7(point: Point, seed: int, quick: bool) -> IntervalWorkload:
    wl_rng, _ = spawn(make_rng(seed), 2)
    return synthetic_interval(50, float(point), wl_rng, sync=False)


def build_fig8(point: Point, seed: int, quick: bool) -> IntervalWorkload:
    wl_rng, _ = spawn(make_rng(seed), 2)
    return synthetic_interval(50, float(point), wl_rng, sync=True)


def build_fig9(point: Point, seed: int, quick: bool) -> IntervalWorkload:
    wl_rng, _ = spawn(make_rng(seed), 2)
    return synthetic_interval(int(point), UNITS_VS_JOBS, wl_rng, sync=False)


def build_fig10(point: Point, seed: int, quick: bool) -> IntervalWorkload:
    wl_rng, _ = spawn(make_rng(seed), 2)
    return synthetic_interval(int(point), UNITS_VS_JOBS, wl_rng, sync=True)


def build_big(point: Point, seed: int, quick: bool) -> IntervalWorkload:
    """Figs. 11–12: ``"<mode>:<jobs>"`` on 1000 instances' capacity."""
    sync, jobs = _mode_jobs(point)
    wl_rng, _ = spawn(make_rng(seed), 2)
    return synthetic_interval(
        jobs, 1.0, wl_rng, sync=sync, capacity=instance_capacity(BIG_CAPACITY_INSTANCES)
    )


def smd_cell(
    exp: Experiment, scheduler: str, point: Point, seed: int, quick: bool
) -> dict[str, float]:
    """Run one scheduler (SMD with ε1 by size); add ``approx_ratio`` when the metric is asked."""
    from dmlsched.offline.interval import interval_optimum
    from dmlsched.schedulers.protocols import make_scheduler
    from dmlsched.sim.engine import simulate

    workload = exp.build(point, seed, quick)
    name, params = exp.resolve(scheduler)
    if name in _EPS_OF:
        params.setdefault("eps", QUICK_EPS if quick else FULL_EPS)
    sched = make_scheduler(exp.setting, name, **params)
    _, sched_rng = spawn(make_rng(seed), 2)
    metrics = dict(simulate(exp.setting, workload, sched, sched_rng).metrics)
    if "approx_ratio" in exp.metrics:
        # every series of a cell divides by the same optimum: computed once per process
        opt = memo(
            "optimum", exp, point, seed, quick, lambda: interval_optimum(workload).total_utility
        )
        metrics["optimum_utility"] = opt
        # OPT = 0 (then ALG = 0): no ratio — NaN, an excluded cell, never 1
        metrics["approx_ratio"] = metrics["total_utility"] / opt if opt > 0 else math.nan
    return metrics


def _beats(fig: str) -> tuple[Beats, ...]:
    return (
        Beats(
            "total_utility",
            "smd",
            ("esw", "optimus"),
            text=f"SMD earns more total utility than ESW and Optimus at every point ({fig}; "
            "baselines admit first-come)",
            paper="Sec. V: SMD significantly outperforms ESW and Optimus (Figs. 7–10)",
        ),
        *(
            Beats(
                "total_utility",
                "smd",
                (f"{base}-knapsack",),
                text=f"SMD earns more total utility than {name} at every point ({fig}; "
                f"{name} admits by SMD's knapsack)",
                paper="Sec. V: SMD significantly outperforms ESW and Optimus (Figs. 7–10)",
                reason="with SMD's own admission (the MKP (16)) the baselines' allocation "
                "earns what SMD earns (Optimus: equal, or 0.1–0.3% more; ESW: within a few "
                "per cent), so SMD's margin over the first-come baselines comes from "
                "admission, not from Alg. 1–2",
                shown_by=f"{fig} (esw-knapsack, optimus-knapsack)",
            )
            for base, name in (("esw", "ESW"), ("optimus", "Optimus"))
        ),
    )


_METRICS = ("total_utility", "used_resource_ratio", "admitted_jobs")

for _id, _title, _param, _points, _quick, _build in (
    (
        "smd-fig7",
        "Total utility vs cluster resources (Async-SGD, I=50)",
        "units",
        (1, 2, 3, 4, 5),
        (1, 3),
        build_fig7,
    ),
    (
        "smd-fig8",
        "Total utility vs cluster resources (Sync-SGD, I=50)",
        "units",
        (1, 2, 3, 4, 5),
        (1, 3),
        build_fig8,
    ),
    (
        "smd-fig9",
        "Total utility vs number of jobs (Async-SGD, 3 units)",
        "jobs",
        (10, 20, 30, 40, 50),
        (10, 30),
        build_fig9,
    ),
    (
        "smd-fig10",
        "Total utility vs number of jobs (Sync-SGD, 3 units)",
        "jobs",
        (10, 20, 30, 40, 50),
        (10, 30),
        build_fig10,
    ),
):
    register(
        Experiment(
            id=_id,
            setting="interval",
            title=_title,
            param=_param,
            points=_points,
            quick_points=_quick,
            schedulers=SCHEDULERS,
            metrics=_METRICS,
            build=_build,
            claims=_beats(_id),
            series=SERIES,
            cell=smd_cell,
            default_seeds=5,
            reproduces=f"SMD Sec. V, Fig. {_id.removeprefix('smd-fig')}",
        )
    )

register(
    Experiment(
        id="smd-fig11",
        setting="interval",
        title="Approximation ratio SMD / optimum vs jobs (capacity 1000 instances)",
        param="mode:jobs",
        points=tuple(f"{m}:{n}" for m in ("async", "sync") for n in (10, 20, 30, 40, 50)),
        quick_points=("async:10", "sync:10", "async:30", "sync:30"),
        schedulers=("smd", "smd+", "esw", "optimus"),
        metrics=("approx_ratio", "total_utility", "optimum_utility"),
        build=build_big,
        cell=smd_cell,
        plot="bar",
        claims=(
            Bound(
                "approx_ratio",
                "smd",
                ">=",
                0.95,
                text="SMD's utility is at least 95% of the brute-force optimum at every point",
                paper="Fig. 11: the ratio is much better than the bound and grows with jobs",
            ),
            *(
                Trend(
                    "approx_ratio",
                    "smd",
                    points=tuple(f"{mode}:{n}" for n in (10, 20, 30, 40, 50)),
                    text=f"SMD's approximation ratio grows with the jobs ({mode})",
                    paper="Fig. 11: the ratio grows with the number of jobs",
                    reason="on 1000 instances' capacity every job is admitted and each job's "
                    "(w, p) is solved alone: the ratio is already 0.997–1.000 and has nowhere "
                    "to grow",
                )
                for mode in ("async", "sync")
            ),
        ),
        reproduces="SMD Sec. V, Fig. 11",
    )
)

register(
    Experiment(
        id="smd-fig12",
        setting="interval",
        title="Used ÷ user-specified resources vs jobs (ε1 = 0.01, capacity 1000 instances)",
        param="mode:jobs",
        points=tuple(f"{m}:{n}" for m in ("async", "sync") for n in (40, 80, 120, 160, 200)),
        quick_points=("async:40", "sync:40"),
        schedulers=SCHEDULERS,
        series=SERIES,
        metrics=("used_resource_ratio", "total_utility", "admitted_jobs"),
        build=build_big,
        cell=smd_cell,
        plot="bar",
        claims=(
            Bound(
                "used_resource_ratio",
                "smd",
                "<=",
                0.5,
                text="SMD uses at most 50% of the user-specified resources at every point "
                "(paper, Fig. 12: 30–50%)",
                paper="Fig. 12: the actual resources used are 30%–50% of those specified",
                reason="Alg. 1 + Alg. 2 minimise the completion time, which takes most of each "
                "job's limit; the paper's 30–50% needs the smallest of the allocations that earn "
                "the same utility, which smd+'s frugal option takes at no utility cost",
                shown_by="ablation-smd",
            ),
            Report(
                "used_resource_ratio",
                "smd",
                "SMD uses 30–50% of the user-specified resources (paper, Fig. 12)",
            ),
        ),
        reproduces="SMD Sec. V, Fig. 12",
    )
)

# ---------------------------------------------------------------------------- ablation

ABLATION_SERIES: dict[str, tuple[str, dict[str, Any]]] = {
    "smd+/no-frugal": ("smd+", {"frugal": None}),
    "smd+/frugal=1e-4": ("smd+", {"frugal": 1e-4}),
    "smd+/frugal=0.01": ("smd+", {"frugal": 0.01}),
}
_FIG_BUILDERS = {
    "fig7": build_fig7,
    "fig8": build_fig8,
    "fig9": build_fig9,
    "fig10": build_fig10,
    "fig12": build_big,
}


def build_setup(point: Point, seed: int, quick: bool) -> IntervalWorkload:
    """``"<fig>:<point>"`` — that figure's instance at that point (e.g. ``"fig12:sync:40"``)."""
    fig, rest = str(point).split(":", 1)
    p: Point = rest if fig == "fig12" else float(rest) if fig in ("fig7", "fig8") else int(rest)
    return _FIG_BUILDERS[fig](p, seed, quick)


register(
    Experiment(
        id="ablation-smd",
        setting="interval",
        title="SMD as printed vs smd+ vs smd+ with each option off, over Figs. 7–10, 12",
        param="setup",
        points=(
            "fig7:1",
            "fig7:3",
            "fig7:5",
            "fig8:1",
            "fig8:3",
            "fig8:5",
            "fig9:30",
            "fig9:50",
            "fig10:30",
            "fig10:50",
            "fig12:async:40",
            "fig12:sync:40",
        ),
        quick_points=("fig7:3", "fig8:3", "fig9:30", "fig10:30", "fig12:async:40"),
        schedulers=("smd", "smd+", *ABLATION_SERIES),
        series=ABLATION_SERIES,
        metrics=("total_utility", "used_resource_ratio", "admitted_jobs"),
        build=build_setup,
        cell=smd_cell,
        plot="bar",
        claims=(
            Beats(
                "total_utility",
                "smd+",
                ("smd",),
                ties=True,
                text="smd+ earns at least as much total utility as SMD as printed at every setup",
            ),
            Report(
                "used_resource_ratio",
                "smd+",
                "smd+ share of the user-specified resources used (SMD as printed: see its column)",
            ),
        ),
        reproduces="ablation of smd+'s options (exact_inner, frugal; exact_inner off forces "
        "frugal off and gives smd)",
    )
)
