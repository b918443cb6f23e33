"""The service's restart time on a long log (opt-in: ``dmlsched bench --only service-restart``).

A log of ``DMLSCHED_BENCH_RECORDS`` records (default 1,000,000) is made the way
a live service makes one — FIFO on 64 machines kept busy (new jobs are
submitted whenever fewer than 32 wait, as a saturated cluster's users do),
measured progress, every running job's PS-0 agent reporting its counter once
a slot (progress records are most of a real log) — in a SQLite file
(``DMLSCHED_BENCH_DB``, kept; default a temporary one), snapshots taken every
``SNAPSHOT_EVERY`` records as ``dmlsched serve`` takes them.  Then a restart
— open the store, load the snapshot, apply the log after it — is timed
(median of 3).  Making the log takes minutes; the restart is the figure
(target: ≤ 3 s at 1M records).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from dmlsched.bench import benchmark

__all__ = ["make_log", "restart_seconds"]

_CAPACITY = (4.0, 16.0, 64.0, 100.0)
_MACHINES = 64
_QUEUE = 32  # jobs kept waiting: a busy cluster, not an ever-growing backlog


def make_log(db: Path, records: int, snapshot_every: int) -> dict[str, float]:
    """A live-like log of at least ``records`` records in ``db``; what it holds."""
    from dmlsched.service.app import SNAPSHOT_EVERY  # noqa: F401  (the service's cadence)
    from dmlsched.service.core import Core, ServiceConfig, credit_bound
    from dmlsched.service.loadtest import JOB
    from dmlsched.service.schemas import JobRequest, MachineRequest
    from dmlsched.service.store import open_store

    cfg = ServiceConfig("fifo", progress="measured", params={"max_workers": 2})
    core = Core(cfg, open_store(str(db)), agent_timeout=0).open()
    core.group_commit = True
    for i in range(_MACHINES):
        core.register(MachineRequest(name=f"m{i}", capacity=_CAPACITY))
    req = JobRequest.model_validate({**JOB, "epochs": 20})
    k = 0
    t0 = time.perf_counter()
    while core.seq < records:
        while len(core.pending) + len(core.queued) < _QUEUE:
            core.submit(req, key=f"k{k}", by=f"user-{k % 7}")
            k += 1
        core.tick()
        for j in list(core.active):
            js = core.jobs[j]
            if js.placement is None:
                continue
            holder = min(
                m for m, s in zip(js.placement.machines, js.placement.ps, strict=True) if s
            )
            work = js.done + core.uncredited.get(j, 0.0) + credit_bound(js.rate, 1) / 8
            rep = {"job": j, "incarnation": js.placed_since, "work": work, "loss": 1.0}
            core.report(core.machines[holder].name, rep, by=f"agent-m{holder}")
        core.flush()
        if core.seq - core.snapshot_seq >= snapshot_every:
            core.snapshot()
    out = {
        "records": float(core.seq),
        "jobs": float(len(core.jobs)),
        "slots": float(core.slot),
        "make_s": time.perf_counter() - t0,
    }
    core.store.close()
    return out


def restart_seconds(db: Path, repeats: int = 3) -> tuple[float, int, int]:
    """Median seconds to open the service's state from ``db``; the snapshot's seq and the
    records applied after it."""
    from dmlsched.service.core import Core, ServiceConfig
    from dmlsched.service.store import open_store

    cfg = ServiceConfig("fifo", progress="measured", params={"max_workers": 2})
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        core = Core(cfg, open_store(str(db)), agent_timeout=0).open()
        times.append(time.perf_counter() - t0)
        snap, seq = core.snapshot_seq, core.seq
        core.store.close()
    return statistics.median(times), snap, seq - snap


@benchmark("service-restart", default=False)
def service_restart() -> dict[str, float]:
    from dmlsched.service.app import SNAPSHOT_EVERY

    records = int(os.environ.get("DMLSCHED_BENCH_RECORDS", "1000000"))
    keep = os.environ.get("DMLSCHED_BENCH_DB")
    with tempfile.TemporaryDirectory(prefix="dmlsched-restart-") as tmp:
        db = Path(keep) if keep else Path(tmp) / "service.db"
        made = make_log(db, records, SNAPSHOT_EVERY)
        seconds, _, after = restart_seconds(db)
    return {
        "service_restart_s": seconds,
        "service_restart_records": made["records"],
        "service_restart_jobs": made["jobs"],
        "service_restart_replayed_records": float(after),
        "service_restart_make_log_s": made["make_s"],
    }
