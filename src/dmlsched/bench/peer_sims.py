"""The peer simulators, built from PyPI into a cache outside the repository and run as they are.

Pollux's OSDI'21 artifact simulator and Gavel's (OSDI'20) are kept unmodified
in ``../shared/peers/`` (``SIMULATORS.md`` there: their venvs and commands).
Their code is never copied into this repository.  :func:`build`:

1. copies the peer's folder into the cache — ``$XDG_CACHE_HOME/dmlsched/peers``
   (``~/.cache/dmlsched/peers`` without it) — under a key that hashes the
   folder's files, the pinned requirements, the set-up commands and the Python
   version, so a change to any of them builds anew beside the old one;
2. creates a venv there with the Python the peer needs (3.11: Pollux pins
   numpy 1.23.5, which has no wheels for later Pythons) and installs the
   pinned requirements from PyPI (nothing else is needed: CI reaches only
   package registries);
3. runs the peer's own set-up in the copy (Gavel: ``make rpc_stubs``, the
   gRPC stubs its scheduler imports);
4. writes a stamp last: a build without one (interrupted) is removed and made
   again.  A lock file serialises concurrent builds of the same key.

:func:`run_pollux` and :func:`run_gavel` time one run of the peer's own
command in a child process — CPU = the child's user + system time
(``os.wait4``), wall time beside it — and read the average JCT it prints.
Children (peers and dmlsched alike, :func:`child_env`) run with one BLAS/OpenMP
thread, so that no side's CPU time counts idle spinning threads.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from dmlsched.errors import InvalidInput

__all__ = [
    "GAVEL",
    "POLLUX",
    "Built",
    "PeerRun",
    "PeerSim",
    "build",
    "cache_dir",
    "child_env",
    "peers_dir",
    "run_gavel",
    "run_pollux",
    "timed",
]


@dataclass(frozen=True)
class PeerSim:
    """How to build one peer: ``source`` (a folder of ``../shared/peers``) is copied;
    commands run in ``workdir`` inside the copy, with the venv's ``bin`` first on PATH."""

    name: str
    source: str
    python: str  # major.minor the requirements need
    requirements: tuple[str, ...]  # exact pins, PyPI
    setup: tuple[tuple[str, ...], ...] = ()
    workdir: str = "."


#: Pollux: SIMULATORS.md's ``numpy==1.23.5 pandas==1.5.3 scipy==1.11.4 autograd
#: pymoo==0.4.2.1``, with what pip resolved for them (2026-11-27), pinned.
POLLUX = PeerSim(
    name="pollux",
    source="pollux-osdi21/simulator",
    python="3.11",
    requirements=(
        "autograd==1.9.1",
        "cma==2.7.0",
        "contourpy==1.3.2",
        "cycler==0.12.1",
        "fonttools==4.68.0",
        "kiwisolver==1.5.1",
        "matplotlib==3.10.9",
        "numpy==1.23.5",
        "packaging==26.4",
        "pandas==1.5.3",
        "pillow==13.0.0",
        "pymoo==0.4.2.1",
        "pyparsing==3.3.3",
        "python-dateutil==4.0.0",
        "pytz==2026.6",
        "scipy==1.11.4",
        "tzdata==2026.6",
    ),
)

#: Gavel: SIMULATORS.md's ``"numpy<1.24" cvxpy ecos grpcio grpcio-tools
#: matrix-completion func-timeout psutil scikit-learn``, resolved and pinned.
GAVEL = PeerSim(
    name="gavel",
    source="gavel/scheduler-src",
    python="3.11",
    requirements=(
        "cffi==2.1.1",
        "clarabel==0.11.1",
        "cloudpickle==3.1.3",
        "cvxpy==1.7.5",
        "ecos==2.0.14",
        "func_timeout==4.3.5",
        "grpcio==1.85.3",
        "grpcio-tools==1.85.1",
        "Jinja2==3.1.6",
        "joblib==1.6.0",
        "MarkupSafe==3.0.4",
        "matrix-completion==0.0.2",
        "numpy==1.23.5",
        "osqp==1.1.3",
        "protobuf==7.36.2",
        "psutil==7.2.2",
        "pycparser==3.12",
        "scikit-learn==1.7.2",
        "scipy==1.15.3",
        "scs==3.3.1",
        "threadpoolctl==3.8.0",
        "typing_extensions==4.16.0",
    ),
    setup=(("make", "rpc_stubs"),),
    workdir="scheduler",
)

_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def peers_dir() -> Path | None:
    """``../shared/peers`` beside the checkout (found further up from a nested
    worktree), or ``None`` when absent."""
    here = Path(__file__).resolve()
    for up in here.parents:
        d = up / "shared" / "peers"
        if d.is_dir():
            return d
    return None


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/dmlsched/peers`` (``~/.cache/dmlsched/peers`` without it)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "dmlsched" / "peers"


def child_env() -> dict[str, str]:
    """The environment every timed child gets: one BLAS/OpenMP thread."""
    env = dict(os.environ)
    env.update({k: "1" for k in _THREADS})
    return env


@dataclass(frozen=True)
class Built:
    """A built peer: its venv's ``python`` and the folder its commands run in."""

    sim: PeerSim
    python: Path
    workdir: Path


def _tree_digest(folder: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(f.relative_to(folder)).encode())
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def _key(sim: PeerSim, source: Path) -> str:
    spec = json.dumps([sim.python, sim.requirements, sim.setup, sim.workdir])
    return hashlib.sha256((spec + _tree_digest(source)).encode()).hexdigest()[:16]


def _interpreter(version: str) -> str:
    """A Python ``version`` (major.minor) to create the venv with."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    found = shutil.which(f"python{version}")
    if found is None:
        raise InvalidInput("python", f"python{version}", "an interpreter on PATH (peer build)")
    return found


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build(sim: PeerSim, peers: Path, say: Callable[[str], None] = print) -> Built:
    """Build ``sim`` from ``peers`` (``../shared/peers``) into the cache, or reuse it."""
    source = peers / sim.source
    if not source.is_dir():
        raise InvalidInput("peers", str(source), f"the {sim.name} simulator's folder")
    key = _key(sim, source)
    home = cache_dir() / f"{sim.name}-{key}"
    stamp = home / "built.json"
    with _lock(cache_dir() / f"{sim.name}-{key}.lock"):
        if not stamp.is_file():
            if home.exists():
                shutil.rmtree(home)  # an interrupted build
            say(f"building the {sim.name} simulator in {home} (pip from PyPI; a few minutes)")
            t0 = time.perf_counter()
            _build_into(sim, source, home)
            stamp.write_text(
                json.dumps({"key": key, "python": sim.python, "requirements": sim.requirements})
            )
            say(f"built the {sim.name} simulator in {time.perf_counter() - t0:.0f} s")
    return Built(sim, home / "venv" / "bin" / "python", home / "src" / sim.workdir)


def _build_into(sim: PeerSim, source: Path, home: Path) -> None:
    home.mkdir(parents=True)
    shutil.copytree(source, home / "src", ignore=shutil.ignore_patterns("__pycache__"))
    venv = home / "venv"
    make = [_interpreter(sim.python), "-m", "venv", str(venv)]
    _check_run(make if sim.requirements else [*make, "--without-pip"], home, "venv")
    if sim.requirements:
        py = str(venv / "bin" / "python")
        pip = [py, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input"]
        _check_run([*pip, *sim.requirements], home, "pip install")
    env = dict(os.environ, PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    for cmd in sim.setup:
        _check_run(list(cmd), home / "src" / sim.workdir, " ".join(cmd), env)


def _check_run(cmd: Sequence[str], cwd: Path, what: str, env: dict | None = None) -> None:
    got = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if got.returncode != 0:
        tail = (got.stderr or got.stdout).strip().splitlines()[-3:]
        raise RuntimeError(
            f"peer build step {what!r} failed ({got.returncode}): {' | '.join(tail)}"
        )


@dataclass(frozen=True)
class PeerRun:
    """One timed run: CPU (user + system) and wall seconds, the average JCT (s) it
    reports, and its standard output."""

    cpu_s: float
    wall_s: float
    avg_jct_s: float
    output: str


def timed(cmd: Sequence[str], cwd: Path | None = None) -> tuple[float, float, str]:
    """(CPU s, wall s, stdout) of one child process; a failure raises with its stderr."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=child_env(), stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read()
        if proc.returncode != 0:
            tail = err.read().strip().splitlines()[-3:]
            raise RuntimeError(f"{' '.join(map(str, cmd[:3]))} … failed: {' | '.join(tail)}")
    return usage.ru_utime + usage.ru_stime, wall, text


def _last_number(text: str, pattern: str, what: str) -> float:
    hits = re.findall(pattern, text)
    if not hits:
        raise RuntimeError(f"no {what} in the peer's output")
    return float(hits[-1])


def run_pollux(built: Built, workload: Path, policy: str = "tiresias") -> PeerRun:
    """``python simulator.py --policy POLICY WORKLOAD`` (16 nodes × 4 GPUs, 60-s interval)."""
    cmd = [str(built.python), "simulator.py", "--policy", policy, str(workload)]
    cpu, wall, text = timed(cmd, built.workdir)
    jct = _last_number(text, r"Average JCT: ([0-9.eE+-]+)", "Average JCT")
    return PeerRun(cpu, wall, jct, text)


def run_gavel(
    built: Built,
    trace: Path,
    policy: str = "fifo",
    cluster: str = "64:0:0",
    per_server: str = "4:1:1",
    seed: int = 0,
) -> PeerRun:
    """Gavel's ``simulate_scheduler_with_trace.py`` on a 10-field trace (V100s by default:
    64 GPUs, 4 per server)."""
    cmd = [str(built.python), "scripts/drivers/simulate_scheduler_with_trace.py", "-t", str(trace)]
    cmd += ["-p", policy, "-c", cluster, "--num_gpus_per_server", per_server, "--seed", str(seed)]
    cpu, wall, text = timed(cmd, built.workdir)
    jct = _last_number(text, r"Average job completion time: ([0-9.eE+-]+) seconds", "average JCT")
    return PeerRun(cpu, wall, jct, text)
