"""Why a scheduler completes few jobs: what the workload allows, in numbers and words.

``dmlsched compare`` runs its cells through :func:`diagnosed_cell`, which
returns the run's curves (utilization over time, the JCT distribution:
:func:`~dmlsched.experiments.curves.run_curves`) and adds to a ``cluster``
cell's metrics three properties of the workload itself (the same for every
scheduler, prefixed ``workload_``):

* ``workload_jobs`` — jobs in the workload; ``workload_horizon`` — T;
* ``workload_finishable_alone`` — jobs that could complete before the horizon
  T even *alone on the empty cluster* with their fastest gang; the job can
  finish iff E·K ÷ that rate ≤ T − a (completion slot ≤ T − 1).  Under the
  Eq. (1) speed model the rate is an upper bound, from a relaxation of the
  placement: for every worker count W ≤ F (sync, Eq. (4)) or ≤ K (async,
  (3.2)) with its fewest PSs ⌈W/γ⌉ (Eq. (2)) whose demand fits in the
  cluster's total capacity, the workers that fit on the largest machine
  beside all the PSs run at the internal rate b^(i) — all W of them must
  for a sync job (Fact 1), any of them for an async one ((3.1)) — and the
  rest at b^(e); the PS bandwidth (3.4) and the packing of tasks into
  machines are left out, so no placement is faster.  Under a measured speed
  model (peer workloads) it is the fastest of the gangs 1, 2, 3, 4, 6, 8,
  12, … placed on the fewest machines — an estimate;
* ``workload_alone_median_slots`` — the median over jobs of E·K ÷ that rate;
* ``workload_alone_median_workers`` — the median over jobs of that gang's W.

No scheduler can finish a job that cannot finish alone, so these bound every
scheduler's ``completed_jobs``.  :func:`explain_completions` turns them and the
engine's ``mean_workers`` and ``mean_progress`` into the sentences the
summary prints (the demo's "why do FIFO and DRF complete so few jobs").
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from dmlsched.experiments.catalogue import Experiment, Point
from dmlsched.experiments.curves import CellResult, run_curves
from dmlsched.model.cluster import ClusterWorkload
from dmlsched.results import Row, columns, groups
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers._shared.alone import alone_rate

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["WORKLOAD_PREFIX", "diagnosed_cell", "explain_completions"]

WORKLOAD_PREFIX = "workload_"


def workload_diagnosis(workload: ClusterWorkload) -> dict[str, float]:
    """The ``workload_*`` metrics of the module docstring."""
    need, gangs = [], []
    for j in workload.jobs:
        r, w = alone_rate(j, workload)
        need.append(j.total_work / r if r > 0 else math.inf)
        gangs.append(w)
    T = workload.horizon
    ok = sum(n <= T - j.arrival for n, j in zip(need, workload.jobs, strict=True))
    return {
        "workload_jobs": float(len(workload.jobs)),
        "workload_horizon": float(T),
        "workload_finishable_alone": float(ok),
        "workload_alone_median_slots": float(np.median(need)) if need else float("nan"),
        "workload_alone_median_workers": float(np.median(gangs)) if gangs else float("nan"),
    }


def diagnosed_cell(
    exp: Experiment, scheduler: str, point: Point, seed: int, quick: bool
) -> CellResult:
    """:func:`~dmlsched.experiments.catalogue.default_cell` plus the workload's diagnosis,
    with the run's curves."""
    from dmlsched.schedulers.protocols import make_scheduler
    from dmlsched.sim.engine import simulate

    workload = exp.build(point, seed, quick)
    sched = make_scheduler(exp.setting, scheduler, **dict(exp.scheduler_params.get(scheduler, {})))
    _, sched_rng = spawn(make_rng(seed), 2)
    result = simulate(exp.setting, workload, sched, sched_rng, record_events=False)
    metrics = dict(result.metrics)
    if isinstance(workload, ClusterWorkload):
        metrics.update(workload_diagnosis(workload))
    return CellResult(metrics, run_curves(result.series))


def explain_completions(results: Iterable[Row] | pd.DataFrame, share: float = 0.5) -> list[str]:
    """Sentences on why schedulers completed fewer than ``share`` of the jobs that
    could finish alone: first, when fewer than ``share`` of all jobs could, that
    the workload bounds every scheduler; then one per such scheduler.

    ``results``: rows of results.csv or their DataFrame.  Empty when the
    results lack the diagnosis or every scheduler did well.
    """
    cols = columns(results)
    by_metric = groups(cols, "metric")
    by_sched = groups(cols, "metric", "scheduler")

    def _mean(metric: str, scheduler: str | None = None) -> float:
        got = by_metric if scheduler is None else by_sched
        v = np.array(got.get((metric,) if scheduler is None else (metric, scheduler), []), float)
        v = v[np.isfinite(v)]
        return float(v.mean()) if v.size else float("nan")

    jobs = _mean("workload_jobs")
    if not math.isfinite(jobs) or ("completed_jobs",) not in by_metric:
        return []
    ok = _mean("workload_finishable_alone")
    scheds = list(dict.fromkeys(cols["scheduler"]))
    low = [s for s in scheds if _mean("completed_jobs", s) < share * ok]
    if not low:
        return []
    med = _mean("workload_alone_median_slots")
    gw = _mean("workload_alone_median_workers")
    T = _mean("workload_horizon")
    seeds = len(set(cols["seed"]))
    avg = f" (mean over {seeds} seeds)" if seeds > 1 else ""
    out = []
    if ok < share * jobs:  # few could finish at all: the workload bounds every scheduler
        out.append(
            f"Alone on the empty cluster with its fastest gang, only {ok:.3g} of the "
            f"{jobs:.3g} jobs{avg} could finish within the horizon"
            + (f" of {T:.3g} slots" if math.isfinite(T) else "")
            + " — the "
            f"median job needs {med:.3g} slots even then: no scheduler can complete more, so "
            "completions here are bounded by the workload, not only by the scheduler."
        )
    for s in low:
        adm = _mean("admitted_jobs", s)
        done = _mean("completed_jobs", s)
        w = _mean("mean_workers", s)
        prog = _mean("mean_progress", s)
        text = f"{s} admitted {adm:.3g} and completed {done:.3g} jobs"
        if math.isfinite(w):
            text += (
                f"; a running job had {w:.3g} workers on average, where a job's fastest gang "
                f"has {gw:.3g} (median)"
            )
        if math.isfinite(prog):
            text += f", and its admitted jobs got through {100 * prog:.0f}% of their work "
            text += "by the horizon on average"
        if adm > ok + 1e-9:
            text += (
                f" — it ran more jobs than could ever finish ({adm:.3g} > {ok:.3g}), each on "
                "a fraction of the gang that would finish it, so they ran out of time"
            )
        out.append(text + ".")
    return out
