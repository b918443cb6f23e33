"""A throwaway PostgreSQL server in a temp folder (for tests and ``make bench-service``).

Debian's ``postgresql`` binaries (``make test-deps`` installs them as root), run as the
``postgres`` user through ``runuser``: so it needs root.  The cluster listens on a Unix
socket only (no TCP port), is started with ``fsync=on`` (commits are durable, as in
production) and is stopped and deleted by :meth:`ThrowawayPostgres.close`.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["ThrowawayPostgres", "why_not"]


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def why_not() -> str | None:
    """Why a throwaway server cannot run here (None: it can)."""
    if _pg_bin() is None:
        return "needs Debian's postgresql (make test-deps, as root)"
    if os.geteuid() != 0:
        return "needs root to run a throwaway PostgreSQL as the postgres user"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "needs the postgres user (Debian's postgresql package makes it)"
    if shutil.which("runuser") is None:
        return "needs runuser (util-linux)"
    return None


class ThrowawayPostgres:
    """``with ThrowawayPostgres() as pg: pg.url`` — a fresh cluster, deleted afterwards."""

    def __init__(self, port: int = 5433) -> None:
        self.port = port
        self.root: Path | None = None

    def __enter__(self) -> ThrowawayPostgres:
        why = why_not()
        if why is not None:
            raise RuntimeError(why)
        self.root = Path(tempfile.mkdtemp(prefix="dmlsched-pg-", dir="/tmp"))
        pw = pwd.getpwnam("postgres")
        os.chown(self.root, pw.pw_uid, pw.pw_gid)
        try:
            self._as_pg(
                str(self._bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres"
            )
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _bin(self) -> Path:
        b = _pg_bin()
        assert b is not None
        return b

    @property
    def data(self) -> Path:
        assert self.root is not None
        return self.root / "data"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@/postgres?host={self.root}&port={self.port}"

    def _as_pg(self, *cmd: str) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", *cmd],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=120,
        )

    def start(self) -> None:
        opts = f"-k {self.root} -c listen_addresses='' -p {self.port} -c fsync=on"
        log = str(self.data.parent / "log")
        self._as_pg(
            str(self._bin / "pg_ctl"), "-D", str(self.data), "-o", opts, "-w", "-l", log, "start"
        )

    def stop(self, mode: str = "fast") -> None:
        """``fast``: sessions are ended (a service's connection breaks); ``immediate``: a crash."""
        if (self.data / "postmaster.pid").exists():
            self._as_pg(str(self._bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def close(self) -> None:
        if self.root is None:
            return
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None
