"""The run's state file, and ``cleanup``: nothing of a run outlives it.

Every resource a testbed run creates carries the run id in its name —
namespaces ``dmlt-<id>-m<h>`` / ``dmlt-<id>-sw`` (the veths, the bridge and
every qdisc live *inside* them, so deleting the namespaces deletes them),
cgroups ``dmlt-<id>-m<h>``, the token-bucket file ``dmlt-<id>-tb`` — and is
written to ``<state_dir>/<id>.json`` *before* it is created.  Agents carry
``--run-id <id>`` on their command line, and so do the PS and worker
processes they fork.

:func:`cleanup` removes, for every state file whose owner process is gone
(or for one run id, or all with ``force``): processes whose command line
names the run, processes inside its namespaces, the namespaces, cgroups and
files, then the state file.  It also removes namespaces named ``dmlt-*``
and files ``/dev/shm/dmlt-*`` that no live run owns (a state file lost with
its disk or its temporary folder, say).  The ``dmlt``
is ``$DMLSCHED_TESTBED_PREFIX`` when set, so that several users of one
machine (or several checkouts) sweep only their own namespaces.  Ownership is
decided by a marker every run writes to ``/dev/shm/dmlt-<id>-owner`` (owner
pid and start time) whatever its state folder, so runs with different state
folders — concurrent tests, say — never delete each other's namespaces.  A run calls it
for stale runs when it starts, and for itself when it ends — normally, on
an exception or on Ctrl-C; after SIGKILL, ``dmlsched testbed cleanup`` (or
the next run) does it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dmlsched.errors import InvalidInput

__all__ = ["DEFAULT_STATE_DIR", "PREFIX", "PREFIX_ENV", "RunState", "cleanup", "live_resources"]

PREFIX_ENV = "DMLSCHED_TESTBED_PREFIX"


def _prefix() -> str:
    """``$DMLSCHED_TESTBED_PREFIX`` (2–8 lowercase letters or digits; default ``dmlt``) + ``-``."""
    name = os.environ.get(PREFIX_ENV, "") or "dmlt"
    if not re.fullmatch(r"[a-z0-9]{2,8}", name):
        raise InvalidInput(PREFIX_ENV, name, "2-8 lowercase letters or digits")
    return f"{name}-"


PREFIX = _prefix()
DEFAULT_STATE_DIR = Path("/tmp/dmlsched-testbed")
_OWNERS = Path("/dev/shm")


def _owner_marker(run_id: str) -> Path:
    return _OWNERS / f"{PREFIX}{run_id}-owner"


def _marked_owner_alive(run_id: str) -> bool:
    """True when the run's global owner marker names a live process (see module docstring)."""
    try:
        pid, start = _owner_marker(run_id).read_text().split()
    except (OSError, ValueError):
        return False
    return _proc_start(int(pid)) == start


def _proc_start(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


@dataclass
class RunState:
    """What one run created (appended before each creation, saved at once)."""

    run_id: str
    path: Path
    owner_pid: int = field(default_factory=os.getpid)
    owner_start: str | None = None
    emulation: str = "local"
    namespaces: list[str] = field(default_factory=list)
    cgroups: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    # [pid, start time] of each agent: a pid alone may name another process after a reboot
    # or pid reuse, and cleanup must never kill that one
    pids: list[list[object]] = field(default_factory=list)
    qdiscs: list[str] = field(default_factory=list)

    @staticmethod
    def new(state_dir: Path, emulation: str) -> RunState:
        state_dir.mkdir(parents=True, exist_ok=True)
        rid = secrets.token_hex(3)  # an identifier, not a modelling choice
        st = RunState(rid, state_dir / f"{rid}.json", emulation=emulation)
        st.owner_start = _proc_start(st.owner_pid)
        marker = _owner_marker(rid)
        st.files.append(str(marker))
        st.save()
        with contextlib.suppress(OSError):  # no /dev/shm: orphan sweeps then skip nothing
            marker.write_text(f"{st.owner_pid} {st.owner_start}")
        return st

    @property
    def prefix(self) -> str:
        return f"{PREFIX}{self.run_id}"

    def save(self) -> None:
        blob = asdict(self)
        blob["path"] = str(self.path)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(blob, indent=1))
        os.replace(tmp, self.path)

    def add(self, kind: str, item: object) -> None:
        getattr(self, kind).append(item)
        self.save()

    @staticmethod
    def load(path: Path) -> RunState:
        d = json.loads(path.read_text())
        d["path"] = Path(d["path"])
        return RunState(**d)

    def add_process(self, pid: int) -> None:
        """Record a process the run started, with its start time (see ``pids``)."""
        self.add("pids", [pid, _proc_start(pid)])

    def live_processes(self) -> set[int]:
        """The recorded processes still running: same pid *and* same start time."""
        live = set()
        for entry in self.pids:
            if not isinstance(entry, list) or len(entry) != 2:
                continue  # a bare pid (older state files): the --run-id sweep finds it
            pid, start = entry
            if isinstance(pid, int) and start is not None and _proc_start(pid) == start:
                live.add(pid)
        return live

    def owner_alive(self) -> bool:
        return _proc_start(self.owner_pid) == self.owner_start and self.owner_start is not None


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def _netns_list() -> list[str]:
    if shutil.which("ip") is None:
        return []
    out = _run(["ip", "netns", "list"]).stdout
    return [ln.split()[0] for ln in out.splitlines() if ln.strip()]


def _pids_with(token: str) -> list[int]:
    """Processes whose command line contains ``token`` (never this process)."""
    me = os.getpid()
    hits = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if token in cmd:
            hits.append(int(d.name))
    return hits


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids):
        for p in pids:  # reap our own children (zombies keep /proc entries)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(p, os.WNOHANG)
        if all(_is_zombie(p) for p in pids if Path(f"/proc/{p}").exists()):
            break
        time.sleep(0.05)


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _remove(st: RunState) -> list[str]:
    removed: list[str] = []
    token = f"--run-id {st.run_id}"
    pids = set(_pids_with(token)) | st.live_processes()
    pids.discard(os.getpid())
    for ns in st.namespaces:
        if ns in _netns_list():
            out = _run(["ip", "netns", "pids", ns]).stdout
            pids |= {int(x) for x in out.split() if x.isdigit()}
    if pids:
        _kill_all(sorted(pids))
        removed += [f"process {p}" for p in sorted(pids)]
    live_ns = set(_netns_list())
    for ns in st.namespaces:
        if ns in live_ns:
            _run(["ip", "netns", "delete", ns])
            removed.append(f"namespace {ns}")
    for cg in st.cgroups:
        if Path(cg).exists():
            with contextlib.suppress(OSError):
                os.rmdir(cg)
                removed.append(f"cgroup {cg}")
    for f in st.files:
        p = Path(f)
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
            removed.append(f"folder {f}")
        elif p.exists():
            p.unlink(missing_ok=True)
            removed.append(f"file {f}")
    st.path.unlink(missing_ok=True)
    return removed


def cleanup(
    state_dir: Path = DEFAULT_STATE_DIR, run_id: str | None = None, force: bool = False
) -> list[str]:
    """Remove what dead runs left behind (see module docstring); returns what was removed.

    ``run_id``: only that run (even if its owner lives, with ``force``);
    otherwise every run whose owner is gone, plus orphan ``dmlt-*``
    namespaces and ``/dev/shm`` files no live run owns.
    """
    removed: list[str] = []
    owned: set[str] = set()
    if state_dir.exists():
        for path in sorted(state_dir.glob("*.json")):
            try:
                st = RunState.load(path)
            except (OSError, ValueError, TypeError):
                continue
            if run_id is not None and st.run_id != run_id:
                owned.update(st.namespaces)
                continue
            if st.owner_alive() and not force and st.owner_pid != os.getpid():
                owned.update(st.namespaces)
                continue
            removed += _remove(st)
    if run_id is None:
        for ns in _netns_list():
            rid = ns[len(PREFIX) :].split("-", 1)[0]
            if ns.startswith(PREFIX) and ns not in owned and not _marked_owner_alive(rid):
                out = _run(["ip", "netns", "pids", ns]).stdout
                pids = [int(x) for x in out.split() if x.isdigit()]
                _kill_all(pids)
                _run(["ip", "netns", "delete", ns])
                removed.append(f"orphan namespace {ns}")
        # files of a run whose state file went with its folder (a test's tmp_path, say)
        for f in sorted(_OWNERS.glob(f"{PREFIX}*")):
            if not _marked_owner_alive(f.name[len(PREFIX) :].split("-", 1)[0]):
                f.unlink(missing_ok=True)
                removed.append(f"orphan file {f}")
    return removed


def live_resources(run_id: str) -> list[str]:
    """What of run ``run_id`` still exists (processes, namespaces, qdiscs): [] when clean."""
    left = [f"process {p}" for p in _pids_with(f"--run-id {run_id}")]
    left += [f"namespace {ns}" for ns in _netns_list() if ns.startswith(f"{PREFIX}{run_id}")]
    if shutil.which("tc"):
        host = _run(["tc", "qdisc", "show"]).stdout
        left += [f"qdisc {ln}" for ln in host.splitlines() if run_id in ln]
    for base in (
        Path("/sys/fs/cgroup"),
        Path("/sys/fs/cgroup/cpu"),
        Path("/sys/fs/cgroup/unified"),
    ):
        if base.exists():
            left += [f"cgroup {p}" for p in base.glob(f"{PREFIX}{run_id}*")]
    left += [f"file {p}" for p in Path("/dev/shm").glob(f"{PREFIX}{run_id}*")]
    return left
