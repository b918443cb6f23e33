"""``dmlsched serve``, ``dmlsched agent`` and ``dmlsched k8s export`` (mounted by cli.py)."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Annotated

import typer

from dmlsched.cli_options import Plugins
from dmlsched.errors import Interrupted, InvalidInput

__all__ = ["mount"]


def _read_token(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        token = path.read_text().strip()
    except OSError as e:
        raise InvalidInput("token-file", str(path), f"a readable file ({e.strerror})") from None
    if not token or len(token.split()) != 1:
        raise InvalidInput("token-file", str(path), "a file holding one token")
    return token


def serve(
    scheduler: Annotated[str, typer.Option(help="A registered cluster scheduler.")],
    db: Annotated[
        str, typer.Option(help="SQLite file, or a postgresql:// URL for a shared deployment.")
    ] = "dmlsched.db",
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8080,
    slot_seconds: Annotated[
        float | None, typer.Option(help="Wall-clock slot length; omit with --manual-clock.")
    ] = None,
    manual_clock: Annotated[
        bool, typer.Option("--manual-clock", help="Slots advance only on POST /v1/tick.")
    ] = False,
    token_file: Annotated[
        Path | None, typer.Option(help="Bearer token required by mutating endpoints.")
    ] = None,
    seed: Annotated[int, typer.Option()] = 0,
    window: Annotated[int, typer.Option(help="Slots per scheduler epoch (its horizon).")] = 100,
    progress: Annotated[
        str, typer.Option(help="model: the engine's speed model; measured: agents' reports.")
    ] = "model",
    agent_timeout: Annotated[
        float, typer.Option(help="Seconds without a heartbeat before a machine goes down.")
    ] = 30.0,
    param: Annotated[
        list[str] | None,
        typer.Option(help="Scheduler parameter KEY=VALUE (VALUE as JSON), repeatable."),
    ] = None,
    plugin: Plugins = None,
) -> None:
    """Run the live scheduler service (HTTP/JSON API, dashboard at /, metrics at /metrics)."""
    import uvicorn

    from dmlsched.schedulers.plugins import load_plugins
    from dmlsched.schedulers.protocols import make_scheduler
    from dmlsched.service.app import Service, create_app
    from dmlsched.service.core import Core, ServiceConfig
    from dmlsched.service.store import open_store

    if manual_clock == (slot_seconds is not None):
        raise InvalidInput("slot-seconds", slot_seconds, "a length > 0 or --manual-clock (one)")
    if slot_seconds is not None and not slot_seconds > 0:
        raise InvalidInput("slot-seconds", slot_seconds, "> 0")
    if not 0 <= port <= 65535:
        raise InvalidInput("port", port, "0..65535")
    plugins = tuple(p.where for p in load_plugins(plugin))  # recorded in the log's config
    params = _params(param or [])
    try:
        make_scheduler("cluster", scheduler, **params)  # bad names: exit 2 before touching the db
    except InvalidInput as e:
        _needs_logged_plugins(e, db, plugins)
        raise
    token = _read_token(token_file)
    config = ServiceConfig(
        scheduler=scheduler,
        seed=seed,
        window=window,
        progress=progress,
        params=params,
        plugins=plugins,
    )
    store = open_store(db)
    core = Core(config, store, agent_timeout=agent_timeout).open()
    service = Service(core, token=token, slot_seconds=slot_seconds)
    app = create_app(service)
    typer.echo(
        f"dmlsched serve: {scheduler} on http://{host}:{port}/ (slot {core.slot}, "
        f"log seq {core.seq}, {store.url if '://' not in store.url else 'postgresql'})",
        err=True,
    )

    class _Server(uvicorn.Server):
        interrupted = False

        def handle_exit(self, sig: int, frame: object) -> None:
            self.interrupted = self.interrupted or sig == signal.SIGINT
            super().handle_exit(sig, frame)  # type: ignore[arg-type]

    server = _Server(
        uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    )
    try:
        server.run()  # until SIGINT/SIGTERM, then a graceful shutdown
    finally:
        store.close()
    if server.interrupted:  # Ctrl-C: exit 130 (dmlsched.cli.main) with one line
        raise Interrupted("interrupted; every acknowledged request is kept in the store")


def agent(
    server: Annotated[str, typer.Option(help="The service's URL, e.g. http://127.0.0.1:8080")],
    machine: Annotated[str, typer.Option(help="This machine's name.")],
    capacity: Annotated[
        str, typer.Option(help="gpu,cpu,mem,storage this machine offers.")
    ] = "4,16,64,100",
    token_file: Annotated[Path | None, typer.Option()] = None,
    workdir: Annotated[Path, typer.Option(help="Where the testbed processes run.")] = Path(
        "agent-work"
    ),
    poll: Annotated[float, typer.Option(help="Seconds between heartbeats.")] = 0.5,
    emulation: Annotated[str, typer.Option(help="Testbed emulation mode.")] = "local",
) -> None:
    """One per machine: register, pull this machine's allocation, run it on the testbed."""
    from dmlsched.service.agent import run_agent

    caps = _floats(capacity, "capacity")
    run_agent(
        server=server,
        machine=machine,
        capacity=caps,
        token=_read_token(token_file),
        workdir=workdir,
        poll=poll,
        emulation=emulation,
    )


def _needs_logged_plugins(e: InvalidInput, db: str, given: tuple[str, ...]) -> None:
    """An unknown scheduler of an existing log made with plugins not given now: say which
    (the log's config record names them)."""
    from dmlsched.errors import DmlschedError
    from dmlsched.service.store import open_store

    if e.field != "scheduler" or ("://" not in db and not Path(db).is_file()):
        return
    try:
        store = open_store(db)
    except (DmlschedError, OSError):
        return  # the store's own error comes when the service opens it
    try:
        first = next(iter(store.records(limit=1)), None)
    finally:
        store.close()
    logged = first.body.get("plugins", []) if first and first.kind == "config" else []
    missing = [p for p in logged if p not in given]
    if missing:
        flags = " ".join(f"--plugin {p}" for p in missing)
        raise InvalidInput(
            "plugin", None, f"{flags}: the log in {db} was made with its schedulers"
        ) from None


def _params(items: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.isidentifier():
            raise InvalidInput("param", item, "KEY=VALUE")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _floats(text: str, field: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise InvalidInput(field, text, "comma-separated numbers") from None
    if len(vals) != 4 or any(not v >= 0 for v in vals):
        raise InvalidInput(field, text, "4 numbers >= 0: gpu,cpu,mem,storage")
    return vals


def k8s_export(
    out: Annotated[Path, typer.Option(help="Folder for the manifests.")],
    server: Annotated[str | None, typer.Option(help="A running service's URL.")] = None,
    state: Annotated[Path | None, typer.Option(help="Or a saved GET /v1/state JSON file.")] = None,
    namespace: Annotated[str, typer.Option()] = "default",
    image: Annotated[str, typer.Option(help="Container image of the training job.")] = (
        "dmlsched/trainer:latest"
    ),
) -> None:
    """Write the current allocation as TFJob (kubeflow.org/v1) and Volcano Job manifests."""
    from dmlsched.service.k8s import export_state

    if (server is None) == (state is None):
        raise InvalidInput("server", server, "exactly one of --server URL or --state FILE")
    if server is not None:
        import httpx

        try:
            snap = httpx.get(server.rstrip("/") + "/v1/state", params={"jobs": 10000}).json()
        except httpx.HTTPError as e:
            raise InvalidInput("server", server, f"a reachable dmlsched service ({e})") from None
    else:
        assert state is not None
        try:
            snap = json.loads(state.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise InvalidInput("state", str(state), f"a JSON file ({e})") from None
    paths = export_state(snap, out, namespace=namespace, image=image)
    typer.echo(f"wrote {len(paths)} manifests to {out}")


def mount(app: typer.Typer) -> None:
    """Add ``serve``, ``agent`` and ``k8s export`` to the main CLI."""
    app.command()(serve)
    app.command()(agent)
    k8s = typer.Typer(help="Kubernetes manifests from the live allocation.", no_args_is_help=True)
    k8s.command("export")(k8s_export)
    app.add_typer(k8s, name="k8s")
