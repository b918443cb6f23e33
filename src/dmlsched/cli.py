"""The ``dmlsched`` command line: thin — parse, call, map errors to exit status.

Bad input of any kind exits with status 2 and one line on stderr naming the
field and the value — a flag outside its domain, a malformed file, a file
that cannot be read or written (the line names the path); an invalid
scheduler decision or a failed solve exits with status 1 (a bug, not bad
input); Ctrl-C exits 130 with one line saying what was kept (every finished
cell stays in ``results.csv``; rerunning the command resumes).  Flag domains
and output checks live in :mod:`dmlsched.cli_options`.
"""

from __future__ import annotations

import dataclasses
import errno
import fnmatch
import functools
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
import typer
import typer.core
from rich.console import Console
from typer._click.exceptions import NoArgsIsHelpError  # typer vendors click (pinned)

from dmlsched.cli_options import (
    MAX_SEED_BASE,
    MAX_SEEDS,
    Jobs,
    Machines,
    Nodes,
    Plugins,
    Seed,
    Seeds,
    SkipBadRows,
    Slots,
    Wait,
    Workers,
    finite_positive,
    int_range,
    json_text,
    writable_file,
)
from dmlsched.errors import DmlschedError, Interrupted, InvalidInput
from dmlsched.extras import MissingExtra, extra_of, require
from dmlsched.model.speed.saturating import COMPUTE_HELP
from dmlsched.results import columns, done_cells, groups, scan_results
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.plugins import load_plugins
from dmlsched.schedulers.protocols import SETTINGS, make_scheduler, registry
from dmlsched.service import cli as _service_cli
from dmlsched.testbed.cli import testbed_app
from dmlsched.workloads.registry import WorkloadParams, build_workload

if TYPE_CHECKING:  # the experiments' modules load in the commands that run experiments:
    # `run` and `check` need none of them (a third of a short command's start-up)
    from dmlsched.experiments.catalogue import Experiment
    from dmlsched.experiments.runner import RunConfig

__all__ = ["app", "main"]


def _flag_type(self: typer.core.TyperOption, ctx: Any) -> str | None:
    """No ``<bool>`` type beside an on/off flag in ``--help`` (typer prints one)."""
    return None if self.is_flag else _option_type(self, ctx)


_option_type = typer.core.TyperOption.display_type_rich
typer.core.TyperOption.display_type_rich = _flag_type  # type: ignore[method-assign]  # see _flag_type

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Online schedulers for parameter-server distributed ML training.",
)
# the testbed's commands live in their own module (real processes; PyTorch imported lazily)
app.add_typer(testbed_app, name="testbed")

console = Console()
if not console.is_terminal:  # logs and pipes: do not squeeze tables into 80 columns
    console = Console(width=160)

MAIN_METRIC = {
    "cluster": "total_utility",
    "interval": "total_utility",
    "edge-cloud": "total_jct",
    "geo": "total_cost",
}


# Peer-workload options, declared once for every command that builds a workload.
SlotSecondsOpt = Annotated[
    float | None,
    typer.Option(
        parser=finite_positive,
        help="Slot length in seconds of pollux:/gavel: workloads (default 60).",
    ),
]
SpeedOpt = Annotated[
    str | None,
    typer.Option(
        help="Speed model: measured (pollux:/gavel: peers' throughputs; their default) | "
        "goodput (pollux: measured + Pollux's statistical epochs) | eq1 (PD-ORS Eq. (1)) | "
        "PATH of a testbed calibration profile.json (cluster)."
    ),
]
ProfilesOpt = Annotated[
    Path | None,
    typer.Option(
        help="Peer measurements: Pollux profiles folder or Gavel's simulation_throughputs.json "
        "(default: ../shared/peers)."
    ),
]


def _formats(text: str | None) -> str | None:
    if text is None:
        return None
    from dmlsched.experiments.plots import VECTOR_FORMATS  # matplotlib: only when asked

    if text not in VECTOR_FORMATS:
        raise typer.BadParameter(f"{text!r} is not one of {' | '.join(VECTOR_FORMATS)}")
    return text


FormatOpt = Annotated[
    str | None,
    typer.Option(
        "--format",
        parser=_formats,
        help="Also write every figure as pdf or svg (vector) beside its PNG.",
    ),
]
ComputeOpt = Annotated[
    str | None, typer.Option(help=f"Compute per step (cluster): {COMPUTE_HELP}.")
]
GpuOpt = Annotated[
    str | None, typer.Option("--gpu", help="GPU type of gavel: workloads: v100 | p100 | k80.")
]


def _peer_extra(
    slot_seconds: float | None, speed: str | None, profiles: Path | None, gpu: str | None
) -> dict[str, Any]:
    """WorkloadParams.extra for the peer options that were given (validated)."""
    extra: dict[str, Any] = {}
    if slot_seconds is not None:
        if not (slot_seconds > 0 and slot_seconds < float("inf")):
            raise InvalidInput("slot-seconds", slot_seconds, "> 0")
        extra["slot_seconds"] = slot_seconds
    if speed is not None:
        if speed in ("eq1", "measured", "goodput"):
            extra["speed"] = speed
        elif Path(speed).is_file():  # a testbed calibration profile (dmlsched testbed calibrate)
            from dmlsched.workloads.speed_profile import load_speed_profile

            load_speed_profile(speed)  # validates: bad files exit 2 naming the field
            extra["speed_profile"] = speed
        else:
            raise InvalidInput(
                "speed", speed, "measured | goodput | eq1 | PATH of a testbed profile.json"
            )
    if profiles is not None:
        extra["profiles"] = str(profiles)
    if gpu is not None:
        extra["gpu"] = gpu
    return extra


def _check_taken(wl: Any, extra: dict[str, Any]) -> None:
    """Refuse peer options the built workload did not take (never ignore a flag silently)."""
    secs = extra.get("slot_seconds")
    if secs is not None and getattr(wl, "slot_seconds", None) != secs:
        raise InvalidInput("slot-seconds", secs, "only with pollux:/gavel: workloads")
    speed = extra.get("speed")
    if speed in ("measured", "goodput") and f"speed={speed}" not in getattr(wl, "notes", ()):
        where = "pollux: workloads" if speed == "goodput" else "pollux:/gavel: workloads"
        raise InvalidInput("speed", speed, f"only with {where}")
    gpu = extra.get("gpu")
    if gpu is not None and f"gpu={gpu}" not in getattr(wl, "notes", ()):
        raise InvalidInput("gpu", gpu, "only with gavel: workloads")


_BUILT: dict[str, Any] = {}  # workloads built by this process, by what built them


def _build(
    setting: str, workload: str, params: WorkloadParams, point: Any, seed: int, quick: bool
) -> Any:
    """The workload of one seed, built once per process: a command checks its input on
    seed 0, records its notes and runs cells on it; each build reads and parses the
    trace again (a large share of ``compare``'s time on a peer replay).  Workloads are
    frozen and every engine copies what it uses, so sharing one is safe."""
    key = repr((setting, workload, params, seed))
    hit = _BUILT.get(key)
    if hit is None:
        wl_rng, _ = spawn(make_rng(seed), 2)
        hit = build_workload(setting, workload, params, wl_rng)
        profile = params.extra.get("speed_profile") if params.extra else None
        if profile:
            from dmlsched.workloads.speed_profile import load_speed_profile

            if setting != "cluster":
                raise InvalidInput("speed", profile, "a profile only with --setting cluster")
            hit = dataclasses.replace(hit, speed=load_speed_profile(profile))
        compute = params.extra.get("compute") if params.extra else None
        if compute:
            from dmlsched.experiments.step_scaling import with_compute

            if setting != "cluster":
                raise InvalidInput("compute", compute, "only with --setting cluster")
            hit = with_compute(hit, compute)
        if len(_BUILT) >= 4:  # a few seeds' worth; large traces stay bounded
            _BUILT.clear()
        _BUILT[key] = hit
    return hit


def _warn(text: str) -> None:
    print(f"dmlsched: {text}", file=sys.stderr, flush=True)


def _run(
    exp: Experiment,
    out: Path,
    cfg: RunConfig,
    label: str,
    plots: bool = True,
    reuse: Path | None = None,
    fmt: str | None = None,
) -> Path:
    """Run the sweep with progress on stderr (cells; inside a cell run in this
    process, its slots, jobs and ETA), then write summary.md (and the PNGs
    if ``plots``) once.  ``reuse``: see :func:`run_experiment`."""
    from dmlsched.experiments.lock import hold
    from dmlsched.experiments.report import render_report
    from dmlsched.experiments.runner import run_experiment, workload_notes
    from dmlsched.progress import Reporter
    from dmlsched.sim.engine import watching

    if cfg.ray is not None:
        require("ray", "--ray")
    notes = workload_notes(exp, cfg.quick, cfg.traces)  # bad input fails before OUT is made
    looks = cfg.looks or (cfg.seeds,)
    # one lock around the sweep and its report (the runner re-enters it)
    with hold(out, wait=cfg.wait, on_wait=lambda who: _warn(f"waiting for {who}")):
        for k, look in enumerate(looks, 1):
            with Reporter(label if k == 1 else f"{label}, look {k}") as rep, watching(rep):
                path = run_experiment(
                    exp,
                    out,
                    cfg,
                    on_progress=rep.cells,
                    on_warning=_warn,
                    notes=notes,
                    reuse=reuse,
                    upto=look,
                )
            if k < len(looks) and _decided_at_look(exp, out, cfg, k):
                break
        try:
            render_report(out, on_warning=_warn, plots=plots, formats=(fmt,) if fmt else ())
        except KeyboardInterrupt:
            raise Interrupted(
                f"interrupted: every cell is kept in {path}; "
                f"`dmlsched report {out}` writes the summary"
            ) from None
    return path


def _decided_at_look(exp: Experiment, out: Path, cfg: RunConfig, k: int) -> bool:
    """Whether every claim of ``exp`` is decided on the results of look ``k`` (saying so,
    or which are not, on stderr)."""
    from dmlsched.experiments.claims import pct
    from dmlsched.experiments.looks import look_confidence, undecided
    from dmlsched.experiments.report import claim_frames

    conf = look_confidence(k)
    df, frames = claim_frames(out, exp, cfg.seed_list[: cfg.looks[k - 1]])
    left = undecided(exp, df, frames, conf)
    at = f"{exp.id}: look {k} at {cfg.looks[k - 1]} of {cfg.seeds} seeds ({pct(conf)})"
    if not left:
        _warn(f"{at}: every claim is decided, stopping there")
        return True
    more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
    _warn(f"{at}: {len(left)} claim(s) undecided, e.g. {left[0]!r}{more}; computing the rest")
    return False


# the columns a reader looks at first, then the rest in results.csv's order
_FIRST_METRICS = (
    "completed_jobs",
    "admitted_jobs",
    "total_utility",
    "mean_jct",
    "total_jct",
    "total_cost",
    "mean_utilization",
)


def _print_table(results: Path, title: str) -> None:
    """Schedulers × metrics, mean ± 95% CI, wrapped to the console's width
    (:func:`dmlsched.terminal.wrapped_tables`; per-resource breakdowns: see summary.md),
    then the headline and why few jobs completed, when that is the case."""
    from dmlsched.experiments.diagnose import WORKLOAD_PREFIX, explain_completions
    from dmlsched.experiments.headline import headline
    from dmlsched.experiments.metrics import cell_stats, describe, format_cell
    from dmlsched.terminal import wrapped_tables

    rows = scan_results(results).rows  # rows, not a DataFrame: pandas is slow to import
    cols = columns(rows)
    metrics = [
        m
        for m in dict.fromkeys(cols["metric"])
        if not m.startswith(("mean_utilization_", WORKLOAD_PREFIX))
    ]
    metrics.sort(key=lambda m: _FIRST_METRICS.index(m) if m in _FIRST_METRICS else 99)
    scheds = list(dict.fromkeys(cols["scheduler"]))
    values = groups(cols, "metric", "scheduler")
    cells = {
        (s, m): format_cell(cell_stats(np.array(values.get((m, s), []), float), describe(m)))
        for s in scheds
        for m in metrics
    }
    for table in wrapped_tables(title, "scheduler", scheds, metrics, cells, console.width):
        console.print(table)
    for line in headline(rows):
        console.print(line, markup=False)
    for line in explain_completions(rows):  # why few jobs completed, when that is the case
        console.print(f"- {line}", markup=False)


@app.command()
def schedulers(plugin: Plugins = None) -> None:
    """List registered schedulers by setting."""
    load_plugins(plugin)
    by: dict[str, list[str]] = {s: [] for s in SETTINGS}
    for setting, name in registry():
        by[setting].append(name)
    for setting in SETTINGS:
        console.print(f"[bold]{setting}[/]: {', '.join(by[setting]) or '(none yet)'}")


@app.command()
def check(
    scheduler: Annotated[str, typer.Argument(help="A registered name (with --plugin: yours).")],
    setting: Annotated[
        str | None, typer.Option(help="The scheduler's setting, if its name is in several.")
    ] = None,
    driver: Annotated[
        list[str] | None,
        typer.Option(help="simulate | testbed | service (repeatable; default: all of them)."),
    ] = None,
    seed: Annotated[
        list[int] | None, typer.Option(help="Tiny workloads' seeds (default 3).")
    ] = None,
    verbose: Annotated[bool, typer.Option(help="List every check, not only failures.")] = False,
    plugin: Plugins = None,
) -> None:
    """Run the scheduler contract (dmlsched.check_scheduler) and print its report; exit 1
    if a check failed."""
    from dmlsched.checks import check_scheduler

    load_plugins(plugin)
    seeds = tuple(seed) if seed else (3,)
    report = check_scheduler(
        scheduler, setting, drivers=driver, seeds=seeds, raise_on_failure=False
    )
    print(report.format(verbose=verbose))
    if not report.ok:
        raise typer.Exit(1)


def _split(csv_list: str, field: str) -> list[str]:
    items = [x.strip() for x in csv_list.split(",") if x.strip()]
    if not items:
        raise InvalidInput(field, csv_list, "a comma-separated list")
    if len(set(items)) < len(items):  # a name twice would run, and write its cells, twice
        raise InvalidInput(field, csv_list, "a comma-separated list naming each entry once")
    return items


@app.command()
def compare(
    schedulers: Annotated[str, typer.Option(help="Comma-separated scheduler names.")],
    out: Annotated[Path, typer.Option(help="Output folder.")],
    setting: Annotated[str, typer.Option(help=" | ".join(SETTINGS))] = "cluster",
    workload: Annotated[
        str, typer.Option(help="synthetic | trace name | PATH to a job-spec file.")
    ] = "synthetic",
    jobs: Jobs = None,
    machines: Machines = None,
    slots: Slots = None,
    seeds: Seeds = 3,
    trace: Annotated[
        Path | None, typer.Option(help="Trace folder or file (default: ../shared/traces).")
    ] = None,
    skip_bad_rows: SkipBadRows = False,
    nodes: Nodes = None,
    mode: Annotated[str | None, typer.Option(help="cluster job model: sync | async.")] = None,
    workers: Workers = None,
    ray: Annotated[
        str | None, typer.Option(help="Ray address, or 'local' to start one here.")
    ] = None,
    slot_seconds: SlotSecondsOpt = None,
    speed: SpeedOpt = None,
    profiles: ProfilesOpt = None,
    gpu: GpuOpt = None,
    compute: ComputeOpt = None,
    wait: Wait = False,
    plots: Annotated[
        bool,
        typer.Option(
            help="Also draw the figures: one per metric, jobs admitted and completed, the JCT "
            "distribution, utilization over time (or later: dmlsched report OUT)."
        ),
    ] = False,
    fmt: FormatOpt = None,
    plugin: Plugins = None,
) -> None:
    """Compare schedulers on one workload over seeds; writes results.csv, curves.csv,
    summary.md (and figures with --plots)."""
    from dmlsched.experiments.catalogue import Experiment
    from dmlsched.experiments.diagnose import diagnosed_cell
    from dmlsched.experiments.runner import RunConfig

    plugins = load_plugins(plugin)
    if setting not in SETTINGS:
        raise InvalidInput("setting", setting, " | ".join(SETTINGS))
    names = _split(schedulers, "schedulers")
    for n in names:  # fail fast, before any work
        make_scheduler(setting, n)
    peer = _peer_extra(slot_seconds, speed, profiles, gpu)
    extra: dict[str, Any] = {**_workload_extra(skip_bad_rows, nodes), **peer}
    if mode is not None:
        extra["mode"] = mode
    if compute is not None and compute != "linear":
        from dmlsched.experiments.step_scaling import compute_speed

        compute_speed(compute)  # validates: a missing profile exits 2 naming the field
        extra["compute"] = compute
    params = WorkloadParams(jobs=jobs, machines=machines, slots=slots, trace=trace, extra=extra)
    first = _build(setting, workload, params, workload, 0, False)  # validates input up front
    _check_taken(first, peer)  # the workload carries the slot length to every scheduler
    _check_nodes(first, nodes)
    # its notes go to config.json and summary.md through the runner (workload_notes)
    exp = Experiment(
        id="compare",
        setting=setting,
        title=f"compare on {workload}",
        param="workload",
        points=(workload,),
        quick_points=(workload,),
        schedulers=tuple(names),
        metrics=(),
        build=partial(_build, setting, workload, params),
        cell=diagnosed_cell,
    )
    cfg = RunConfig(
        seeds=seeds,
        workers=workers,
        ray=ray,
        wait=wait,
        plugins=plugins,
        extra={
            "title": f"{setting}: {', '.join(names)} on {workload}",
            **_sizes(first),
            "trace": str(trace) if trace else None,
            "skip_bad_rows": skip_bad_rows,
            "nodes": str(nodes) if nodes else None,
            "mode": mode,
            **peer,
            **({"compute": extra["compute"]} if "compute" in extra else {}),
        },
    )
    results = _run(exp, out, cfg, f"compare {setting}", plots=plots or fmt is not None, fmt=fmt)
    over = "1 seed, no interval" if seeds == 1 else f"mean ± 95% CI over {seeds} seeds"
    _print_table(results, f"{setting} on {workload}: {over}")
    drawn = "and figures" if plots or fmt else f"(figures: dmlsched report {out})"
    console.print(f"wrote {results}, {out / 'summary.md'} {drawn}")


def _sizes(wl: Any) -> dict[str, Any]:
    """The sizes of a built workload, for config.json: what was run, not the flags
    (a flag left out is the workload's default, which the workload knows)."""
    out: dict[str, Any] = {"jobs": len(wl.jobs)}
    if hasattr(wl, "cluster"):
        out["machines"] = int(wl.cluster.machines)
    elif hasattr(wl, "system"):
        out["machines"] = int(wl.system.servers)
    elif hasattr(wl, "sites"):
        out["machines"] = int(np.asarray(wl.sites.a).shape[0])
    elif hasattr(wl, "capacity"):
        out["capacity"] = [float(c) for c in wl.capacity]
    if hasattr(wl, "horizon"):
        out["slots"] = int(wl.horizon)
    return out


@app.command()
def reproduce(
    experiment: Annotated[str | None, typer.Argument(help="Experiment ID (see --list).")] = None,
    out: Annotated[Path | None, typer.Option(help="Output folder (default results/<ID>).")] = None,
    seeds: Annotated[
        int | None,
        typer.Option(parser=int_range(1, MAX_SEEDS), help="Seeds (default: the experiment's)."),
    ] = None,
    quick: Annotated[bool, typer.Option(help="Small sizes (about a minute).")] = False,
    list_: Annotated[bool, typer.Option("--list", help="Print the catalogue.")] = False,
    all_: Annotated[
        bool, typer.Option("--all", help="Run the whole catalogue into OUT/<ID>.")
    ] = False,
    workers: Workers = None,
    ray: Annotated[str | None, typer.Option(help="Ray address, or 'local'.")] = None,
    only: Annotated[
        str | None,
        typer.Option(help="With --all: comma-separated ID globs, e.g. 'pdors-*,thesis-*'."),
    ] = None,
    report: Annotated[
        Path | None,
        typer.Option(help="With --all: also write the reproduction report here."),
    ] = None,
    traces: Annotated[
        Path | None,
        typer.Option(
            help="Trace folder laid out like ../shared/traces (philly-pollux/, google-2011/, ...)."
        ),
    ] = None,
    compute: ComputeOpt = None,
    wait: Wait = False,
    fmt: FormatOpt = None,
    seed_base: Annotated[
        int,
        typer.Option(
            parser=int_range(0, MAX_SEED_BASE),
            help="First seed: the seeds are N, N+1, … (default 0).",
        ),
    ] = 0,
    held_out: Annotated[
        int | None,
        typer.Option(
            parser=int_range(0, MAX_SEED_BASE),
            help="With --all: also run the held-out seeds N, N+1, … into OUT/held-out and "
            "report both seed sets side by side.",
        ),
    ] = None,
    plugin: Plugins = None,
    until_decided: Annotated[
        bool,
        typer.Option(
            help="Look at half the seeds first and stop there when every claim is decided; "
            "the looks read 98.5% and 96.5% intervals, so together they keep the 95% "
            "error rate (dmlsched.experiments.looks)."
        ),
    ] = False,
) -> None:
    """Reproduce a paper figure or table from the catalogue (plugins may add schedulers
    and experiments: dmlsched.experiments.catalogue.register)."""
    from dmlsched.experiments.catalogue import all_experiments, get
    from dmlsched.experiments.looks import check_seeds, plan
    from dmlsched.experiments.reproduction import SeedSet, write_reproduction
    from dmlsched.experiments.runner import RunConfig

    plugins = load_plugins(plugin)
    if until_decided:
        check_seeds(seeds)
    if list_:
        for e in all_experiments():  # plain lines: easy to grep and to read in a log
            print(
                f"{e.id:<18} {e.setting:<10} {e.title}  [{e.param}: "
                f"{', '.join(map(str, e.points))}; {', '.join(e.schedulers)}]"
            )
        return
    if traces is not None and not traces.is_dir():
        raise InvalidInput("traces", str(traces), "an existing folder like ../shared/traces")
    traces = traces.resolve() if traces is not None else None

    computed = compute is not None and compute != "linear"
    if computed:
        from dmlsched.experiments.step_scaling import compute_speed

        compute_speed(compute)  # validates before any work
        if all_:
            raise InvalidInput("compute", compute, "linear with --all (one experiment ID)")

    def config(e: Experiment, first: int = seed_base) -> RunConfig:
        n = seeds if seeds is not None else e.default_seeds  # 0 is refused by the parser
        extra = {"compute": compute} if computed else None
        looks = plan(n) if until_decided else ()
        if until_decided and not looks:
            _warn(f"{e.id}: its {n} seeds are too few for two looks: running them all")
        return RunConfig(
            n,
            looks=looks,
            quick=quick,
            workers=workers,
            ray=ray,
            wait=wait,
            traces=traces,
            seed_base=first,
            plugins=plugins,
            extra=extra,
        )

    if all_:
        if report is not None:
            writable_file(report, "report")  # before hours of work, not after
        base = out or Path("results/reproduce-all")
        chosen = _select(only)
        if held_out is not None:  # held out means never seen: no seed in both sets
            n = seeds if seeds is not None else max(e.default_seeds for e in chosen)
            if held_out < seed_base + n and seed_base < held_out + n:
                raise InvalidInput(
                    "held-out",
                    held_out,
                    f"a first seed whose {n} seeds miss {_seed_label(seed_base, n)} "
                    f"(≥ {seed_base + n}{f' or ≤ {seed_base - n}' if seed_base >= n else ''})",
                )
        start, commit = time.monotonic(), _commit()  # the code the cells ran on
        sets = [SeedSet(_seed_label(seed_base, seeds), base)]
        firsts = [seed_base]
        if held_out is not None:
            sets.append(SeedSet("held-out " + _seed_label(held_out, seeds), base / "held-out"))
            firsts.append(held_out)
        for s, first in zip(sets, firsts, strict=True):
            _run_all(
                chosen, s.base, partial(_with_first, config, first), commit, fmt, s.label, wait
            )
        meta = {
            "command": "dmlsched reproduce --all"
            + (f" --only '{only}'" if only else "")
            + (f" --seeds {seeds}" if seeds else "")
            + (f" --seed-base {seed_base}" if seed_base else "")
            + (f" --held-out {held_out}" if held_out is not None else "")
            + (" --quick" if quick else "")
            + (" --until-decided" if until_decided else ""),
            "commit": commit,
            "seed sets": "; ".join(s.label for s in sets),
            "provenance": "every cell's fingerprint (code and inputs, provenance.csv) is this "
            "commit's: cells kept from earlier invocations are those whose fingerprint matched",
            "size": "quick" if quick else "full",
            "experiments": f"{len(chosen)} of {len(all_experiments())}",
            "wall time of this run": f"{time.monotonic() - start:.0f} s (cells already in "
            "results.csv with this code's fingerprint are not re-run)",
        }
        path = write_reproduction(sets, chosen, base / "reproduction.md", meta)
        if report is not None:
            shutil.copyfile(path, report)
        console.print(f"wrote {base} and {report or path}")
        return
    if held_out is not None:
        raise InvalidInput("held-out", held_out, "only with --all")
    if experiment is None:
        raise InvalidInput("experiment", None, "an ID, --list or --all")
    exp = get(experiment)
    out = out or Path("results") / exp.id
    if computed:
        from dmlsched.experiments.step_scaling import WithCompute

        if exp.setting != "cluster" or exp.opt_in:
            raise InvalidInput("compute", compute, "cluster experiments (not the testbed's)")
        exp = dataclasses.replace(exp, build=WithCompute(exp.build, compute))  # type: ignore[arg-type]  # WithCompute is a callable build, not the Callable type the field names
    _run(exp, out, config(exp), exp.id, fmt=fmt)
    console.print((out / "summary.md").read_text(), markup=False)


def _with_first(config: Any, first: int, e: Experiment) -> RunConfig:
    return config(e, first)


def _seed_label(first: int, seeds: int | None) -> str:
    if seeds is None:
        return f"seeds from {first} (each experiment's default count)"
    return f"seeds {first}–{first + seeds - 1}" if seeds > 1 else f"seed {first}"


def _run_all(
    chosen: list[Experiment],
    base: Path,
    config: Any,
    commit: str,
    fmt: str | None,
    seed_set: str,
    wait: bool,
) -> None:
    """Run ``chosen`` into ``base/<ID>``, holding ``base``'s lock; log the invocation in
    ``base/runs.csv`` from its start (:class:`~dmlsched.experiments.runlog.RunLog`).  Each
    experiment's progress says where it stands in the catalogue and which seed set runs."""
    from dmlsched.experiments.catalogue import all_experiments
    from dmlsched.experiments.lock import ensure_folder, hold
    from dmlsched.experiments.runlog import RunLog
    from dmlsched.memo import shared_folder

    ensure_folder(base)
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M")
    ran: dict[str, Path] = {}  # results of this command, for same_runs_as
    with hold(base, wait=wait, on_wait=lambda who: _warn(f"waiting for {who}")):
        # every experiment's cells, not only the chosen ones': runs.csv's rows count theirs
        # (an experiment's are counted again only once it has run: a scan of the whole
        # catalogue's results takes seconds)
        cells = {e.id: _cells(base / e.id) for e in all_experiments()}
        with (
            RunLog(base, started, commit, sum(cells.values())) as log,
            shared_folder(),  # a computation two experiments make on one instance: once
        ):
            for k, e in enumerate(chosen, 1):
                reuse = ran.get(e.same_runs_as)
                label = f"{e.id} [{k}/{len(chosen)}, {seed_set}]"
                try:
                    ran[e.id] = _run(e, base / e.id, config(e), label, reuse=reuse, fmt=fmt)
                finally:  # a stopped experiment's cells are kept and count
                    cells[e.id] = _cells(base / e.id)
                    log.cells(sum(cells.values()))
            log.end("complete")


def _cells(out: Path) -> int:
    """Whole cells in ``out/results.csv``."""
    return len(done_cells(out / "results.csv"))


def _commit() -> str:
    """The commit of the checkout this code runs from (and "+ local changes" when its tree
    is dirty), if git knows.

    Asked of the folder holding the ``dmlsched`` package, not of the working directory: a
    reproduction started from inside another repository must not record that one's commit.
    """
    src = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + (" + local changes" if dirty else "")


def _select(only: str | None) -> list[Experiment]:
    """The catalogue without opt-in experiments, or the IDs matching one of ``only``'s globs."""
    from dmlsched.experiments.catalogue import all_experiments

    exps = list(all_experiments())
    if only is None:  # testbed experiments (real processes) only when named
        return [e for e in exps if not e.opt_in]
    pats = [p.strip() for p in only.split(",") if p.strip()]
    chosen = [e for e in exps if any(fnmatch.fnmatchcase(e.id, p) for p in pats)]
    if not chosen:
        raise InvalidInput("only", only, "globs matching at least one ID of --list")
    return chosen


@app.command()
def report(
    directory: Annotated[Path, typer.Argument(help="A folder with results.csv.")],
    fmt: FormatOpt = None,
) -> None:
    """Re-render summary.md and the figures from results.csv (and curves.csv) alone."""
    from dmlsched.experiments.report import render_report

    if not (directory / "results.csv").is_file():
        raise InvalidInput("directory", str(directory), "a folder holding a results.csv")
    path = render_report(directory, on_warning=_warn, formats=(fmt,) if fmt else ())
    console.print(f"wrote {path}")


@app.command()
def run(
    scheduler: Annotated[str, typer.Option(help="Scheduler name.")],
    setting: Annotated[str, typer.Option(help=" | ".join(SETTINGS))] = "cluster",
    workload: Annotated[str, typer.Option(help="synthetic | trace name | PATH.")] = "synthetic",
    jobs: Jobs = None,
    machines: Machines = None,
    slots: Slots = None,
    seed: Seed = 0,
    trace: Annotated[Path | None, typer.Option(help="Trace folder or file.")] = None,
    skip_bad_rows: SkipBadRows = False,
    nodes: Nodes = None,
    events: Annotated[Path | None, typer.Option(help="Write the event log here as CSV.")] = None,
    slot_seconds: SlotSecondsOpt = None,
    speed: SpeedOpt = None,
    profiles: ProfilesOpt = None,
    gpu: GpuOpt = None,
    plugin: Plugins = None,
) -> None:
    """Run one scheduler once; print its metrics (JSON; undefined values are null)."""
    from dmlsched.sim.engine import simulate
    from dmlsched.sim.events import write_events_csv
    from dmlsched.workloads.registry import warning_notes

    load_plugins(plugin)
    if setting not in SETTINGS:
        raise InvalidInput("setting", setting, " | ".join(SETTINGS))
    if events:
        writable_file(events, "events")  # before the run, not after it
    peer = _peer_extra(slot_seconds, speed, profiles, gpu)
    extra = {**_workload_extra(skip_bad_rows, nodes), **peer}
    params = WorkloadParams(jobs=jobs, machines=machines, slots=slots, trace=trace, extra=extra)
    sched = make_scheduler(setting, scheduler)
    wl = _build(setting, workload, params, None, seed, False)
    _check_taken(wl, peer)
    _check_nodes(wl, nodes)
    for w in warning_notes(getattr(wl, "notes", ())):
        _warn(w)
    from dmlsched.progress import Reporter

    _, rng = spawn(make_rng(seed), 2)
    with Reporter(f"run {scheduler} seed {seed}") as rep:
        # the event log only when it is written: a long run has one event per job and slot
        result = simulate(
            setting, wl, sched, rng, progress=rep.run(scheduler), record_events=bool(events)
        )
    if events:
        write_events_csv(result.events, events)
    print(json_text(result.metrics, indent=2, sort_keys=True))


@app.command()
def export(
    workload: Annotated[str, typer.Option(help="synthetic | pollux:PATH | gavel:PATH | PATH.")],
    format: Annotated[str, typer.Option("--format", help="pollux | gavel.")],
    out: Annotated[Path, typer.Option(help="File to write.")],
    jobs: Jobs = None,
    machines: Machines = None,
    slots: Slots = None,
    seed: Seed = 0,
    slot_seconds: SlotSecondsOpt = None,
    profiles: Annotated[
        Path | None,
        typer.Option(
            help="Pollux profiles folder (default: ../shared/peers), to place synthetic jobs."
        ),
    ] = None,
) -> None:
    """Write a cluster workload's jobs in a peer simulator's format (Pollux CSV, Gavel .trace)."""
    from dmlsched.workloads.export import export_workload
    from dmlsched.workloads.profiles import load_profiles

    writable_file(out, "out")
    peer = _peer_extra(slot_seconds, None, None, None)
    params = WorkloadParams(jobs=jobs, machines=machines, slots=slots, extra=peer)
    wl = _build("cluster", workload, params, None, seed, False)
    _check_taken(wl, peer)
    rep = export_workload(wl, format, out, load_profiles(profiles) if profiles else None)
    moved = f"; {rep.clamped} moved into the peer's domain" if rep.clamped else ""
    console.print(f"wrote {rep.jobs} jobs to {out} ({format}, {wl.slot_seconds:g}-s slots{moved})")


@app.command()
def calibrate(
    out: Annotated[
        Path | None, typer.Option(help="Output folder (optional with --step-profile).")
    ] = None,
    profiles: Annotated[
        Path | None, typer.Option(help="Pollux profiles folder (default: ../shared/peers).")
    ] = None,
    step_profile: Annotated[
        Path | None,
        typer.Option(
            help="Instead: fit per-worker step curves max(t0, tau*b) + c to a GPU step-scaling "
            "JSON (e.g. ../shared/profiles/h200-step-scaling.json); prints each model's fit "
            "and its error at every batch (what --compute saturating uses)."
        ),
    ] = None,
) -> None:
    """Eq. (1)'s slowdown from spanning 1, 2, 4 machines vs the Pollux measurements
    (or, with --step-profile, saturating compute curves fitted to a GPU profile)."""
    if step_profile is not None:
        from dmlsched.experiments.step_scaling import fit_profile, write_step_fits

        if profiles is not None:
            raise InvalidInput("profiles", str(profiles), "not with --step-profile")
        text = write_step_fits(fit_profile(step_profile), step_profile.name, out)
        console.print(text, markup=False)
        if out is not None:
            console.print(f"wrote {out / 'step_fit.md'}, step_fit.json and step_fit.png")
        return
    if out is None:
        raise InvalidInput("out", None, "an output folder (or --step-profile FILE)")
    from dmlsched.experiments.calibrate import calibrate as run_calibration

    path = run_calibration(out, profiles)
    console.print(path.read_text(), markup=False)
    console.print(f"wrote {path} and {out / 'calibration.png'}")


class _BenchCommand(typer.core.TyperCommand):
    """``bench``: its ``--help`` lists the benchmarks (loaded only when help is asked)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from dmlsched.bench import OPT_IN, load

        names = list(load())
        default = ", ".join(n for n in names if n not in OPT_IN)
        opt_in = ", ".join(n for n in names if n in OPT_IN)
        for p in self.params:
            if p.name == "only" and isinstance(p, typer.core.TyperOption):
                p.help = f"Comma-separated benchmarks: {default} (run by default)" + (
                    f"; {opt_in} (only when named)." if opt_in else "."
                )
        super().format_help(ctx, formatter)


@app.command(cls=_BenchCommand)
def bench(
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    only: Annotated[str | None, typer.Option(help="Comma-separated benchmark names.")] = None,
    peers: Annotated[
        bool,
        typer.Option(
            "--peers",
            help="Also build (cached, minutes the first time) and run the Pollux and Gavel "
            "simulators beside dmlsched on the same files: CPU ratios, JCT agreement.",
        ),
    ] = False,
) -> None:
    """Timing figures (seconds, ms, rates) for the engine and schedulers; progress on
    stderr (which benchmark runs, how many are done)."""
    from dmlsched.bench import OPT_IN, load, run_all
    from dmlsched.progress import Reporter

    names = _split(only, "only") if only else None
    if names:
        unknown = [n for n in names if n not in load()]
        if unknown:
            raise InvalidInput("only", unknown[0], " | ".join(load()))
    chosen = names or [n for n in load() if n not in OPT_IN]
    if peers and "peer-sims" not in chosen:
        chosen.append("peer-sims")
    figures: dict[str, Any] = {}
    with Reporter("bench", unit="benchmarks") as rep:
        for i, name in enumerate(chosen):
            rep.doing(name)
            rep.cells(i, len(chosen))
            figures.update(run_all([name]))
        rep.doing("")
        rep.cells(len(chosen), len(chosen))
    # medians depend on the machine and its load: say which
    figures["machine"] = (
        f"{os.cpu_count()} cores, {platform.platform()}, load {os.getloadavg()[0]:.2f}"
    )
    if json_:
        print(json_text(figures, sort_keys=True))
    else:
        for k, v in sorted(figures.items()):
            console.print(f"{k}: {v}")


def _workload_extra(skip_bad_rows: bool, nodes: Path | None) -> dict[str, Any]:
    """The trace options every setting's workloads read (``--skip-bad-rows``, ``--nodes``)."""
    extra: dict[str, Any] = {"skip_bad_rows": skip_bad_rows}
    if nodes is not None:
        extra["nodes"] = nodes
    return extra


def _check_nodes(wl: Any, nodes: Path | None) -> None:
    """Refuse ``--nodes`` when the workload read no node list (never ignore a flag silently)."""
    if nodes is None:
        return
    where = str(nodes.expanduser().resolve())
    if not any(where in n for n in getattr(wl, "notes", ())):
        raise InvalidInput("nodes", str(nodes), "only with alibaba or edge-cloud workloads")


def _os_error(e: OSError) -> str:
    path = e.filename if e.filename is not None else "?"
    return f"cannot use {path}: {e.strerror or e}"


# the live service's commands: serve, agent, k8s export (dmlsched.service.cli)
_service_cli.mount(app)

# the optional part (dmlsched.extras) each command needs, checked after parsing (so --help
# works without it) and before any work
NEEDS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("testbed", "run"): ("testbed",),
    ("testbed", "calibrate"): ("testbed",),
    ("serve",): ("service",),
    ("agent",): ("service", "testbed"),
    ("k8s", "export"): ("service",),
}


def _needing(fn: Any, extras: tuple[str, ...], what: str) -> Any:
    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        for extra in extras:
            require(extra, what)
        return fn(*args, **kwargs)

    return checked


def _check_extras(tree: typer.Typer, path: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Wrap every command of :data:`NEEDS` in ``tree``; returns the paths found."""
    found = set()
    for info in tree.registered_commands:
        name = info.name or (info.callback.__name__ if info.callback else "").replace("_", "-")
        extras = NEEDS.get((*path, name))
        if extras:
            info.callback = _needing(info.callback, extras, " ".join((*path, name)))
            found.add((*path, name))
    for group in tree.registered_groups:
        if group.typer_instance is not None and group.name:
            found |= _check_extras(group.typer_instance, (*path, group.name))
    return found


EXTRAS_CHECKED = _check_extras(app)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``dmlsched`` console script: the exit status (module docstring)."""
    try:
        # standalone_mode=False: click returns an exit code (Ctrl-C -> 130) instead of exiting
        rc = app(args=argv, standalone_mode=False, prog_name="dmlsched")
    except typer.Exit as e:
        return int(e.exit_code or 0)
    except NoArgsIsHelpError:  # a bare ``dmlsched`` (or group): the help is printed, no error
        return 0
    except typer.TyperException as e:  # usage errors: bad flag, bad value, missing option
        print(f"dmlsched: {e.format_message()}".replace("\n", " "), file=sys.stderr)
        return 2
    except InvalidInput as e:
        print(f"dmlsched: {e}", file=sys.stderr)
        return 2
    except Interrupted as e:
        print(f"dmlsched: {e}", file=sys.stderr)
        return 130
    except (typer.Abort, KeyboardInterrupt):
        print("dmlsched: interrupted before any result was kept", file=sys.stderr)
        return 130
    except UnicodeDecodeError as e:  # a reader without its own check: still one line
        print(f"dmlsched: undecodable input ({e.reason} at byte {e.start})", file=sys.stderr)
        return 2
    except MemoryError:  # e.g. a horizon computed from a file's far-off arrival times
        print(
            "dmlsched: out of memory for this workload; give smaller --jobs, --machines or --slots",
            file=sys.stderr,
        )
        return 2
    except OSError as e:
        if e.errno == errno.EPIPE:  # reader of our output went away (| head)
            return 1
        print(f"dmlsched: {_os_error(e)}", file=sys.stderr)
        return 2
    except MissingExtra as e:
        print(f"dmlsched: {e}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:  # an optional part imported later than its check
        found = extra_of(e)
        if found is None:
            raise
        print(f"dmlsched: {MissingExtra(*found, 'this command')}", file=sys.stderr)
        return 2
    except DmlschedError as e:
        print(f"dmlsched: {e}", file=sys.stderr)
        return 1
    if rc == 130:  # typer turned a Ctrl-C outside any sweep into Exit(130)
        print("dmlsched: interrupted before any result was kept", file=sys.stderr)
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":
    sys.exit(main())
