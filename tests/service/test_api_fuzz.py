"""Fuzzing the HTTP API's bodies: every answer is a success or a 4xx whose ``detail`` is
one line, never a 500; what the service accepted then runs on its clock without failing.

Bodies start from a valid request and have fields replaced, dropped or added with any
JSON value (huge and tiny numbers, wrong types, nesting), or are arbitrary JSON (or
bytes) altogether.  The TestClient re-raises an exception the app did not turn into an
answer, so a traceback fails the test.  ``derandomize=True``: the same examples on every
machine.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from dmlsched.service.app import Service, create_app
from dmlsched.service.core import Core, ServiceConfig
from dmlsched.service.store import open_store
from tests.conftest import fuzz
from tests.service.helpers import (
    ADMIN,
    AGENT0,
    ALICE,
    CAPACITY,
    bearer,
    job_request,
    make_core,
    tokens,
)

FUZZ = fuzz(60)

_NUMBERS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -1, 1, 0.5, 1e-300, 1e300, 2**63, -(2**63) - 1]),
)
_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), _NUMBERS, st.text(max_size=12)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_UTILITIES = st.fixed_dictionaries(
    {"kind": st.sampled_from(["sigmoid", "linear", "step", "cubic", ""])},
    optional={
        k: st.one_of(_NUMBERS, _VALUES) for k in ("theta1", "theta2", "theta3", "value", "slope")
    },
)


@st.composite
def _job_bodies(draw: st.DrawFn) -> object:
    if draw(st.integers(0, 9)) == 0:
        return draw(_VALUES)  # not even an object
    body: dict[str, Any] = job_request()
    keys = [*body, "utility", "deadline", "value", "max_runtime", "name", "mode"]
    for key in draw(st.lists(st.sampled_from(keys), max_size=4, unique=True)):
        choice = draw(st.integers(0, 3))
        if choice == 0:
            body.pop(key, None)
        elif choice == 1 and key == "utility":
            body[key] = draw(_UTILITIES)
        elif choice == 1:
            body[key] = draw(_NUMBERS)
        else:
            body[key] = draw(_VALUES)
    if draw(st.booleans()):
        body[draw(st.text(min_size=1, max_size=8))] = draw(_VALUES)
    return body


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    core = make_core(tmp_path / "s.db", "fifo")
    with TestClient(create_app(Service(core, tokens=tokens(tmp_path))), headers=bearer(ADMIN)) as c:
        for i in range(2):
            r = c.post("/v1/machines", json={"name": f"m{i}", "capacity": CAPACITY})
            assert r.status_code == 201
        yield c


def _answered(r: Any) -> bool:
    """True for a success; a refusal must be a 4xx with a one-line ``detail``."""
    assert r.status_code < 500, (r.status_code, r.text)
    if r.status_code < 400:
        return True
    detail = r.json()["detail"]
    assert isinstance(detail, str) and detail and "\n" not in detail, detail
    return False


def _post(client: TestClient, url: str, body: object) -> Any:
    # allow_nan: JSON's NaN and Infinity tokens are what a careless client sends
    data = json.dumps(body, allow_nan=True).encode()
    return client.post(url, content=data, headers={"content-type": "application/json"})


@FUZZ
@given(bodies=st.lists(_job_bodies(), min_size=1, max_size=4))
def test_any_job_body_gets_a_success_or_a_one_line_4xx_and_the_clock_runs(
    client: TestClient, bodies: list[object]
) -> None:
    accepted = [_answered(_post(client, "/v1/jobs", b)) for b in bodies]
    if any(accepted):  # what was acknowledged is scheduled, slot after slot, without failing
        for _ in range(3):
            assert client.post("/v1/tick").status_code == 200
    assert client.get("/v1/jobs").status_code == 200


@FUZZ
@given(
    body=st.one_of(
        _VALUES,
        st.fixed_dictionaries(
            {"name": st.one_of(st.text(max_size=70), _VALUES)},
            optional={"capacity": st.one_of(st.lists(_NUMBERS, max_size=6), _VALUES)},
        ),
    )
)
def test_any_machine_body_gets_a_success_or_a_one_line_4xx(
    client: TestClient, body: object
) -> None:
    _answered(_post(client, "/v1/machines", body))
    assert client.post("/v1/tick").status_code == 200


@FUZZ
@given(
    body=st.one_of(
        _VALUES,
        st.fixed_dictionaries(
            {"job": _NUMBERS, "incarnation": _NUMBERS, "work": _NUMBERS},
            optional={"loss": _VALUES, "resumed": _NUMBERS},
        ),
    ),
    since=st.one_of(st.text(max_size=6), _NUMBERS.map(str)),
    job=st.one_of(st.text(min_size=1, max_size=6), _NUMBERS.map(str)),
)
def test_any_progress_report_query_or_job_id_gets_a_success_or_a_one_line_4xx(
    client: TestClient, body: object, since: str, job: str
) -> None:
    _answered(_post(client, "/v1/agents/m0/progress", body))
    _answered(client.get("/v1/events", params={"since": since}))
    path = "/v1/jobs/" + quote(job, safe="")  # any text, as one path segment
    _answered(client.get(path))
    _answered(client.delete(path))


@FUZZ
@given(
    bodies=st.lists(_job_bodies(), min_size=1, max_size=3),
    wrap=st.booleans(),
    horizon=st.one_of(st.integers(1, 60), _NUMBERS.map(str)),
)
def test_any_what_if_body_gets_a_success_or_a_one_line_4xx(
    client: TestClient, bodies: list[object], wrap: bool, horizon: str
) -> None:
    body = {"jobs": bodies} if wrap else bodies[0]
    r = client.post(
        "/v1/simulate",
        params={"horizon": horizon},
        content=json.dumps(body, allow_nan=True).encode(),
        headers={"content-type": "application/json"},
    )
    if _answered(r):
        assert len(r.json()["jobs"]) == (len(bodies) if wrap else 1)
    assert client.get("/v1/jobs").json() == []  # a what-if commits nothing


@FUZZ
@given(
    params=st.dictionaries(
        st.sampled_from(["state", "since_id", "limit", "jobs", "n"]),
        st.one_of(st.text(max_size=8), _NUMBERS.map(str)),
        max_size=3,
    ),
    name=st.text(min_size=1, max_size=10),
)
def test_any_query_or_machine_name_gets_a_success_or_a_one_line_4xx(
    client: TestClient, params: dict[str, str], name: str
) -> None:
    for path in ("/v1/jobs", "/v1/state", "/v1/machines", "/v1/allocation"):
        _answered(client.get(path, params=params))
    if "n" not in params or params["n"] in {str(i) for i in range(1, 4)}:
        _answered(client.post("/v1/tick", params=params))
    _answered(client.post(f"/v1/agents/{quote(name, safe='')}/heartbeat"))


@pytest.fixture
def placed(tmp_path: Path) -> Iterator[tuple[TestClient, int, int]]:
    """A measured-progress service whose agent m0 holds the PS of a running job:
    (the agent's client, the job, its incarnation)."""
    cfg = ServiceConfig("fifo", progress="measured", params={"max_workers": 1})
    core = Core(cfg, open_store(str(tmp_path / "p.db")), clock=lambda: 0.0).open()
    with TestClient(create_app(Service(core, tokens=tokens(tmp_path)))) as c:
        body = {"name": "m0", "capacity": CAPACITY, "agent": True}
        assert c.post("/v1/machines", json=body, headers=bearer(ADMIN)).status_code == 201
        c.headers.update(bearer(AGENT0))
        assert c.post("/v1/machines", json={"name": "m0", "agent": True}).status_code == 201
        job = c.post("/v1/jobs", json=job_request(epochs=400), headers=bearer(ALICE)).json()["id"]
        c.post("/v1/agents/m0/heartbeat")
        assert c.post("/v1/tick", headers=bearer(ADMIN)).status_code == 200
        tasks = c.post("/v1/agents/m0/heartbeat").json()["tasks"]
        inc = next(t["incarnation"] for t in tasks if t["job"] == job)
        yield c, job, inc


_WORK = st.one_of(st.floats(0, 1e6), _NUMBERS)


@FUZZ
@given(
    reports=st.lists(
        st.fixed_dictionaries(
            {"work": _WORK, "incarnation": st.one_of(st.integers(-1, 1), _NUMBERS)},
            optional={"loss": st.one_of(_NUMBERS, _VALUES), "resumed": _WORK},
        ),
        min_size=1,
        max_size=4,
    )
)
def test_any_progress_on_a_real_placement_gets_a_success_or_a_one_line_4xx(
    placed: tuple[TestClient, int, int], reports: list[dict[str, Any]]
) -> None:
    c, job, inc = placed
    for r in reports:
        off = r["incarnation"]  # -1, 0, 1: the placement's incarnation, or one either side
        r["incarnation"] = inc + off if type(off) is int and abs(off) <= 1 else off
        _answered(_post(c, "/v1/agents/m0/progress", {"job": job, **r}))
    c.post("/v1/agents/m0/heartbeat")
    assert c.post("/v1/tick", headers=bearer(ADMIN)).status_code == 200
    done = c.get(f"/v1/jobs/{job}", headers=bearer(ALICE)).json()["done"]
    assert math.isfinite(done) and done >= 0
