"""`dmlsched serve` stopped by a supervisor's SIGTERM or a Ctrl-C shuts down through its own
cleanup (the executor stops its runs, the store closes) and exits 0 or 130."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from dmlsched.service.quickstart import QuickStart


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_a_stop_signal_to_the_service_alone_ends_it_through_its_cleanup(
    tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    qs = QuickStart(tmp_path, slot_seconds=2.0)  # the local executor embedded
    try:
        qs.start()
        proc = qs.service.proc
        assert proc is not None
        os.kill(proc.pid, sig)  # the process only, as a supervisor signals its main process
        # uvicorn raises a caught SIGTERM again after its own shutdown unless serve handles
        # it: the process would die (-15) before its executor's runs stop and its store closes
        assert proc.wait(timeout=60) == code
    finally:
        qs.stop()
