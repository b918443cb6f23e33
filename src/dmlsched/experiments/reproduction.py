"""The reproduction report: every claim of every paper, as printed and ``+``.

``dmlsched reproduce --all`` (``make reproduce-all``) runs the catalogue into
``OUT/<ID>/results.csv`` and then writes ``OUT/reproduction.md`` (and
``docs/reproduction.md`` with ``--report``) from those results alone:

* a header: commit, seeds, size, wall time, and the counts of claims held /
  not held / reported, for the as-printed schedulers and their ``+`` variants;
* the runs that computed the cells: a resumable ``--all`` run may take several
  invocations, possibly at several commits, and each one (also one stopped by
  Ctrl-C) appends a row to ``OUT/runs.csv`` (:func:`log_run`: start, commit,
  wall seconds, cells added, how it ended); the report lists them and their
  total wall time;
* per paper, one row per claim: the paper's statement and number
  (``claim.paper``, else the experiment's ``reproduces``), the as-printed
  verdict with the deciding point's mean ± 95% interval, the ``+`` variant's
  verdict (same claim with ``X`` replaced by ``X+``, when the experiment runs
  ``X+``), and for a NOT HELD the claim's ``reason`` and the experiment that
  shows it (``shown_by``, else the claim's own experiment) — or, visibly,
  "no reason recorded";
* cells whose metric is undefined (NaN, e.g. OPT = ALG = 0) are counted as
  excluded in the verdict, never as a number.

An experiment without results (not run, or run elsewhere) still lists its
claims, as NOT RUN, so the report always covers the whole catalogue.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where a frame is made: pandas is slow to import
    import pandas as pd

from dmlsched.experiments.catalogue import Experiment
from dmlsched.experiments.claims import Claim, ClaimResult, check_both
from dmlsched.experiments.results import read_results

__all__ = ["RUNS", "ClaimRow", "collect", "log_run", "read_runs", "render", "write_reproduction"]

#: id prefix → section title (anything else goes under "Other experiments")
PAPERS: tuple[tuple[str, str], ...] = (
    ("pdors", "PD-ORS — Yu et al., IEEE TNSE 2022 (journal)"),
    ("thesis", "PD-ORS, Async-SGD — Yu, thesis 2019"),
    ("smd", "SMD — sum-of-ratios with knapsack decomposition"),
    ("aonline", "A_online — preemptive edge-cloud scheduling"),
    ("mlbroker", "mlBroker — geo-distributed, volume discounts"),
    ("ablation", "Ablations: what each option of the + variants adds"),
)
_OTHER = "Other experiments"

#: the run log beside the results, one row per ``--all`` invocation
RUNS = "runs.csv"
_RUN_FIELDS = ("started_utc", "commit", "wall_s", "cells_added", "ended", "note")


def log_run(base: Path, row: Mapping[str, str]) -> None:
    """Append one invocation's row (fields :data:`_RUN_FIELDS`) to ``base/runs.csv``."""
    path = base / RUNS
    base.mkdir(parents=True, exist_ok=True)
    new = not path.exists() or path.stat().st_size == 0
    with path.open("a", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=_RUN_FIELDS, extrasaction="raise")
        if new:
            w.writeheader()
        w.writerow({k: row.get(k, "") for k in _RUN_FIELDS})


def read_runs(base: Path) -> list[dict[str, str]]:
    """The rows of ``base/runs.csv`` (none if there is no log)."""
    path = base / RUNS
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _runs_table(runs: list[Mapping[str, str]]) -> list[str]:
    lines = [
        f"Runs that computed these results ({len(runs)}; `{RUNS}` beside them):",
        "",
        "| started (UTC) | commit | wall | cells added | ended | note |",
        "|---|---|---|---|---|---|",
    ]
    total = 0.0
    for r in runs:
        wall = float(r.get("wall_s") or 0.0)
        total += wall
        cells = [
            r.get("started_utc") or "—",
            f"`{r.get('commit')}`" if r.get("commit") else "—",
            f"{wall:.0f} s",
            r.get("cells_added") or "—",
            r.get("ended") or "—",
            r.get("note") or "",
        ]
        lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    lines += ["", f"Total wall time of these runs: {total:.0f} s ({total / 3600:.1f} h).", ""]
    return lines


@dataclass(frozen=True)
class ClaimRow:
    experiment: Experiment
    claim: Claim
    printed: ClaimResult
    plus: str | None  # the + scheduler, if the experiment runs one
    plus_result: ClaimResult | None


def _section(exp_id: str) -> str:
    head = exp_id.split("-", 1)[0]
    return next((title for key, title in PAPERS if key == head), _OTHER)


def collect(results: Iterable[tuple[Experiment, pd.DataFrame | None]]) -> list[ClaimRow]:
    """One row per claim; ``None`` results make NOT RUN rows."""
    import pandas as pd

    rows = []
    empty = pd.DataFrame(columns=["metric", "scheduler", "value", "metric_value"])
    for exp, df in results:
        for c in exp.claims:
            printed, plus, rp = check_both(c, df if df is not None else empty, exp.schedulers)
            rows.append(ClaimRow(exp, c, printed, plus, rp))
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _verdict(r: ClaimResult | None) -> str:
    if r is None:
        return "— (no + entry)"
    body = f"**{r.verdict}**"
    if r.value:
        body += f" {r.value}"
    if r.excluded:
        body += f" [{r.excluded} of {r.cells} cells excluded]"
    return body


def _counts(results: list[ClaimResult]) -> dict[str, int]:
    out = {"HELD": 0, "NOT HELD": 0, "REPORTED": 0, "NOT RUN": 0}
    for r in results:
        out[r.verdict] += 1
    return out


def render(
    rows: list[ClaimRow],
    meta: Mapping[str, str] | None = None,
    runs: Iterable[Mapping[str, str]] = (),
) -> str:
    """The Markdown report (see module docstring)."""
    meta = dict(meta or {})
    lines = ["# Reproduction report", ""]
    lines += [
        "Every claim of every paper in the experiment catalogue, checked on the "
        "algorithm **as printed** (`pd-ors`, `smd`, `a-online`, `mlbroker`) and on "
        "our improved **`+` variant** (`pd-ors+`, …) where the experiment runs one. "
        "Verdicts are on per-point means over seeds; the value shown is the deciding "
        "point's mean ± half-width of the 95% Student-t interval. Cells whose metric is "
        "undefined (e.g. OPT = ALG = 0) are excluded and counted, never read as a number.",
        "",
    ]
    if meta:
        lines += [f"- {k}: {v}" for k, v in meta.items()] + [""]
    if runs:
        lines += _runs_table(list(runs))
    printed = _counts([r.printed for r in rows])
    plus = _counts([r.plus_result for r in rows if r.plus_result is not None])
    n_plus = sum(1 for r in rows if r.plus_result is not None)
    lines += [
        "| claims | held | not held | reported | not run |",
        "|---|---|---|---|---|",
        f"| as printed ({len(rows)}) | {printed['HELD']} | {printed['NOT HELD']} | "
        f"{printed['REPORTED']} | {printed['NOT RUN']} |",
        f"| `+` variant ({n_plus}) | {plus['HELD']} | {plus['NOT HELD']} | "
        f"{plus['REPORTED']} | {plus['NOT RUN']} |",
        "",
    ]
    order = [title for _, title in PAPERS] + [_OTHER]
    by: dict[str, list[ClaimRow]] = {t: [] for t in order}
    for r in rows:
        by[_section(r.experiment.id)].append(r)
    for title in order:
        if not by[title]:
            continue
        lines += [f"## {title}", ""]
        lines += [
            "| experiment | claim (paper) | as printed | `+` variant | why not held |",
            "|---|---|---|---|---|",
        ]
        for r in by[title]:
            c, exp = r.claim, r.experiment
            paper = c.paper or exp.reproduces or "—"
            claim = f"{r.printed.text} (paper: {paper})"
            plus_v = _verdict(r.plus_result)
            if r.plus and r.plus_result is not None:
                plus_v = f"`{r.plus}`: " + plus_v
            failed = r.printed.held is False or (
                r.plus_result is not None and r.plus_result.held is False
            )
            why = ""
            if failed:
                where = c.shown_by or exp.id
                why = (c.reason or "**no reason recorded**") + f" (shown by `{where}`)"
            cells = [f"`{exp.id}`", claim, _verdict(r.printed), plus_v, why]
            lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def write_reproduction(
    base: Path,
    experiments: Iterable[Experiment],
    out: Path,
    meta: Mapping[str, str] | None = None,
) -> Path:
    """Render the report from ``base/<ID>/results.csv`` of each experiment into ``out``."""
    results: list[tuple[Experiment, pd.DataFrame | None]] = []
    for exp in experiments:
        path = base / exp.id / "results.csv"
        results.append((exp, read_results(path) if path.exists() else None))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(collect(results), meta, read_runs(base)))
    return out
