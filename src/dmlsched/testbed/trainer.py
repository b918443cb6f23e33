"""One PS or worker process of a training job, from its command line and environment.

The entry point of the trainer image (``deploy/Dockerfile``) and of every Slurm
job step (:mod:`dmlsched.service.executors.slurm`): it builds the
:class:`~dmlsched.testbed.training.TaskConfig` the testbed's agents build, then
runs the testbed's own :func:`~dmlsched.testbed.training.ps_main` or
:func:`~dmlsched.testbed.training.worker_main`.  Nothing here trains.

::

    python -m dmlsched.testbed.trainer --role ps|worker --job ID --job-dir DIR \\
        --ps S --workers W [--index K | --index-base B] [--inc N] \\
        [--ps-addrs HOST:PORT,... | --ps-addrs tf-config] [--port P] \\
        [--ps-machines 0,1 --worker-machines 0,0,1 --hosts ADDR,ADDR] \\
        [--target WORK --mode sync|async --batch F --hidden H --lr LR --seed S] \\
        [--resume auto|none|DIR]

**Which process am I.**  ``--index K`` is the process's index among the job's
PSs (or workers).  Without it the index is ``--index-base`` plus the first of:
``TF_CONFIG``'s ``task.index`` (Kubeflow's TFJob operator), ``VK_TASK_INDEX``
(Volcano's ``env`` plugin: the pod's index within its task), ``SLURM_PROCID``
(the task's rank within its Slurm job step).  A TFJob's ``task.type`` must
agree with ``--role``.

**Where are the PSs.**  ``--ps-addrs`` lists every PS's ``host:port`` (a
Volcano Job's ``svc`` plugin names pods ``<job>-<task>-<i>.<job>``);
``--ps-addrs tf-config`` takes ``TF_CONFIG``'s ``cluster.ps``; PSs then
listen on ``--port``.  Without it the job's processes share ``--job-dir``
(a Slurm cluster's shared file system): PS K listens on any port and
advertises it in ``inc-N/ps-K.addr``, and workers reach it at
``--hosts[--ps-machines[K]]`` — the testbed's own protocol.

**Resuming.**  ``--resume auto`` (default) starts from the newest complete
checkpoint of this or an earlier incarnation in ``--job-dir`` (complete: one
shard per PS that incarnation advertised, :func:`latest_checkpoint`); ``none``
starts afresh; a folder names the checkpoint.  ``--checkpoint-every N`` (sync
mode) makes every PS also save its shard every N steps, so a run that dies
(a machine lost) costs at most N steps.

**Stopping.**  A PS stops on SIGTERM after its current step and checkpoints
(the testbed's rule); a worker ignores SIGTERM and leaves when its PSs say
STOP or go away, so a SIGTERM sent to every process at once — ``scancel -s
TERM`` of a Slurm job, the deletion of a job's pods — stops a sync job at a
step boundary with consistent shards.

Each process writes ``inc-N/<role>-<K>.host`` (the host name it ran on) next
to the testbed's status files, so a placement can be checked from the
processes themselves.  Bad arguments: exit 2 with one line; Ctrl-C: 130.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from dmlsched.errors import InvalidInput
from dmlsched.testbed.training import TaskConfig

__all__ = ["build_config", "latest_checkpoint", "main", "parse_args"]

INDEX_ENV = ("VK_TASK_INDEX", "SLURM_PROCID")  # after TF_CONFIG, in this order


def latest_checkpoint(job_dir: Path, upto: int) -> str:
    """The newest complete checkpoint of an incarnation ``<= upto`` ('' if none).

    Complete = one ``shard-K.json`` per PS the incarnation started (its ``ps-K.addr``
    files), the testbed's own rule (:meth:`dmlsched.testbed.runtime.Job.start`).  The
    incarnation itself counts: a pod restarted in place (Kubernetes ``OnFailure``, a
    job scaled to zero and back) resumes from what its incarnation saved.  Within an
    incarnation the checkpoint written when it stopped (``ckpt``) comes first, then
    its periodic ones (``ckpt-<step>``), newest first.
    """
    incs = []
    for d in job_dir.glob("inc-*"):
        if d.name[4:].isdigit() and int(d.name[4:]) <= upto:
            incs.append((int(d.name[4:]), d))
    for _, d in sorted(incs, reverse=True):
        n_ps = len(list(d.glob("ps-*.addr")))
        periodic = [c for c in d.glob("ckpt-*") if c.name[5:].isdigit()]
        for ck in [d / "ckpt", *sorted(periodic, key=lambda c: -int(c.name[5:]))]:
            if n_ps and len(list(ck.glob("shard-*.json"))) == n_ps:
                return str(ck)
    return ""


def _ints(text: str, field: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(x) for x in text.split(",") if x != "")
    except ValueError:
        raise InvalidInput(field, text, "comma-separated integers") from None
    if any(v < 0 for v in vals):
        raise InvalidInput(field, text, "integers >= 0")
    return vals


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="dmlsched-trainer", description="One PS or worker of a dmlsched training job."
    )
    ap.add_argument("--role", required=True, choices=("ps", "worker"))
    ap.add_argument("--job", required=True, type=int)
    ap.add_argument("--job-dir", required=True, type=Path)
    ap.add_argument("--ps", required=True, type=int, help="the job's number of PSs")
    ap.add_argument("--workers", required=True, type=int, help="the job's number of workers")
    ap.add_argument("--inc", type=int, default=0, help="incarnation (a new one per placement)")
    ap.add_argument("--index", type=int, default=None)
    ap.add_argument("--index-base", type=int, default=0)
    ap.add_argument("--ps-addrs", default="", help="HOST:PORT,... of every PS, or tf-config")
    ap.add_argument("--port", type=int, default=0, help="the port a PS listens on (0: any)")
    ap.add_argument("--ps-machines", default="")
    ap.add_argument("--worker-machines", default="")
    ap.add_argument("--hosts", default="", help="address of each machine, by index")
    ap.add_argument("--bind", default="0.0.0.0")
    ap.add_argument("--target", type=float, default=1437.0 * 2, help="total work (samples)")
    ap.add_argument("--mode", choices=("sync", "async"), default="sync")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--resume", default="auto")
    ap.add_argument(
        "--checkpoint-every", type=int, default=0, help="sync: save shards every N steps (0: off)"
    )
    try:
        return ap.parse_args(argv)
    except SystemExit as e:  # argparse printed its one line (exit 2) or the help (0)
        raise SystemExit(e.code) from None


def _index(args: argparse.Namespace, env: Mapping[str, str], tf: dict | None) -> int:
    if args.index is not None:
        return int(args.index)
    if tf is not None:
        task = tf.get("task") or {}
        kind = str(task.get("type", "")).lower()
        if kind != args.role:
            raise InvalidInput("TF_CONFIG.task.type", kind, args.role)
        return args.index_base + int(task.get("index", 0))
    for name in INDEX_ENV:
        if env.get(name, "").isdigit():
            return args.index_base + int(env[name])
    raise InvalidInput("index", None, "--index, TF_CONFIG, $VK_TASK_INDEX or $SLURM_PROCID")


def build_config(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> TaskConfig:
    """The process's :class:`TaskConfig` (module docstring); raises :class:`InvalidInput`."""
    env = os.environ if env is None else env
    if args.ps < 1:
        raise InvalidInput("ps", args.ps, ">= 1")
    if args.workers < 1:
        raise InvalidInput("workers", args.workers, ">= 1")
    tf = None
    if env.get("TF_CONFIG"):
        try:
            tf = json.loads(env["TF_CONFIG"])
        except json.JSONDecodeError:
            raise InvalidInput("TF_CONFIG", env["TF_CONFIG"][:60], "JSON") from None
    index = _index(args, env, tf)
    count = args.ps if args.role == "ps" else args.workers
    if not 0 <= index < count:
        raise InvalidInput("index", index, f"0..{count - 1} ({count} {args.role} processes)")
    extra: dict[str, object] = {}
    if args.port:
        extra["port"] = int(args.port)
    if args.checkpoint_every < 0:
        raise InvalidInput("checkpoint-every", args.checkpoint_every, ">= 0 steps")
    if args.checkpoint_every:
        extra["ckpt_every"] = int(args.checkpoint_every)
    if args.ps_addrs == "tf-config":
        if tf is None:
            raise InvalidInput("ps-addrs", "tf-config", "a TF_CONFIG environment variable")
        addrs = list((tf.get("cluster") or {}).get("ps") or [])
    else:
        addrs = [a for a in args.ps_addrs.split(",") if a]
    if addrs:
        if len(addrs) != args.ps:
            raise InvalidInput("ps-addrs", len(addrs), f"{args.ps} addresses (--ps)")
        for a in addrs:
            host, _, port = a.rpartition(":")
            if not host or not port.isdigit():
                raise InvalidInput("ps-addrs", a, "HOST:PORT")
        extra["ps_addrs"] = addrs
    ps_m = _ints(args.ps_machines, "ps-machines") or tuple(range(args.ps))
    w_m = _ints(args.worker_machines, "worker-machines") or tuple(
        range(args.ps, args.ps + args.workers)
    )
    if len(ps_m) != args.ps:
        raise InvalidInput("ps-machines", args.ps_machines, f"{args.ps} machine indices")
    if len(w_m) != args.workers:
        raise InvalidInput("worker-machines", args.worker_machines, f"{args.workers} indices")
    hosts = tuple(h for h in args.hosts.split(",") if h)
    if not addrs:
        if not hosts:
            raise InvalidInput("hosts", "", "machine addresses (or --ps-addrs)")
        if max(ps_m) >= len(hosts):
            raise InvalidInput("hosts", args.hosts, f"an address for machine {max(ps_m)}")
    resume = args.resume
    if resume == "auto":
        resume = latest_checkpoint(args.job_dir, args.inc)
    elif resume == "none":
        resume = ""
    elif not Path(resume).is_dir():
        raise InvalidInput("resume", resume, "auto | none | a checkpoint folder")
    if not args.target > 0:
        raise InvalidInput("target", args.target, "> 0")
    return TaskConfig(
        job_dir=str(args.job_dir),
        job=args.job,
        inc=args.inc,
        role=args.role,
        index=index,
        mode=args.mode,
        hidden=args.hidden,
        lr=args.lr,
        batch=args.batch,
        seed=args.seed,
        target=float(args.target),
        ps_machines=ps_m,
        worker_machines=w_m,
        hosts=hosts or ("127.0.0.1",) * (max((*ps_m, *w_m)) + 1),
        resume=resume,
        bind=args.bind,
        extra=extra,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        cfg = build_config(args)
    except InvalidInput as e:
        print(f"dmlsched-trainer: {e}", file=sys.stderr)
        return 2
    import torch

    from dmlsched.testbed.training import load_digits_split, ps_main, worker_main

    torch.set_num_threads(1)
    if cfg.role == "worker":
        # a worker leaves when its PSs say STOP (or go away): a SIGTERM sent to a whole
        # Slurm job or to every pod must not cut a sync step in half (PSs would then
        # checkpoint shards of different steps)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    cfg.inc_dir.mkdir(parents=True, exist_ok=True)
    (cfg.inc_dir / f"{cfg.role}-{cfg.index}.host").write_text(socket.gethostname() + "\n")
    data = load_digits_split(args.data_seed)
    (ps_main if cfg.role == "ps" else worker_main)(cfg, data)
    return 0


def _entry() -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = main()
    except KeyboardInterrupt:
        print("dmlsched-trainer: interrupted", file=sys.stderr)
        code = 130
    sys.exit(code)


if __name__ == "__main__":
    _entry()
