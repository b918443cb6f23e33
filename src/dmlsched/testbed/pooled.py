"""Sim-vs-real errors pooled over the jobs of many testbed runs: per scheduler and mode, overall.

``reproduce testbed-pdors`` reports each cell's median and 90th percentile;
the claim is about every job of the held-out seeds together.  Each cell
writes its run's report (``<runs>/<id>-<scheduler>-<emulation>-<seed>/report/results.csv``,
per-job ``sim_error`` over every job either side started, unfinished ones
censored — :mod:`dmlsched.testbed.report`); :func:`pooled_errors` reads them
and pools the jobs, the closed-loop error (the engine runs the scheduler
itself) beside the replay error (the run's own decisions at the model's
rates: the speed model alone, without the scheduler's divergence).  Runs
with overrun, distorted or loaded slots are counted and named, not dropped.

``python -m dmlsched.testbed.pooled [RUNS] [--min-seed 1]`` prints the
Markdown table (default ``RUNS``: ``/tmp/dmlsched-testbed-calibration/runs``);
``--results again.csv`` pools the runs as
:func:`dmlsched.experiments.repredict.repredict` predicted them again
(``make testbed-repredict``).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dmlsched.results import columns, scan_results

__all__ = ["Cell", "Pool", "pooled_errors", "read_cells", "render", "require_runs"]

DEFAULT_RUNS = Path("/tmp/dmlsched-testbed-calibration/runs")


@dataclass
class Pool:
    """Every counted job of a set of runs."""

    errors: list[float]
    replay: list[float] = dataclasses.field(default_factory=list)  # the run's own decisions
    censored: int = 0
    finished_real: int = 0
    finished_sim: int = 0
    runs: int = 0
    distorted: list[str] | None = None

    @property
    def median(self) -> float:
        return float(np.median(self.errors)) if self.errors else math.nan

    @property
    def p90(self) -> float:
        return float(np.percentile(self.errors, 90)) if self.errors else math.nan

    def replay_stats(self) -> tuple[float, float]:
        r = self.replay
        return (float(np.median(r)), float(np.percentile(r, 90))) if r else (math.nan, math.nan)


@dataclass(frozen=True)
class Cell:
    """One run's report: its cell and its rows, per job and for the run (``all``)."""

    scheduler: str
    emulation: str
    seed: int
    jobs: dict[str, dict[str, float]]  # job id → metric → value
    summary: dict[str, float]  # the run's own row


@dataclass(frozen=True)
class _Report:
    """A run's report file and the cell its folder names."""

    path: Path
    scheduler: str
    emulation: str
    seed: int


def _reports(runs: Path, experiment: str, min_seed: int, results: str) -> list[_Report]:
    """Every run of seed ≥ ``min_seed`` under ``runs``, found by name (nothing read)."""
    out = []
    for res in sorted(runs.glob(f"{experiment}-*/report/{results}")):
        name = res.parent.parent.name[len(experiment) + 1 :]
        rest, _, seed = name.rpartition("-")
        sched, _, emulation = rest.rpartition("-")
        if seed.isdigit() and int(seed) >= min_seed:
            out.append(_Report(res, sched, emulation, int(seed)))
    return out


def read_cells(
    runs: Path, experiment: str = "testbed-pdors", min_seed: int = 1, results: str = "results.csv"
) -> list[Cell]:
    """The reports of the runs of workload seed ≥ ``min_seed`` under ``runs``, by name."""
    out = []
    for rep in _reports(runs, experiment, min_seed, results):
        cols = columns(scan_results(rep.path).rows)
        per: dict[str, dict[str, float]] = {}
        for v, m, x in zip(cols["value"], cols["metric"], cols["metric_value"], strict=True):
            per.setdefault(str(v), {})[str(m)] = float(x)
        summary = per.pop("all", {})
        out.append(Cell(rep.scheduler, rep.emulation, rep.seed, per, summary))
    return out


def require_runs(field: str, runs: Path, experiment: str, min_seed: int) -> None:
    """Exit with status 2 and one line naming ``field`` when ``runs`` holds no report of
    ``experiment`` at workload seed ≥ ``min_seed`` (a command-line root, mistyped or empty)."""
    if not _reports(runs, experiment, min_seed, "results.csv"):
        what = f"no {experiment} runs of seed >= {min_seed} under it"
        print(f"invalid {field}={runs} ({what})", file=sys.stderr)
        raise SystemExit(2)


def pooled_errors(
    runs: Path, experiment: str = "testbed-pdors", min_seed: int = 1, results: str = "results.csv"
) -> dict[tuple[str, str], Pool]:
    """(scheduler, emulation) → the pooled jobs of the runs of workload seed ≥ ``min_seed``
    (``results``: the report file to read, e.g. the re-predicted ``again.csv``)."""
    out: dict[tuple[str, str], Pool] = {}
    for cell in read_cells(runs, experiment, min_seed, results):
        pool = out.setdefault((cell.scheduler, cell.emulation), Pool([], distorted=[]))
        pool.runs += 1
        summary = cell.summary
        bad = ("distorted_slots", "overrun_slots", "loaded_slots")
        if any(summary.get(k, 0) for k in bad):
            assert pool.distorted is not None
            pool.distorted.append(
                f"seed {cell.seed}: "
                + ", ".join(f"{summary.get(k, 0):.0f} {k.split('_')[0]}" for k in bad)
            )
        for m in cell.jobs.values():
            e = m.get("sim_error", math.nan)
            if not math.isfinite(e):
                continue  # started by neither side
            pool.errors.append(e)
            pool.replay.append(_replay_error(m, summary))
            pool.censored += int(m.get("sim_error_censored", 0.0))
            # finished = a JCT on that side (older reports' progress could read 1.0 for an
            # unfinished job: work done while its processes were being stopped)
            pool.finished_real += int(math.isfinite(m.get("real_jct", math.nan)))
            pool.finished_sim += int(math.isfinite(m.get("sim_jct", math.nan)))
    return out


def _replay_error(m: dict[str, float], summary: dict[str, float]) -> float:
    """A job's replay error from its row (report.py's rule; older reports lack the column)."""
    from dmlsched.testbed.report import job_error

    real, rep = m.get("real_jct", math.nan), m.get("replay_jct", math.nan)
    a = m.get("arrival", 0.0)
    r_done, rep_done = math.isfinite(real), math.isfinite(rep)
    r = real if r_done else summary.get("slots_run", math.nan) - a
    s = rep if rep_done else summary.get("horizon", math.nan) - a
    return job_error(r_done, r, 1.0 if r_done else m.get("real_progress", 0.0), rep_done, s, 0.0)[0]


def render(pools: dict[tuple[str, str], Pool]) -> str:
    """Markdown: per scheduler and mode, per mode and overall."""
    lines = [
        "| mode | scheduler | runs | jobs | finished real / sim | censored | median | p90 | "
        "replay median | replay p90 | distorted runs |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    modes = sorted({m for _, m in pools})
    for mode in modes:
        keys = sorted(k for k in pools if k[1] == mode)
        for key in keys:
            lines.append(_row(mode, key[0], pools[key]))
        lines.append(_row(mode, "**all**", _merge([pools[k] for k in keys])))
    lines.append(_row("**both**", "**all**", _merge(list(pools.values()))))
    return "\n".join(lines) + "\n"


def _merge(pools: Sequence[Pool]) -> Pool:
    out = Pool([], distorted=[])
    for p in pools:
        out.errors += p.errors
        out.replay += p.replay
        out.censored += p.censored
        out.finished_real += p.finished_real
        out.finished_sim += p.finished_sim
        out.runs += p.runs
        out.distorted = [*(out.distorted or []), *(p.distorted or [])]
    return out


def _row(mode: str, sched: str, p: Pool) -> str:
    n = len(p.errors)
    fin = f"{p.finished_real} / {p.finished_sim}"
    dist = "; ".join(p.distorted or []) if sched != "**all**" else str(len(p.distorted or []))
    rm, r90 = p.replay_stats()
    return (
        f"| {mode} | {sched} | {p.runs} | {n} | {fin} | {p.censored} | {100 * p.median:.1f}% | "
        f"{100 * p.p90:.1f}% | {100 * rm:.1f}% | {100 * r90:.1f}% | {dist or '—'} |"
    )


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="?", type=Path, default=DEFAULT_RUNS)
    ap.add_argument("--experiment", default="testbed-pdors")
    ap.add_argument("--min-seed", type=int, default=1, help="held-out workload seeds from here")
    ap.add_argument(
        "--results", default="results.csv", help="report file (again.csv: re-predicted)"
    )
    a = ap.parse_args(argv)
    require_runs("runs", a.runs, a.experiment, a.min_seed)
    print(render(pooled_errors(a.runs, a.experiment, a.min_seed, a.results)), end="")


if __name__ == "__main__":
    main()
