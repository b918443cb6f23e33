"""Memoisation shared by the worker processes of one run.

A sweep's workers are separate processes, so a ``functools.lru_cache`` holds in
each: a reference run that cells of several workers need (an experiment's SRTF
baseline or LP bound for a (point, seed)) is computed once per worker that
meets it — with two workers, up to twice.  :func:`shared` memoises in the
process as ``lru_cache`` does and, while :func:`shared_folder` is open in the
process that starts the pool (its workers inherit the folder through the
environment variable :data:`ENV`), also in one file per call in that folder:
the first worker to need a value computes it under a lock file and writes it
atomically; the others wait for the lock and read the file.  The folder lives
as long as the run: nothing persists between runs (a later run may run other
code).

Values must pickle; a call is named by its function's module and qualified
name and the ``repr`` of its arguments (plain values: strings, numbers, tuples).
A shared function must not call another one: a worker holds the call's lock
while it computes, so two workers waiting for each other's calls would wait
forever.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import pickle
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["ENV", "shared", "shared_folder"]

#: the folder of the current run's shared values (unset: per process only)
ENV = "DMLSCHED_SHARED_MEMO"

F = TypeVar("F", bound=Callable[..., Any])


@contextlib.contextmanager
def shared_folder() -> Iterator[Path]:
    """A fresh folder for this run's shared values, named in :data:`ENV` for the
    processes started inside the block (and this one); removed afterwards."""
    before = os.environ.get(ENV)
    folder = Path(tempfile.mkdtemp(prefix="dmlsched-memo-"))
    os.environ[ENV] = str(folder)
    try:
        yield folder
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before
        shutil.rmtree(folder, ignore_errors=True)


def shared(maxsize: int = 64) -> Callable[[F], F]:
    """``lru_cache(maxsize)``, and across the run's processes (module docstring)."""

    def deco(fn: F) -> F:
        name = f"{fn.__module__}.{fn.__qualname__}"

        @functools.lru_cache(maxsize=maxsize)
        def cached(*args: Any, **kwargs: Any) -> Any:
            folder = os.environ.get(ENV)
            if not folder or not Path(folder).is_dir():
                return fn(*args, **kwargs)
            call = repr((name, args, sorted(kwargs.items())))
            path = Path(folder) / hashlib.sha256(call.encode()).hexdigest()
            with open(f"{path}.lock", "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # another worker computing it: wait
                if path.is_file():
                    with path.open("rb") as f:
                        return pickle.load(f)
                value = fn(*args, **kwargs)
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                with tmp.open("wb") as f:
                    pickle.dump(value, f)
                os.replace(tmp, path)
                return value

        return functools.wraps(fn)(cached)  # type: ignore[return-value]  # functools.wraps keeps fn's signature, which mypy cannot see

    return deco
