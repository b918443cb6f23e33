"""Snapshots of the service's state: a restart reads one and the log after it, not the log.

The state is a pure function of the log (:mod:`dmlsched.service.core`), so a
snapshot is only a shortcut: the core's whole state after record ``seq`` —
machines, jobs, the slot, the epoch and the scheduler itself (so decisions
replayed after the snapshot are made by the very scheduler that made them
live) — pickled, stored beside the log (:meth:`Store.save_snapshot`)
and taken right after a slot's commit, when every record up to ``seq`` is
durable.  A restart loads the latest snapshot and applies the records after
it (replaying decisions from the last epoch start among them, or from the
snapshot on).  The log itself is never rewritten: it stays the audit trail
and the events API, and a snapshot that cannot be used — another format or
dmlsched version, another configuration, a core without some of this one's
state, a scheduler without an attribute this code's is made with, a damaged
blob — is ignored: the restart applies the whole log, as without
snapshots.

A snapshot is pickled: the store must be trusted (only the service writes it,
and whoever can write it could rewrite the log anyway).
"""

from __future__ import annotations

import gc
import json
import pickle
from typing import TYPE_CHECKING, Any

from dmlsched.version import __version__

if TYPE_CHECKING:
    from dmlsched.service.core import Core

__all__ = ["FORMAT", "dump", "restore"]

FORMAT = 1
# attributes of a core that are not its state: its store, clocks and scheduler factory,
# what is being written, how it is being opened
_TRANSIENT = frozenset(
    {
        "store",
        "clock",
        "wall",
        "scheduler_factory",
        "batch",
        "group_commit",
        "replaying",
        "_replay_decide",
    }
)


def _header(core: Core) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": __version__,
        "seq": core.seq,
        "config": core.config.to_body(),
    }


def dump(core: Core) -> bytes:
    """The core's state after record ``core.seq`` (raises if something cannot be pickled,
    e.g. a scheduler holding a solver handle that does not say how to drop it)."""
    state = {k: v for k, v in vars(core).items() if k not in _TRANSIENT}
    head = json.dumps(_header(core)).encode()
    body = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    return len(head).to_bytes(4, "big") + head + body


def restore(core: Core, seq: int, blob: bytes) -> bool:
    """Put the state of snapshot ``blob`` (of record ``seq``) into ``core``; False (core
    untouched) if it is not one this code and configuration can use."""
    try:
        n = int.from_bytes(blob[:4], "big")
        head = json.loads(blob[4 : 4 + n])
        want = _header(core)
        want["seq"] = seq
        if head != want:
            return False
        raw = memoryview(blob)[4 + n :]
        gc_was = gc.isenabled()
        gc.disable()  # millions of new objects, none of them garbage: no collections
        try:
            state = pickle.loads(raw)
            # they live as long as the service: out of every later collection's way
            # (each full collection would otherwise walk them all, and often)
            gc.freeze()
        finally:
            if gc_was:
                gc.enable()
    except Exception:  # a damaged or foreign snapshot: the whole log instead
        return False
    if not isinstance(state, dict) or set(vars(core)) - _TRANSIENT - set(state):
        return False  # made by a core without some of this one's state: another code
    if _older_scheduler(state.get("scheduler"), core):
        return False
    vars(core).update(state)
    return True


def _older_scheduler(pickled: Any, core: Core) -> bool:
    """True if ``pickled`` lacks an attribute this code's scheduler is made with (an
    option added since: restored, the scheduler would fail when it reads it)."""
    if pickled is None:
        return False
    fresh = core.scheduler_factory()
    return type(pickled) is not type(fresh) or bool(
        set(getattr(fresh, "__dict__", {})) - set(getattr(pickled, "__dict__", {}))
    )
