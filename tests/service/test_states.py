"""Job states are an Enum whose members are the strings the API, log and snapshots carry."""

from __future__ import annotations

import json
import pickle

from dmlsched.service.states import FINISHED, LIVE, JobStatus


def test_each_member_is_its_string_in_every_encoding() -> None:
    for s in JobStatus:
        assert s == s.value == s.name and str(s) == s.value and f"{s}" == s.value
        assert json.dumps({"state": s}) == json.dumps({"state": s.value})
        assert hash(s) == hash(s.value) and {s.value: 1}[s] == 1
        assert pickle.loads(pickle.dumps(s)) is s


def test_the_states_and_their_groups() -> None:
    assert [s.value for s in JobStatus] == [
        "queued", "pending", "running", "admitted", "completed", "rejected", "cancelled",
    ]  # fmt: skip
    assert not FINISHED & LIVE
    assert set(JobStatus) - FINISHED - LIVE == {JobStatus.queued}
    assert "completed" in FINISHED and "queued" not in LIVE
