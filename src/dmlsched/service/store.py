"""The service's durable log: one append-only table of records, SQLite or PostgreSQL.

Every acknowledged request (job submitted or cancelled, machine registered,
progress reported) and every slot's decision is one record, committed before
the request is acknowledged or the decision acted on.  The service's state is
a pure function of the log (:mod:`dmlsched.service.core` replays it), so the
log is the only thing that must survive a crash.

* SQLite (default, a file path): WAL journal, ``synchronous=FULL`` so a
  commit survives the process *and* the machine dying.
* PostgreSQL (a ``postgresql://`` URL, psycopg 3): for a shared deployment;
  one writer at a time, enforced by a session advisory lock.

Records are ``(seq, kind, body)`` with ``body`` a JSON object and ``seq``
1, 2, 3, … without gaps (the single writer numbers them).  Records are
committed in groups (``append_many``: one transaction, one fsync), and a
group is committed only after every earlier one, so the stored log is always
a prefix of what the service applied.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from dmlsched.errors import InvalidInput

__all__ = ["PostgresStore", "Record", "SQLiteStore", "Store", "open_store"]

# one number for "the dmlsched service log" in pg_advisory_lock's key space
_PG_LOCK_KEY = 0x646D6C73
_PG_LOCK_POLLS = 30  # × _PG_LOCK_POLL_S: how long a restart waits for a dead writer's session
_PG_LOCK_POLL_S = 0.1


@dataclass(frozen=True)
class Record:
    seq: int
    kind: str
    body: dict[str, Any]


class Store(Protocol):
    """Append-only, durable, ordered.  ``append`` returns only after the commit."""

    url: str

    def append_many(self, records: list[Record]) -> None:
        """Commit ``records`` (consecutive seqs, after the last stored) in one transaction."""
        ...

    def records(self, since: int = 0, limit: int | None = None) -> Iterator[Record]: ...

    def close(self) -> None: ...


def _dumps(body: dict[str, Any]) -> str:
    # no NaN (standard JSON); keys keep their order: the order of a slot's allocations is
    # the order jobs become active, which schedulers see (view.active) on replay too
    return json.dumps(body, separators=(",", ":"), allow_nan=False)


class SQLiteStore:
    """The log in one SQLite file (WAL, synchronous=FULL)."""

    def __init__(self, path: Path) -> None:
        self.url = str(path)
        self.path = Path(path)

    def open(self) -> SQLiteStore:
        if not self.path.parent.is_dir():
            raise InvalidInput("db", str(self.path), "a file in an existing folder")
        # one connection, used by several threads under our own lock
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS log ("
                "seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL)"
            )
        except sqlite3.DatabaseError as e:
            raise InvalidInput("db", str(self.path), f"a SQLite database ({e})") from None
        return self

    def append_many(self, records: list[Record]) -> None:
        rows = [(r.seq, r.kind, _dumps(r.body)) for r in records]
        with self._lock:
            # one transaction, one fsync of the WAL (synchronous=FULL) for the whole group
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT INTO log(seq, kind, body) VALUES (?, ?, ?)", rows)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def records(self, since: int = 0, limit: int | None = None) -> Iterator[Record]:
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, kind, body FROM log WHERE seq > ? ORDER BY seq LIMIT ?",
                (since, -1 if limit is None else limit),
            ).fetchall()
        for seq, kind, body in rows:
            yield Record(int(seq), kind, json.loads(body))

    def close(self) -> None:
        with self._lock:
            self._db.close()


class PostgresStore:
    """The log in a PostgreSQL table ``dmlsched_log``; one writer (advisory lock)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def open(self) -> PostgresStore:
        import psycopg

        self._lock = threading.Lock()
        try:
            self._db = psycopg.connect(self.url, autocommit=True)
        except psycopg.Error as e:
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise InvalidInput("db", _redact(self.url), f"a reachable PostgreSQL ({msg})") from None
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS dmlsched_log ("
            "seq BIGINT PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL)"
        )
        # A writer killed a moment ago holds the lock until the server notices its session
        # ended (an EOF on its socket, handled when the server gets CPU): poll a few seconds
        # before calling the database someone else's.
        for attempt in range(_PG_LOCK_POLLS):
            got = self._db.execute("SELECT pg_try_advisory_lock(%s)", (_PG_LOCK_KEY,)).fetchone()
            if got and got[0]:
                return self
            if attempt + 1 < _PG_LOCK_POLLS:
                time.sleep(_PG_LOCK_POLL_S)
        self._db.close()
        raise InvalidInput("db", _redact(self.url), "a database no other service writes to")

    def append_many(self, records: list[Record]) -> None:
        rows = [(r.seq, r.kind, _dumps(r.body)) for r in records]
        with self._lock, self._db.transaction(), self._db.cursor() as cur:
            cur.executemany("INSERT INTO dmlsched_log(seq, kind, body) VALUES (%s, %s, %s)", rows)

    def records(self, since: int = 0, limit: int | None = None) -> Iterator[Record]:
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, kind, body FROM dmlsched_log WHERE seq > %s ORDER BY seq LIMIT %s",
                (since, limit),
            ).fetchall()
        for seq, kind, body in rows:
            yield Record(int(seq), kind, json.loads(body))

    def close(self) -> None:
        with self._lock:
            # unlock first: closing only asks the server to end the session, and a service
            # opened right after must not find the lock still held
            self._db.execute("SELECT pg_advisory_unlock(%s)", (_PG_LOCK_KEY,))
            self._db.close()


def _redact(url: str) -> str:
    """The URL without its password, for messages."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
    return url


def open_store(db: str) -> SQLiteStore | PostgresStore:
    """``postgresql://…`` / ``postgres://…`` → PostgreSQL, anything else a SQLite path."""
    if db.startswith(("postgresql://", "postgres://")):
        return PostgresStore(db).open()
    return SQLiteStore(Path(db)).open()
