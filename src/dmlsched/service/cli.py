"""``dmlsched serve``, ``dmlsched agent`` and ``dmlsched k8s export`` (mounted by cli.py)."""

from __future__ import annotations

import contextlib
import json
import math
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dmlsched.errors import Interrupted, InvalidInput
from dmlsched.schedulers.plugins import PLUGIN_HELP
from dmlsched.service.auth import read_token_file

if TYPE_CHECKING:
    from dmlsched.service.executors.base import Executor
    from dmlsched.service.executors.driver import ExecutorDriver
    from dmlsched.service.slurm_cluster import ClusterInfo

__all__ = ["MAX_SLOT_SECONDS", "mount"]

# the clock waits a slot at a time, and the platform's timed waits end somewhere: a week
# is longer than any slot a scheduler is run with, and far inside that limit
MAX_SLOT_SECONDS = 7 * 24 * 3600

#: the signals that stop ``serve`` gracefully (uvicorn's own set on POSIX)
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

# as dmlsched.cli_options.Plugins (this command sits below the cli package)
Plugins = Annotated[list[str] | None, typer.Option("--plugin", help=PLUGIN_HELP)]


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
    token_auth_file: Annotated[
        Path | None,
        typer.Option(
            help="Identities: a CSV token,name,role[,machine] (role admin|user|agent), mode 600."
        ),
    ] = None,
    insecure_local: Annotated[
        bool,
        typer.Option(
            "--insecure-local",
            help="No identities: every request is an admin; listens on 127.0.0.1 only.",
        ),
    ] = False,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(help="A Host header to accept (repeatable); default: this host's names."),
    ] = None,
    rate_limit: Annotated[
        float, typer.Option(help="Requests per second per identity (bursts of 2 s); 0: none.")
    ] = 50.0,
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
    db_retry_seconds: Annotated[
        float,
        typer.Option(help="PostgreSQL: reconnect this long after losing it, then exit 1."),
    ] = 30.0,
    plugin: Plugins = None,
    executor: Annotated[
        str,
        typer.Option(
            help="local: this host runs the jobs of the --machine machines (without any: "
            "`dmlsched agent`s do); slurm: a Slurm cluster does."
        ),
    ] = "local",
    machine: Annotated[
        list[str] | None,
        typer.Option(
            help="--executor local: NAME=gpu,cpu,mem,storage, a machine this host emulates "
            "and runs jobs on (repeatable)."
        ),
    ] = None,
    slurm_dir: Annotated[
        Path, typer.Option(help="--executor slurm: the cluster's folder (dmlsched slurm start).")
    ] = Path("/tmp/dmlsched-slurm"),
    workdir: Annotated[
        Path, typer.Option(help="The executor's jobs' folder (slurm: shared by every node).")
    ] = Path("executor-work"),
    executor_token_file: Annotated[
        Path | None,
        typer.Option(
            help="The executor's machines' agent tokens (token,name,agent,machine), mode 600."
        ),
    ] = None,
) -> None:
    """Run the live scheduler service (HTTP/JSON API, dashboard at /, metrics at /metrics)."""
    import uvicorn

    from dmlsched.model.cluster import RESOURCES, Cluster
    from dmlsched.rng import make_rng
    from dmlsched.schedulers.plugins import load_plugins
    from dmlsched.schedulers.protocols import make_scheduler
    from dmlsched.service.app import Service, create_app
    from dmlsched.service.auth import read_token_auth_file
    from dmlsched.service.core import Core, ServiceConfig
    from dmlsched.service.store import StoreUnavailable, open_store

    if manual_clock == (slot_seconds is not None):
        raise InvalidInput("slot-seconds", slot_seconds, "a length > 0 or --manual-clock (one)")
    if slot_seconds is not None and not 0 < slot_seconds <= MAX_SLOT_SECONDS:
        raise InvalidInput("slot-seconds", slot_seconds, f"> 0 and ≤ {MAX_SLOT_SECONDS} (a week)")
    if not 0 < agent_timeout < math.inf:
        raise InvalidInput("agent-timeout", agent_timeout, "a number of seconds > 0")
    if not 0 <= port <= 65535:
        raise InvalidInput("port", port, "0..65535")
    plugins = tuple(p.where for p in load_plugins(plugin))  # recorded in the log's config
    params = _params(param or [])
    config = ServiceConfig(  # checks seed, window and progress
        scheduler=scheduler,
        seed=seed,
        window=window,
        progress=progress,
        params=params,
        plugins=plugins,
    )
    try:  # bad names and parameters: exit 2 before touching the db
        sched = make_scheduler("cluster", scheduler, **params)
        # a value of the right type but out of its range is the scheduler's own check, at
        # reset: made here on one machine, not at the first slot of a service already up
        sched.reset(Cluster.uniform(1, (1.0,) * len(RESOURCES)), window, make_rng(seed))
    except InvalidInput as e:
        _needs_logged_plugins(e, db, plugins)
        raise
    if insecure_local:
        if token_auth_file is not None:
            raise InvalidInput("insecure-local", True, "either --insecure-local or an auth file")
        if host not in _LOOPBACK:
            raise InvalidInput("host", host, "127.0.0.1 with --insecure-local (no identities)")
        tokens = None
    elif token_auth_file is None:
        raise InvalidInput(
            "token-auth-file",
            None,
            "a file of identities (token,name,role[,machine]), or --insecure-local",
        )
    else:
        tokens = read_token_auth_file(token_auth_file)
    if not rate_limit >= 0:
        raise InvalidInput("rate-limit", rate_limit, ">= 0 (0: no limit)")
    hosts = list(allowed_host) if allowed_host else _default_hosts(host)
    if executor not in ("local", "slurm"):
        raise InvalidInput("executor", executor, "local | slurm")
    machines = _machines(machine or [])
    if executor == "slurm" and machines:
        raise InvalidInput(
            "machine",
            (machine or [""])[0],
            "none with --executor slurm (its nodes are the machines)",
        )
    embedded = executor == "slurm" or bool(machines)  # else `dmlsched agent`s run the jobs
    if embedded and progress != "measured":
        raise InvalidInput("progress", progress, f"measured with --executor {executor}")
    cluster = _slurm_cluster(slurm_dir) if executor == "slurm" else None
    names = list(cluster.nodes) if cluster is not None else list(machines)
    agent_tokens: dict[str, str] = {}
    if embedded:
        from dmlsched.service.executors.driver import read_agent_tokens

        if executor_token_file is not None:
            agent_tokens = read_agent_tokens(executor_token_file)
        elif tokens is None:  # --insecure-local: every request is an admin's
            agent_tokens = dict.fromkeys(names, "insecure-local")
        else:
            raise InvalidInput(
                "executor-token-file",
                None,
                f"each machine's agent token with --executor {executor}",
            )
    if not db_retry_seconds >= 0:
        raise InvalidInput("db-retry-seconds", db_retry_seconds, ">= 0")
    store = open_store(db, retry_seconds=db_retry_seconds)
    core = Core(config, store, agent_timeout=agent_timeout).open()
    fatal: list[str] = []

    def on_fatal(why: str) -> None:  # the store is gone: stop, exit non-zero (below)
        fatal.append(why)
        server.should_exit = True

    service = Service(
        core,
        tokens=tokens,
        rate_limit=rate_limit or None,
        slot_seconds=slot_seconds,
        on_fatal=on_fatal,
    )
    app = create_app(service, allowed_hosts=hosts)
    who = (
        "--insecure-local: NO authentication, every local process is an admin"
        if tokens is None
        else f"{len(tokens)} identities from {token_auth_file}"
    )
    typer.echo(
        f"dmlsched serve: {scheduler} on http://{host}:{port}/ (slot {core.slot}, "
        f"log seq {core.seq}, {store.url if '://' not in store.url else 'postgresql'}); {who}",
        err=True,
    )

    class _Server(uvicorn.Server):
        interrupted = False

        def handle_exit(self, sig: int, frame: object) -> None:
            self.interrupted = self.interrupted or sig == signal.SIGINT
            super().handle_exit(sig, frame)  # type: ignore[arg-type]  # uvicorn types frame as FrameType | None; passed through

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            # uvicorn's own raises a caught SIGTERM again once the server has shut down,
            # which would end this process before the executor stops (checkpoints) its runs
            # and the store closes (below); SIGTERM then ends it with status 0, SIGINT 130
            old = {sig: signal.signal(sig, self.handle_exit) for sig in _STOP_SIGNALS}
            try:
                yield
            finally:
                for sig, handler in old.items():
                    signal.signal(sig, handler)

    server = _Server(
        uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    )
    driver = None
    if embedded:
        run: Executor
        if cluster is not None:
            from dmlsched.service.executors.slurm import SlurmExecutor

            run = SlurmExecutor(cluster.client(), workdir.resolve(), tag=f"dmls{port}")
            where = f"{len(names)} nodes of {slurm_dir}"
        else:
            from dmlsched.service.executors.local import LocalExecutor

            run = LocalExecutor(machines, workdir.resolve())
            where = f"machines {', '.join(names)} on this host"
        driver = _executor_driver(run, f"http://{host}:{port}", agent_tokens)
        typer.echo(
            f"dmlsched serve: executor {executor}, {where}, jobs in {workdir.resolve()}",
            err=True,
        )
    try:
        server.run()  # until SIGINT/SIGTERM or a fatal store failure, then a graceful shutdown
    finally:
        if driver is not None:
            driver.stop()  # every run stopped, checkpointed
        service.core.store.close()
    if fatal:  # exit 1 with one line: a supervisor restarts the service
        raise StoreUnavailable(fatal[0])
    if server.interrupted:  # Ctrl-C: exit 130 (dmlsched.cli.main) with one line
        raise Interrupted("interrupted; every acknowledged request is kept in the store")


def _slurm_cluster(folder: Path) -> ClusterInfo:
    from dmlsched.service.slurm_cluster import ClusterInfo

    path = folder / "cluster.json"
    try:
        info = ClusterInfo.load(path)
    except (OSError, ValueError, TypeError) as e:
        raise InvalidInput(
            "slurm-dir", str(folder), f"a running cluster (make slurm-cluster): {e}"
        ) from None
    if not info.client().ping():
        raise InvalidInput("slurm-dir", str(folder), "a cluster whose slurmctld answers")
    return info


def _executor_driver(executor: Executor, url: str, tokens: dict[str, str]) -> ExecutorDriver:
    """``executor`` behind the agent protocol, talking to this service as each of its
    machines' agent."""
    from dmlsched.service.executors.driver import ExecutorDriver

    executor.start()
    driver = ExecutorDriver(
        url.replace("0.0.0.0", "127.0.0.1"),
        executor,
        tokens,
        log=lambda line: typer.echo(f"dmlsched serve: executor: {line}", err=True),
    )
    driver.start()
    return driver


def _machines(items: list[str]) -> dict[str, tuple[float, ...]]:
    """``--machine NAME=gpu,cpu,mem,storage`` options: name -> capacity, each name once."""
    out: dict[str, tuple[float, ...]] = {}
    for item in items:
        name, eq, caps = item.partition("=")
        name = name.strip()
        if not eq or not name:
            raise InvalidInput("machine", item, "NAME=gpu,cpu,mem,storage")
        if name in out:
            raise InvalidInput("machine", name, "each machine once")
        out[name] = _floats(caps, "machine")
    return out


def agent(
    server: Annotated[str, typer.Option(help="The service's URL, e.g. http://127.0.0.1:8080")],
    machine: Annotated[str, typer.Option(help="This machine's name.")],
    capacity: Annotated[
        str | None,
        typer.Option(
            help="gpu,cpu,mem,storage this machine offers (at most what an admin declared; "
            "default: the declaration)."
        ),
    ] = None,
    token_file: Annotated[Path | None, typer.Option()] = None,
    workdir: Annotated[Path, typer.Option(help="Where the testbed processes run.")] = Path(
        "agent-work"
    ),
    poll: Annotated[float, typer.Option(help="Seconds between heartbeats.")] = 0.5,
    emulation: Annotated[str, typer.Option(help="Testbed emulation mode.")] = "local",
) -> None:
    """One per machine: register, pull this machine's allocation, run it on the testbed."""
    from dmlsched.service.agent import run_agent

    caps = None if capacity is None else _floats(capacity, "capacity")
    run_agent(
        server=server,
        machine=machine,
        capacity=caps,
        token=read_token_file(token_file),
        workdir=workdir,
        poll=poll,
        emulation=emulation,
    )


_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _default_hosts(host: str) -> list[str]:
    """Host headers accepted unless --allowed-host says otherwise: the loopback names,
    and for a service bound to another address, that address and this host's names."""
    import socket

    names = ["127.0.0.1", "localhost", "[::1]"]
    if host not in _LOOPBACK:
        names += [host, socket.gethostname(), socket.getfqdn()]
        if host in ("0.0.0.0", "::"):
            with contextlib.suppress(OSError):
                names += socket.gethostbyname_ex(socket.gethostname())[2]
    return list(dict.fromkeys(n for n in names if n not in ("0.0.0.0", "::")))


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
    image: Annotated[str, typer.Option(help="The trainer image (deploy/Dockerfile).")] = (
        "dmlsched/trainer:0.1.0"
    ),
    token_file: Annotated[
        Path | None, typer.Option(help="Your bearer token (a file, mode 600) for --server.")
    ] = None,
    claim: Annotated[
        str, typer.Option(help="ReadWriteMany PersistentVolumeClaim for checkpoints.")
    ] = "dmlsched-checkpoints",
    queue: Annotated[str, typer.Option(help="Volcano queue.")] = "default",
) -> None:
    """Write the current allocation as TFJob (kubeflow.org/v1) and Volcano Job manifests."""
    from dmlsched.service.k8s import ExportOptions, export_state

    if (server is None) == (state is None):
        raise InvalidInput("server", server, "exactly one of --server URL or --state FILE")
    opts = ExportOptions(image=image, namespace=namespace, claim=claim, queue=queue)
    if server is not None:
        import httpx

        try:
            token = read_token_file(token_file)
            r = httpx.get(
                server.rstrip("/") + "/v1/state",
                params={"jobs": 10000},
                headers={"Authorization": f"Bearer {token}"} if token else {},
            )
        except httpx.HTTPError as e:
            raise InvalidInput("server", server, f"a reachable dmlsched service ({e})") from None
        if r.status_code != 200:
            detail = (
                r.json().get("detail", r.text)
                if r.headers.get("content-type", "").startswith("application/json")
                else r.text
            )
            raise InvalidInput(
                "token-file",
                str(token_file),
                f"a token the service accepts ({r.status_code}: {detail})",
            )
        snap = r.json()
    else:
        assert state is not None
        try:
            snap = json.loads(state.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise InvalidInput("state", str(state), f"a JSON file ({e})") from None
    paths = export_state(snap, out, opts)
    typer.echo(f"wrote {len(paths)} manifests to {out}")


def mount(app: typer.Typer) -> None:
    """Add ``serve``, ``agent`` and ``k8s export`` to the main CLI."""
    app.command()(serve)
    app.command()(agent)
    k8s = typer.Typer(help="Kubernetes manifests from the live allocation.", no_args_is_help=True)
    k8s.command("export")(k8s_export)
    app.add_typer(k8s, name="k8s")
    from dmlsched.service import ops_cli

    ops_cli.mount(app, k8s)
