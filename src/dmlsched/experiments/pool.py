"""A process pool whose workers never outlive the run and leave Ctrl-C to it.

* **Ctrl-C.**  A terminal's Ctrl-C reaches the whole process group.  Workers
  ignore SIGINT, so only the parent sees :class:`KeyboardInterrupt`; it then
  cancels what is queued and kills the workers (their cells would be
  discarded anyway — only finished cells are kept), instead of each worker
  dying with its own traceback.  The workers are started inside
  :func:`sigint_blocked` (as :mod:`multiprocessing.resource_tracker` starts
  its own process): a blocked signal stays blocked across ``fork``/``exec``,
  so a Ctrl-C while a worker is still importing stays pending in it until
  its initializer ignores SIGINT and unblocks it, and in the parent it is
  delivered — not lost — when the block ends.  A Ctrl-C taken by another
  thread of the parent (Python runs the handler on the main thread anyway)
  is noted during the block and raised when it ends, so it never lands
  between a worker's spawn and the data the worker reads first.
* **Parent killed.**  Nothing runs in a SIGKILLed parent, so the workers must
  notice by themselves.  On Linux each worker asks the kernel for SIGKILL when
  its parent dies (``prctl(PR_SET_PDEATHSIG)`` via :mod:`ctypes`).  The kernel
  sends it when the *thread* that started the worker ends, so this is only
  armed when the pool is made on the main thread.  Everywhere (and as a
  second line of defence) a daemon thread in each worker polls
  :func:`os.getppid` and exits once the worker has been re-parented.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

__all__ = ["WATCHDOG_SECONDS", "kill_workers", "sigint_blocked", "worker_pool"]

WATCHDOG_SECONDS = 0.5
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _arm_pdeathsig() -> None:
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCHDOG_SECONDS)
    os._exit(1)  # orphaned: the run is gone, nothing would read our result


def _init_worker(parent: int, pdeathsig: bool) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent alone handles Ctrl-C
    if hasattr(signal, "pthread_sigmask"):  # blocked since the start (sigint_blocked)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if pdeathsig and sys.platform.startswith("linux"):
        _arm_pdeathsig()
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)
    threading.Thread(target=_watch, args=(parent,), name="parent-watchdog", daemon=True).start()


@contextlib.contextmanager
def sigint_blocked() -> Iterator[None]:
    """SIGINT blocked for this thread in the ``with`` body; start child processes in it.

    Children inherit the block (see the module docstring); a Ctrl-C that
    arrives meanwhile is delivered to this process when the block ends.
    Threads started inside inherit the block too, which keeps Ctrl-C on the
    thread that handles it.  No-op where ``pthread_sigmask`` is missing.
    """
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    # Starting the resource tracker *unblocks* SIGINT in this thread (it blocks and
    # unblocks around its own start): have it running before the block begins.
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    # Another thread of ours (a progress display's) may take the signal: Python then
    # runs the handler on this thread all the same, between any two bytecodes — e.g.
    # after a worker was spawned and before it was sent what to run, so that it dies
    # with a traceback.  The handler only notes it here; it is raised after the body.
    noted: list[int] = []
    on_main = threading.current_thread() is threading.main_thread()
    handler = signal.signal(signal.SIGINT, lambda n, _f: noted.append(n)) if on_main else None
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        if on_main:
            signal.signal(signal.SIGINT, handler)
            if noted and callable(handler):  # Python's default raises KeyboardInterrupt
                handler(signal.SIGINT, None)


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """A ``spawn`` pool of ``workers`` processes set up as in the module docstring."""
    on_main = threading.current_thread() is threading.main_thread()
    return ProcessPoolExecutor(
        max_workers=workers,
        mp_context=get_context("spawn"),
        initializer=_init_worker,
        initargs=(os.getpid(), on_main),
    )


def kill_workers(pool: ProcessPoolExecutor) -> None:
    """SIGKILL every worker of ``pool`` now (their running cells are abandoned)."""
    kill = getattr(pool, "kill_workers", None)  # Python >= 3.14
    if kill is not None:
        kill()
        return
    # older Pythons have no public way; the executor keeps its processes here
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            proc.kill()
