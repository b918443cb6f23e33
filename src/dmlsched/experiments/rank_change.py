"""Does a ranking of schedulers change between two runs of one experiment? Paired over seeds.

Two ``results.csv`` of the same experiment and seeds (e.g. ``reproduce
pdors-fig7`` and ``reproduce pdors-fig7 --compute saturating``): same seed =
same workload, so each scheduler pair's per-seed difference of a metric is
paired.  Per point (x-axis value) and pair (a, b), :func:`rank_changes`
gives the mean difference a − b in each run and a two-sided Wilcoxon
signed-rank p-value over the seeds (scipy; NaN when every difference is 0:
the two tie on every seed); the order of a pair *changes* when the signs of
the two means differ and both are significant (p < ``alpha``), and is
*lost* when it was significant in the first run and is not in the second.

Metrics may be derived: ``share_of_work_done`` = mean_progress ×
admitted_jobs ÷ jobs — the share of the whole workload's work done by the
horizon (unadmitted jobs count 0), which, unlike utility, stays informative
when no job finishes.

``python -m dmlsched.experiments.rank_change A/results.csv [...] --vs
B/results.csv [...] --metric total_utility --schedulers pd-ors,oasis,dorm``
prints the Markdown tables (several files per run are merged: e.g. the
cells of ``pdors-fig7`` and of ``pdors-fig8``, the same workloads).
"""

from __future__ import annotations

import argparse
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dmlsched.results import columns, scan_results

__all__ = ["PairChange", "per_seed", "rank_changes", "render"]

DERIVED = {"share_of_work_done"}


@dataclass(frozen=True)
class PairChange:
    point: str
    a: str
    b: str
    mean_first: float  # mean of a − b over seeds, first run
    p_first: float
    mean_second: float
    p_second: float
    seeds: int

    def verdict(self, alpha: float = 0.05) -> str:
        sig1 = self.p_first < alpha
        sig2 = self.p_second < alpha
        if sig1 and sig2 and np.sign(self.mean_first) != np.sign(self.mean_second):
            return "reversed"
        if sig1 and not sig2:
            return "lost"
        if sig2 and not sig1:
            return "new"
        return "kept" if sig1 else "neither"


def per_seed(paths: Sequence[Path | str], metric: str) -> dict[tuple[str, str, int], float]:
    """(point, scheduler, seed) → metric over the cells of ``paths`` (derived metrics too)."""
    cells: dict[tuple[str, str, int], dict[str, float]] = {}
    for path in paths:
        cols = columns(scan_results(Path(path)).rows)
        for sched, point, seed, m, v in zip(
            cols["scheduler"],
            cols["value"],
            cols["seed"],
            cols["metric"],
            cols["metric_value"],
            strict=True,
        ):
            cells.setdefault((str(point), str(sched), int(seed)), {})[str(m)] = float(v)
    out = {}
    for key, ms in cells.items():
        if metric == "share_of_work_done":
            jobs = ms.get("workload_jobs", float(key[0]) if key[0].isdigit() else math.nan)
            out[key] = ms["mean_progress"] * ms["admitted_jobs"] / jobs
        elif metric in ms:
            out[key] = ms[metric]
    return out


def _paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    from scipy.stats import wilcoxon

    d = a - b
    if not np.any(d):
        return 0.0, math.nan
    return float(d.mean()), float(wilcoxon(a, b, zero_method="zsplit").pvalue)


def rank_changes(
    first: dict[tuple[str, str, int], float],
    second: dict[tuple[str, str, int], float],
    schedulers: Sequence[str],
) -> list[PairChange]:
    """Per point and scheduler pair, the paired comparison in both runs (module docstring)."""
    points = sorted({k[0] for k in first}, key=lambda p: (len(p), p))
    out = []
    for point in points:
        for a, b in itertools.combinations(schedulers, 2):
            seeds = sorted(
                s
                for (p, sc, s) in first
                if p == point
                and sc == a
                and all((point, x, s) in d for x in (a, b) for d in (first, second))
            )
            if not seeds:
                continue
            got = []
            for run in (first, second):
                va = np.array([run[(point, a, s)] for s in seeds])
                vb = np.array([run[(point, b, s)] for s in seeds])
                got.append(_paired(va, vb))
            out.append(PairChange(point, a, b, *got[0], *got[1], len(seeds)))
    return out


def _order(run: dict[tuple[str, str, int], float], point: str, scheds: Sequence[str]) -> str:
    means = {
        s: float(np.mean([v for (p, sc, _), v in run.items() if p == point and sc == s]))
        for s in scheds
        if any(p == point and sc == s for (p, sc, _) in run)
    }
    ranked = sorted(means, key=lambda s: -means[s])
    text = f"{ranked[0]} ({means[ranked[0]]:.3g})" if ranked else ""
    for prev, s in itertools.pairwise(ranked):
        tied = math.isclose(means[prev], means[s], rel_tol=1e-9, abs_tol=1e-12)
        text += f" {'=' if tied else '>'} {s} ({means[s]:.3g})"
    return text


def render(
    first: dict[tuple[str, str, int], float],
    second: dict[tuple[str, str, int], float],
    schedulers: Sequence[str],
    labels: tuple[str, str] = ("first", "second"),
    alpha: float = 0.05,
) -> str:
    """Markdown: the mean order per point in each run, then every pair's paired test."""
    changes = rank_changes(first, second, schedulers)
    lines = [f"| point | order, {labels[0]} | order, {labels[1]} |", "|---|---|---|"]
    for point in sorted({c.point for c in changes}, key=lambda p: (len(p), p)):
        lines.append(
            f"| {point} | {_order(first, point, schedulers)} | "
            f"{_order(second, point, schedulers)} |"
        )
    lines += [
        "",
        f"| point | pair | mean a − b, {labels[0]} (p) | mean a − b, {labels[1]} (p) | seeds "
        "| order |",
        "|---|---|---|---|---|---|",
    ]
    for c in changes:
        lines.append(
            f"| {c.point} | {c.a} vs {c.b} | {c.mean_first:.3g} ({_p(c.p_first)}) | "
            f"{c.mean_second:.3g} ({_p(c.p_second)}) | {c.seeds} | {c.verdict(alpha)} |"
        )
    counts = {v: sum(c.verdict(alpha) == v for c in changes) for v in ("kept", "reversed")}
    counts["lost"] = sum(c.verdict(alpha) == "lost" for c in changes)
    lines += [
        "",
        f"{len(changes)} pairs × points: {counts['kept']} orders significant in both and kept, "
        f"{counts['reversed']} reversed, {counts['lost']} significant in {labels[0]} only "
        f"(Wilcoxon signed-rank, two-sided, p < {alpha}).",
    ]
    return "\n".join(lines) + "\n"


def _p(p: float) -> str:
    return "tie" if math.isnan(p) else f"{p:.3g}"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("first", nargs="+", help="results.csv of the first run (several: merged)")
    ap.add_argument("--vs", nargs="+", required=True, help="results.csv of the second run")
    ap.add_argument("--metric", default="total_utility")
    ap.add_argument("--schedulers", required=True)
    ap.add_argument("--labels", default="first,second")
    a = ap.parse_args(argv)
    scheds = a.schedulers.split(",")
    labels = tuple(a.labels.split(",", 1))
    print(render(per_seed(a.first, a.metric), per_seed(a.vs, a.metric), scheds, labels))


if __name__ == "__main__":
    main()
