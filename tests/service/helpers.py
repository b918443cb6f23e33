"""Shared pieces of the service tests: a small job request and a core on a temp db."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dmlsched.service.auth import Tokens, read_token_auth_file
from dmlsched.service.core import Core, ServiceConfig
from dmlsched.service.loadtest import JOB
from dmlsched.service.schemas import JobRequest, MachineRequest
from dmlsched.service.store import open_store

CAPACITY = [4.0, 16.0, 64.0, 100.0]


def job_request(**kw: Any) -> dict[str, Any]:
    """A sync job of ~1-3 slots on one machine under the engine's speed model."""
    body: dict[str, Any] = dict(JOB)  # the load test's job: one definition
    body.update(kw)
    return body


def make_core(path: Path, scheduler: str = "fifo", **kw: Any) -> Core:
    cfg = ServiceConfig(scheduler=scheduler, **kw)
    return Core(cfg, open_store(str(path))).open()


def add_machines(core: Core, n: int = 3) -> None:
    for i in range(n):
        core.register(MachineRequest(name=f"m{i}", capacity=tuple(CAPACITY)))


def submit(core: Core, n: int, start: int = 0, **kw: Any) -> None:
    for i in range(n):
        core.submit(JobRequest.model_validate(job_request(**kw)), key=f"k{start + i}")


# identities of the tests' services: (token, name, role[, machine])
ADMIN = "admin-token"
ALICE = "alice-token"
BOB = "bob-token"
AGENT0 = "agent0-token"
AGENT1 = "agent1-token"
IDENTITIES: tuple[tuple[str, ...], ...] = (
    (ALICE, "alice", "user"),
    (BOB, "bob", "user"),
    (AGENT0, "agent-m0", "agent", "m0"),
    (AGENT1, "agent-m1", "agent", "m1"),
)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def tokens(folder: Path) -> Tokens:
    """The tests' identities (an admin + IDENTITIES) as the service reads them."""
    from dmlsched.service.loadtest import write_secret

    lines = [(ADMIN, "admin", "admin"), *IDENTITIES]
    path = write_secret(folder / "auth.csv", "".join(",".join(x) + "\n" for x in lines))
    return read_token_auth_file(path)
