"""``dmlsched testbed run | calibrate | cleanup`` (mounted by :mod:`dmlsched.cli`).

Thin, like the main CLI: parse, call, print.  Bad input exits 2 with one
line; Ctrl-C or SIGTERM stop the run and remove everything it created
(exit 130 / 143); after SIGKILL, ``dmlsched testbed cleanup`` does it.
"""

from __future__ import annotations

import json
import math
import signal
from pathlib import Path
from typing import Annotated

import typer

from dmlsched.errors import InvalidInput
from dmlsched.schedulers.plugins import PLUGIN_HELP

__all__ = ["testbed_app"]

testbed_app = typer.Typer(
    no_args_is_help=True,
    help="Run schedulers' decisions with real PS training processes on emulated machines.",
)

_STATE_HELP = "Folder of run state files (cleanup reads it)."
# each emulated machine is an agent process with PyTorch loaded (and, in netns mode, a
# namespace with its links): more than this is not an emulation this host can hold
MAX_MACHINES = 64
# the run waits a slot (a probe) at a time, and the platform's timed waits end somewhere
MAX_SLOT_SECONDS = 24 * 3600.0


def _check_common(slot_seconds: float, int_mbit: float, seed: int = 0) -> None:
    """The flags ``run`` and ``calibrate`` share, refused before any process starts."""
    if not 0 < slot_seconds <= MAX_SLOT_SECONDS:
        raise InvalidInput("slot-seconds", slot_seconds, f"> 0 and ≤ {MAX_SLOT_SECONDS:g}")
    if not int_mbit >= 0:
        raise InvalidInput("int-mbit", int_mbit, ">= 0 Mbit/s (0 = no loopback cap)")
    if seed < 0:
        raise InvalidInput("seed", seed, ">= 0")


# as dmlsched.cli_options.Plugins (this command sits below the cli package)
Plugins = Annotated[list[str] | None, typer.Option("--plugin", help=PLUGIN_HELP)]


def _on_sigterm(*_: object) -> None:
    raise SystemExit(143)  # unwinds through the testbed's cleanup


def _pair(text: str, field: str) -> tuple[int, int]:
    try:
        a, b = (int(x) for x in text.split(","))
    except ValueError:
        raise InvalidInput(field, text, "two integers LO,HI") from None
    if not 1 <= a <= b:
        raise InvalidInput(field, text, "1 <= LO <= HI")
    return a, b


def _params(items: list[str]) -> dict:
    out: dict = {}
    for it in items:
        key, sep, val = it.partition("=")
        if not sep or not key:
            raise InvalidInput("param", it, "KEY=VALUE")
        try:
            out[key] = json.loads(val)
        except ValueError:
            out[key] = val
    return out


def _load_profile(path: Path | None) -> dict | None:
    if path is None:
        return None
    from dmlsched.workloads.speed_profile import load_speed_profile

    load_speed_profile(path)  # validates
    return json.loads(path.read_text())


def _check_emulation(emulation: str, allowed: tuple[str, ...], why_not) -> None:
    if emulation not in allowed:
        raise InvalidInput("emulation", emulation, " | ".join(allowed))
    if emulation == "netns" and (why := why_not()):
        raise InvalidInput("emulation", emulation, f"local ({why})")


@testbed_app.command("run")
def run_cmd(
    scheduler: Annotated[
        str, typer.Option(help="A cluster scheduler (see `dmlsched schedulers`).")
    ],
    out: Annotated[Path, typer.Option(help="Output folder.")],
    jobs: Annotated[int, typer.Option(help="Number of jobs.")] = 6,
    machines: Annotated[int, typer.Option(help="Emulated machines.")] = 3,
    slot_seconds: Annotated[float, typer.Option(help="Wall seconds per slot.")] = 20.0,
    slots: Annotated[int, typer.Option(help="Horizon T (slots).")] = 30,
    emulation: Annotated[str, typer.Option(help="local | netns.")] = "local",
    seed: Annotated[int, typer.Option(help="Workload and scheduler seed.")] = 0,
    ext_mbit: Annotated[float, typer.Option(help="External link cap per machine.")] = 10.0,
    int_mbit: Annotated[float, typer.Option(help="Loopback cap per machine (0 = none).")] = 50.0,
    epochs: Annotated[str, typer.Option(help="Epoch range LO,HI per job.")] = "10,30",
    mode: Annotated[str, typer.Option(help="sync | async.")] = "sync",
    profile: Annotated[
        Path | None, typer.Option(help="Calibration profile (testbed calibrate's profile.json).")
    ] = None,
    cpu_share: Annotated[
        float | None, typer.Option(help="CPU cores per machine (cgroup), default none.")
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option(
            help="Scheduler constructor argument KEY=VALUE (repeatable), e.g. max_workers=3."
        ),
    ] = None,
    state_dir: Annotated[Path | None, typer.Option(help=_STATE_HELP)] = None,
    plugin: Plugins = None,
) -> None:
    """Run a scheduler's decisions for real; writes results.csv, slots.csv, summary.md, PNGs."""
    from dmlsched.rng import make_rng, spawn
    from dmlsched.schedulers.plugins import load_plugins
    from dmlsched.schedulers.protocols import make_scheduler
    from dmlsched.testbed.emulation import EMULATIONS, netns_available
    from dmlsched.testbed.predict import predict
    from dmlsched.testbed.report import headline, run_notes, write_run
    from dmlsched.testbed.run import run_cluster
    from dmlsched.testbed.runtime import Testbed
    from dmlsched.testbed.state import DEFAULT_STATE_DIR
    from dmlsched.testbed.workload import testbed_workload
    from dmlsched.workloads.speed_profile import profile_speed

    load_plugins(plugin)
    params = _params(param or [])
    make_scheduler("cluster", scheduler, **params)  # fail fast on a bad name or argument
    _check_emulation(emulation, EMULATIONS, netns_available)
    for name, v in (("jobs", jobs), ("machines", machines), ("slots", slots)):
        if v < 1:
            raise InvalidInput(name, v, ">= 1")
    if machines > MAX_MACHINES:
        raise InvalidInput("machines", machines, f"≤ {MAX_MACHINES} (an agent process each)")
    _check_common(slot_seconds, int_mbit, seed)
    if mode not in ("sync", "async"):
        raise InvalidInput("mode", mode, "sync | async")
    prof = _load_profile(profile)
    wl_rng, _ = spawn(make_rng(seed), 2)
    tw = testbed_workload(
        jobs,
        machines,
        slots,
        wl_rng,
        slot_seconds=slot_seconds,
        ext_mbit=ext_mbit,
        int_mbit=int_mbit or None,
        epochs=_pair(epochs, "epochs"),
        mode=mode,
        profile=prof,
    )
    signal.signal(signal.SIGTERM, _on_sigterm)
    with Testbed(
        machines,
        out / "run",
        emulation=emulation,
        ext_mbit=ext_mbit,
        int_mbit=int_mbit or None,
        cpu_share=cpu_share,
        state_dir=state_dir or DEFAULT_STATE_DIR,
    ) as tb:
        typer.echo(f"testbed {tb.run_id}: {machines} machines ({emulation}), {jobs} jobs")
        run = run_cluster(
            tw,
            scheduler,
            tb,
            seed,
            scheduler_params=params,
            on_slot=lambda t, a: typer.echo(
                f"slot {t}: " + (", ".join(f"j{j} {x}" for j, x in sorted(a.items())) or "idle")
            ),
        )
    speed = (
        profile_speed(prof, slot_seconds=slot_seconds, ext_mbit=(ext_mbit,), int_mbit=(int_mbit,))
        if prof
        else None
    )
    pred = predict(tw, run, speed, params)
    title = f"testbed run: {scheduler} ({emulation})"
    write_run(out, tw, run, pred, title=title, params=params)
    typer.echo(f"{headline(tw, run, pred)} ({run.wall_s:.0f} s)")
    for note in run_notes(tw, run, pred, params):
        typer.echo(f"- {note}")
    typer.echo(f"wrote {out / 'results.csv'}, {out / 'summary.md'}, gantt.png, loss.png")


@testbed_app.command("calibrate")
def calibrate_cmd(
    out: Annotated[Path, typer.Option(help="Output folder (profile.json, calibration.md).")],
    emulation: Annotated[str, typer.Option(help="local | netns.")] = "local",
    caps: Annotated[str, typer.Option(help="External caps (Mbit/s) to probe, comma-separated.")] = (
        "5,10,20"
    ),
    int_mbit: Annotated[float, typer.Option(help="Loopback cap per machine (0 = none).")] = 50.0,
    probe_seconds: Annotated[float, typer.Option(help="Measured seconds per probe.")] = 3.0,
    slot_seconds: Annotated[float, typer.Option(help="Slot length the profile assumes.")] = 20.0,
    state_dir: Annotated[Path | None, typer.Option(help=_STATE_HELP)] = None,
    held_out: Annotated[
        bool,
        typer.Option(
            help="Then measure probes the fit never saw (a 15 Mbit/s cap, jobs sharing links) "
            "and print the model's error on them (about 3 more minutes)."
        ),
    ] = True,
) -> None:
    """Fit Eq. (1)'s τ, g/b (and the link model) to measured step times; write a profile."""
    from dmlsched.testbed.calibrate import calibrate
    from dmlsched.testbed.emulation import EMULATIONS, netns_available
    from dmlsched.testbed.state import DEFAULT_STATE_DIR

    _check_emulation(emulation, EMULATIONS, netns_available)
    try:
        cap_list = [float(x) for x in caps.split(",") if x.strip()]
    except ValueError:
        raise InvalidInput("caps", caps, "comma-separated Mbit/s values") from None
    if not cap_list or not all(0 < c < math.inf for c in cap_list):  # nan is not a cap
        raise InvalidInput("caps", caps, "positive Mbit/s values")
    if not 0 < probe_seconds <= MAX_SLOT_SECONDS:
        raise InvalidInput("probe-seconds", probe_seconds, f"> 0 and ≤ {MAX_SLOT_SECONDS:g}")
    _check_common(slot_seconds, int_mbit)
    signal.signal(signal.SIGTERM, _on_sigterm)
    path = calibrate(
        out,
        emulation=emulation,
        caps=cap_list,
        int_mbit=int_mbit or None,
        probe_seconds=probe_seconds,
        slot_seconds=slot_seconds,
        state_dir=state_dir or DEFAULT_STATE_DIR,
        log=typer.echo,
        held_out=held_out,
    )
    typer.echo((out / "calibration.md").read_text())
    typer.echo(f"wrote {path}")


@testbed_app.command("cleanup")
def cleanup_cmd(
    run_id: Annotated[str | None, typer.Option(help="Only this run (even if alive).")] = None,
    state_dir: Annotated[Path | None, typer.Option(help=_STATE_HELP)] = None,
) -> None:
    """Remove processes, namespaces, qdiscs, cgroups and files of dead (or named) runs."""
    from dmlsched.testbed.state import DEFAULT_STATE_DIR, cleanup

    removed = cleanup(state_dir or DEFAULT_STATE_DIR, run_id=run_id, force=run_id is not None)
    for r in removed:
        typer.echo(f"removed {r}")
    typer.echo(f"cleanup: {len(removed)} item(s) removed")
