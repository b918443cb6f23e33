"""``summary.md`` and plots, rendered from ``results.csv`` (+ ``config.json``) alone.

The summary never passes partial data off as whole: a sweep with cells
missing (an interrupted run) or a last cell cut by a kill says so at the top
of ``summary.md`` and through ``on_warning``; a corrupt file is refused
(:func:`dmlsched.experiments.results.scan_results`).  The workload notes
recorded in ``config.json`` are listed under "Workload".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dmlsched.experiments.catalogue import Experiment, get
from dmlsched.experiments.claims import check_both
from dmlsched.experiments.diagnose import WORKLOAD_PREFIX, explain_completions
from dmlsched.experiments.metrics import cell_stats, describe, format_cell, format_paper
from dmlsched.experiments.results import Columns, Row, columns, frame, groups, scan_results

if TYPE_CHECKING:  # pandas only for claims and plots (slow to import; see results.columns)
    import pandas as pd

__all__ = ["render_report", "summary_table"]


def summary_table(results: Iterable[Row] | pd.DataFrame, metric: str) -> pd.DataFrame:
    """Rows = sweep points, columns = schedulers, cells "mean ± ci95" (:func:`_cells`)."""
    import pandas as pd

    points, table = _cells(columns(results), metric)
    return pd.DataFrame(table, index=points)


def _cells(cols: Columns, metric: str) -> tuple[list, dict[str, list[str]]]:
    """(sweep points, scheduler → one "mean ± ci95" cell per point) of ``metric``.

    The mean is over finite values; a cell says how many seeds were infinite
    (a ratio over a zero) or excluded (NaN: undefined, e.g. OPT = ALG = 0);
    one seed reads "x (1 seed)", only excluded seeds "excluded", and an interval
    that reaches past the metric's domain is printed clipped, as [low, high]
    (:func:`~dmlsched.experiments.plots.format_cell`).
    """

    info = describe(metric)
    # first appearances, in row order, as a filter of the frame would list them
    cells = {
        k[1:]: v for k, v in groups(cols, "metric", "scheduler", "value").items() if k[0] == metric
    }
    points = list(dict.fromkeys(p for _, p in cells))
    scheds = list(dict.fromkeys(s for s, _ in cells))
    table = {
        s: [format_cell(cell_stats(np.array(cells.get((s, p), []), float), info)) for p in points]
        for s in scheds
    }
    return points, table


def _md_table(points: list, table: dict[str, list[str]], index_name: str) -> str:
    head = f"| {index_name} | " + " | ".join(table) + " |"
    sep = "|" + "---|" * (len(table) + 1)
    rows = [
        f"| {p} | " + " | ".join(str(col[i]) for col in table.values()) + " |"
        for i, p in enumerate(points)
    ]
    return "\n".join([head, sep, *rows])


def _experiment_for(config: dict) -> Experiment | None:
    try:
        return get(config["experiment"])
    except Exception:
        return None


def _completeness(config: dict, cells: int, cut: object) -> list[str]:
    """Sentences saying what is missing from the results (none if complete)."""
    out = []
    try:
        total = len(config["points"]) * len(config["schedulers"]) * int(config["seeds"])
    except (KeyError, TypeError, ValueError):
        total = None
    if total is not None and cells < total:
        out.append(
            f"incomplete: {cells} of {total} cells (an interrupted run; "
            "rerun its command to compute the rest)"
        )
    if cut is not None:
        out.append(f"the last cell ({cut}) was cut mid-write and is left out")
    return out


def render_report(
    out: Path, on_warning: Callable[[str], None] | None = None, plots: bool = True
) -> Path:
    """Write ``out/summary.md`` and (``plots``) ``out/<metric>.png``; returns the summary path.

    ``on_warning`` hears what is missing from the results (see the module
    docstring).  Without ``plots`` matplotlib is never imported, and PNGs
    left from an earlier report are not linked.
    """
    from dmlsched.experiments.runner import read_config

    if plots:  # deferred: matplotlib is slow to import
        from dmlsched.experiments.plots import plot_metric

    scan = scan_results(out / "results.csv")
    cols = columns(scan.rows)
    config = read_config(out / "config.json") if (out / "config.json").exists() else {}
    missing = _completeness(config, len({(r[2], r[4], r[5]) for r in scan.rows}), scan.cut)
    for m in missing:
        if on_warning:
            on_warning(f"{out / 'results.csv'}: {m}")
    exp = _experiment_for(config)
    title = (
        exp.title
        if exp
        else config.get("extra", {}).get("title", config.get("experiment", "results"))
    )
    # a DataFrame only for what needs one (claims, plots): pandas is slow to import
    df = frame(scan.rows) if plots or (exp and exp.claims) else None
    n = len(scan.rows)
    param = str(cols["param"][0]) if n else "point"
    metrics = list(exp.metrics) if exp else list(dict.fromkeys(cols["metric"]))
    # workload_* rows describe the workload, not a scheduler: they feed the diagnosis
    present = set(cols["metric"])
    metrics = [m for m in metrics if m in present and not m.startswith(WORKLOAD_PREFIX)]
    seeds = len(set(cols["seed"]))
    lines = [f"# {title}", ""]
    if exp and exp.reproduces:
        lines += [f"Reproduces: {exp.reproduces}.", ""]
    lines += [
        f"Setting `{cols['setting'][0] if n else '?'}`, sweep over `{param}`, "
        f"{seeds} seed(s){' (quick)' if config.get('quick') else ''}; "
        + (
            "one seed, so cells are single runs (no interval)."
            if seeds == 1
            else "cells are mean ± half-width of the 95% t-interval over seeds."
        ),
        "",
    ]
    if missing:
        lines += [f"**{m[0].upper() + m[1:]}.**" for m in missing] + [""]
    extra = config.get("extra") or {}
    notes = config.get("notes") or extra.get("notes")  # older config.json: notes in extra
    if notes:
        lines += ["## Workload", "", *(f"- {n}" for n in notes), ""]
    if exp and exp.claims:
        lines += ["## Claims", ""]
        for c in exp.claims:
            r, plus, rp = check_both(c, df, exp.schedulers)
            value = f" {r.value}." if r.value else ""
            lines.append(f"- **{r.verdict}** — {r.text}. {r.evidence}.{value}")
            if plus and rp is not None:
                value = f" {rp.value}." if rp.value else ""
                lines.append(f"  - `{plus}`: **{rp.verdict}** — {rp.evidence}.{value}")
        lines.append("")
    why = explain_completions(scan.rows)
    if why:
        lines += ["## Why so few jobs complete", "", *(f"- {w}" for w in why), ""]
    paper = exp.paper if exp else ()
    for m in metrics:
        points, table = _cells(cols, m)
        png = plots and plot_metric(
            df,
            m,
            param,
            title,
            out / f"{m}.png",
            kind=exp.plot if exp else "bar",
            figure=exp.reproduces if exp else "",
            paper=paper,
        )
        lines += [f"## {describe(m).axis} — `{m}`", "", _md_table(points, table, param), ""]
        printed = [p for p in paper if p.metric == m]
        if printed:
            lines += ["Printed by the paper / peer:", ""]
            lines += [
                f"- {p.scheduler} at {', '.join(map(str, p.points))}: {format_paper(p)}"
                for p in printed
            ]
            lines.append("")
        if png:
            lines += [f"![{m}]({png.name})", ""]
    path = out / "summary.md"
    path.write_text("\n".join(lines))
    return path
