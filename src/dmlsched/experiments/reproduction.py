"""The reproduction report: every claim of every paper, as printed and ``+``.

``dmlsched reproduce --all`` (``make reproduce-all``) runs the catalogue into
``OUT/<ID>/results.csv`` — and, with ``--held-out N``, the same catalogue on
the held-out seeds N, N+1, … into ``OUT/held-out/<ID>`` — and then writes
``OUT/reproduction.md`` (and ``docs/reproduction.md`` with ``--report``) from
those results alone:

* a header: the command, commit, seeds, size, wall time; how verdicts are
  reached (:data:`~dmlsched.experiments.claims.VERDICT_RULES`); the counts of
  claims per label (HELD / NOT HELD / TIE / UNDECIDED / VACUOUS / REPORTED /
  NOT RUN) for the as-printed schedulers and their ``+`` variants, for each
  seed set;
* the runs that computed the cells, per seed set: a resumable ``--all`` run
  may take several invocations, and each one has a row in ``runs.csv``
  (:mod:`~dmlsched.experiments.runlog`: start, commit, wall seconds, cells
  added, how it ended — written from its start, so a killed one is there
  too); the report lists them and their total wall time, and says how many
  cells were computed by invocations nobody logged.  Cells kept from an
  earlier invocation carry the same fingerprint as the current code's
  (``provenance.csv``; a resume recomputes the others), so every number is
  what the report's commit computes;
* per paper, one row per claim: the paper's statement and number
  (``claim.paper``, else the experiment's ``reproduces``), the as-printed
  verdict per seed set with the deciding comparison, the ``+`` variant's
  (same claim with ``X`` replaced by ``X+``, when the experiment runs
  ``X+``), how the simple references fared (VACUOUS: they pass it too), and
  for a NOT HELD the claim's ``reason`` and the experiment that shows it
  (``shown_by``, else the claim's own experiment) — or, visibly, "no reason
  recorded";
* cells whose metric is undefined (NaN, e.g. OPT = ALG = 0) are counted as
  excluded in the verdict, never as a number.

An experiment without results (not run, or run elsewhere) still lists its
claims, as NOT RUN, so the report always covers the whole catalogue.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where a frame is made: pandas is slow to import
    import pandas as pd

from dmlsched.experiments.catalogue import Experiment
from dmlsched.experiments.claims import (
    CONFIDENCE,
    LABELS,
    VERDICT_RULES,
    Claim,
    ClaimResult,
    check_both,
    pct,
)
from dmlsched.experiments.looks import Looks, is_open, look_confidence, looks_of
from dmlsched.experiments.runlog import NOT_LOGGED, RUNS, read_runs
from dmlsched.results import read_results

__all__ = [
    "ClaimRow",
    "SeedSet",
    "collect",
    "render",
    "render_sets",
    "write_reproduction",
]

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


def _runs_table(runs: list[Mapping[str, str]]) -> list[str]:
    lines = [
        f"Runs that computed these results ({len(runs)}; `{RUNS}` beside them):",
        "",
        "| started (UTC) | commit | wall | cells added | ended | note |",
        "|---|---|---|---|---|---|",
    ]
    total = 0.0
    unknown = 0  # cells of invocations whose wall time nobody logged
    for r in runs:
        wall = float(r.get("wall_s") or 0.0)
        total += wall
        if r.get("ended") == NOT_LOGGED:
            unknown += int(r.get("cells_added") or 0)
        shown = "—" if not r.get("wall_s") else f"{wall:.0f} s"
        if r.get("ended") in ("killed", "running"):  # its last update, up to a minute old
            shown = f"≥ {shown}"
        cells = [
            r.get("started_utc") or "—",
            f"`{r.get('commit')}`" if r.get("commit") else "—",
            shown,
            r.get("cells_added") or "—",
            r.get("ended") or "—",
            r.get("note") or "",
        ]
        lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    spent = f"Total wall time of these runs: {total:.0f} s ({total / 3600:.1f} h)"
    if unknown:
        spent += f", not counting the invocations that computed {unknown} cells unlogged"
    lines += ["", spent + ".", ""]
    return lines


@dataclass(frozen=True)
class ClaimRow:
    experiment: Experiment
    claim: Claim
    printed: ClaimResult
    plus: str | None  # the + scheduler, if the experiment runs one
    plus_result: ClaimResult | None
    look: str = ""  # a sequential run: where it stopped (Looks.note)


@dataclass(frozen=True)
class SeedSet:
    """One column of verdicts: a label ("seeds 0–9") and the folder of its results."""

    label: str
    base: Path


def _section(exp_id: str) -> str:
    head = exp_id.split("-", 1)[0]
    return next((title for key, title in PAPERS if key == head), _OTHER)


def collect(
    results: Iterable[tuple[Experiment, pd.DataFrame | None]],
    looks: Mapping[str, Looks] | None = None,
) -> list[ClaimRow]:
    """One row per claim, each judged (:func:`~dmlsched.experiments.claims.judge`);
    ``None`` results make NOT RUN rows.  Claims reading another experiment's
    results (:class:`~dmlsched.experiments.claims.Across`) find them among ``results``.
    ``looks``: per experiment id, a sequential run's looks, whose confidence its
    intervals are read at (:mod:`~dmlsched.experiments.looks`)."""
    import pandas as pd

    results = list(results)
    frames = {exp.id: df for exp, df in results if df is not None}
    rows = []
    empty = pd.DataFrame(columns=["metric", "scheduler", "value", "seed", "metric_value"])
    for exp, df in results:
        lk = (looks or {}).get(exp.id)
        conf = lk.confidence if lk else CONFIDENCE
        mine = []
        for c in exp.claims:
            printed, plus, rp = check_both(
                c, df if df is not None else empty, exp.schedulers, frames, exp.series, conf
            )
            mine.append(ClaimRow(exp, c, printed, plus, rp))
        if lk is not None:
            note = lk.note(stopped=not any(is_open(r.printed, r.plus_result) for r in mine))
            mine = [dataclasses.replace(r, look=note) for r in mine]
        rows += mine
    return rows


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _verdict(r: ClaimResult | None, look: str = "") -> str:
    if r is None:
        return "— (no + entry)"
    body = f"**{r.verdict}**"
    if look:
        body += f" [{look}]"
    if r.seeds_note:
        body += f" ({r.seeds_note})"
    if r.value:
        body += f" {r.value}"
    if r.excluded:
        body += f" [{r.excluded} of {r.cells} cells excluded]"
    return body


def _counts(results: list[ClaimResult]) -> dict[str, int]:
    out = dict.fromkeys(LABELS, 0)
    for r in results:
        out[r.verdict] += 1
    return out


def _counts_table(sets: Sequence[tuple[str, list[ClaimRow]]]) -> list[str]:
    lines = [
        "| claims | seeds | " + " | ".join(lb.lower() for lb in LABELS) + " |",
        "|---|---|" + "---|" * len(LABELS),
    ]
    for which in ("printed", "plus"):
        for label, rows in sets:
            if which == "printed":
                results = [r.printed for r in rows]
                name = f"as printed ({len(results)})"
            else:
                results = [r.plus_result for r in rows if r.plus_result is not None]
                name = f"`+` variant ({len(results)})"
            c = _counts(results)
            cells = [name, label or "—", *(str(c[lb]) for lb in LABELS)]
            lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def _not_held(r: ClaimResult | None) -> bool:
    return r is not None and r.held is False


def render_sets(
    sets: Sequence[tuple[str, list[ClaimRow]]],
    meta: Mapping[str, str] | None = None,
    runs: Sequence[tuple[str, Iterable[Mapping[str, str]]]] = (),
) -> str:
    """The Markdown report over one or more seed sets side by side (module docstring).

    ``sets``: (label, rows) per seed set, the rows of every set in the same
    claim order; ``runs``: (label, rows of runs.csv) per set.
    """
    meta = dict(meta or {})
    lines = ["# Reproduction report", ""]
    lines += [
        "Every claim of every paper in the experiment catalogue, checked on the "
        "algorithm **as printed** (`pd-ors`, `smd`, `a-online`, `mlbroker`) and on "
        "our improved **`+` variant** (`pd-ors+`, …) where the experiment runs one"
        + (", on each seed set side by side" if len(sets) > 1 else "")
        + ". The value shown is the deciding comparison (its means ± half-width of the "
        "95% Student-t interval, and the interval of the paired difference). Cells whose "
        "metric is undefined (e.g. OPT = ALG = 0) are excluded and counted, never read "
        "as a number.",
        "",
        VERDICT_RULES,
        "",
    ]
    if any(r.look for _, rows in sets for r in rows):
        lines += [
            "Verdicts marked with their seeds [in brackets] come from sequential runs "
            "(`--until-decided`): a look at half the seeds, stopped there when every claim "
            f"of the experiment was decided; the first look reads its intervals at "
            f"{pct(look_confidence(1))}, the second at {pct(look_confidence(2))}, so the "
            f"looks together keep the {pct(CONFIDENCE)} error rate "
            "(`dmlsched.experiments.looks`).",
            "",
        ]
    if meta:
        lines += [f"- {k}: {v}" for k, v in meta.items()] + [""]
    for label, rs in runs:
        rs = list(rs)
        if rs:
            if label:
                lines += [f"### {label}", ""]
            lines += _runs_table(rs)
    lines += _counts_table(sets)
    order = [title for _, title in PAPERS] + [_OTHER]
    first = sets[0][1]
    labels = [lb for lb, _ in sets]
    many = len(sets) > 1
    head = ["experiment", "claim (paper)"]
    head += [f"as printed, {lb}" for lb in labels] if many else ["as printed"]
    head += [f"`+` variant, {lb}" for lb in labels] if many else ["`+` variant"]
    head += ["simple reference" + (f" ({labels[0]})" if many else ""), "why not held"]
    for title in order:
        idx = [i for i, r in enumerate(first) if _section(r.experiment.id) == title]
        if not idx:
            continue
        lines += [f"## {title}", ""]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for i in idx:
            r = first[i]
            c, exp = r.claim, r.experiment
            paper = c.paper or exp.reproduces or "—"
            claim = f"{r.printed.text} (paper: {paper})"
            row = [f"`{exp.id}`", claim]
            row += [_verdict(rows[i].printed, rows[i].look) for _, rows in sets]
            for _, rows in sets:
                pr = rows[i]
                v = _verdict(pr.plus_result)
                if pr.plus and pr.plus_result is not None:
                    v = f"`{pr.plus}`: " + v
                row.append(v)
            row.append(r.printed.reference or "—")
            failed = any(
                _not_held(rows[i].printed) or _not_held(rows[i].plus_result) for _, rows in sets
            )
            why = ""
            if failed:
                where = c.shown_by or exp.id
                why = (c.reason or "**no reason recorded**") + f" (shown by `{where}`)"
            row.append(why)
            lines.append("| " + " | ".join(_cell(x) for x in row) + " |")
        lines.append("")
    return "\n".join(lines)


def render(
    rows: list[ClaimRow],
    meta: Mapping[str, str] | None = None,
    runs: Iterable[Mapping[str, str]] = (),
) -> str:
    """The report of one seed set (:func:`render_sets`)."""
    return render_sets([("", rows)], meta, [("", runs)])


def _results(base: Path, experiments: Iterable[Experiment]) -> list[tuple[Experiment, Any]]:
    out: list[tuple[Experiment, Any]] = []
    for exp in experiments:
        path = base / exp.id / "results.csv"
        out.append((exp, read_results(path) if path.exists() else None))
    return out


def _looks(base: Path, experiments: Iterable[Experiment]) -> dict[str, Looks]:
    """The sequential runs among ``experiments`` in ``base`` (their ``config.json``)."""
    from dmlsched.experiments.runner import read_config
    from dmlsched.results import scan_results

    out = {}
    for exp in experiments:
        folder = base / exp.id
        if not (folder / "config.json").is_file() or not (folder / "results.csv").is_file():
            continue
        config = read_config(folder / "config.json")
        if config.get("looks"):
            cells = {(r[2], r[4], r[5]) for r in scan_results(folder / "results.csv").rows}
            lk = looks_of(config, cells)
            if lk is not None:
                out[exp.id] = lk
    return out


def write_reproduction(
    base: Path | Sequence[SeedSet],
    experiments: Iterable[Experiment],
    out: Path,
    meta: Mapping[str, str] | None = None,
) -> Path:
    """Render the report from ``<base>/<ID>/results.csv`` of each experiment into ``out``;
    ``base`` is one folder or several :class:`SeedSet` s (columns side by side)."""
    experiments = list(experiments)
    sets = [SeedSet("", base)] if isinstance(base, Path) else list(base)
    rows = [
        (s.label, collect(_results(s.base, experiments), _looks(s.base, experiments))) for s in sets
    ]
    runs = [(s.label, read_runs(s.base)) for s in sets]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_sets(rows, meta, runs))
    return out
