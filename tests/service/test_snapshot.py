"""Snapshots: a restart from one rebuilds exactly what the whole log does, and decides alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from dmlsched.service.app import Service, create_app
from tests.service.helpers import ADMIN, add_machines, bearer, job_request, make_core, submit
from tests.service.test_core import _drive, _state


@pytest.mark.parametrize("scheduler", ["fifo", "pd-ors", "tiresias"])
def test_a_restart_from_a_snapshot_rebuilds_the_state_and_the_next_decisions(
    tmp_path: Path, scheduler: str
) -> None:
    a = make_core(tmp_path / "a.db", scheduler, window=20)
    ref = make_core(tmp_path / "ref.db", scheduler, window=20)  # never restarted
    for core in (a, ref):
        add_machines(core, 2)
        _drive(core, [2, 1, 0, 3])
    a.snapshot()  # mid-epoch: the scheduler's own state is in it
    for core in (a, ref):
        _drive(core, [1, 0, 2])
    a.store.close()
    b = make_core(tmp_path / "a.db", scheduler, window=20)
    assert b.snapshot_seq > 0  # restored, not replayed from the start
    assert _state(b) == _state(ref)
    assert b.replay_mismatches == 0
    submit(ref, 2, start=100)
    submit(b, 2, start=100)
    for _ in range(4):
        assert ref.tick()["alloc"] == b.tick()["alloc"]
    assert _state(b) == _state(ref)


@pytest.mark.parametrize("damage", ["truncated", "another version"])
def test_a_snapshot_it_cannot_use_is_ignored(tmp_path: Path, damage: str) -> None:
    a = make_core(tmp_path / "a.db", "fifo")
    add_machines(a, 2)
    _drive(a, [2, 1])
    seq = a.snapshot()
    stored = a.store.latest_snapshot()
    assert stored is not None
    blob = stored[1]
    if damage == "truncated":
        blob = blob[:-10]
    else:
        blob = blob.replace(b'"version": "', b'"version": "0.0.0-', 1)
    a.store.save_snapshot(seq, blob)
    want = _state(a)
    a.store.close()
    b = make_core(tmp_path / "a.db", "fifo")
    assert b.snapshot_seq == 0 and _state(b) == want  # the whole log instead
    b.store.close()


def test_a_snapshot_of_a_scheduler_older_than_this_code_is_ignored(tmp_path: Path) -> None:
    # the same version string, but the pickled pd-ors+ predates its ``rounding`` option
    import json
    import pickle

    a = make_core(tmp_path / "a.db", "pd-ors+", window=20)
    add_machines(a, 2)
    _drive(a, [2, 1, 0])
    seq = a.snapshot()
    stored = a.store.latest_snapshot()
    assert stored is not None
    blob = stored[1]
    n = int.from_bytes(blob[:4], "big")
    state = pickle.loads(blob[4 + n :])
    assert state["scheduler"] is not None
    del state["scheduler"].rounding
    head = json.loads(blob[4 : 4 + n])
    raw = json.dumps(head).encode()
    a.store.save_snapshot(seq, len(raw).to_bytes(4, "big") + raw + pickle.dumps(state))
    want = _state(a)
    a.store.close()
    b = make_core(tmp_path / "a.db", "pd-ors+", window=20)
    assert b.snapshot_seq == 0 and _state(b) == want  # the whole log instead
    b.store.close()


def test_the_service_takes_a_snapshot_every_so_many_records(tmp_path: Path) -> None:
    core = make_core(tmp_path / "s.db", "fifo")
    with TestClient(
        create_app(Service(core, tokens=None, snapshot_every=10)), headers=bearer(ADMIN)
    ) as c:
        c.post("/v1/machines", json={"name": "m0", "capacity": [4, 16, 64, 100]})
        for _ in range(12):
            c.post("/v1/jobs", json=job_request())
        c.post("/v1/tick")
        assert 'dmlsched_snapshots_total{outcome="taken"} 1.0' in c.get("/metrics").text
        seq = c.get("/healthz").json()["seq"]
    stored = core.store.latest_snapshot()
    assert stored is not None and stored[0] == seq
    core.store.close()
