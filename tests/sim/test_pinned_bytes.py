"""The cluster engine's results, pinned: a change meant to make the engine faster must
leave every run's bytes as they were.

Each case runs one scheduler on one workload and hashes everything the run returns —
metrics (``repr`` of every float), the event log and the per-slot series (their raw
bytes).  The digests were taken from the engine before its hot path was reworked
(``main`` at 9dfbff2); a digest that moves is a result that moved.  ``oasis``'s and
pd-ors+'s per-machine digests were taken again when their price products stopped
calling BLAS (:mod:`dmlsched.numerics`): OpenBLAS's kernel for this CPU had put equal
machines' costs a bit apart, and their ties then fell by position
(``tests/test_numerics.py`` runs these under other kernels).  The large case
takes FIFO's compiled pass and the engine's batched table reads (more than
``placement.SMALL_MACHINES`` machines); the peer replay takes ``--speed measured``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.sim.run import RunResult
from dmlsched.workloads.builders import WorkloadParams
from dmlsched.workloads.registry import build_workload
from dmlsched.workloads.synthetic import synthetic_cluster
from dmlsched.workloads.traces import default_trace_dir, load_trace, trace_cluster

_GAVEL = Path("../shared/peers/gavel/traces/msr-seed0-2869ce.trace")


def digest(result: RunResult) -> str:
    """sha256 of a run's metrics, events and series."""
    h = hashlib.sha256()
    h.update(json.dumps({k: repr(v) for k, v in result.metrics.items()}).encode())
    for e in result.events:
        h.update(repr(e).encode())
    for k in sorted(result.series):
        a = np.ascontiguousarray(result.series[k])
        h.update(f"{k}:{a.dtype}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _run(wl: object, scheduler: str, record_events: bool = True, **params: object) -> str:
    _, rng = spawn(make_rng(0), 2)
    sched = make_scheduler("cluster", scheduler, **params)
    return digest(simulate("cluster", wl, sched, rng, record_events=record_events))


SYNTHETIC = {
    "dorm": "ffaf083a0969c9e60c628cc1eb05a8dca1895791af402b5b9f61f6d87b3e03cd",
    "drf": "97eb0a9caa25d5dffad45fa708b53dcc3f4e28626e096ce33e79dd35f012488b",
    "fifo": "59161d7f7a310400c0101284d9aa1031195eb84738444627a48b258273fc7eae",
    "oasis": "17616c54a19b676749c4cabf571f6b13e123cdba5915a5dbe28bc033bf6bc6e4",
    "pd-ors": "4425e9ca632ccad956c1ff4da71de62261882222697a82f19bc41dfd74f0a769",
    "pd-ors+": "afd115f902304d1f3f4086ef8a9bb306993f32eee333826d738f6f7c482c19ba",
    "srtf": "ccc8c9ee7488ef3414ad4cc1a28e563d71c5b569a31c75714265b9f8a61e3509",
    "tiresias": "675f5b9ce7903e7f375f5b9ad411e307958e7b31b2f7bd25ec33824bfd22c221",
}


@pytest.mark.parametrize("scheduler", sorted(SYNTHETIC))
def test_synthetic_runs_keep_their_bytes(scheduler: str) -> None:
    wl = synthetic_cluster(40, 12, 60, make_rng(7))
    assert _run(wl, scheduler) == SYNTHETIC[scheduler]


# pd-ors+ rounding per machine (its default draws per machine class, above)
PDORS_PLUS_PER_MACHINE = "631f5ce44dcd7aa012540e3a17b4ebcf2687678db521674b9f238d8645805ba8"


def test_pd_ors_plus_rounding_per_machine_keeps_its_bytes() -> None:
    wl = synthetic_cluster(40, 12, 60, make_rng(7))
    assert _run(wl, "pd-ors+", rounding="machine") == PDORS_PLUS_PER_MACHINE


PHILLY = {
    "drf": "02ba11887952bb3121ccfc7cf5578186a735b591a820676f8ce5cd2b96ab1f02",
    "fifo": "80125b8a2639e315255c37bb0adc04fad829ccc3eddd6a776ab23b38f113a2c9",
    "tiresias": "1948b0d0ae2fc2f478811db3259adb87143819f3d2610d9ae3c4c0cba2473149",
}


@pytest.mark.skipif(default_trace_dir("philly") is None, reason="no Philly trace in ../shared")
@pytest.mark.parametrize("scheduler", sorted(PHILLY))
def test_large_cluster_runs_keep_their_bytes(scheduler: str) -> None:
    wl = trace_cluster(load_trace("philly"), 3000, 300, 300, make_rng(0))
    assert _run(wl, scheduler) == PHILLY[scheduler]


GAVEL_FIFO = "ad0af2e88013eb7a1928628b16d5f8489cf96de03c8d2fc14e161e5ea6ff8400"


@pytest.mark.skipif(not _GAVEL.is_file(), reason=f"no Gavel trace at {_GAVEL}")
def test_gavel_replay_keeps_its_bytes() -> None:
    params = WorkloadParams(extra={"speed": "measured"})
    wl = build_workload("cluster", f"gavel:{_GAVEL}", params, make_rng(0))
    assert _run(wl, "fifo") == GAVEL_FIFO
