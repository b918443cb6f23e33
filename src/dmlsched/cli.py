"""The ``dmlsched`` command line: thin — parse, call, map errors to exit status.

Bad input of any kind exits with status 2 and one line on stderr naming the
field and the value; an invalid scheduler decision or a failed solve exits
with status 1 (a bug, not bad input); Ctrl-C exits 130 with every finished
cell kept in ``results.csv``.
"""

from __future__ import annotations

import fnmatch
import json
import os
import platform
import sys
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from dmlsched.errors import DmlschedError, InvalidInput
from dmlsched.experiments.catalogue import Experiment, all_experiments, get
from dmlsched.experiments.diagnose import WORKLOAD_PREFIX, diagnosed_cell, explain_completions
from dmlsched.experiments.metrics import cell_stats, describe, format_cell
from dmlsched.experiments.report import render_report
from dmlsched.experiments.results import read_results
from dmlsched.experiments.runner import RunConfig, run_experiment
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import SETTINGS, make_scheduler, registry
from dmlsched.service import cli as _service_cli
from dmlsched.testbed.cli import testbed_app
from dmlsched.workloads.registry import WorkloadParams, build_workload

__all__ = ["app", "main"]

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
    typer.Option(help="Slot length in seconds of pollux:/gavel: workloads (default 60)."),
]
SpeedOpt = Annotated[
    str | None,
    typer.Option(
        help="Speed model: eq1 (PD-ORS Eq. (1)) | measured (pollux:/gavel: peers') | PATH of a "
        "testbed calibration profile.json (cluster)."
    ),
]
ProfilesOpt = Annotated[
    Path | None,
    typer.Option(
        help="Peer measurements: Pollux profiles folder or Gavel's simulation_throughputs.json "
        "(default: ../shared/peers)."
    ),
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
        if speed in ("eq1", "measured"):
            extra["speed"] = speed
        elif Path(speed).is_file():  # a testbed calibration profile (dmlsched testbed calibrate)
            from dmlsched.workloads.speed_profile import load_speed_profile

            load_speed_profile(speed)  # validates: bad files exit 2 naming the field
            extra["speed_profile"] = speed
        else:
            raise InvalidInput("speed", speed, "eq1 | measured | PATH of a testbed profile.json")
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
    if extra.get("speed") == "measured" and getattr(wl, "speed", None) is None:
        raise InvalidInput("speed", "measured", "only with pollux:/gavel: workloads")
    gpu = extra.get("gpu")
    if gpu is not None and f"gpu={gpu}" not in getattr(wl, "notes", ()):
        raise InvalidInput("gpu", gpu, "only with gavel: workloads")


def _build(
    setting: str, workload: str, params: WorkloadParams, point: Any, seed: int, quick: bool
) -> Any:
    wl_rng, _ = spawn(make_rng(seed), 2)
    wl = build_workload(setting, workload, params, wl_rng)
    profile = params.extra.get("speed_profile") if params.extra else None
    if profile:
        import dataclasses

        from dmlsched.workloads.speed_profile import load_speed_profile

        if setting != "cluster":
            raise InvalidInput("speed", profile, "a profile only with --setting cluster")
        wl = dataclasses.replace(wl, speed=load_speed_profile(profile))
    return wl


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    )


def _run(exp: Experiment, out: Path, cfg: RunConfig, label: str) -> Path:
    with _progress() as prog:
        task = prog.add_task(label, total=None)

        def cb(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total)

        path = run_experiment(exp, out, cfg, on_progress=cb)
    render_report(out)
    return path


def _print_table(results: Path, title: str) -> None:
    """Metrics × schedulers, mean ± 95% CI (per-resource breakdowns: see summary.md)."""
    df = read_results(results)
    metrics = [
        m
        for m in dict.fromkeys(df["metric"])
        if not m.startswith(("mean_utilization_", WORKLOAD_PREFIX))
    ]
    scheds = list(dict.fromkeys(df["scheduler"]))
    table = Table(title=title)
    table.add_column("metric", no_wrap=True)
    for s in scheds:
        table.add_column(s, justify="right", no_wrap=True)
    for m in metrics:
        row = []
        for s in scheds:
            vals = df[(df.metric == m) & (df.scheduler == s)]["metric_value"].to_numpy()
            row.append(format_cell(cell_stats(vals, describe(m))))
        table.add_row(m, *row)
    console.print(table)
    for line in explain_completions(df):  # why few jobs completed, when that is the case
        console.print(f"- {line}")


@app.command()
def schedulers() -> None:
    """List registered schedulers by setting."""
    by: dict[str, list[str]] = {s: [] for s in SETTINGS}
    for setting, name in registry():
        by[setting].append(name)
    for setting in SETTINGS:
        console.print(f"[bold]{setting}[/]: {', '.join(by[setting]) or '(none yet)'}")


def _split(csv_list: str, field: str) -> list[str]:
    items = [x.strip() for x in csv_list.split(",") if x.strip()]
    if not items:
        raise InvalidInput(field, csv_list, "a comma-separated list")
    return items


@app.command()
def compare(
    schedulers: Annotated[str, typer.Option(help="Comma-separated scheduler names.")],
    out: Annotated[Path, typer.Option(help="Output folder.")],
    setting: Annotated[str, typer.Option(help=" | ".join(SETTINGS))] = "cluster",
    workload: Annotated[
        str, typer.Option(help="synthetic | trace name | PATH to a job-spec file.")
    ] = "synthetic",
    jobs: Annotated[int | None, typer.Option(help="Number of jobs.")] = None,
    machines: Annotated[
        int | None, typer.Option(help="Machines / servers / DCs / capacity units.")
    ] = None,
    slots: Annotated[int | None, typer.Option(help="Time slots T.")] = None,
    seeds: Annotated[int, typer.Option(help="Number of seeds (0..N-1).")] = 3,
    trace: Annotated[
        Path | None, typer.Option(help="Trace folder or file (default: ../shared/traces).")
    ] = None,
    skip_bad_rows: Annotated[
        bool, typer.Option(help="Skip malformed trace rows and count them.")
    ] = False,
    mode: Annotated[str | None, typer.Option(help="cluster job model: sync | async.")] = None,
    workers: Annotated[
        int | None, typer.Option(help="Process-pool size (default: all cores).")
    ] = None,
    ray: Annotated[
        str | None, typer.Option(help="Ray address, or 'local' to start one here.")
    ] = None,
    slot_seconds: SlotSecondsOpt = None,
    speed: SpeedOpt = None,
    profiles: ProfilesOpt = None,
    gpu: GpuOpt = None,
) -> None:
    """Compare schedulers on one workload over seeds; writes results.csv, summary.md, PNGs."""
    if setting not in SETTINGS:
        raise InvalidInput("setting", setting, " | ".join(SETTINGS))
    names = _split(schedulers, "schedulers")
    for n in names:  # fail fast, before any work
        make_scheduler(setting, n)
    for name, v in (("jobs", jobs), ("machines", machines), ("slots", slots)):
        if v is not None and v < 1:
            raise InvalidInput(name, v, ">= 1")
    if seeds < 1:
        raise InvalidInput("seeds", seeds, ">= 1")
    peer = _peer_extra(slot_seconds, speed, profiles, gpu)
    extra: dict[str, Any] = {"skip_bad_rows": skip_bad_rows, **peer}
    if mode is not None:
        extra["mode"] = mode
    params = WorkloadParams(jobs=jobs, machines=machines, slots=slots, trace=trace, extra=extra)
    first = _build(setting, workload, params, workload, 0, False)  # validates input up front
    _check_taken(first, peer)  # the workload carries the slot length to every scheduler
    notes = list(getattr(first, "notes", ()))
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
        extra={
            "title": f"{setting}: {', '.join(names)} on {workload}",
            "jobs": jobs,
            "machines": machines,
            "slots": slots,
            "trace": str(trace) if trace else None,
            "skip_bad_rows": skip_bad_rows,
            "mode": mode,
            **peer,
            "notes": notes,
        },
    )
    results = _run(exp, out, cfg, f"compare {setting}")
    over = "1 seed, no interval" if seeds == 1 else f"mean ± 95% CI over {seeds} seeds"
    _print_table(results, f"{setting} on {workload}: {over}")
    console.print(f"wrote {results}, {out / 'summary.md'} and plots")


@app.command()
def reproduce(
    experiment: Annotated[str | None, typer.Argument(help="Experiment ID (see --list).")] = None,
    out: Annotated[Path | None, typer.Option(help="Output folder (default results/<ID>).")] = None,
    seeds: Annotated[int | None, typer.Option(help="Seeds (default: the experiment's).")] = None,
    quick: Annotated[bool, typer.Option(help="Small sizes (about a minute).")] = False,
    list_: Annotated[bool, typer.Option("--list", help="Print the catalogue.")] = False,
    all_: Annotated[
        bool, typer.Option("--all", help="Run the whole catalogue into OUT/<ID>.")
    ] = False,
    workers: Annotated[
        int | None, typer.Option(help="Process-pool size (default: all cores).")
    ] = None,
    ray: Annotated[str | None, typer.Option(help="Ray address, or 'local'.")] = None,
    only: Annotated[
        str | None,
        typer.Option(help="With --all: comma-separated ID globs, e.g. 'pdors-*,thesis-*'."),
    ] = None,
) -> None:
    """Reproduce a paper figure or table from the catalogue."""
    if list_:
        for e in all_experiments():  # plain lines: easy to grep and to read in a log
            print(
                f"{e.id:<18} {e.setting:<10} {e.title}  [{e.param}: "
                f"{', '.join(map(str, e.points))}; {', '.join(e.schedulers)}]"
            )
        return
    if all_:
        base = out or Path("results/reproduce-all")
        verdicts = []
        for e in _select(only):
            d = base / e.id
            _run(
                e,
                d,
                RunConfig(seeds=seeds or e.default_seeds, quick=quick, workers=workers, ray=ray),
                e.id,
            )
            verdicts.append(
                f"- {e.id}: "
                + "; ".join(
                    ln[4:].split("**")[0]
                    for ln in (d / "summary.md").read_text().splitlines()
                    if ln.startswith("- **")
                )
            )
        (base / "verdicts.md").write_text("# Verdicts\n\n" + "\n".join(verdicts) + "\n")
        console.print(f"wrote {base}")
        return
    if experiment is None:
        raise InvalidInput("experiment", None, "an ID, --list or --all")
    exp = get(experiment)
    out = out or Path("results") / exp.id
    cfg = RunConfig(seeds=seeds or exp.default_seeds, quick=quick, workers=workers, ray=ray)
    _run(exp, out, cfg, exp.id)
    console.print((out / "summary.md").read_text(), markup=False)


def _select(only: str | None) -> list[Experiment]:
    """The catalogue without opt-in experiments, or the IDs matching one of ``only``'s globs."""
    exps = list(all_experiments())
    if only is None:  # testbed experiments (real processes) only when named
        return [e for e in exps if not e.opt_in]
    pats = [p.strip() for p in only.split(",") if p.strip()]
    chosen = [e for e in exps if any(fnmatch.fnmatchcase(e.id, p) for p in pats)]
    if not chosen:
        raise InvalidInput("only", only, "globs matching at least one ID of --list")
    return chosen


@app.command()
def report(directory: Annotated[Path, typer.Argument(help="A folder with results.csv.")]) -> None:
    """Re-render summary.md and the plots from results.csv alone."""
    path = render_report(directory)
    console.print(f"wrote {path}")


@app.command()
def run(
    scheduler: Annotated[str, typer.Option(help="Scheduler name.")],
    setting: Annotated[str, typer.Option(help=" | ".join(SETTINGS))] = "cluster",
    workload: Annotated[str, typer.Option(help="synthetic | trace name | PATH.")] = "synthetic",
    jobs: Annotated[int | None, typer.Option()] = None,
    machines: Annotated[int | None, typer.Option()] = None,
    slots: Annotated[int | None, typer.Option()] = None,
    seed: Annotated[int, typer.Option()] = 0,
    trace: Annotated[Path | None, typer.Option()] = None,
    events: Annotated[Path | None, typer.Option(help="Write the event log here as CSV.")] = None,
    slot_seconds: SlotSecondsOpt = None,
    speed: SpeedOpt = None,
    profiles: ProfilesOpt = None,
    gpu: GpuOpt = None,
) -> None:
    """Run one scheduler once; print its metrics (JSON) and optionally the event log."""
    from dmlsched.sim.engine import simulate
    from dmlsched.sim.events import write_events_csv

    peer = _peer_extra(slot_seconds, speed, profiles, gpu)
    params = WorkloadParams(jobs=jobs, machines=machines, slots=slots, trace=trace, extra=peer)
    sched = make_scheduler(setting, scheduler)
    wl = _build(setting, workload, params, None, seed, False)
    _check_taken(wl, peer)
    _, rng = spawn(make_rng(seed), 2)
    result = simulate(setting, wl, sched, rng)
    if events:
        write_events_csv(result.events, events)
    print(json.dumps(result.metrics, indent=2, sort_keys=True))


@app.command()
def export(
    workload: Annotated[str, typer.Option(help="synthetic | pollux:PATH | gavel:PATH | PATH.")],
    format: Annotated[str, typer.Option("--format", help="pollux | gavel.")],
    out: Annotated[Path, typer.Option(help="File to write.")],
    jobs: Annotated[int | None, typer.Option()] = None,
    machines: Annotated[int | None, typer.Option()] = None,
    slots: Annotated[int | None, typer.Option()] = None,
    seed: Annotated[int, typer.Option()] = 0,
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

    peer = _peer_extra(slot_seconds, None, None, None)
    params = WorkloadParams(jobs=jobs, machines=machines, slots=slots, extra=peer)
    wl = _build("cluster", workload, params, None, seed, False)
    _check_taken(wl, peer)
    rep = export_workload(wl, format, out, load_profiles(profiles) if profiles else None)
    moved = f"; {rep.clamped} moved into the peer's domain" if rep.clamped else ""
    console.print(f"wrote {rep.jobs} jobs to {out} ({format}, {wl.slot_seconds:g}-s slots{moved})")


@app.command()
def calibrate(
    out: Annotated[Path, typer.Option(help="Output folder.")],
    profiles: Annotated[
        Path | None, typer.Option(help="Pollux profiles folder (default: ../shared/peers).")
    ] = None,
) -> None:
    """Eq. (1)'s slowdown from spanning 1, 2, 4 machines vs the Pollux measurements."""
    from dmlsched.experiments.calibrate import calibrate as run_calibration

    path = run_calibration(out, profiles)
    console.print(path.read_text(), markup=False)
    console.print(f"wrote {path} and {out / 'calibration.png'}")


@app.command()
def bench(
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    only: Annotated[str | None, typer.Option(help="Comma-separated benchmark names.")] = None,
) -> None:
    """Timing figures (seconds, ms, rates) for the engine and schedulers."""
    from dmlsched.bench import load, run_all

    names = _split(only, "only") if only else None
    if names:
        unknown = [n for n in names if n not in load()]
        if unknown:
            raise InvalidInput("only", unknown[0], " | ".join(load()))
    figures = run_all(names)
    # medians depend on the machine and its load: say which
    figures["machine"] = (  # type: ignore[assignment]
        f"{os.cpu_count()} cores, {platform.platform()}, load {os.getloadavg()[0]:.2f}"
    )
    if json_:
        print(json.dumps(figures, sort_keys=True))
    else:
        for k, v in sorted(figures.items()):
            console.print(f"{k}: {v}")


# the live service's commands: serve, agent, k8s export (dmlsched.service.cli)
_service_cli.mount(app)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``dmlsched`` console script."""
    try:
        # without standalone mode, click returns (not raises) a typer.Exit's status
        status = app(args=argv, standalone_mode=False, prog_name="dmlsched")
        if isinstance(status, int) and status:
            return status
    except typer.Exit as e:
        return int(e.exit_code or 0)
    except typer.TyperException as e:  # usage errors: bad flag, bad value, missing option
        print(f"dmlsched: {e.format_message()}".replace("\n", " "), file=sys.stderr)
        return 2
    except InvalidInput as e:
        print(f"dmlsched: {e}", file=sys.stderr)
        return 2
    except (typer.Abort, KeyboardInterrupt):
        print("dmlsched: interrupted; finished cells are kept in results.csv", file=sys.stderr)
        return 130
    except DmlschedError as e:
        print(f"dmlsched: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
