"""What-if latency: ``POST /v1/simulate`` with 1,000 jobs queued (issue target: p99 ≤ 200 ms).

A service (FIFO, 10 machines of 4 GPUs, 16 vCPUs, 64 GB, 100 GB, manual clock,
SQLite in a temporary folder) holds 1,000 submitted jobs of the load test's
size; one slot has run, so 10 run and 990 wait.  Then ``questions`` what-if
requests for one more job go through the HTTP API (FastAPI's test client:
the routing, the body checks and the copy of the live state under the
service's lock, without a socket), each looking ``DEFAULT_HORIZON`` slots
ahead.  Figures: the median and the 99th percentile in milliseconds.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from dmlsched.bench import benchmark

QUEUED = 1000


@benchmark("whatif")
def whatif_latency(questions: int = 100) -> dict[str, float]:
    from fastapi.testclient import TestClient

    from dmlsched.service.app import Service, create_app
    from dmlsched.service.core import Core, ServiceConfig
    from dmlsched.service.loadtest import JOB
    from dmlsched.service.schemas import JobRequest, MachineRequest
    from dmlsched.service.store import open_store

    with tempfile.TemporaryDirectory(prefix="dmlsched-bench-whatif-") as tmp:
        store = open_store(str(Path(tmp) / "s.db"))
        core = Core(ServiceConfig(scheduler="fifo"), store).open()
        for h in range(10):
            core.register(MachineRequest(name=f"m{h}", capacity=(4.0, 16.0, 64.0, 100.0)))
        req = JobRequest.model_validate({**JOB, "epochs": 20})
        for _ in range(QUEUED):
            core.submit(req, None)
        core.tick()
        ms = []
        with TestClient(create_app(Service(core))) as client:
            for _ in range(questions):
                t0 = time.perf_counter()
                r = client.post("/v1/simulate", json={**JOB, "epochs": 20})
                ms.append(1000 * (time.perf_counter() - t0))
                r.raise_for_status()
        store.close()
    return {
        "whatif_p50_ms": float(np.percentile(ms, 50)),
        "whatif_p99_ms": float(np.percentile(ms, 99)),
    }
