"""A real Slurm cluster on this host: one ``slurmd`` per emulated machine, each in its own netns.

:class:`SlurmCluster` starts Debian's ``slurm-wlm`` daemons on the testbed's
``netns`` emulation (:class:`dmlsched.testbed.emulation.Emulation`, the same
machines, addresses and capped links as ``dmlsched testbed run --emulation
netns``)::

    <prefix>-sw   br0 10.77.0.254   munge socket (a file), MariaDB 127.0.0.1:3306,
                                    slurmdbd 127.0.0.1:6819, slurmctld 10.77.0.254:6817
    <prefix>-m0   eth0 10.77.0.1    slurmd (node m0, host name m0), its job steps
    <prefix>-m1   eth0 10.77.0.2    slurmd (node m1) ...

Each ``slurmd`` is a real node: its own address and port 6818, its own UTS
namespace (host name = node name), so no ``--enable-multiple-slurmd`` mode and
no shared node state between daemons.  The controller, the accounting daemon
and its database live in the switch's namespace, so they reach every node over
the bridge without a cap and collide with nothing on the host (any port is
free there); Slurm's client commands run there too (:class:`SlurmClient` with
``namespace``).  Without ``accounting`` there is no database and no
``slurmdbd`` (``sacct`` then has nothing to show; ``squeue`` works).  The
cluster's files — configuration, a fresh MUNGE key, state, spool, logs, the
database — live in one folder; nothing is written to ``/etc``.

Nodes offer the service's machine capacity: ``CPUs`` = vCPUs,
``RealMemory`` and ``TmpDisk`` = GB × 1024, ``Gres=gpu:N``.  This host has no
GPU, so each node's GPUs are character devices with ``/dev/null``'s numbers —
the count is Slurm's bookkeeping, as the testbed's GPUs are the engine's.
``SlurmdParameters=config_overrides`` lets a node offer more CPUs or memory
than the host has.  ``SelectType=select/cons_tres`` with ``CR_CPU``: CPUs
and GPUs are allocated, memory and disk are the service's to check.
Heterogeneous jobs are started only by the backfill scheduler, so it runs
every second (``bf_interval=1``); a node whose ``slurmd`` stops answering is
``DOWN`` after ``slurmd_timeout`` seconds.

Like a testbed run, everything is recorded in the run's state file before it
is created (:mod:`dmlsched.testbed.state`): ``stop`` — or, after SIGKILL,
``dmlsched testbed cleanup``, ``dmlsched slurm start`` or the next testbed
run — kills every daemon and every process inside the namespaces and removes
the namespaces and the folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from dmlsched.errors import InvalidInput
from dmlsched.service.slurm import SlurmClient
from dmlsched.testbed.emulation import Emulation, netns_available
from dmlsched.testbed.state import DEFAULT_STATE_DIR, RunState, cleanup

__all__ = [
    "DAEMONS",
    "NODE_CAPACITY",
    "ClusterInfo",
    "SlurmCluster",
    "main",
    "slurm_available",
]

NODE_CAPACITY = (1.0, 4.0, 8.0, 8.0)  # the testbed's machine (dmlsched.service.quickstart)
DAEMONS = ("munged", "slurmctld", "slurmd", "slurmdbd", "mariadbd", "mariadb-install-db")
CLIENTS = ("sbatch", "squeue", "sacct", "scancel", "sinfo", "scontrol", "sacctmgr", "srun")
_START_TIMEOUT_S = 60.0


def slurm_available() -> str | None:
    """None when a cluster can start here, else the reason (for skips and exit-2 lines)."""
    why = netns_available()
    if why:
        return why.replace("netns emulation", "a Slurm cluster")
    for tool in (*DAEMONS, *CLIENTS, "unshare"):
        if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists():
            return (
                f"a Slurm cluster needs `{tool}` (Debian: apt-get install slurm-wlm munge "
                "slurmdbd mariadb-server; or make test-deps)"
            )
    return None


def _which(tool: str) -> str:
    return shutil.which(tool) or str(Path("/usr/sbin", tool))


@dataclass(frozen=True)
class ClusterInfo:
    """What a client needs to use a started cluster (``DIR/cluster.json``)."""

    run_id: str
    folder: str
    conf: str
    namespace: str  # the controller's: run client commands there
    controller: str
    nodes: tuple[str, ...]
    node_namespaces: tuple[str, ...]
    addrs: tuple[str, ...]
    capacity: tuple[float, ...]
    ext_mbit: float | None
    owner_pid: int

    def client(self) -> SlurmClient:
        return SlurmClient(self.conf, namespace=self.namespace)

    @staticmethod
    def load(path: Path) -> ClusterInfo:
        d = json.loads(path.read_text())
        for k in ("nodes", "node_namespaces", "addrs", "capacity"):
            d[k] = tuple(d[k])
        return ClusterInfo(**d)


class SlurmCluster:
    """munge, MariaDB, slurmdbd, slurmctld and ``machines`` slurmd (module docstring)."""

    def __init__(
        self,
        folder: Path,
        machines: int = 3,
        *,
        capacity: Sequence[float] = NODE_CAPACITY,
        ext_mbit: float | None = 10.0,
        int_mbit: float | None = None,
        slurmd_timeout: int = 10,
        accounting: bool = True,
        state_dir: Path = DEFAULT_STATE_DIR,
    ) -> None:
        if not 1 <= machines <= 250:
            raise InvalidInput("machines", machines, "1..250")
        caps = tuple(float(c) for c in capacity)
        if len(caps) != 4 or any(not c >= 0 for c in caps):
            raise InvalidInput("capacity", capacity, "4 numbers >= 0: gpu,cpu,mem,storage")
        if caps[1] < 1 or caps[0] != int(caps[0]) or caps[1] != int(caps[1]):
            raise InvalidInput("capacity", capacity, "whole GPUs and >= 1 whole vCPU (Slurm)")
        if ext_mbit is not None and not ext_mbit > 0:
            raise InvalidInput("ext_mbit", ext_mbit, "> 0 or none")
        if slurmd_timeout < 2:
            raise InvalidInput("slurmd_timeout", slurmd_timeout, ">= 2 seconds")
        self.root = Path(folder)
        self.machines = machines
        self.capacity = caps
        self.ext_mbit = ext_mbit
        self.int_mbit = int_mbit
        self.slurmd_timeout = slurmd_timeout
        self.accounting = accounting
        self.state_dir = Path(state_dir)
        self.state: RunState | None = None
        self.emu: Emulation | None = None
        self.info: ClusterInfo | None = None
        self._procs: dict[str, subprocess.Popen] = {}

    # ---- names -----------------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f"m{h}" for h in range(self.machines))

    @property
    def dir(self) -> Path:
        assert self.state is not None, "cluster not started"
        return self.root / f"slurm-{self.state.run_id}"

    def client(self) -> SlurmClient:
        assert self.info is not None, "cluster not started"
        return self.info.client()

    # ---- lifecycle ---------------------------------------------------------------------
    def __enter__(self) -> SlurmCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> ClusterInfo:
        why = slurm_available()
        if why:
            raise InvalidInput("slurm cluster", "start", why)
        # no sweep of stale runs here: the testbed's sweep removes every run of this
        # process, and one process may own several clusters (dmlsched slurm start sweeps)
        self.state = RunState.new(self.state_dir, "netns")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self.state.add("files", str(self.dir))
            self.dir.mkdir()
            for sub in ("munge", "ctld", "spool", "log", "run", "dev", "db"):
                (self.dir / sub).mkdir()
            self.emu = Emulation(
                "netns",
                self.machines,
                [self.ext_mbit] * self.machines,
                self.state,
                int_mbit=self.int_mbit,
            )
            self.emu.start()
            controller = self.emu.add_controller()
            self._write_config(controller)
            self.info = ClusterInfo(
                run_id=self.state.run_id,
                folder=str(self.dir),
                conf=str(self.dir / "slurm.conf"),
                namespace=self.emu.switch,
                controller=controller,
                nodes=self.names,
                node_namespaces=tuple(self.emu.ns(h) for h in range(self.machines)),
                addrs=self.emu.hosts(),
                capacity=self.capacity,
                ext_mbit=self.ext_mbit,
                owner_pid=os.getpid(),
            )
            self._start_daemons()
            (self.dir / "cluster.json").write_text(json.dumps(asdict(self.info), indent=1))
            return self.info
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop every daemon (nodes first), then remove processes, namespaces and files."""
        for key in sorted(self._procs, key=_stop_order):
            p = self._procs[key]
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self._procs = {}
        if self.state is not None:
            cleanup(self.state_dir, run_id=self.state.run_id, force=True)
            self.state = None
        self.info = None

    # ---- nodes (for tests and failure drills) -----------------------------------------
    def kill_node(self, name: str) -> None:
        """The node dies: SIGKILL its slurmd and every process in its namespace."""
        assert self.emu is not None and self.state is not None
        h = self.names.index(name)
        p = self._procs.get(f"slurmd-{name}")
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()
        out = subprocess.run(
            ["ip", "netns", "pids", self.emu.ns(h)], capture_output=True, text=True, check=False
        ).stdout
        for pid in (int(x) for x in out.split() if x.isdigit()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def start_node(self, name: str) -> None:
        """(Re)start a node's slurmd (``ReturnToService=2`` puts it back in service)."""
        assert self.emu is not None
        h = self.names.index(name)
        self._spawn(
            f"slurmd-{name}",
            [
                "ip",
                "netns",
                "exec",
                self.emu.ns(h),
                "unshare",
                "--uts",
                "sh",
                "-c",
                f'hostname {name} && exec {_which("slurmd")} -D -f "$0"',
                str(self.dir / "slurm.conf"),
            ],
        )

    # ---- internals ---------------------------------------------------------------------
    def _write_config(self, controller: str) -> None:
        d = self.dir
        key = d / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        (d / "munge").chmod(0o700)
        gpus = int(self.capacity[0])
        cpus = int(self.capacity[1])
        mem = int(self.capacity[2] * 1024)
        tmp = int(self.capacity[3] * 1024)
        sock = d / "munge" / "munge.sock"
        gres = f" Gres=gpu:{gpus}" if gpus else ""
        assert self.emu is not None
        node_lines = [
            f"NodeName={n} NodeAddr={a} CPUs={cpus} RealMemory={mem} TmpDisk={tmp}{gres}"
            " State=UNKNOWN"
            for n, a in zip(self.names, self.emu.hosts(), strict=True)
        ]
        conf = [
            f"ClusterName=dmls{self.state.run_id if self.state else ''}",
            f"SlurmctldHost=slurmctl({controller})",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            f"AuthInfo=socket={sock}",
            "CredType=cred/munge",
            *(
                [
                    "AccountingStorageType=accounting_storage/slurmdbd",
                    "AccountingStorageHost=127.0.0.1",
                    "AccountingStoragePort=6819",
                    f"AccountingStoragePass={sock}",
                    "JobAcctGatherType=jobacct_gather/linux",
                ]
                if self.accounting
                else ["AccountingStorageType=accounting_storage/none"]
            ),
            "JobCompType=jobcomp/none",
            f"StateSaveLocation={d / 'ctld'}",
            f"SlurmdSpoolDir={d / 'spool'}/%n",
            f"SlurmctldPidFile={d / 'run' / 'slurmctld.pid'}",
            f"SlurmdPidFile={d / 'run'}/slurmd-%n.pid",
            f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={d / 'log'}/slurmd-%n.log",
            "SlurmctldPort=6817",
            "SlurmdPort=6818",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "MpiDefault=none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SlurmdParameters=config_overrides",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=bf_interval=1",
            "ReturnToService=2",
            f"SlurmdTimeout={self.slurmd_timeout}",
            "KillWait=10",
            "JobRequeue=0",
            "GresTypes=gpu",
            *node_lines,
            "PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
        ]
        (d / "slurm.conf").write_text("\n".join(conf) + "\n")
        gres_lines = []
        for n in self.names:
            for g in range(gpus):
                dev = d / "dev" / f"{n}-gpu{g}"
                os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))  # /dev/null's numbers
            if gpus:
                files = f"{d / 'dev'}/{n}-gpu[0-{gpus - 1}]" if gpus > 1 else f"{dev}"
                gres_lines.append(f"NodeName={n} Name=gpu File={files}")
        (d / "gres.conf").write_text("\n".join(gres_lines) + "\n")
        (d / "cgroup.conf").write_text(_cgroup_conf())
        dbd = d / "slurmdbd.conf"
        dbd.write_text(
            "\n".join(
                [
                    "AuthType=auth/munge",
                    f"AuthInfo=socket={sock}",
                    "DbdAddr=127.0.0.1",
                    "DbdHost=localhost",
                    "DbdPort=6819",
                    "SlurmUser=root",
                    f"LogFile={d / 'log' / 'slurmdbd.log'}",
                    f"PidFile={d / 'run' / 'slurmdbd.pid'}",
                    "StorageType=accounting_storage/mysql",
                    "StorageHost=127.0.0.1",
                    "StoragePort=3306",
                    "StorageUser=root",
                    "StorageLoc=slurm_acct_db",
                ]
            )
            + "\n"
        )
        dbd.chmod(0o600)

    def _spawn(self, key: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        assert self.state is not None
        log = (self.dir / "log" / f"{key}.out").open("w")
        p = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # Ctrl-C reaches the owner only; stop() ends them
        )
        log.close()
        self.state.add("pids", p.pid)
        self._procs[key] = p

    def _wait(self, what: str, ready: object, timeout: float = _START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while True:
            for key, p in self._procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{key} exited {p.returncode}: {self._tail(key)}")
            if ready():  # type: ignore[operator]
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} not ready after {timeout:g} s")
            time.sleep(0.1)

    def _tail(self, key: str) -> str:
        for path in (self.dir / "log" / f"{key}.out", self.dir / "log" / f"{key}.log"):
            if path.exists() and path.read_text().strip():
                return path.read_text().strip().splitlines()[-1][-300:]
        return "(no log)"

    def _start_daemons(self) -> None:
        assert self.emu is not None
        d, sw = self.dir, self.emu.switch
        netns = ["ip", "netns", "exec", sw]
        conf = str(d / "slurm.conf")
        env = {**os.environ, "SLURM_CONF": conf}
        sock = d / "munge" / "munge.sock"
        self._spawn(
            "munged",
            [
                _which("munged"),
                "-F",
                "-f",
                f"--socket={sock}",
                f"--key-file={d / 'munge' / 'munge.key'}",
                f"--pid-file={d / 'munge' / 'munged.pid'}",
                f"--seed-file={d / 'munge' / 'munged.seed'}",
                f"--log-file={d / 'log' / 'munged.log'}",
            ],
        )
        self._wait("munged", sock.exists)
        client = SlurmClient(conf, namespace=sw, timeout=10.0)
        if self.accounting:
            self._start_accounting(netns, env, client)
        self._spawn(
            "slurmctld",
            [
                *netns,
                "unshare",
                "--uts",
                "sh",
                "-c",
                f'hostname slurmctl && exec {_which("slurmctld")} -D -i -f "$0"',
                conf,
            ],
        )
        self._wait("slurmctld", client.ping)
        for name in self.names:
            self.start_node(name)
        self._wait("slurmd on every node", lambda: _all_idle(client, self.names))

    def _start_accounting(self, netns: list[str], env: dict[str, str], client: SlurmClient) -> None:
        """MariaDB and slurmdbd in the controller's namespace (``sacct`` reads them)."""
        init = subprocess.run(
            [
                _which("mariadb-install-db"),
                "--no-defaults",
                f"--datadir={self.dir / 'db'}",
                "--user=root",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if init.returncode != 0:
            raise RuntimeError(f"mariadb-install-db: {init.stderr.strip()[-300:]}")
        db_sock = self.dir / "run" / "mariadb.sock"
        self._spawn(
            "mariadbd",
            [
                *netns,
                _which("mariadbd"),
                "--no-defaults",
                f"--datadir={self.dir / 'db'}",
                f"--socket={db_sock}",
                "--bind-address=127.0.0.1",
                "--port=3306",
                "--user=root",
                f"--pid-file={self.dir / 'run' / 'mariadb.pid'}",
                f"--log-error={self.dir / 'log' / 'mariadb.log'}",
                "--skip-name-resolve",
                "--skip-log-bin",
                "--performance-schema=OFF",
                "--innodb-buffer-pool-size=64M",
                "--innodb-log-file-size=16M",
                "--innodb-lock-wait-timeout=900",
            ],
        )
        self._wait("MariaDB", lambda: _connects(str(db_sock)))
        self._spawn("slurmdbd", [*netns, _which("slurmdbd"), "-D"], env=env)
        self._wait("slurmdbd", lambda: _dbd_up(client))


def _stop_order(key: str) -> int:
    order = ("slurmd", "slurmctld", "slurmdbd", "mariadbd", "munged")
    return next((i for i, k in enumerate(order) if key.startswith(k)), len(order))


def _connects(path: str) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def _dbd_up(client: SlurmClient) -> bool:
    try:
        client.run("sacctmgr", "-n", "list", "cluster")
        return True
    except Exception:
        return False


def _all_idle(client: SlurmClient, names: Sequence[str]) -> bool:
    try:
        nodes = {n.name: n for n in client.nodes()}
    except Exception:
        return False
    return all(n in nodes and nodes[n].usable and nodes[n].state == "idle" for n in names)


def _cgroup_conf() -> str:
    """slurmd loads a cgroup plugin whatever the proctrack/task plugins: name the hierarchy."""
    root = Path("/sys/fs/cgroup")
    if (root / "cgroup.controllers").exists():  # unified (v2) at the root
        return "CgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n"
    return f"CgroupPlugin=cgroup/v1\nCgroupMountpoint={root}\n"


# ---- make slurm-cluster: a detached owner process --------------------------------------
def _serve(args: list[str]) -> int:
    """The owner of a ``make slurm-cluster`` cluster: start it, wait for SIGTERM, stop it."""
    import argparse

    ap = argparse.ArgumentParser(prog="dmlsched-slurm-cluster")
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--machines", type=int, default=3)
    ap.add_argument("--capacity", default=",".join(f"{c:g}" for c in NODE_CAPACITY))
    ap.add_argument("--ext-mbit", type=float, default=10.0)
    a = ap.parse_args(args)
    caps = tuple(float(x) for x in a.capacity.split(","))
    stop = {"flag": False}

    def _term(*_: object) -> None:
        stop["flag"] = True

    signal.signal(signal.SIGTERM, _term)
    signal.signal(signal.SIGINT, _term)
    cluster = SlurmCluster(a.dir, a.machines, capacity=caps, ext_mbit=a.ext_mbit or None)
    try:
        info = cluster.start()
        (a.dir / "cluster.json").write_text(json.dumps(asdict(info), indent=1))
        while not stop["flag"]:
            time.sleep(0.2)
    except Exception as e:
        (a.dir / "failed").write_text(f"{type(e).__name__}: {e}\n")
        return 1
    finally:
        cluster.stop()
        with contextlib.suppress(OSError):
            (a.dir / "cluster.json").unlink()
    return 0


def main(argv: list[str] | None = None) -> int:
    return _serve(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
