"""``summary.md`` and plots, rendered from ``results.csv`` (+ ``config.json``) alone."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from dmlsched.experiments.catalogue import Experiment, get
from dmlsched.experiments.claims import ClaimResult
from dmlsched.experiments.diagnose import WORKLOAD_PREFIX, explain_completions
from dmlsched.experiments.metrics import cell_stats, describe, format_cell, format_paper
from dmlsched.experiments.results import read_results

__all__ = ["render_report", "summary_table"]


def summary_table(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Rows = sweep points, columns = schedulers, cells "mean ± ci95".

    The mean is over finite values; a cell with non-finite seeds (a ratio
    over a zero) says how many it left out, as the claims' plain means do not;
    one seed reads "x (1 seed)", no finite seed "undefined", and an interval
    that reaches past the metric's domain is printed clipped, as [low, high]
    (:func:`~dmlsched.experiments.plots.format_cell`).
    """

    info = describe(metric)
    sub = df[df["metric"] == metric]
    points = list(dict.fromkeys(sub["value"]))
    scheds = list(dict.fromkeys(sub["scheduler"]))
    table = {}
    for s in scheds:
        col = []
        for p in points:
            v = sub[(sub["scheduler"] == s) & (sub["value"] == p)]["metric_value"].to_numpy()
            col.append(format_cell(cell_stats(v, info)))
        table[s] = col
    return pd.DataFrame(table, index=points)


def _md_table(t: pd.DataFrame, index_name: str) -> str:
    head = f"| {index_name} | " + " | ".join(t.columns) + " |"
    sep = "|" + "---|" * (len(t.columns) + 1)
    rows = [f"| {i} | " + " | ".join(str(v) for v in r) + " |" for i, r in t.iterrows()]
    return "\n".join([head, sep, *rows])


def _experiment_for(config: dict) -> Experiment | None:
    try:
        return get(config["experiment"])
    except Exception:
        return None


def render_report(out: Path) -> Path:
    """Write ``out/summary.md`` and ``out/<metric>.png``; returns the summary path."""
    # deferred: matplotlib is slow to import
    from dmlsched.experiments.plots import plot_metric

    df = read_results(out / "results.csv")
    config = json.loads((out / "config.json").read_text()) if (out / "config.json").exists() else {}
    exp = _experiment_for(config)
    title = (
        exp.title
        if exp
        else config.get("extra", {}).get("title", config.get("experiment", "results"))
    )
    param = str(df["param"].iloc[0]) if len(df) else "point"
    metrics = list(exp.metrics) if exp else list(dict.fromkeys(df["metric"]))
    # workload_* rows describe the workload, not a scheduler: they feed the diagnosis
    metrics = [m for m in metrics if m in set(df["metric"]) and not m.startswith(WORKLOAD_PREFIX)]
    seeds = df["seed"].nunique()
    lines = [f"# {title}", ""]
    if exp and exp.reproduces:
        lines += [f"Reproduces: {exp.reproduces}.", ""]
    lines += [
        f"Setting `{df['setting'].iloc[0] if len(df) else '?'}`, sweep over `{param}`, "
        f"{seeds} seed(s){' (quick)' if config.get('quick') else ''}; "
        + (
            "one seed, so cells are single runs (no interval)."
            if seeds == 1
            else "cells are mean ± half-width of the 95% t-interval over seeds."
        ),
        "",
    ]
    extra = config.get("extra") or {}
    notes = extra.get("notes")
    if notes:
        lines += ["Workload: " + "; ".join(notes), ""]
    if exp and exp.claims:
        lines += ["## Claims", ""]
        for c in exp.claims:
            r: ClaimResult = c.check(df)
            verdict = "HELD" if r.held else "NOT HELD" if r.held is False else "REPORTED"
            lines.append(f"- **{verdict}** — {r.text}. {r.evidence}.")
        lines.append("")
    why = explain_completions(df)
    if why:
        lines += ["## Why so few jobs complete", "", *(f"- {w}" for w in why), ""]
    paper = exp.paper if exp else ()
    for m in metrics:
        t = summary_table(df, m)
        png = plot_metric(
            df,
            m,
            param,
            title,
            out / f"{m}.png",
            kind=exp.plot if exp else "bar",
            figure=exp.reproduces if exp else "",
            paper=paper,
        )
        lines += [f"## {describe(m).axis} — `{m}`", "", _md_table(t, param), ""]
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
