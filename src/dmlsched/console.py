"""The ``dmlsched`` process entry point (console script and ``python -m dmlsched``).

A Ctrl-C must end the process with status 130 and one line at any moment.
Python raises :class:`KeyboardInterrupt` wherever the main thread happens to
be, and two moments cannot handle it: importing the CLI (numpy, pandas,
typer ... an interrupt inside the import machinery can even surface as an
"Exception ignored" traceback) and interpreter shutdown (the process then
dies by SIGINT after having printed its result).  So SIGINT is *blocked*
during both: a Ctrl-C while importing stays pending and is raised, as a
clean :class:`KeyboardInterrupt`, the moment the block ends; one after
:func:`dmlsched.cli.main` has returned is dropped, since the work is done.
In between, :func:`dmlsched.cli.main` maps every interrupt to 130.

Only for the process entry: :func:`main` returns with SIGINT still blocked
(the process exits right after).  In-process callers use
:func:`dmlsched.cli.main`.
"""

from __future__ import annotations

import signal
import sys

__all__ = ["main"]

_CAN_BLOCK = hasattr(signal, "pthread_sigmask")


def _mask(how: int) -> None:
    if _CAN_BLOCK:
        signal.pthread_sigmask(how, {signal.SIGINT})


def main(argv: list[str] | None = None) -> int:
    _mask(signal.SIG_BLOCK)
    from dmlsched.cli import main as cli_main

    try:
        _mask(signal.SIG_UNBLOCK)  # a Ctrl-C pending since the imports is raised here
        rc = cli_main(argv)
    except KeyboardInterrupt:
        print("dmlsched: interrupted before any result was kept", file=sys.stderr)
        rc = 130
    _mask(signal.SIG_BLOCK)  # done: a late Ctrl-C must not turn this into a SIGINT death
    return rc
