"""One PNG per metric: mean and 95% interval over seeds per scheduler, for a paper.

Rules every figure follows (the metric's words, unit and domain come from
:mod:`dmlsched.experiments.metrics`):

* title: the figure reproduced (e.g. "PD-ORS TNSE 2022 Fig. 7") and the
  metric in words; the experiment's own title below it;
* axes labelled in words with units; the legend outside the data (right);
* intervals clipped to the metric's domain — no error bar below 0, no
  utilization above 1; one seed draws no interval and the title says
  "1 seed" (never "± 0");
* a mean that is undefined (no seed finite, e.g. mean JCT with no job done)
  is marked "undefined" at its place, not left blank;
* a sweep with a single point becomes a table (scheduler | ours | paper),
  not a chart of one group of bars;
* values the paper prints (:class:`~dmlsched.experiments.catalogue.PaperValue`)
  are drawn beside ours in the scheduler's colour: a hollow diamond for a
  number, a hollow bracket for a range the text states; in tables, a column.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: no display on CI or servers
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from dmlsched.experiments.catalogue import PaperValue
from dmlsched.experiments.metrics import (
    Cell,
    cell_stats,
    describe,
    format_cell,
    format_paper,
    param_label,
)

__all__ = ["plot_metric"]


def _seeds_note(cells: Sequence[Cell]) -> str:
    ns = sorted({c.total for c in cells})
    if ns == [1]:
        return "1 seed, no interval"
    return f"mean and 95% interval over {'/'.join(map(str, ns))} seeds"


def _paper_for(paper: Sequence[PaperValue], metric: str, sched: str) -> list[PaperValue]:
    return [p for p in paper if p.metric == metric and p.scheduler == sched]


def _table(
    ax: plt.Axes,
    scheds: list[str],
    cells: dict[tuple[str, str], Cell],
    point: str,
    paper: Sequence[PaperValue],
    metric: str,
) -> None:
    ax.axis("off")
    has_paper = any(_paper_for(paper, metric, s) for s in scheds)
    header = ["scheduler", f"ours: {describe(metric).axis}"] + (["paper"] if has_paper else [])
    body = []
    for s in scheds:
        row = [s, format_cell(cells[(s, point)])]
        if has_paper:
            ps = [p for p in _paper_for(paper, metric, s) if p.at(point)]
            row.append("; ".join(format_paper(p) for p in ps) or "—")
        body.append(row)
    t = ax.table(cellText=body, colLabels=header, loc="center", cellLoc="left")
    t.auto_set_font_size(False)
    t.set_fontsize(9)
    t.auto_set_column_width(list(range(len(header))))
    t.scale(1.0, 1.5)


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
) -> Path | None:
    """Write ``metric``'s figure (see the module docstring) to ``path``; None if no data.

    ``title`` is the experiment's title, ``figure`` what it reproduces.
    """
    sub = df[df["metric"] == metric]
    if sub.empty:
        return None
    info = describe(metric)
    points = [str(p) for p in dict.fromkeys(sub["value"])]
    scheds = list(dict.fromkeys(sub["scheduler"]))
    cells = {
        (s, p): cell_stats(
            sub[(sub["scheduler"] == s) & (sub["value"].astype(str) == p)][
                "metric_value"
            ].to_numpy(),
            info,
        )
        for s in scheds
        for p in points
    }
    head = f"{figure}: {info.label}" if figure else info.label
    sup = f"{head}\n{title} — {_seeds_note(list(cells.values()))}"
    if len(points) == 1:
        fig, ax = plt.subplots(figsize=(7.2, 0.9 + 0.35 * len(scheds)), dpi=110)
        _table(ax, scheds, cells, points[0], paper, metric)
        ax.set_title(f"{sup}\n{param_label(param)}: {points[0]}", fontsize=9)
        fig.savefig(path, metadata={"Software": None}, bbox_inches="tight")
        plt.close(fig)
        return path

    numeric = kind == "line" and _is_numeric(points)
    fig, ax = plt.subplots(figsize=(7.4, 4.2), dpi=110)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    width = 0.8 / max(len(scheds), 1)
    xs_all = np.array([float(p) for p in points]) if numeric else np.arange(len(points))
    undefined: list[tuple[float, str]] = []
    for k, s in enumerate(scheds):
        color = colors[k % len(colors)]
        cs = [cells[(s, p)] for p in points]
        x = xs_all if numeric else xs_all + (k - (len(scheds) - 1) / 2) * width
        mean = np.array([c.mean for c in cs])
        err = np.array([[c.mean - c.low, c.high - c.mean] if c.n > 1 else [0.0, 0.0] for c in cs]).T
        # a mean just outside the metric's domain (an LP's −5e-9 transfer cost: solver
        # tolerance) has its clipped bound on the wrong side of it: no bar on that side
        err = np.maximum(err, 0.0)
        ok = np.array([c.defined for c in cs])
        spread = np.array([c.n > 1 for c in cs])  # one seed: no interval at all
        if numeric:
            ax.plot(x[ok], mean[ok], marker="o", color=color, label=s)
        else:
            ax.bar(x[ok], mean[ok], width=width, color=color, label=s)
        if spread.any():
            ax.errorbar(
                x[spread], mean[spread], yerr=err[:, spread], fmt="none", ecolor=color, capsize=3
            )
        undefined += [(float(xi), s) for xi, d in zip(x, ok, strict=True) if not d]
        for pv in _paper_for(paper, metric, s):
            px = [xi for xi, p in zip(x, points, strict=True) if pv.at(p)]
            if not px:
                continue
            lab = f"{s}, paper ({pv.source})"
            if numeric:  # beside ours, not on top of our interval
                px = [xi + 0.02 * (xs_all.max() - xs_all.min()) for xi in px]
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
        ax.plot(
            [],
            [],
            marker="x",
            color="0.4",
            linestyle="none",
            label="undefined mean (no finite seed)",
        )
    if not numeric:
        crowded = len(points) > 4 or sum(map(len, points)) > 48
        ax.set_xticks(
            xs_all,
            points,
            rotation=25 if crowded else 0,
            ha="right" if crowded else "center",
        )
    bottom, top = ax.get_ylim()
    if info.low is not None and (bottom < info.low or not numeric):
        ax.set_ylim(bottom=info.low)  # bars start at the domain's floor
    if info.high is not None and top > info.high:
        ax.set_ylim(top=info.high + 0.02 * (info.high - (info.low or 0.0)))
    ax.set_xlabel(param_label(param))
    ax.set_ylabel(info.axis)
    ax.set_title(sup, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.savefig(path, metadata={"Software": None}, bbox_inches="tight")
    plt.close(fig)
    return path


def _is_numeric(values: list[str]) -> bool:
    try:
        [float(v) for v in values]
    except ValueError:
        return False
    return len(values) > 1
