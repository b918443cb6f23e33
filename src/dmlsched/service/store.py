"""The service's durable log: one append-only table of records, SQLite or PostgreSQL.

Every acknowledged request (job submitted or cancelled, machine registered,
progress reported) and every slot's decision is one record, committed before
the request is acknowledged or the decision acted on.  The service's state is
a pure function of the log (:mod:`dmlsched.service.core` replays it), so the
log is the only thing that must survive a crash.

* SQLite (default, a file path): WAL journal, ``synchronous=FULL`` so a
  commit survives the process *and* the machine dying.  One writer: the
  service holds an exclusive ``flock`` on ``<file>.lock`` (released by the
  kernel when the process dies, however it dies), which names the holder; a
  second service on the same file is refused (exit 2) with that name.
* PostgreSQL (a ``postgresql://`` URL, psycopg 3): for a shared deployment;
  one writer at a time, enforced by a session advisory lock.  A lost
  connection (the server restarted, the network dropped) is reconnected with
  backoff for up to ``retry_seconds``; the lock is taken again and the log's
  last seq checked — a group whose commit's outcome was unknown is found
  committed, or written again, or, if another writer wrote meanwhile, the
  store gives up.  Giving up raises :class:`StoreUnavailable`: the service
  then exits non-zero for its supervisor, never stays up broken.

Records are ``(seq, kind, body)`` with ``body`` a JSON object and ``seq``
1, 2, 3, … without gaps (the single writer numbers them).  Records are
committed in groups (``append_many``: one transaction, one fsync), and a
group is committed only after every earlier one, so the stored log is always
a prefix of what the service applied.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from dmlsched.errors import DmlschedError, InvalidInput

__all__ = [
    "PostgresStore",
    "Record",
    "SQLiteStore",
    "Store",
    "StoreUnavailable",
    "open_store",
]

# one number for "the dmlsched service log" in pg_advisory_lock's key space
_PG_LOCK_KEY = 0x646D6C73
_PG_LOCK_POLLS = 30  # × _PG_LOCK_POLL_S: how long a restart waits for a dead writer's session
_PG_LOCK_POLL_S = 0.1
_PG_RETRY_S = 30.0  # default: how long a lost PostgreSQL is reconnected before giving up
_BACKOFF_FIRST_S = 0.05
_BACKOFF_MAX_S = 2.0

T = TypeVar("T")


class StoreUnavailable(DmlschedError):
    """The log cannot be written any more (unreachable past the retry budget, or taken
    over by another writer).  The service exits non-zero: a supervisor restarts it."""


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

    def last_seq(self) -> int:
        """The seq of the last committed record (0: none)."""
        ...

    def save_snapshot(self, seq: int, blob: bytes) -> None:
        """Keep ``blob`` as the state after record ``seq`` (older snapshots go)."""
        ...

    def latest_snapshot(self) -> tuple[int, bytes] | None:
        """The newest snapshot ``(seq, blob)``, if any."""
        ...

    def close(self) -> None: ...


def _dumps(body: dict[str, Any]) -> str:
    # no NaN (standard JSON); keys keep their order: the order of a slot's allocations is
    # the order jobs become active, which schedulers see (view.active) on replay too
    return json.dumps(body, separators=(",", ":"), allow_nan=False)


class SQLiteStore:
    """The log in one SQLite file (WAL, synchronous=FULL), one writer (``<file>.lock``)."""

    def __init__(self, path: Path) -> None:
        self.url = str(path)
        self.path = Path(path)

    def open(self) -> SQLiteStore:
        if not self.path.parent.is_dir():
            raise InvalidInput("db", str(self.path), "a file in an existing folder")
        self._hold_lock()
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
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS snapshot (seq INTEGER PRIMARY KEY, body BLOB NOT NULL)"
            )
        except sqlite3.DatabaseError as e:
            self._release_lock()
            raise InvalidInput("db", str(self.path), f"a SQLite database ({e})") from None
        return self

    def _hold_lock(self) -> None:
        """An exclusive flock on ``<file>.lock`` for as long as this process lives.

        The file names the holder (pid, host, command, since) for the refusal message;
        the lock, not the file, is what counts, so a crashed holder's file is reused.
        """
        lock_path = self.path.with_name(self.path.name + ".lock")
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as e:
            raise InvalidInput("db", str(self.path), f"a writable folder ({e.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 1000, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise InvalidInput(
                "db", str(self.path), f"a database no other service writes to; held by {holder}"
            ) from None
        cmd = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))
        since = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        note = f"pid {os.getpid()} on {socket.gethostname()} ({cmd[:200]}) since {since}"
        os.ftruncate(fd, 0)
        os.pwrite(fd, note.encode() + b"\n", 0)
        self._lock_fd: int | None = fd

    def _release_lock(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # closing the last descriptor releases the flock

    def append_many(self, records: list[Record]) -> None:
        rows = [(r.seq, r.kind, _dumps(r.body)) for r in records]
        with self._lock:
            # one transaction, one fsync of the WAL (synchronous=FULL) for the whole group
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT INTO log(seq, kind, body) VALUES (?, ?, ?)", rows)
                self._db.execute("COMMIT")
            except BaseException:
                # COMMIT itself may fail (disk full): never leave the transaction open,
                # or every later BEGIN fails and the store stays broken
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise

    def records(self, since: int = 0, limit: int | None = None) -> Iterator[Record]:
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, kind, body FROM log WHERE seq > ? ORDER BY seq LIMIT ?",
                (since, -1 if limit is None else limit),
            ).fetchall()
        for seq, kind, body in rows:
            yield Record(int(seq), kind, json.loads(body))

    def last_seq(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT max(seq) FROM log").fetchone()
        return int(row[0] or 0)

    def save_snapshot(self, seq: int, blob: bytes) -> None:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO snapshot(seq, body) VALUES (?, ?)", (seq, blob)
                )
                self._db.execute("DELETE FROM snapshot WHERE seq < ?", (seq,))
                self._db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise

    def latest_snapshot(self) -> tuple[int, bytes] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT seq, body FROM snapshot ORDER BY seq DESC LIMIT 1"
            ).fetchone()
        return None if row is None else (int(row[0]), bytes(row[1]))

    def close(self) -> None:
        with self._lock:
            self._db.close()
        self._release_lock()


class PostgresStore:
    """The log in a PostgreSQL table ``dmlsched_log``; one writer (advisory lock).

    A lost connection is reconnected with backoff for up to ``retry_seconds``
    (module docstring); past that, or if another writer took the log over,
    :class:`StoreUnavailable`.
    """

    def __init__(self, url: str, retry_seconds: float = _PG_RETRY_S) -> None:
        self.url = url
        self.retry_seconds = retry_seconds
        self.reconnects = 0

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
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS dmlsched_snapshot ("
            "seq BIGINT PRIMARY KEY, body BYTEA NOT NULL)"
        )
        if not self._take_lock():
            self._db.close()
            raise InvalidInput("db", _redact(self.url), "a database no other service writes to")
        return self

    def _take_lock(self) -> bool:
        # A writer killed a moment ago holds the lock until the server notices its session
        # ended (an EOF on its socket, handled when the server gets CPU): poll a few seconds
        # before calling the database someone else's.
        for attempt in range(_PG_LOCK_POLLS):
            got = self._db.execute("SELECT pg_try_advisory_lock(%s)", (_PG_LOCK_KEY,)).fetchone()
            if got and got[0]:
                return True
            if attempt + 1 < _PG_LOCK_POLLS:
                time.sleep(_PG_LOCK_POLL_S)
        return False

    def _reconnect(self, cause: Exception) -> None:
        """A new session holding the writer lock, within the retry budget, or give up."""
        import psycopg

        with contextlib.suppress(Exception):
            self._db.close()
        deadline = time.monotonic() + self.retry_seconds
        pause = _BACKOFF_FIRST_S
        last: Exception = cause
        while time.monotonic() < deadline:
            try:
                self._db = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
            except psycopg.Error as e:
                last = e
                time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
                pause = min(2 * pause, _BACKOFF_MAX_S)
                continue
            self.reconnects += 1
            if self._take_lock():
                return
            self._db.close()
            raise StoreUnavailable(
                f"PostgreSQL {_redact(self.url)}: another service took the log over"
            )
        raise StoreUnavailable(
            f"PostgreSQL {_redact(self.url)} unreachable for {self.retry_seconds:g} s "
            f"({_first_line(last)})"
        )

    def _retrying(self, op: Callable[[], T]) -> T:
        import psycopg

        with self._lock:
            try:
                return op()
            except (psycopg.OperationalError, psycopg.InterfaceError) as e:
                self._reconnect(e)
            return op()  # once more on the new session; a second failure is the caller's

    def append_many(self, records: list[Record]) -> None:
        import psycopg

        rows = [(r.seq, r.kind, _dumps(r.body)) for r in records]

        def insert() -> None:
            with self._db.transaction(), self._db.cursor() as cur:
                cur.executemany(
                    "INSERT INTO dmlsched_log(seq, kind, body) VALUES (%s, %s, %s)", rows
                )

        with self._lock:
            try:
                insert()
                return
            except (psycopg.OperationalError, psycopg.InterfaceError) as e:
                self._reconnect(e)
            # the commit's outcome is unknown: the log says whether it happened
            last = self._last_seq()
            if last >= records[-1].seq:
                return  # it was committed before the connection went
            if last != records[0].seq - 1:
                raise StoreUnavailable(
                    f"PostgreSQL {_redact(self.url)}: the log ends at seq {last}, "
                    f"this service wrote up to {records[0].seq - 1}: another writer"
                )
            insert()

    def records(self, since: int = 0, limit: int | None = None) -> Iterator[Record]:
        rows = self._retrying(
            lambda: self._db.execute(
                "SELECT seq, kind, body FROM dmlsched_log WHERE seq > %s ORDER BY seq LIMIT %s",
                (since, limit),
            ).fetchall()
        )
        for seq, kind, body in rows:
            yield Record(int(seq), kind, json.loads(body))

    def _last_seq(self) -> int:
        row = self._db.execute("SELECT max(seq) FROM dmlsched_log").fetchone()
        return int(row[0] or 0) if row else 0

    def last_seq(self) -> int:
        return self._retrying(self._last_seq)

    def save_snapshot(self, seq: int, blob: bytes) -> None:
        def save() -> None:
            with self._db.transaction():
                self._db.execute(
                    "INSERT INTO dmlsched_snapshot(seq, body) VALUES (%s, %s) "
                    "ON CONFLICT (seq) DO UPDATE SET body = EXCLUDED.body",
                    (seq, blob),
                )
                self._db.execute("DELETE FROM dmlsched_snapshot WHERE seq < %s", (seq,))

        self._retrying(save)

    def latest_snapshot(self) -> tuple[int, bytes] | None:
        row = self._retrying(
            lambda: self._db.execute(
                "SELECT seq, body FROM dmlsched_snapshot ORDER BY seq DESC LIMIT 1"
            ).fetchone()
        )
        return None if row is None else (int(row[0]), bytes(row[1]))

    def close(self) -> None:
        with self._lock, contextlib.suppress(Exception):
            # unlock first: closing only asks the server to end the session, and a service
            # opened right after must not find the lock still held
            self._db.execute("SELECT pg_advisory_unlock(%s)", (_PG_LOCK_KEY,))
        with contextlib.suppress(Exception):
            self._db.close()


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _redact(url: str) -> str:
    """The URL without its password, for messages."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
    return url


def open_store(db: str, *, retry_seconds: float = _PG_RETRY_S) -> SQLiteStore | PostgresStore:
    """``postgresql://…`` / ``postgres://…`` → PostgreSQL, anything else a SQLite path."""
    if db.startswith(("postgresql://", "postgres://")):
        return PostgresStore(db, retry_seconds).open()
    return SQLiteStore(Path(db)).open()
