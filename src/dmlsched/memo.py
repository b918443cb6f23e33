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

A block of :func:`shared_folder` inside another one uses the outer folder,
so a command running several sweeps (``reproduce --all``) shares one folder
over all of them: a computation two experiments make on the same instance
(their SRTF reference, the same P̃_ft of mlBroker's A_fractional) is made once.

Values must pickle; a call is named by its function's module and qualified
name and its arguments: plain values (strings, numbers) by their type and
``repr``, NumPy arrays and SciPy sparse matrices by their dtype, shape and a
SHA-256 of their bytes, tuples, lists, dicts and dataclasses by their items
(:func:`call_key`; anything else is refused), so two calls with equal
contents are one call.  A shared function must be deterministic in its arguments, and
must not call another one: a worker holds the call's lock while it
computes, so two workers waiting for each other's calls would wait forever.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import os
import pickle
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["ENV", "call_key", "shared", "shared_folder"]

#: the folder of the current run's shared values (unset: per process only)
ENV = "DMLSCHED_SHARED_MEMO"

F = TypeVar("F", bound=Callable[..., Any])


@contextlib.contextmanager
def shared_folder() -> Iterator[Path]:
    """A fresh folder for this run's shared values, named in :data:`ENV` for the
    processes started inside the block (and this one); removed afterwards.
    Inside another block: that block's folder (module docstring)."""
    before = os.environ.get(ENV)
    if before and Path(before).is_dir():
        yield Path(before)
        return
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


def _describe(obj: Any, h: Any) -> None:
    """Feed ``obj``'s content into the hash ``h`` (see :func:`call_key`)."""
    if isinstance(obj, tuple | list):
        h.update(f"{type(obj).__name__}[{len(obj)}](".encode())
        for item in obj:
            _describe(item, h)
        h.update(b")")
    elif hasattr(obj, "tocsr") and hasattr(obj, "nnz"):  # a SciPy sparse matrix
        m = obj.tocsr().sorted_indices()  # a copy: the caller's matrix is left as it was
        h.update(f"sparse({m.dtype}, {m.shape})".encode())
        for part in (m.data, m.indices, m.indptr):
            _describe(part, h)
    elif hasattr(obj, "tobytes") and hasattr(obj, "dtype") and hasattr(obj, "shape"):
        h.update(f"array({obj.dtype}, {obj.shape})".encode())
        h.update(hashlib.sha256(obj.tobytes()).digest())  # tobytes: C order, whatever the layout
    elif isinstance(obj, dict):
        _describe(tuple(sorted(obj.items())), h)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        h.update(type(obj).__qualname__.encode())
        _describe(tuple((f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)), h)
    elif obj is None or isinstance(obj, bool | int | float | complex | str | bytes):
        h.update(f"{type(obj).__name__}:{obj!r}".encode())
    else:  # its repr may leave things out (a long array's does): no key is better than a wrong one
        raise TypeError(f"cannot name a call by a {type(obj).__qualname__}")
    h.update(b";")


def call_key(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """A SHA-256 naming the call ``name(*args, **kwargs)`` by content (module docstring)."""
    h = hashlib.sha256(name.encode())
    _describe(args, h)
    _describe(tuple(sorted(kwargs.items())), h)
    return h.hexdigest()


def shared(maxsize: int = 64) -> Callable[[F], F]:
    """An LRU cache of ``maxsize`` calls in the process, and across the run's processes
    (module docstring)."""

    def deco(fn: F) -> F:
        name = f"{fn.__module__}.{fn.__qualname__}"
        recent: OrderedDict[str, Any] = OrderedDict()

        def compute(key: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            folder = os.environ.get(ENV)
            if not folder or not Path(folder).is_dir():
                return fn(*args, **kwargs)
            path = Path(folder) / key
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

        def cached(*args: Any, **kwargs: Any) -> Any:
            key = call_key(name, args, kwargs)
            if key in recent:
                recent.move_to_end(key)
                return recent[key]
            value = compute(key, args, kwargs)
            recent[key] = value
            if len(recent) > maxsize:
                recent.popitem(last=False)
            return value

        return functools.wraps(fn)(cached)  # type: ignore[return-value]  # functools.wraps keeps fn's signature, which mypy cannot see

    return deco
