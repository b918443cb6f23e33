"""``summary.md`` and plots, rendered from ``results.csv`` (+ ``config.json``) alone.

The summary never passes partial data off as whole: a sweep with cells
missing (an interrupted run) or a last cell cut by a kill says so at the top
of ``summary.md`` and through ``on_warning``; a corrupt file is refused
(:func:`dmlsched.results.scan_results`).  The workload notes
recorded in ``config.json`` are listed under "Workload".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dmlsched.experiments.catalogue import Experiment, get
from dmlsched.experiments.claims import CONFIDENCE, VERDICT_RULES, ClaimResult, check_both, pct
from dmlsched.experiments.curves import read_curves
from dmlsched.experiments.diagnose import WORKLOAD_PREFIX, explain_completions
from dmlsched.experiments.headline import headline
from dmlsched.experiments.looks import Looks, is_open, looks_of
from dmlsched.experiments.metrics import cell_stats, describe, format_cell, format_paper
from dmlsched.results import Columns, Row, columns, frame, groups, scan_results

if TYPE_CHECKING:  # pandas only for claims and plots (slow to import; see results.columns)
    import pandas as pd

__all__ = ["claim_frames", "render_report", "summary_table"]


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


def _verdict_md(r: ClaimResult) -> str:
    """ "**HELD**", with "(only 3 seeds (< 5))" on a verdict decided on too few seeds."""
    note = f" ({r.seeds_note})" if r.seeds_note else ""
    return f"**{r.verdict}**{note}"


def _details(r: ClaimResult) -> str:
    parts = [r.evidence, r.value, f"Test: {r.test}" if r.test else "", r.reference]
    return " ".join(p.rstrip(".") + "." for p in parts if p)


def _looks_md(looks: Looks) -> str:
    return (
        f"Every interval behind the verdicts below is read at {pct(looks.confidence)}, the "
        f"confidence of this look, so the looks together keep the {pct(CONFIDENCE)} error "
        "rate (`dmlsched.experiments.looks`)."
    )


def _sibling_frames(out: Path, exp: Experiment) -> dict[str, pd.DataFrame]:
    """Results of the experiments ``exp``'s claims also read, from beside ``out``
    (``reproduce --all`` writes each experiment into ``OUT/<ID>``)."""
    from dmlsched.results import read_results

    frames = {}
    for c in exp.claims:
        for other in c.needs:
            path = out.parent / other / "results.csv"
            if other not in frames and path.is_file():
                frames[other] = read_results(path)
    return frames


def claim_frames(
    out: Path, exp: Experiment, seeds: Iterable[int] | None = None
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """(``out``'s results, the other experiments' its claims read) as the claims take them;
    ``seeds``: only those of ``out``'s (a look judges its own seeds, whatever else a
    resumed run has computed)."""
    df = frame(scan_results(out / "results.csv").rows)
    if seeds is not None:
        df = df[df["seed"].isin(list(seeds))]
    return df, _sibling_frames(out, exp)


def _experiment_for(config: dict) -> Experiment | None:
    try:
        return get(config["experiment"])
    except Exception:
        return None


def _completeness(config: dict, cells: int, cut: object, seeds: int | None = None) -> list[str]:
    """Sentences saying what is missing from the results (none if complete); ``seeds``:
    the seeds a complete run holds (default ``config``'s: a sequential run may stop
    sooner)."""
    out = []
    try:
        n = int(config["seeds"]) if seeds is None else seeds
        total = len(config["points"]) * len(config["schedulers"]) * n
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
    out: Path,
    on_warning: Callable[[str], None] | None = None,
    plots: bool = True,
    formats: Sequence[str] = (),
) -> Path:
    """Write ``out/summary.md`` and (``plots``) ``out/<metric>.png``; returns the summary path.

    ``on_warning`` hears what is missing from the results (see the module
    docstring).  Without ``plots`` matplotlib is never imported, and PNGs
    left from an earlier report are not linked.  ``formats`` ("pdf", "svg"):
    every figure also as a vector file beside its PNG.  Where the runs left
    curves (``curves.csv``) and job counts, the summary's "Figures" section
    adds the jobs admitted and completed, the JCT distribution and
    utilization over time.
    """
    from dmlsched.experiments.runner import read_config

    if plots:  # deferred: matplotlib is slow to import
        from dmlsched.experiments.plots import plot_metric, scheduler_colors

    scan = scan_results(out / "results.csv")
    cols = columns(scan.rows)
    config = read_config(out / "config.json") if (out / "config.json").exists() else {}
    present = {(r[2], r[4], r[5]) for r in scan.rows}
    exp = _experiment_for(config)
    title = (
        exp.title
        if exp
        else config.get("extra", {}).get("title", config.get("experiment", "results"))
    )
    looks = looks_of(config, present)
    # a DataFrame only for what needs one (claims, plots): pandas is slow to import
    df = frame(scan.rows) if plots or (exp and exp.claims) or looks else None
    frames = _sibling_frames(out, exp) if exp and exp.claims else {}
    judged = []  # (as printed, the + scheduler, its result) per claim, at the look's level
    if exp and exp.claims and df is not None:
        conf = looks.confidence if looks else CONFIDENCE
        judged = [check_both(c, df, exp.schedulers, frames, exp.series, conf) for c in exp.claims]
    # a sequential run: every claim decided where its results stand
    stopped = bool(looks and exp) and not any(is_open(r, rp) for r, _, rp in judged)
    complete = looks.seeds if looks and looks.complete(stopped) else None
    missing = _completeness(config, len(present), scan.cut, complete)
    for m in missing:
        if on_warning:
            on_warning(f"{out / 'results.csv'}: {m}")
    n = len(scan.rows)
    param = str(cols["param"][0]) if n else "point"
    metrics = list(exp.metrics) if exp else list(dict.fromkeys(cols["metric"]))
    # workload_* rows describe the workload, not a scheduler: they feed the diagnosis
    present = set(cols["metric"])
    metrics = [m for m in metrics if m in present and not m.startswith(WORKLOAD_PREFIX)]
    seed_set = sorted(set(cols["seed"]))
    seeds = len(seed_set)
    which = f" ({seed_set[0]}–{seed_set[-1]})" if seeds > 1 and seed_set[0] != 0 else ""
    lines = [f"# {title}", ""]
    if exp and exp.reproduces:
        lines += [f"Reproduces: {exp.reproduces}.", ""]
    lines += [
        f"Setting `{cols['setting'][0] if n else '?'}`, sweep over `{param}`, "
        f"{seeds} seed(s){which}{' (quick)' if config.get('quick') else ''}; "
        + (
            "one seed, so cells are single runs (no interval)."
            if seeds == 1
            else "cells are mean ± half-width of the 95% t-interval over seeds."
        ),
        "",
    ]
    if looks:
        lines += [f"**Sequential run** (`--until-decided`): {looks.note(stopped)}.", ""]
    if missing:
        lines += [f"**{m[0].upper() + m[1:]}.**" for m in missing] + [""]
    plain = headline(scan.rows)
    if plain:
        lines += ["## In plain words", "", *(f"- {h}" for h in plain), ""]
    extra = config.get("extra") or {}
    notes = config.get("notes") or extra.get("notes")  # older config.json: notes in extra
    if notes:
        lines += ["## Workload", "", *(f"- {n}" for n in notes), ""]
    if exp and exp.claims:
        lines += ["## Claims", "", VERDICT_RULES, ""]
        if looks:
            lines += [_looks_md(looks), ""]
        for r, plus, rp in judged:
            lines.append(f"- {_verdict_md(r)} — {r.text}. {_details(r)}")
            if plus and rp is not None:
                lines.append(f"  - `{plus}`: {_verdict_md(rp)} — {_details(rp)}")
        lines.append("")
    why = explain_completions(scan.rows)
    if why:
        lines += [
            "## Why few jobs complete under some schedulers",
            "",
            *(f"- {w}" for w in why),
            "",
        ]
    paper = exp.paper if exp else ()
    colors = scheduler_colors(list(dict.fromkeys(cols["scheduler"]))) if plots else {}
    if plots:
        cells = {(r[2], r[4], r[5]) for r in scan.rows}
        figures = _figures(out, df, read_curves(out / "curves.csv", cells), formats, colors)
        if figures:
            lines += ["## Figures", "", *(f"![{f.stem}]({f.name})" for f in figures), ""]
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
            formats=formats,
            colors=colors,
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


def _figures(
    out: Path, df: pd.DataFrame, curves: dict, formats: Sequence[str], colors: dict[str, str]
) -> list[Path]:
    """The figures beyond one per metric, for a single-point comparison (``compare``):
    jobs admitted and completed, the JCT distribution, utilization over time."""
    from dmlsched.experiments.plots import plot_jct_cdf, plot_jobs, plot_utilization

    if df is None or df["value"].nunique() != 1:
        return []
    drawn = [
        plot_jobs(df, out / "jobs.png", formats=formats, colors=colors),
        plot_jct_cdf(curves, out / "jct_cdf.png", formats=formats, colors=colors),
        plot_utilization(curves, out / "utilization.png", formats=formats, colors=colors),
    ]
    return [p for p in drawn if p is not None]
