"""Peer replay timing, beside the peers' own figures.

* ``peer_replay_tiresias_s`` — the library: Tiresias on the Pollux artifact's
  workload-6 (160 jobs, 60-s slots); each repetition imports the CSV (the
  parsed profiles are cached after the first) and simulates; median of 3.
* ``peer_replay_cli_s`` — the same replay through ``dmlsched compare`` (the
  whole command), beside the Pollux simulator's 22.6 s wall.
* ``gavel_replay_s`` — CPU time of ``dmlsched run`` with FIFO on Gavel's
  354-job ``msr-seed0-2869ce`` at Gavel's sizes, beside Gavel's CPU time
  *derived* from the starting commit's (÷ 16; :data:`GAVEL_2869CE_CPU_S`).

Each is skipped (no figure) when ``../shared/peers`` is absent.
"""

from __future__ import annotations

import statistics
import time

from dmlsched.bench import benchmark
from dmlsched.rng import make_rng
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate


@benchmark("peers")
def peer_replay_tiresias(repeats: int = 3) -> dict[str, float]:
    from dmlsched.experiments.defs.peers import pollux_workload
    from dmlsched.workloads.peers import load_pollux

    path = pollux_workload(6)
    if not path.is_file():
        return {}
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        wl = load_pollux(path, slot_seconds=60.0)
        simulate("cluster", wl, make_scheduler("cluster", "tiresias"), make_rng(1))
        times.append(time.perf_counter() - t0)
    return {"peer_replay_tiresias_s": statistics.median(times)}


# The peers' own times for the two replays below (beside our figures in `dmlsched bench`).
#: Pollux's simulator, workload-6 with Tiresias: 22.6 s wall (measured on this machine in
#: an earlier session, issue 8).
POLLUX_SIM_W6_S = 22.6
#: dmlsched at the starting commit of issue 16 (5e2d4bc), FIFO on Gavel's
#: ``msr-seed0-2869ce`` through its ``gavel:`` import of then, `dmlsched run`: 669.45 s of
#: CPU (658.78 user + 10.67 sys; 1,818.75 s wall on the shared 2-core machine at load
#: 4-5, 5.6 GB peak; one run — it takes half an hour).
BASE_2869CE_CPU_S = 669.45
#: Gavel's simulator's CPU time for the same replay was not recorded; issue 16 says the
#: starting commit needed 16× Gavel's CPU time on it, so Gavel's is derived as
#: BASE_2869CE_CPU_S / 16 = 41.8 s.  A derived figure, not a measurement of Gavel.
GAVEL_2869CE_CPU_S = BASE_2869CE_CPU_S / 16.0
GAVEL_2869CE = "msr-seed0-2869ce"


def _child_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@benchmark("peer-cli")
def peer_replay_cli(repeats: int = 3) -> dict[str, float]:
    """``peer_replay_cli_s``: wall time of the whole command ``dmlsched compare
    --schedulers tiresias --workload pollux:workload-6.csv --seeds 1`` (a fresh
    process: imports, the replay, results.csv and summary.md; PNGs only with
    --plots; bytecode compiled first), median of 3, beside the Pollux simulator's 22.6 s
    (``peer_replay_pollux_sim_s``) and the ratio."""
    import compileall
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    import dmlsched
    from dmlsched.experiments.defs.peers import pollux_workload

    path = pollux_workload(6)
    if not path.is_file():
        return {}
    # bytecode cached, as after pip's install or any first run: an environment with
    # PYTHONDONTWRITEBYTECODE=1 would otherwise recompile every module (+0.25 s a run)
    compileall.compile_dir(Path(dmlsched.__file__).parent, quiet=2)
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "dmlsched", "compare", "--schedulers", "tiresias"]
            cmd += ["--workload", f"pollux:{path}", "--seeds", "1", "--out", f"{tmp}/out"]
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            times.append(time.perf_counter() - t0)
    s = statistics.median(times)
    return {
        "peer_replay_cli_s": s,
        "peer_replay_pollux_sim_s": POLLUX_SIM_W6_S,
        "peer_replay_cli_ratio": s / POLLUX_SIM_W6_S,
    }


@benchmark("gavel")
def gavel_replay(repeats: int = 3) -> dict[str, float]:
    """``gavel_replay_s``: CPU time (user + sys) of the whole command ``dmlsched run
    --scheduler fifo --workload gavel:msr-seed0-2869ce.trace --speed measured`` (354
    jobs at Gavel's own sizes and throughputs, 60-s slots), median of 3, beside
    Gavel's CPU time derived as the starting commit's ÷ 16 (``gavel_replay_gavel_cpu_s``,
    see :data:`GAVEL_2869CE_CPU_S`) and the ratio."""
    import subprocess
    import sys

    from dmlsched.experiments.defs.peers import gavel_trace

    path = gavel_trace(GAVEL_2869CE)
    if not path.is_file():
        return {}
    cpu = []
    for _ in range(repeats):
        before = _child_cpu()
        cmd = [sys.executable, "-m", "dmlsched", "run", "--scheduler", "fifo"]
        cmd += ["--workload", f"gavel:{path}", "--speed", "measured"]
        subprocess.run(cmd, check=True, capture_output=True)
        cpu.append(_child_cpu() - before)
    s = statistics.median(cpu)
    return {
        "gavel_replay_s": s,
        "gavel_replay_gavel_cpu_s": GAVEL_2869CE_CPU_S,
        "gavel_replay_ratio": s / GAVEL_2869CE_CPU_S,
    }
