"""Identities, roles and per-identity rate limits of the service.

**Static token file** (``dmlsched serve --token-auth-file FILE``), as the
Kubernetes API server's ``--token-auth-file``: a CSV, one identity a line,
``token,name,role[,machine]``; blank lines and lines starting with ``#`` are
skipped.  ``role`` is one of

* ``admin`` — everything: declares machines and their capacities, ticks the
  manual clock, reads the event log (the audit trail), acts on every job;
* ``user`` — submits jobs, reads and cancels *its own* jobs, reads the
  cluster (machines, allocation, its view of the dashboard, metrics);
* ``agent`` — acts only for its ``machine`` (the Kubernetes NodeRestriction
  model): joins it with at most the capacity an admin declared, heartbeats,
  reports progress of the jobs placed there.  Nothing else.

The file must not be readable by group or others (``chmod 600``): a token is a
password.  Tokens are kept only as SHA-256 digests and looked up by digest, so
no comparison leaks a token's prefix through timing.

``--insecure-local`` replaces the file by one identity, :data:`LOCAL` (an
admin), for every request — and the service then listens on 127.0.0.1 only.
"""

from __future__ import annotations

import csv
import hashlib
import math
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dmlsched.errors import InvalidInput

__all__ = [
    "LOCAL",
    "ROLES",
    "Identity",
    "RateLimiter",
    "Tokens",
    "read_token_auth_file",
    "read_token_file",
]

ROLES: tuple[str, ...] = ("admin", "user", "agent")


@dataclass(frozen=True)
class Identity:
    """Who sent a request: a name (recorded in the log with what it did), a role and,
    for an agent, the one machine it may act for."""

    name: str
    role: str
    machine: str | None = None

    @property
    def admin(self) -> bool:
        return self.role == "admin"


LOCAL = Identity("local", "admin")  # --insecure-local: every request


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class Tokens:
    """Bearer token → identity."""

    def __init__(self, identities: dict[bytes, Identity]) -> None:
        self._by_digest = identities

    def identify(self, token: str) -> Identity | None:
        return self._by_digest.get(_digest(token))

    def __len__(self) -> int:
        return len(self._by_digest)


def read_token_auth_file(path: Path) -> Tokens:
    """The identities of a static token file (module docstring); bad lines are an
    :class:`InvalidInput` naming the line and the field."""
    field = "token-auth-file"
    try:
        st = path.stat()
    except OSError as e:
        raise InvalidInput(field, str(path), f"a readable file ({e.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise InvalidInput(field, str(path), "a regular file")
    if st.st_mode & 0o077:
        raise InvalidInput(
            field,
            str(path),
            f"a file only its owner can read (chmod 600), not mode {stat.S_IMODE(st.st_mode):04o}",
        )
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInput(field, str(path), f"a readable text file ({e})") from None
    out: dict[bytes, Identity] = {}
    names: dict[str, Identity] = {}
    for n, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        where = f"{path} line {n}"
        cells = [c.strip() for c in row]
        if len(cells) not in (3, 4):
            raise InvalidInput("fields", len(cells), "token,name,role[,machine]", where)
        token, name, role = cells[:3]
        machine = cells[3] if len(cells) == 4 and cells[3] else None
        if not token or any(ch.isspace() for ch in token):
            raise InvalidInput("token", "…", "a token without spaces", where)
        if not name:
            raise InvalidInput("name", name, "a name", where)
        if role not in ROLES:
            raise InvalidInput("role", role, " | ".join(ROLES), where)
        if (role == "agent") != (machine is not None):
            raise InvalidInput("machine", machine, "a machine name for an agent only", where)
        ident = Identity(name, role, machine)
        if _digest(token) in out:
            raise InvalidInput("token", "…", "a token of one identity only", where)
        if names.get(name, ident) != ident:
            raise InvalidInput("name", name, "one role (and machine) per name", where)
        out[_digest(token)] = names[name] = ident
    if not out:
        raise InvalidInput(field, str(path), "at least one line token,name,role[,machine]")
    return Tokens(out)


class RateLimiter:
    """A token bucket per identity: ``rate`` requests per second, bursts of ``burst``.

    :meth:`take` answers 0 (go) or the seconds until the next request is allowed.
    """

    def __init__(
        self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not (rate > 0 and math.isfinite(rate)):
            raise InvalidInput("rate-limit", rate, "> 0 requests per second")
        self.rate = rate
        self.burst = max(1.0, burst)
        self.clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}  # name -> (tokens, at)

    def take(self, who: str) -> float:
        now = self.clock()
        with self._lock:
            tokens, at = self._buckets.get(who, (self.burst, now))
            tokens = min(self.burst, tokens + (now - at) * self.rate)
            if tokens >= 1.0:
                self._buckets[who] = (tokens - 1.0, now)
                return 0.0
            self._buckets[who] = (tokens, now)
            return (1.0 - tokens) / self.rate


def read_token_file(path: Path | None) -> str | None:
    """A client's own bearer token: one token in a file only its owner can read."""
    if path is None:
        return None
    try:
        mode = path.stat().st_mode
        token = path.read_text().strip()
    except OSError as e:
        raise InvalidInput("token-file", str(path), f"a readable file ({e.strerror})") from None
    if mode & 0o077:
        raise InvalidInput(
            "token-file",
            str(path),
            f"a file only its owner can read (chmod 600), not {mode & 0o777:04o}",
        )
    if not token or len(token.split()) != 1:
        raise InvalidInput("token-file", str(path), "a file holding one token")
    return token
