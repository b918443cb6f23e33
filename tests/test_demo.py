"""`make demo` and the README's Quickstart, run as written: figures in the output folder,
the result in plain words, and a comparison worth showing — the best scheduler completes
more than half the jobs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from dmlsched.cli import main
from dmlsched.results import columns, groups, scan_results

ROOT = Path(__file__).resolve().parents[1]


def _make_demo_args() -> list[str]:
    text = (ROOT / "Makefile").read_text()
    schedulers = re.search(r"^DEMO_SCHEDULERS := (\S+)$", text, re.M)
    recipe = re.search(r"^demo:.*\n((?:\t.*\n)+)", text, re.M)
    assert schedulers and recipe
    line = recipe.group(1).replace("\\\n", " ").replace("$(DEMO_SCHEDULERS)", schedulers.group(1))
    args = shlex.split(line)
    assert args[0] == "$(BIN)/dmlsched"
    return args[1:]


def _readme_compare_args() -> list[str]:
    text = (ROOT / "README.md").read_text()
    quick = text.split("## Quickstart", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    line = re.search(r"^dmlsched (compare .*?)(?<!\\)$", quick, re.M | re.S)
    assert line
    return shlex.split(line.group(1).replace("\\\n", " "))


def _with_out(args: list[str], out: Path) -> list[str]:
    i = args.index("--out")
    return [*args[:i], "--out", str(out), *args[i + 2 :]]


def _best_share(results: Path) -> float:
    cols = columns(scan_results(results).rows)
    done = groups(cols, "metric", "scheduler")
    jobs = groups(cols, "metric")[("workload_jobs",)][0]
    best = max(sum(v) / len(v) for (m, _), v in done.items() if m == "completed_jobs")
    return best / jobs


def test_make_demo_draws_its_figures_and_the_best_scheduler_completes_most_jobs(
    tmp_path: Path,
) -> None:
    args = _make_demo_args()
    assert args[args.index("--out") + 1] == "results/demo"  # where the README says
    out = tmp_path / "demo"
    assert main(_with_out(args, out)) == 0
    for name in ("jobs.png", "jct_cdf.png", "utilization.png", "completed_jobs.png"):
        assert (out / name).stat().st_size > 1000, name
    assert _best_share(out / "results.csv") > 0.5
    summary = (out / "summary.md").read_text()
    assert "## In plain words" in summary and "completed the most jobs" in summary


def test_the_readmes_quickstart_compare_completes_most_jobs(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    args = [a for a in _readme_compare_args() if a != "--plots"]  # figures: the demo's test
    assert main(_with_out(args, out)) == 0
    assert _best_share(out / "results.csv") > 0.5
