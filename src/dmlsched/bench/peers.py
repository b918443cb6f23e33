"""Peer replays: dmlsched's own timings, and beside the Pollux and Gavel simulators.

``peers`` (default set; skipped without ``../shared/peers``):

* ``peer_replay_tiresias_s`` — the library: Tiresias on the Pollux artifact's
  workload-6 (160 jobs, 60-s slots, measured throughputs); each repetition
  imports the CSV (profiles are cached after the first) and simulates; median of 3.
* ``peer_replay_cli_s`` — wall time of the whole command ``dmlsched compare
  --schedulers tiresias --workload pollux:workload-6.csv --seeds 1``, median of 3.
* ``gavel_replay_cpu_s`` — CPU (user + system) of the whole command ``dmlsched
  run --scheduler fifo --workload gavel:msr-seed0-2869ce.trace``, median of 3.

``peer-sims`` (opt-in, ``dmlsched bench --peers``): builds the peers' simulators
(cached outside the repository, :mod:`dmlsched.bench.peer_sims`; the first
time takes minutes) and runs them beside dmlsched **on the same files, in the
same run**.  CPU is that of whole processes (interpreter, imports, the replay)
on both sides, timed in alternating pairs (peer, dmlsched, peer, …); each
figure is the median of its runs and a ratio is the ratio of the medians.
Every child has one BLAS/OpenMP thread.

* Gavel, FIFO on ``msr-seed0-2869ce``: dmlsched first writes the trace in
  Gavel's 10-field form (``dmlsched export``, keeping the jobs Gavel's table can
  run); then Gavel's driver (64 V100s, 4 per server, seed 0) and ``dmlsched run
  --scheduler fifo --workload gavel:THAT_FILE`` (16 machines × 4 GPUs, Gavel's
  measured throughputs).  ``gavel_2869ce_fifo_{cpu,peer_cpu,cpu_ratio}``, and
  the average JCTs (``…_jct_s``, ``…_peer_jct_s``) and their ratio
  (``…_jct_ratio`` = dmlsched ÷ Gavel).  :data:`PAIRS` pairs.
* Pollux, Tiresias on the artifact's ``workload-6.csv`` (:data:`PAIRS` pairs)
  and ``workload-1``, ``workload-8`` (one pair each: a run's JCT does not change
  between runs): the simulator's ``simulator.py --policy tiresias`` (16 nodes × 4
  GPUs, 60-s interval) and ``dmlsched run --scheduler tiresias --workload
  pollux:FILE --speed goodput`` (Pollux's statistical epochs,
  :mod:`dmlsched.model.speed.goodput`).  ``pollux_w<i>_tiresias_…`` as above.

Without ``../shared/peers`` the figures are left out; a failed build raises.
"""

from __future__ import annotations

import compileall
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dmlsched.bench import benchmark
from dmlsched.bench.peer_sims import (
    GAVEL,
    POLLUX,
    PeerRun,
    build,
    peers_dir,
    run_gavel,
    run_pollux,
    timed,
)

__all__ = ["GAVEL_TRACE", "PAIRS", "POLLUX_WORKLOADS", "peer_replay", "peer_sims"]

#: alternating (peer, dmlsched) pairs per timed replay
PAIRS = 3
GAVEL_TRACE = "msr-seed0-2869ce"
#: Pollux workloads replayed: the first is timed in PAIRS pairs, the others once
POLLUX_WORKLOADS = (6, 1, 8)


def _compiled() -> None:
    """Bytecode cached, as after pip's install or any first run (an environment with
    PYTHONDONTWRITEBYTECODE=1 would otherwise recompile every module each run)."""
    compileall.compile_dir(Path(__file__).resolve().parents[1], quiet=2)  # the package


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _dmlsched(*args: str) -> list[str]:
    return [sys.executable, "-m", "dmlsched", *args]


@benchmark("peers")
def peer_replay(repeats: int = 3) -> dict[str, float]:
    from dmlsched.experiments.defs.peers import gavel_trace, pollux_workload
    from dmlsched.rng import make_rng
    from dmlsched.schedulers.protocols import make_scheduler
    from dmlsched.sim.engine import simulate
    from dmlsched.workloads.peers import load_pollux

    path = pollux_workload(6)
    if not path.is_file():
        return {}
    _compiled()
    lib, cli, cpu = [], [], []
    trace = gavel_trace(GAVEL_TRACE)
    for _ in range(repeats):
        t0 = time.perf_counter()
        wl = load_pollux(path, slot_seconds=60.0)
        simulate("cluster", wl, make_scheduler("cluster", "tiresias"), make_rng(1))
        lib.append(time.perf_counter() - t0)
        with tempfile.TemporaryDirectory() as tmp:
            cmd = _dmlsched("compare", "--schedulers", "tiresias", "--workload", f"pollux:{path}")
            _, wall, _ = timed([*cmd, "--seeds", "1", "--out", f"{tmp}/out"])
            cli.append(wall)
        if trace.is_file():
            cmd = _dmlsched("run", "--scheduler", "fifo", "--workload", f"gavel:{trace}")
            cpu.append(timed(cmd)[0])
    out = {
        "peer_replay_tiresias_s": statistics.median(lib),
        "peer_replay_cli_s": statistics.median(cli),
    }
    if cpu:
        out["gavel_replay_cpu_s"] = statistics.median(cpu)
    return out


def _pairs(
    prefix: str, pairs: int, peer: Callable[[], PeerRun], ours: dict[str, Callable[[], PeerRun]]
) -> dict[str, float]:
    """Alternate ``peer`` and each of ``ours`` (suffix → run); medians of CPU, wall and
    JCT of each, and their ratios to the peer's."""
    theirs: list[PeerRun] = []
    mine: dict[str, list[PeerRun]] = {k: [] for k in ours}
    for _ in range(pairs):
        theirs.append(peer())
        for k, run in ours.items():
            mine[k].append(run())

    def med(runs: list[PeerRun], field: str) -> float:
        return statistics.median(getattr(r, field) for r in runs)

    out = {
        f"{prefix}_peer_cpu_s": med(theirs, "cpu_s"),
        f"{prefix}_peer_wall_s": med(theirs, "wall_s"),
        f"{prefix}_peer_jct_s": med(theirs, "avg_jct_s"),
    }
    for k, runs in mine.items():
        out[f"{prefix}{k}_cpu_s"] = med(runs, "cpu_s")
        out[f"{prefix}{k}_wall_s"] = med(runs, "wall_s")
        out[f"{prefix}{k}_jct_s"] = med(runs, "avg_jct_s")
        out[f"{prefix}{k}_cpu_ratio"] = out[f"{prefix}{k}_cpu_s"] / out[f"{prefix}_peer_cpu_s"]
        out[f"{prefix}{k}_jct_ratio"] = out[f"{prefix}{k}_jct_s"] / out[f"{prefix}_peer_jct_s"]
    return out


def _run_ours(cmd: list[str]) -> PeerRun:
    cpu, wall, text = timed(cmd)
    metrics = json.loads(text)
    return PeerRun(cpu, wall, float(metrics["mean_jct_s"]), text)


# The library in a fresh process, as a peer's driver script is (no CLI framework):
# import, read the file, simulate, print the metrics.
_API = """
import json, sys
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.peers import load_gavel, load_pollux
kind, path, name, speed = sys.argv[1:5]
wl = (load_gavel if kind == "gavel" else load_pollux)(path, speed=speed)
_, rng = spawn(make_rng(0), 2)
res = simulate("cluster", wl, make_scheduler("cluster", name), rng, record_events=False)
print(json.dumps({"mean_jct_s": res.metrics["mean_jct_s"]}))
"""


def _ours(kind: str, path: Path, scheduler: str, speed: str) -> dict[str, Callable[[], PeerRun]]:
    """dmlsched's two ways in: the CLI (``run``) and the library (:data:`_API`)."""
    cli = _dmlsched("run", "--scheduler", scheduler, "--workload", f"{kind}:{path}")
    cli += ["--speed", speed]
    api = [sys.executable, "-c", _API, kind, str(path), scheduler, speed]
    return {"": lambda: _run_ours(cli), "_api": lambda: _run_ours(api)}


@benchmark("peer-sims", default=False)
def peer_sims(say: Callable[[str], None] | None = None) -> dict[str, float]:
    """The ``peer-sims`` figures (module docstring); progress lines on stderr."""
    say = say or _stderr
    peers = peers_dir()
    if peers is None:
        return {}
    _compiled()
    out: dict[str, float] = {}
    gavel = build(GAVEL, peers, say)
    pollux = build(POLLUX, peers, say)
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / f"{GAVEL_TRACE}.trace"
        source = peers / "gavel" / "traces" / f"{GAVEL_TRACE}.trace"
        export = _dmlsched("export", "--workload", f"gavel:{source}", "--format", "gavel")
        timed([*export, "--out", str(trace)])
        say(f"Gavel FIFO on {GAVEL_TRACE}: {PAIRS} alternating pairs")
        out.update(
            _pairs(
                "gavel_2869ce_fifo",
                PAIRS,
                lambda: run_gavel(gavel, trace),
                _ours("gavel", trace, "fifo", "measured"),
            )
        )
    for i, w in enumerate(POLLUX_WORKLOADS):
        csv = peers / "pollux-osdi21" / "workloads" / f"workload-{w}.csv"
        pairs = PAIRS if i == 0 else 1
        say(f"Pollux Tiresias on workload-{w}: {pairs} alternating pair(s)")
        out.update(
            _pairs(
                f"pollux_w{w}_tiresias",
                pairs,
                lambda csv=csv: run_pollux(pollux, csv),  # type: ignore[misc]  # the default binds this iteration's csv
                _ours("pollux", csv, "tiresias", "goodput"),
            )
        )
    return out
