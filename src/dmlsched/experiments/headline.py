"""The result of a comparison in plain words: who did best, by how much, and what the
workload allowed — the first lines of ``summary.md`` and of ``compare``'s output.

Only for a single-point comparison (``dmlsched compare``; a sweep's story is
its figures and its claims).  Means over seeds, from ``results.csv`` rows:

* jobs completed (when the runs count them): the best and the runner-up, out of
  how many jobs, and the fewest;
* the setting's objective (total utility, total JCT, total cost), best and
  worst, in the direction that is better for it;
* on a ``cluster`` workload with the ``workload_*`` diagnosis: how many jobs
  could finish even alone on the empty cluster — when most could, the gaps
  are the schedulers' doing (when few could,
  :func:`~dmlsched.experiments.diagnose.explain_completions` says why).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from dmlsched.experiments.metrics import describe
from dmlsched.results import Row, columns, groups

__all__ = ["OBJECTIVE", "headline"]

#: the setting's objective and whether more of it is better
OBJECTIVE: dict[str, tuple[str, bool]] = {
    "cluster": ("total_utility", True),
    "interval": ("total_utility", True),
    "edge-cloud": ("total_jct", False),
    "geo": ("total_cost", False),
}


def _num(v: float) -> str:
    if not math.isfinite(v):
        return str(v)
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.0f}" if float(v).is_integer() else f"{v:.3g}"


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _ranked(means: dict[str, float], more_is_better: bool) -> list[tuple[float, list[str]]]:
    """Distinct values, best first, each with the schedulers that share it."""
    out: list[tuple[float, list[str]]] = []
    order = sorted(means.items(), key=lambda kv: -kv[1] if more_is_better else kv[1])
    for s, v in order:
        if out and math.isclose(out[-1][0], v, rel_tol=1e-9, abs_tol=1e-12):
            out[-1][1].append(s)
        else:
            out.append((v, [s]))
    return out


def headline(results: Iterable[Row]) -> list[str]:
    """Sentences for the module docstring's comparison; empty when not one."""
    cols = columns(results)
    if not cols["metric"] or len(set(cols["value"])) != 1:
        return []
    seeds = len(set(cols["seed"]))
    by = groups(cols, "metric", "scheduler")
    scheds = list(dict.fromkeys(cols["scheduler"]))
    everyone = groups(cols, "metric")

    def means(metric: str) -> dict[str, float]:
        out = {}
        for s in scheds:
            v = np.array(by.get((metric, s), []), float)
            v = v[np.isfinite(v)]
            if v.size:
                out[s] = float(v.mean())
        return out

    def overall(metric: str) -> float:
        v = np.array(everyone.get((metric,), []), float)
        v = v[np.isfinite(v)]
        return float(v.mean()) if v.size else math.nan

    over = "in 1 run" if seeds == 1 else f"on average over {seeds} seeds"
    lines = []
    jobs = overall("workload_jobs")
    done = means("completed_jobs")
    if len(done) > 1:
        ranked = _ranked(done, True)
        best_v, best = ranked[0]
        of = f" of {_num(jobs)} ({best_v / jobs:.0%})" if math.isfinite(jobs) and jobs > 0 else ""
        text = (
            f"{_names(best)} completed the most jobs: {_num(best_v)}{of} {over}"
            if len(ranked) > 1
            else f"every scheduler completed {_num(best_v)} jobs{of} {over}"
        )
        if len(ranked) > 2:
            text += f"; next {_names(ranked[1][1])} with {_num(ranked[1][0])}"
        if len(ranked) > 1:
            text += f"; fewest {_names(ranked[-1][1])} with {_num(ranked[-1][0])}"
        lines.append(text + ".")
    setting = cols["setting"][0]
    objective = OBJECTIVE.get(setting)
    if objective is not None:
        metric, more = objective
        vals = means(metric)
        if len(vals) > 1:
            ranked = _ranked(vals, more)
            label = describe(metric).label
            if len(ranked) == 1:
                lines.append(f"{label}: the same for every scheduler ({_num(ranked[0][0])}).")
            else:
                best_v, best = ranked[0]
                worst_v, worst = ranked[-1]
                word, other = ("highest", "lowest") if more else ("lowest", "highest")
                text = (
                    f"{label} ({'more' if more else 'less'} is better): {word} {_names(best)} "
                    f"with {_num(best_v)}, {other} {_names(worst)} with {_num(worst_v)}"
                )
                if worst_v > 0 and best_v > 0:
                    r = best_v / worst_v if more else worst_v / best_v
                    text += f" ({r:.3g}× apart)" if r >= 1.05 else ""
                lines.append(text + ".")
    alone = overall("workload_finishable_alone")
    horizon = overall("workload_horizon")
    if math.isfinite(alone) and math.isfinite(jobs) and jobs > 0 and alone >= jobs / 2:
        lines.append(
            f"Alone on the empty cluster, {_num(alone)} of the {_num(jobs)} jobs could finish "
            f"within the horizon of {_num(horizon)} slots: most jobs can finish, so who finishes "
            "them is the scheduler's doing."
        )
    return lines
