"""One run per output folder: an exclusive ``flock`` on ``OUT/.dmlsched.lock``.

Two runs appending to one ``results.csv`` would write every cell twice (and
shrink the confidence intervals).  :func:`hold` takes an exclusive
:func:`fcntl.flock` on the folder's lock file and writes the holder's pid and
command line into it; a second run either refuses at once with
:class:`~dmlsched.errors.InvalidInput` naming that pid (the CLI exits 2) or,
with ``wait=True``, blocks until the holder is done.

The kernel releases a ``flock`` when its holder dies, even by SIGKILL, so a
lock file left behind by a dead run is simply taken over: nothing is ever
decided from a pid in the file (pids are reused), the pid is only reported.
The lock file is opened close-on-exec, so pool workers never inherit it.

Within one thread :func:`hold` is re-entrant per folder (the CLI holds the
lock around the sweep *and* the report; the runner takes it again inside);
another thread of the same process opens its own file description, so it
contends like another process.
POSIX only (``fcntl``), like the rest of the runner's process handling.
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dmlsched.errors import InvalidInput

__all__ = ["LOCK_NAME", "ensure_folder", "hold", "holder"]

LOCK_NAME = ".dmlsched.lock"
_HELD: dict[tuple[Path, int], int] = {}  # (folder, thread) -> nesting depth
_GUARD = threading.Lock()


def ensure_folder(path: Path, field: str = "out") -> Path:
    """Create ``path`` (and parents) as a folder; a file or unwritable path is bad input."""
    if path.exists() and not path.is_dir():
        raise InvalidInput(field, str(path), "a folder (this path is a file)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InvalidInput(field, str(path), f"a folder one can create ({e.strerror})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise InvalidInput(field, str(path), "a writable folder")
    return path


def holder(folder: Path) -> str:
    """What the lock file of ``folder`` says about its holder ('' if nothing)."""
    try:
        return (folder / LOCK_NAME).read_text(errors="replace").strip()
    except OSError:
        return ""


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except PermissionError:  # some file systems report contention as EACCES
        return False
    return True


@contextmanager
def hold(
    folder: Path,
    *,
    wait: bool = False,
    on_wait: Callable[[str], None] | None = None,
    poll: float = 0.2,
) -> Iterator[None]:
    """Hold the run lock of ``folder`` (created if needed) for the ``with`` body.

    Busy: ``wait=False`` raises :class:`InvalidInput` naming the holder;
    ``wait=True`` calls ``on_wait(holder)`` once and polls every ``poll``
    seconds (polling, not a blocking ``flock``, so Ctrl-C is served at once).
    """
    folder = ensure_folder(folder).resolve()
    key = (folder, threading.get_ident())
    with _GUARD:
        if key in _HELD:
            _HELD[key] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield
        finally:
            with _GUARD:
                _HELD[key] -= 1
        return
    try:
        fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise InvalidInput(
            "out", str(folder), f"a folder where {LOCK_NAME} can be written ({e.strerror})"
        ) from None
    try:
        told = False
        while not _try_lock(fd):
            who = holder(folder) or "another process"
            if not wait:
                raise InvalidInput(
                    "out",
                    str(folder),
                    f"a folder no other run is writing; in use by {who}; "
                    "pass --wait to queue behind it",
                )
            if on_wait and not told:
                on_wait(who)
                told = True
            time.sleep(poll)
        os.ftruncate(fd, 0)
        command = " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else "?"
        os.write(fd, f"pid {os.getpid()} ({command[:120]})\n".encode(errors="replace"))
        with _GUARD:
            _HELD[key] = 1
        try:
            yield
        finally:
            with _GUARD:
                del _HELD[key]
            os.ftruncate(fd, 0)  # released: the file no longer names a holder
    finally:
        os.close(fd)  # closing drops the flock
