"""Figures for a paper: one per metric (mean and 95% interval over seeds per scheduler),
and, where the runs left curves, the JCT distribution and utilization over time.

Rules every figure follows (the metric's words, unit and domain come from
:mod:`dmlsched.experiments.metrics`):

* title: the metric in words (and what it is plotted against) — the figure's
  own metric, never the experiment's main one; below it the figure
  reproduced (e.g. "PD-ORS TNSE 2022 Fig. 7") and how many seeds;
* axes labelled in words with units; the legend outside the data (right);
  one colour per scheduler in every figure of a report;
* a sweep over numbers is a line plot whose error bars are dodged (each
  scheduler's drawn a little to the side, so bars at the same x never
  overlap); a sweep over names is grouped bars, dodged the same way; a
  single point is horizontal bars, one per scheduler, its value written at
  the end of the bar (a picture of a table is never drawn: ``summary.md``
  holds the tables);
* intervals clipped to the metric's domain — no error bar below 0, no
  utilization above 1; one seed draws no interval and the title says
  "1 seed" (never "± 0");
* a readable y-range: an interval reaching far beyond every mean (one wild
  seed) does not stretch the axis — the axis stops above the data and the
  clipped bar ends in an arrow at the axis' edge, and a note under the figure
  says where each one reaches;
* a mean that is undefined (no seed finite, e.g. mean JCT with no job done)
  is marked "undefined" at its place, not left blank;
* values the paper prints (:class:`~dmlsched.experiments.catalogue.PaperValue`)
  are drawn beside ours in the scheduler's colour: a hollow diamond for a
  number, a hollow bracket for a range the text states;
* every figure is a PNG; ``formats`` ("pdf", "svg") writes the same figure
  as vector files beside it, without timestamps (same data, same bytes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: no display on CI or servers
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from dmlsched.experiments.catalogue import PaperValue
from dmlsched.experiments.metrics import (
    Cell,
    Metric,
    cell_stats,
    describe,
    param_label,
)

__all__ = [
    "VECTOR_FORMATS",
    "plot_jct_cdf",
    "plot_jobs",
    "plot_metric",
    "plot_utilization",
    "scheduler_colors",
]

VECTOR_FORMATS = ("pdf", "svg")
# an interval ending further above the data than this (× the data's height) is clipped
_STRETCH = 2.0
_HEADROOM = 1.3  # the axis then stops this far (× the data's height) above its floor
_LINESTYLES = ("-", "--", "-.", ":")
_DODGE = 0.12  # share of the narrowest gap between x values the dodged markers spread over

plt.rcParams["svg.hashsalt"] = "dmlsched"  # element ids from a fixed salt: same bytes


def scheduler_colors(schedulers: Sequence[str]) -> dict[str, str]:
    """One colour per scheduler, by order of appearance (the same in every figure)."""
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {s: cycle[i % len(cycle)] for i, s in enumerate(schedulers)}


def _save(fig: plt.Figure, path: Path, formats: Sequence[str]) -> Path:
    fig.savefig(path, metadata={"Software": None}, bbox_inches="tight")
    for fmt in formats:
        meta = (
            {"Creator": None, "Producer": None, "CreationDate": None}
            if fmt == "pdf"
            else {"Date": None, "Creator": None}
        )
        fig.savefig(path.with_suffix(f".{fmt}"), metadata=meta, bbox_inches="tight")
    plt.close(fig)
    return path


def _seeds_note(cells: Sequence[Cell]) -> str:
    ns = sorted({c.total for c in cells})
    if ns == [1]:
        return "1 seed, no interval"
    return f"mean and 95% interval over {'/'.join(map(str, ns))} seeds"


def _paper_for(paper: Sequence[PaperValue], metric: str, sched: str) -> list[PaperValue]:
    return [p for p in paper if p.metric == metric and p.scheduler == sched]


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


@dataclass(frozen=True)
class _End:
    """The upper end of one drawn interval: where it is drawn, what it belongs to."""

    pos: float  # on the category axis
    end: float
    color: str
    who: str  # "scheduler at point", for the note


@dataclass(frozen=True)
class _Range:
    """Where a value axis stops, and the interval ends that lie beyond it."""

    low: float | None
    high: float | None  # None: matplotlib's own choice
    clipped: tuple[_End, ...]


def _value_range(means: list[float], ends: list[_End], extra: list[float], info: Metric) -> _Range:
    """The value axis' range (module docstring: a readable y-range).

    ``means``: the drawn means; ``ends``: the intervals' upper ends;
    ``extra``: other values that must stay visible (the paper's).
    """
    data = [v for v in [*means, *extra] if np.isfinite(v)]
    if not data:
        return _Range(info.low, None, ())
    floor = info.low if info.low is not None else min(0.0, min(data))
    top = max(data)
    height = top - floor
    stretched = height > 0 and any(
        np.isfinite(e.end) and e.end > floor + _STRETCH * height for e in ends
    )
    if not stretched:
        return _Range(info.low, None, ())
    high = floor + _HEADROOM * height
    if info.high is not None:
        high = min(high, info.high + 0.02 * (info.high - floor))
    return _Range(info.low, high, tuple(e for e in ends if e.end > high))  # every one cut


def _apply_range(ax: plt.Axes, r: _Range, horizontal: bool, info: Metric) -> None:
    get, set_ = (ax.get_xlim, ax.set_xlim) if horizontal else (ax.get_ylim, ax.set_ylim)
    lo, hi = get()
    if r.high is not None:
        hi = r.high
    elif info.high is not None and hi > info.high:
        hi = info.high + 0.02 * (info.high - (info.low or 0.0))
    if r.low is not None and lo < r.low:
        lo = r.low
    set_(lo, hi)
    for e in r.clipped:
        xy = (hi, e.pos) if horizontal else (e.pos, hi)
        marker = ">" if horizontal else "^"
        ax.plot([xy[0]], [xy[1]], marker=marker, color=e.color, clip_on=False, markersize=6)
    if r.clipped:
        cut = "; ".join(f"{e.who} reaches {_fmt(e.end)}" for e in r.clipped)
        ax.annotate(
            f"{'►' if horizontal else '▲'} interval cut at the axis' end: {cut}",
            (0, 0),
            xycoords="axes fraction",
            xytext=(0, -40),  # under the axis label; the saved figure grows to hold it
            textcoords="offset points",
            fontsize=7,
            color="0.25",
            ha="left",
            va="top",
        )


def _title(ax: plt.Axes, head: str, figure: str, cells: Sequence[Cell]) -> None:
    below = f"{figure} — {_seeds_note(cells)}" if figure else _seeds_note(cells)
    ax.set_title(f"{head}\n{below}", fontsize=9)


def _cells(sub: pd.DataFrame, scheds: list[str], points: list[str], info: Metric) -> dict:
    return {
        (s, p): cell_stats(
            sub[(sub["scheduler"] == s) & (sub["value"].astype(str) == p)][
                "metric_value"
            ].to_numpy(),
            info,
        )
        for s in scheds
        for p in points
    }


def _err(c: Cell) -> tuple[float, float]:
    """(below, above) the mean of its clipped interval; none for one seed."""
    if c.n <= 1:
        return 0.0, 0.0
    # a mean just outside the domain (an LP's −5e-9 transfer cost: solver tolerance)
    # has its clipped bound on the wrong side of it: no bar on that side
    return max(c.mean - c.low, 0.0), max(c.high - c.mean, 0.0)


def plot_metric(
    df: pd.DataFrame,
    metric: str,
    param: str,
    title: str,
    path: Path,
    kind: str = "line",
    *,
    figure: str = "",
    paper: Sequence[PaperValue] = (),
    formats: Sequence[str] = (),
    colors: Mapping[str, str] | None = None,
) -> Path | None:
    """Write ``metric``'s figure (see the module docstring) to ``path``; None if no data.

    ``title`` is the experiment's title (said only where the figure has a single
    point: it names what was compared), ``figure`` what it reproduces.
    """
    sub = df[df["metric"] == metric]
    if sub.empty:
        return None
    info = describe(metric)
    points = [str(p) for p in dict.fromkeys(sub["value"])]
    scheds = list(dict.fromkeys(sub["scheduler"]))
    colors = dict(colors) if colors else scheduler_colors(scheds)
    cells = _cells(sub, scheds, points, info)
    if len(points) == 1:
        return _single_point(
            cells,
            scheds,
            points[0],
            param,
            title,
            path,
            info,
            figure,
            paper,
            metric,
            formats,
            colors,
        )
    numeric = kind == "line" and _is_numeric(points)
    fig, ax = plt.subplots(figsize=(7.4, 4.2), dpi=110)
    xs_all = (
        np.array([float(p) for p in points]) if numeric else np.arange(len(points), dtype=float)
    )
    gap = float(np.min(np.diff(np.sort(xs_all)))) if len(xs_all) > 1 else 1.0
    step = (_DODGE if numeric else 0.8) * gap / max(len(scheds), 1)
    undefined: list[tuple[float, str]] = []
    means: list[float] = []
    ends: list[_End] = []
    extra: list[float] = []
    for k, s in enumerate(scheds):
        color = colors.get(s, "0.3")
        cs = [cells[(s, p)] for p in points]
        offset = (k - (len(scheds) - 1) / 2) * step
        x = xs_all + offset  # dodged: no two schedulers' bars at one x
        mean = np.array([c.mean for c in cs])
        err = np.array([_err(c) for c in cs]).T
        ok = np.array([c.defined for c in cs])
        spread = np.array([c.n > 1 for c in cs])
        if numeric:  # each scheduler's line through its own dodged markers
            ax.plot(x[ok], mean[ok], marker="o", markersize=4.5, color=color, label=s)
        else:
            ax.bar(x[ok], mean[ok], width=step, color=color, label=s)
        if spread.any():
            ax.errorbar(
                x[spread], mean[spread], yerr=err[:, spread], fmt="none", ecolor=color, capsize=3
            )
        means += [float(m) for m in mean[ok]]
        ends += [
            _End(float(xi), float(c.high), color, f"{s} at {p}")
            for xi, c, p in zip(x, cs, points, strict=True)
            if c.n > 1
        ]
        undefined += [(float(xi), s) for xi, d in zip(x, ok, strict=True) if not d]
        extra += _draw_paper(ax, _paper_for(paper, metric, s), x, points, color, s, numeric)
    base = info.low if info.low is not None else 0.0
    for xi, s in undefined:
        ax.plot([xi], [base], marker="x", color="0.4", linestyle="none")
        ax.annotate(
            f"{s}: undefined",
            (xi, base),
            textcoords="offset points",
            xytext=(0, 6),
            rotation=90,
            fontsize=7,
            color="0.3",
            ha="center",
            va="bottom",
        )
    if undefined:
        label = "undefined mean (no finite seed)"
        ax.plot([], [], marker="x", color="0.4", linestyle="none", label=label)
    if not numeric:
        crowded = len(points) > 4 or sum(map(len, points)) > 48
        ax.set_xticks(
            xs_all, points, rotation=25 if crowded else 0, ha="right" if crowded else "center"
        )
    elif len(points) <= 12:
        ax.set_xticks(xs_all, points)
    r = _value_range(means, ends, extra, info)
    if info.low is not None and not numeric:
        r = _Range(info.low, r.high, r.clipped)  # bars start at the domain's floor
    _apply_range(ax, r, False, info)
    ax.set_xlabel(param_label(param))
    ax.set_ylabel(info.axis)
    _title(ax, f"{info.label} vs {_lower(param_label(param))}", figure, list(cells.values()))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _save(fig, path, formats)


def _draw_paper(
    ax: plt.Axes,
    values: list[PaperValue],
    x: np.ndarray,
    points: list[str],
    color: str,
    sched: str,
    numeric: bool,
) -> list[float]:
    """The paper's values beside ours; returns the values drawn (they bound the range)."""
    drawn: list[float] = []
    for pv in values:
        px = [xi for xi, p in zip(x, points, strict=True) if pv.at(p)]
        if not px:
            continue
        lab = f"{sched}, paper ({pv.source})"
        if numeric:  # beside ours, not on top of our interval
            px = [xi + 0.02 * (x.max() - x.min()) for xi in px]
        if isinstance(pv.value, tuple):
            lo, hi = pv.value
            mid = (lo + hi) / 2
            bracket = ax.errorbar(
                px,
                [mid] * len(px),
                yerr=[[mid - lo] * len(px), [hi - mid] * len(px)],
                fmt="none",
                ecolor=color,
                elinewidth=1.5,
                capsize=6,
                alpha=0.6,
                label=lab,
            )
            for line in bracket[2]:
                line.set_linestyle("--")
            drawn += [lo, hi]
        else:
            ax.plot(
                px,
                [pv.value] * len(px),
                linestyle="none",
                marker="D",
                markersize=8,
                markerfacecolor="none",
                markeredgecolor=color,
                markeredgewidth=1.5,
                label=lab,
            )
            drawn.append(float(pv.value))
    return drawn


def _single_point(
    cells: dict,
    scheds: list[str],
    point: str,
    param: str,
    title: str,
    path: Path,
    info: Metric,
    figure: str,
    paper: Sequence[PaperValue],
    metric: str,
    formats: Sequence[str],
    colors: Mapping[str, str],
) -> Path:
    """One horizontal bar per scheduler (first at the top), its value at the bar's end."""
    n = len(scheds)
    fig, ax = plt.subplots(figsize=(7.4, 1.3 + 0.42 * n), dpi=110)
    ys = np.arange(n)[::-1].astype(float)
    means: list[float] = []
    ends: list[_End] = []
    extra: list[float] = []
    for y, s in zip(ys, scheds, strict=True):
        c = cells[(s, point)]
        color = colors.get(s, "0.3")
        if not c.defined:
            ax.annotate(
                "undefined (no finite seed)",
                (info.low or 0.0, y),
                xytext=(4, 0),
                textcoords="offset points",
                va="center",
                fontsize=8,
                color="0.3",
            )
            continue
        ax.barh([y], [c.mean], height=0.62, color=color)
        below, above = _err(c)
        if c.n > 1:
            ax.errorbar(
                [c.mean], [y], xerr=[[below], [above]], fmt="none", ecolor="0.15", capsize=3
            )
            ends.append(_End(float(y), float(c.high), color, s))
        text = _fmt(c.mean) + (f" ± {_fmt(c.half)}" if c.n > 1 and not c.clipped else "")
        ax.annotate(
            text,
            (max(c.high if c.n > 1 else c.mean, c.mean), y),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
        )
        means.append(c.mean)
        for pv in _paper_for(paper, metric, s):
            if not pv.at(point):
                continue
            vals = list(pv.value) if isinstance(pv.value, tuple) else [float(pv.value)]
            ax.plot(
                vals,
                [y - 0.38] * len(vals),
                marker="D",
                linestyle="--" if len(vals) > 1 else "none",
                markerfacecolor="none",
                markeredgecolor=color,
                color=color,
                label=f"{s}, paper ({pv.source})",
            )
            extra += vals
    ax.set_yticks(ys, scheds)
    r = _value_range(means, ends, extra, info)
    low = info.low if info.low is not None else min([0.0, *means])
    r = _Range(low, r.high, r.clipped)
    _apply_range(ax, r, True, info)
    lo, hi = ax.get_xlim()
    if r.high is None:  # room for the values written at the bars' ends
        ax.set_xlim(lo, hi + 0.18 * (hi - lo))
    ax.set_xlabel(info.axis)
    ax.grid(axis="x", alpha=0.3)
    head = f"{info.label} — {title}" if title and len(title) <= 60 else info.label
    head += f" ({_lower(param_label(param))}: {point})" if param != "workload" else ""
    _title(ax, head, figure, [cells[(s, point)] for s in scheds])
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _save(fig, path, formats)


def plot_jobs(
    df: pd.DataFrame,
    path: Path,
    *,
    title: str = "",
    formats: Sequence[str] = (),
    colors: Mapping[str, str] | None = None,
) -> Path | None:
    """Grouped bars per scheduler: jobs admitted and completed (mean, 95% interval), with
    the workload's size and, from the ``workload_*`` rows, how many jobs could finish
    even alone on the empty cluster — what no scheduler can beat.  None without data."""
    have = set(df["metric"])
    if not {"admitted_jobs", "completed_jobs"} <= have:
        return None
    scheds = list(dict.fromkeys(df["scheduler"]))
    colors = dict(colors) if colors else scheduler_colors(scheds)
    info = describe("completed_jobs")
    stats = {
        (m, s): cell_stats(
            df[(df["metric"] == m) & (df["scheduler"] == s)]["metric_value"].to_numpy(), info
        )
        for m in ("admitted_jobs", "completed_jobs")
        for s in scheds
    }
    fig, ax = plt.subplots(figsize=(max(6.0, 1.0 + 0.9 * len(scheds)), 4.2), dpi=110)
    x = np.arange(len(scheds), dtype=float)
    w = 0.38
    bars: tuple[tuple[str, str, dict[str, Any]], ...] = (
        ("admitted_jobs", "admitted", {"alpha": 0.35}),
        ("completed_jobs", "completed", {}),
    )
    for k, (m, label, style) in enumerate(bars):
        cs = [stats[(m, s)] for s in scheds]
        xs = x + (k - 0.5) * w
        ax.bar(
            xs,
            [c.mean if c.defined else 0.0 for c in cs],
            width=w,
            color=[colors[s] for s in scheds],
            edgecolor="0.2",
            linewidth=0.6,
            **style,
        )
        err = np.array([_err(c) for c in cs]).T
        ax.errorbar(xs, [c.mean for c in cs], yerr=err, fmt="none", ecolor="0.15", capsize=3)
        for xi, c in zip(xs, cs, strict=True):
            if c.defined:
                ax.annotate(
                    f"{c.mean:.3g}",
                    (xi, c.high if c.n > 1 else c.mean),
                    xytext=(0, 2),
                    textcoords="offset points",
                    ha="center",
                    va="bottom",
                    fontsize=7,
                )
        ax.bar(
            [],
            [],
            color="0.5",
            edgecolor="0.2",
            label=f"{label} (bar {k + 1} of each pair)",
            **style,
        )
    for m, label, ls in (
        ("workload_jobs", "jobs in the workload", ":"),
        ("workload_finishable_alone", "could finish alone on the empty cluster", "--"),
    ):
        v = df[df["metric"] == m]["metric_value"].to_numpy(dtype=float)
        if v.size:
            ax.axhline(float(np.mean(v)), color="0.25", linestyle=ls, linewidth=1, label=label)
    ax.set_xticks(x, scheds, rotation=20 if len(scheds) > 6 else 0)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("Jobs")
    ax.grid(axis="y", alpha=0.3)
    seeds = len(set(df["seed"]))
    note = "1 seed, no interval" if seeds == 1 else f"mean and 95% interval over {seeds} seeds"
    below = f"{title} — {note}" if title else note
    ax.set_title(f"Jobs admitted and completed, per scheduler\n{below}", fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _save(fig, path, formats)


def _by_scheduler(
    curves: Mapping[tuple[str, str, int, str], np.ndarray], name: str
) -> dict[str, list[np.ndarray]]:
    out: dict[str, list[np.ndarray]] = {}
    for (s, _, _, c), pts in curves.items():
        if c == name:
            out.setdefault(s, []).append(pts)
    return out


def plot_jct_cdf(
    curves: Mapping[tuple[str, str, int, str], np.ndarray],
    path: Path,
    *,
    title: str = "",
    formats: Sequence[str] = (),
    colors: Mapping[str, str] | None = None,
) -> Path | None:
    """Share of all jobs completed within x slots, per scheduler: each seed's step curve
    (``curves.csv``'s ``jct_cdf``), averaged over seeds.  None without the curve."""
    runs = _by_scheduler(curves, "jct_cdf")
    if not runs:
        return None
    colors = dict(colors) if colors else scheduler_colors(list(runs))
    top = max((float(p[:, 0].max()) for ps in runs.values() for p in ps if p.size), default=1.0)
    grid = np.linspace(0.0, top * 1.02 if top > 0 else 1.0, 400)
    fig, ax = plt.subplots(figsize=(7.4, 4.2), dpi=110)
    for k, (s, ps) in enumerate(runs.items()):
        steps = []
        for p in ps:
            if p.size == 0:
                steps.append(np.zeros_like(grid))
                continue
            idx = np.searchsorted(p[:, 0], grid, side="right")  # jobs finished within x
            steps.append(np.where(idx > 0, p[np.maximum(idx - 1, 0), 1], 0.0))
        mean = np.mean(steps, axis=0)
        ax.step(
            grid,
            mean,
            where="post",
            color=colors.get(s, "0.3"),
            linestyle=_LINESTYLES[k % len(_LINESTYLES)],  # equal curves stay visible
            label=f"{s} ({mean[-1]:.0%})",
        )
    ax.set_xlim(0, grid[-1])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("Job completion time (slots)")
    ax.set_ylabel("Share of all jobs completed (fraction)")
    ax.grid(alpha=0.3)
    seeds = max(len(ps) for ps in runs.values())
    note = "1 seed" if seeds == 1 else f"mean over {seeds} seeds"
    head = "Job completion time: share of jobs done within x slots (unfinished jobs never are)"
    ax.set_title(
        f"{head}\n{title + ' — ' if title else ''}{note}; legend: share completed", fontsize=9
    )
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _save(fig, path, formats)


def plot_utilization(
    curves: Mapping[tuple[str, str, int, str], np.ndarray],
    path: Path,
    *,
    title: str = "",
    formats: Sequence[str] = (),
    colors: Mapping[str, str] | None = None,
) -> Path | None:
    """Mean share of capacity in use per slot: one panel per scheduler (shared axes, so
    overlapping bands never hide each other), its mean over seeds and a shaded 95%
    interval (clipped to [0, 1]), the other schedulers' means faint behind it.  None
    without the curve."""
    from dmlsched.experiments.claims import mean_ci

    runs = _by_scheduler(curves, "utilization")
    if not runs:
        return None
    colors = dict(colors) if colors else scheduler_colors(list(runs))
    series: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]] = {}
    seeds = 1
    for s, ps in runs.items():
        n = min(p.shape[0] for p in ps)  # every seed has the same bins; be safe
        ys = np.array([p[:n, 1] for p in ps])
        seeds = max(seeds, len(ps))
        mean = ys.mean(axis=0)
        half = np.array([mean_ci(ys[:, i])[1] for i in range(n)]) if len(ps) > 1 else None
        series[s] = (ps[0][:n, 0], mean, half)
    k = len(series)
    ncols = min(4, k)
    nrows = -(-k // ncols)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(2.3 * ncols + 0.6, 1.9 * nrows + 0.9),
        dpi=110,
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    for ax, (s, (x, mean, half)) in zip(axes.flat, series.items(), strict=False):
        for other, (ox, om, _) in series.items():
            if other != s:
                ax.plot(ox, om, color="0.8", linewidth=0.8, drawstyle="steps-post")
        color = colors.get(s, "0.3")
        ax.plot(x, mean, color=color, linewidth=1.6, drawstyle="steps-post")
        if half is not None:
            lo, hi = np.clip(mean - half, 0, 1), np.clip(mean + half, 0, 1)
            ax.fill_between(x, lo, hi, color=color, alpha=0.2, step="post", linewidth=0)
        ax.set_title(f"{s}: {float(np.mean(mean)):.0%} on average", fontsize=8)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    for ax in axes.flat[k:]:
        ax.set_visible(False)
    fig.supxlabel("Time slot", fontsize=9)
    fig.supylabel("Utilization (share of capacity,\nmean over resources)", fontsize=9)
    note = "1 seed" if seeds == 1 else f"mean and 95% interval over {seeds} seeds"
    fig.suptitle(
        f"Utilization over time\n{title + ' — ' if title else ''}{note}; grey: the others",
        fontsize=9,
    )
    fig.tight_layout()
    return _save(fig, path, formats)


def _lower(label: str) -> str:
    """A label inside a sentence: "Jobs I" -> "jobs I"; an acronym stays ("SGD mode")."""
    return label if label[:2].isupper() else label[:1].lower() + label[1:]


def _is_numeric(values: list[str]) -> bool:
    try:
        [float(v) for v in values]
    except ValueError:
        return False
    return len(values) > 1
