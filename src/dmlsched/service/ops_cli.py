"""``dmlsched slurm start|stop|exec`` and ``dmlsched k8s apply|watch`` (mounted by cli.py).

``start`` launches a detached owner process (``python -m
dmlsched.service.slurm_cluster``) that starts the cluster, writes
``DIR/cluster.json`` and stops everything on SIGTERM; ``stop`` sends it and
waits.  ``exec`` runs one of Slurm's client commands against the cluster
(in its controller's namespace, with its ``SLURM_CONF``).

``k8s apply`` makes a Kubernetes cluster say the service's current decision
once; ``k8s watch`` keeps it so (:mod:`dmlsched.service.k8s_sync`).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dmlsched.errors import InvalidInput

if TYPE_CHECKING:
    from collections.abc import Callable

    from dmlsched.service.k8s import ExportOptions
    from dmlsched.service.slurm_cluster import ClusterInfo

__all__ = ["DEFAULT_SLURM_DIR", "mount"]

DEFAULT_SLURM_DIR = Path("/tmp/dmlsched-slurm")
_START_TIMEOUT_S = 120.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _info(folder: Path) -> ClusterInfo | None:
    from dmlsched.service.slurm_cluster import ClusterInfo

    path = folder / "cluster.json"
    if not path.exists():
        return None
    info = ClusterInfo.load(path)
    return info if _alive(info.owner_pid) else None


def slurm_start(
    folder: Annotated[Path, typer.Option("--dir", help="The cluster's folder.")] = (
        DEFAULT_SLURM_DIR
    ),
    machines: Annotated[int, typer.Option(help="Nodes (one slurmd and netns each).")] = 3,
    capacity: Annotated[str, typer.Option(help="gpu,cpu,mem,storage per node.")] = "1,4,8,8",
    ext_mbit: Annotated[float, typer.Option(help="External link cap per node (0: none).")] = 10.0,
) -> None:
    """Start munge, MariaDB, slurmdbd, slurmctld and one slurmd per node (namespace)."""
    from dmlsched.service.slurm_cluster import slurm_available

    why = slurm_available()
    if why:
        raise InvalidInput("slurm", "start", why)
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    if (info := _info(folder)) is not None:
        typer.echo(f"dmlsched slurm: already running in {folder} (nodes {', '.join(info.nodes)})")
        return
    from dmlsched.testbed.state import cleanup

    cleanup()  # what killed clusters and testbed runs left behind
    for stale in ("cluster.json", "failed"):
        (folder / stale).unlink(missing_ok=True)
    log = (folder / "owner.log").open("w")
    argv = [sys.executable, "-m", "dmlsched.service.slurm_cluster", "--dir", str(folder)]
    argv += ["--machines", str(machines), "--capacity", capacity, "--ext-mbit", str(ext_mbit)]
    owner = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    log.close()
    deadline = time.monotonic() + _START_TIMEOUT_S
    while (info := _info(folder)) is None:
        failed = folder / "failed"
        if failed.exists() or owner.poll() is not None:
            why = failed.read_text().strip() if failed.exists() else str(folder / "owner.log")
            raise InvalidInput("slurm", "start", f"a cluster that starts ({why})")
        if time.monotonic() > deadline:
            owner.terminate()
            raise InvalidInput("slurm", "start", f"a cluster up within {_START_TIMEOUT_S:g} s")
        time.sleep(0.2)
    typer.echo(
        f"dmlsched slurm: {len(info.nodes)} nodes ({', '.join(info.nodes)}) at "
        f"{', '.join(info.addrs)}, controller {info.controller} in namespace {info.namespace}\n"
        f"  dmlsched slurm exec -- sinfo      (or: SLURM_CONF={info.conf} "
        f"ip netns exec {info.namespace} sinfo)\n"
        f"  dmlsched serve --executor slurm --slurm-dir {folder} ...\n"
        f"  make slurm-cluster-stop           (or: dmlsched slurm stop --dir {folder})"
    )


def slurm_stop(
    folder: Annotated[Path, typer.Option("--dir", help="The cluster's folder.")] = (
        DEFAULT_SLURM_DIR
    ),
) -> None:
    """Stop the cluster started with ``dmlsched slurm start`` (everything it created goes)."""
    from dmlsched.service.slurm_cluster import ClusterInfo

    path = folder / "cluster.json"
    if not path.exists():
        typer.echo(f"dmlsched slurm: no cluster in {folder}")
        return
    info = ClusterInfo.load(path)
    if _alive(info.owner_pid):
        os.kill(info.owner_pid, signal.SIGTERM)
        deadline = time.monotonic() + 60.0
        while _alive(info.owner_pid) and time.monotonic() < deadline:
            time.sleep(0.2)
    if _alive(info.owner_pid):
        raise InvalidInput("slurm", "stop", f"owner {info.owner_pid} gone within 60 s")
    from dmlsched.testbed.state import cleanup

    cleanup(run_id=info.run_id, force=True)  # after a SIGKILLed owner: its leftovers
    with contextlib.suppress(OSError):
        path.unlink()
    typer.echo(f"dmlsched slurm: stopped ({len(info.nodes)} nodes, run {info.run_id})")


def slurm_exec(
    command: Annotated[list[str], typer.Argument(help="A Slurm client command and arguments.")],
    folder: Annotated[Path, typer.Option("--dir", help="The cluster's folder.")] = (
        DEFAULT_SLURM_DIR
    ),
) -> None:
    """Run a Slurm client command (sinfo, squeue, sacct, ...) against the cluster."""
    info = _info(folder)
    if info is None:
        raise InvalidInput("dir", str(folder), "a running cluster (dmlsched slurm start)")
    client = info.client()
    r = subprocess.run(client.argv(*command), env=client.env, check=False)
    if r.returncode:
        raise typer.Exit(r.returncode)


def _kube_api(kubeconfig: Path | None, context: str | None) -> Any:
    """A ``CustomObjectsApi`` from a kubeconfig (or the pod's service account)."""
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    try:
        if (
            kubeconfig is not None
            or context is not None
            or Path("~/.kube/config").expanduser().exists()
        ):
            api_client = config.new_client_from_config(
                config_file=str(kubeconfig) if kubeconfig else None, context=context
            )
        else:
            config.load_incluster_config()
            api_client = client.ApiClient()
    except (ConfigException, OSError) as e:
        raise InvalidInput(
            "kubeconfig", str(kubeconfig or "~/.kube/config"), f"a usable config ({e})"
        ) from None
    return client.CustomObjectsApi(api_client)


def _fetch_state(server: str, token_file: Path | None) -> Callable[[], dict[str, Any]]:
    import httpx

    from dmlsched.service.auth import read_token_file

    token = read_token_file(token_file)
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    def fetch() -> dict[str, Any]:
        try:
            r = httpx.get(
                server.rstrip("/") + "/v1/state",
                params={"jobs": 10000},
                headers=headers,
                timeout=30.0,
            )
            r.raise_for_status()
            return dict(r.json())
        except (httpx.HTTPError, ValueError) as e:
            raise InvalidInput("server", server, f"a reachable dmlsched service ({e})") from None

    return fetch


_KIND = Annotated[str, typer.Option(help="volcano (exact placement) or tfjob.")]
_SERVER = Annotated[str, typer.Option(help="The service's URL, e.g. http://127.0.0.1:8080")]
_NS = Annotated[str, typer.Option(help="Kubernetes namespace.")]
_IMAGE = Annotated[str, typer.Option(help="The trainer image (deploy/Dockerfile).")]
_CLAIM = Annotated[str, typer.Option(help="ReadWriteMany PersistentVolumeClaim for checkpoints.")]
_QUEUE = Annotated[str, typer.Option(help="Volcano queue.")]
_KUBECONFIG = Annotated[Path | None, typer.Option(help="kubeconfig file (default ~/.kube/config).")]
_CONTEXT = Annotated[str | None, typer.Option(help="kubeconfig context.")]
_TOKEN = Annotated[
    Path | None, typer.Option(help="Your bearer token for --server (a file, mode 600).")
]


@dataclass(frozen=True)
class K8sTarget:
    """What ``k8s apply`` and ``k8s watch`` share: the service whose decisions they make so,
    and the cluster and objects they write (its fields are their first options)."""

    server: _SERVER
    kind: _KIND = "volcano"
    namespace: _NS = "default"
    image: _IMAGE = "dmlsched/trainer:0.1.0"
    claim: _CLAIM = "dmlsched-checkpoints"
    queue: _QUEUE = "default"
    kubeconfig: _KUBECONFIG = None
    context: _CONTEXT = None
    token_file: _TOKEN = None

    def export_options(self) -> ExportOptions:
        from dmlsched.service.k8s import ExportOptions

        return ExportOptions(
            image=self.image, namespace=self.namespace, claim=self.claim, queue=self.queue
        )

    def api(self) -> Any:
        return _kube_api(self.kubeconfig, self.context)

    def fetch_state(self) -> Callable[[], dict[str, Any]]:
        return _fetch_state(self.server, self.token_file)


def _k8s_command(command: Callable[..., None]) -> Callable[..., None]:
    """``command(target, **its own options)`` as a typer command whose options are
    :class:`K8sTarget`'s fields, then its own."""
    shared = inspect.signature(K8sTarget, eval_str=True).parameters
    own = list(inspect.signature(command, eval_str=True).parameters.values())[1:]
    params = [*shared.values(), *own]

    @functools.wraps(command)
    def run(**options: Any) -> None:
        command(K8sTarget(**{k: options.pop(k) for k in shared}), **options)

    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]  # typer reads it
    run.__annotations__ = {p.name: p.annotation for p in params}
    return run


@_k8s_command
def k8s_apply(target: K8sTarget) -> None:
    """Make the cluster say the service's decision once: create, scale, delete (idempotent)."""
    from dmlsched.service.k8s_sync import sync

    state = target.fetch_state()()
    _, done = sync(target.api(), state, target.kind, target.export_options())
    for a in done:
        typer.echo(a.line())
    typer.echo(f"dmlsched k8s apply: {len(done)} change(s) in namespace {target.namespace}")


@_k8s_command
def k8s_watch(
    target: K8sTarget,
    interval: Annotated[float, typer.Option(help="Seconds between passes.")] = 5.0,
) -> None:
    """Keep the cluster in step with the service's decisions until Ctrl-C."""
    from dmlsched.service.k8s_sync import watch

    if not interval > 0:
        raise InvalidInput("interval", interval, "> 0")
    opts, api = target.export_options(), target.api()
    typer.echo(
        f"dmlsched k8s watch: {target.server} -> {target.kind} objects in {target.namespace}"
        f" every {interval:g} s"
    )
    watch(
        api,
        target.fetch_state(),
        target.kind,
        opts,
        interval=interval,
        report=lambda a: typer.echo(a.line()),
    )


def whatif(
    job_file: Annotated[Path, typer.Argument(help="A job (POST /v1/jobs body), or a list.")],
    server: _SERVER = "http://127.0.0.1:8080",
    horizon: Annotated[int, typer.Option(help="Slots to look ahead.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print the service's JSON.")] = False,
) -> None:
    """What if these jobs were submitted now? Admission, reason, placement, start, completion."""
    import json

    import httpx

    try:
        doc = json.loads(job_file.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise InvalidInput("job file", str(job_file), f"a JSON job or list of jobs ({e})") from None
    jobs = (
        doc if isinstance(doc, list) else doc.get("jobs", [doc]) if isinstance(doc, dict) else doc
    )
    if not isinstance(jobs, list):
        raise InvalidInput("job file", str(job_file), "a JSON object or list")
    try:
        r = httpx.post(
            server.rstrip("/") + "/v1/simulate",
            params={"horizon": horizon},
            json={"jobs": jobs},
            timeout=60.0,
        )
    except httpx.HTTPError as e:
        raise InvalidInput("server", server, f"a reachable dmlsched service ({e})") from None
    if r.status_code != 200:
        try:
            detail = str(r.json().get("detail"))
        except ValueError:
            detail = r.text.strip()[:200]
        if r.status_code == 422 and detail.startswith("invalid "):
            typer.echo(detail, err=True)  # the service named the field: that is the line
            raise typer.Exit(2)
        raise InvalidInput("server", server, f"an answer (HTTP {r.status_code}: {detail})")
    body = r.json()
    if as_json:
        typer.echo(json.dumps(body, indent=1))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"what if, at slot {body['slot']} ({body['scheduler']}, {body['horizon']} slots)"
    )
    for col in ("job", "decision", "start", "placement", "completion", "utility", "reason"):
        table.add_column(col)
    for p, job in zip(body["jobs"], jobs, strict=True):
        where = p["placement"] or {}
        table.add_row(
            str(job.get("name") or p["index"]),
            p["decision"] + (f" @{p['decided_at']}" if p["decided_at"] is not None else ""),
            "" if p["start"] is None else str(p["start"]),
            "; ".join(f"{m}: {c['workers']}w+{c['ps']}ps" for m, c in where.items()),
            "" if p["completion"] is None else str(p["completion"]),
            "" if p["utility"] is None else f"{p['utility']:.3g}",
            p["reason"],
        )
    Console(width=140).print(table)


def mount(app: typer.Typer, k8s: typer.Typer) -> None:
    """Add ``slurm start|stop|exec``, ``k8s apply|watch`` and ``whatif`` to the main CLI."""
    app.command("whatif")(whatif)
    k8s.command("apply")(k8s_apply)
    k8s.command("watch")(k8s_watch)
    slurm = typer.Typer(help="A local Slurm cluster (one slurmd per netns).", no_args_is_help=True)
    slurm.command("start")(slurm_start)
    slurm.command("stop")(slurm_stop)
    slurm.command("exec", context_settings={"allow_interspersed_args": False})(slurm_exec)
    app.add_typer(slurm, name="slurm")
