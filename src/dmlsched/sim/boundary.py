"""The boundary between a scheduler and an engine, shared by the four settings.

Two directions, one rule each:

* **Out (what a scheduler is shown).** :func:`private_copy` makes a per-run
  copy of a model object (job, cluster, system, sites) whose arrays are
  :func:`frozen_array` s — backed by an immutable ``bytes`` buffer, so numpy
  refuses ``setflags(write=True)`` on them and on every view of them, every
  in-place write raises, and ``as_strided(writeable=True)`` hands back a
  read-only array (numpy 2.4; what it still allows is reshaping the array
  object itself, which changes no data).  Each engine computes from its *own*
  copy of the system object (cluster, system, sites: it holds arrays), made
  at the start of the run, and from the workload's jobs as given — frozen
  records its caller built and no scheduler is ever handed (a job submitted
  online is copied when it is added) — and builds its views from *other*
  copies and from mappings that are never its own state (a
  ``MappingProxyType`` is only a thin wrapper: ``gc.get_referents`` hands
  back the dict inside).  Whatever a scheduler does to what it was shown —
  ``object.__setattr__`` on a frozen job, rewriting a view dict — reaches
  neither this run's physics, nor the workload, nor a later run's.
* **In (what a scheduler returns).** The decision is read exactly once into
  the engine's plain structures: exact types (:func:`expect_type`; a
  subclass could override any property the engine reads), whole numbers of
  an exact integer type and never ``bool`` (:func:`read_int`), containers of
  exact built-in types
  (:func:`read_ints`, :func:`read_pair`), mappings iterated once with every
  duplicate key refused (:func:`read_mapping`).  Totals are recomputed by the
  engine from the counts it copied.  Anything odd — including an exception
  raised by the scheduler's own object while it is read — becomes
  :class:`~dmlsched.errors.InvalidDecision` naming scheduler, job and slot;
  the engine never leaks a raw ``TypeError``/``ValueError``/``KeyError``.

Each setting's engine (``sim/<setting>.py``; ``sim/cluster/referee.py``)
keeps its decision reader (``read_decision``) and its checks as functions
of the decision and the engine state; the engine state every driver drives
(:mod:`dmlsched.sim.state`) calls them.  What this boundary cannot stop:
code that walks the interpreter (frames, ``gc.get_referrers``, ``ctypes``,
patching ``dmlsched`` modules or classes) reaches anything in the process;
run untrusted schedulers in their own process for that.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping
from types import MappingProxyType, NoneType
from typing import Any, NoReturn, TypeVar

import numpy as np

from dmlsched.errors import InvalidDecision

__all__ = [
    "INT_TYPES",
    "PLAIN_INT",
    "copy_with",
    "expect_type",
    "frozen_array",
    "private_copy",
    "read_int",
    "read_ints",
    "read_mapping",
    "read_pair",
    "refuse",
    "shown",
]

#: Exact types accepted as a whole number in a decision (``bool`` is not one).
INT_TYPES: frozenset[type] = frozenset(
    {int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64}
    | {np.intc, np.uintc, np.intp, np.uintp, np.longlong, np.ulonglong}
)
# Immutable leaves a copy may share with the original.
_OTHER_ATOMS = {float, np.float16, np.float32, np.float64, complex, bool, np.bool_, str, bytes}
_ATOMS: frozenset[type] = INT_TYPES | _OTHER_ATOMS | {NoneType}
_SEQ_TYPES = (tuple, list)
#: Plain ``int`` only: a tuple of them is immutable all the way down.
PLAIN_INT = frozenset({int})

T = TypeVar("T")


def refuse(sched: str, job: int | None, slot: int, detail: str, **where: Any) -> NoReturn:
    raise InvalidDecision(sched, job, slot, detail, **where)


def shown(v: object) -> str:
    """``repr`` of a value from a decision without running the scheduler's code."""
    if type(v) in _ATOMS:
        r = repr(v)
        return r if len(r) <= 40 else f"{r[:20]}…({len(r)} chars)"
    return f"<{type(v).__name__}>"


# ---------------------------------------------------------------- out: copies for views


def frozen_array(a: object, dtype: Any = None) -> np.ndarray:
    """A copy of ``a`` that no numpy call can make writable (immutable bytes buffer)."""
    src = np.ascontiguousarray(a, dtype=dtype)
    if src.dtype.hasobject:
        raise TypeError(f"frozen_array needs a numeric array, got dtype {src.dtype}")
    return np.frombuffer(src.tobytes(), dtype=src.dtype).reshape(src.shape)


def _copy_tuple(t: tuple) -> tuple:
    if _ATOMS.issuperset(map(type, t)):
        return t  # immutable all the way down
    return tuple(private_copy(x) for x in t)


def copy_with(obj: T, **fields: Any) -> T:
    """:func:`private_copy` of a dataclass instance with some fields replaced (copied too)."""
    d = obj.__dict__.copy()
    d.update(fields)
    for k, v in d.items():
        if type(v) not in _ATOMS:
            d[k] = private_copy(v)
    new = object.__new__(type(obj))
    object.__setattr__(new, "__dict__", d)
    return new


_COPIERS: dict[type, Callable[[Any], Any]] = {
    tuple: _copy_tuple,
    np.ndarray: frozen_array,
    list: lambda v: [private_copy(x) for x in v],
    dict: lambda v: {k: private_copy(x) for k, x in v.items()},
    MappingProxyType: lambda v: MappingProxyType({k: private_copy(x) for k, x in v.items()}),
}


def private_copy(obj: T) -> T:
    """A deep copy of a model object that shares nothing mutable with ``obj``.

    Frozen dataclasses (jobs, systems, utilities) are rebuilt field by field
    without re-running ``__post_init__`` (the original was validated), arrays
    become :func:`frozen_array` s, immutable leaves are shared.  Used for the
    engine's own copies and for every object a view shows.
    """
    t = type(obj)
    if t in _ATOMS:
        return obj
    fn = _COPIERS.get(t)
    if fn is None:
        if dataclasses.is_dataclass(t) and hasattr(obj, "__dict__"):
            fn = _COPIERS[t] = copy_with
        else:
            return copy.deepcopy(obj)
    return fn(obj)


# ---------------------------------------------------------------- in: reading a decision


def expect_type(sched: str, slot: int, obj: object, cls: type[T], job: int | None = None) -> T:
    """``obj`` itself if its type is exactly ``cls`` (a subclass may lie in any property)."""
    if type(obj) is not cls:
        what = "decide returned" if job is None else "placement is a"
        refuse(sched, job, slot, f"{what} {type(obj).__name__}, expected exactly {cls.__name__}")
    return obj


def read_int(v: object) -> int | None:
    """``int(v)`` for a whole number of an exact integer type, else None (so also for bool)."""
    return int(v) if type(v) in INT_TYPES else None  # type: ignore[call-overload]  # exact integer type checked; mypy does not narrow type() in a set


def read_ints(
    sched: str,
    slot: int,
    job: int | None,
    what: str,
    seq: object,
    expect: str = "an integer",
) -> tuple[int, ...]:
    """A tuple/list of exact integers, or a 1-D integer ndarray, as a tuple of ``int``."""
    t = type(seq)
    if t is np.ndarray:
        arr: np.ndarray = seq  # type: ignore[assignment]  # type(seq) is np.ndarray, checked above
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            refuse(sched, job, slot, f"{what}: array of dtype {arr.dtype}, expected integers")
        return tuple(arr.tolist())
    if t not in _SEQ_TYPES:
        refuse(sched, job, slot, f"{what} is a {t.__name__}, expected a tuple of integers")
    vals: tuple[Any, ...] = tuple(seq)  # type: ignore[arg-type]  # tuple or list, exact type checked above
    kinds = set(map(type, vals))  # C-level: these run every slot for every job
    if kinds <= PLAIN_INT:
        return vals  # immutable all the way down
    if kinds <= INT_TYPES:
        return tuple(map(int, vals))
    bad = next(v for v in vals if type(v) not in INT_TYPES)
    refuse(sched, job, slot, f"{what}={shown(bad)} is not {expect}")


def read_pair(sched: str, slot: int, job: int, what: str, pair: object) -> tuple[int, int]:
    """Exactly two exact integers in a tuple or list."""
    if type(pair) not in _SEQ_TYPES or len(pair) != 2:  # type: ignore[arg-type]  # len() only after the exact tuple/list type check
        refuse(sched, job, slot, f"{what} {shown(pair)} is not a pair of integers")
    a, b = read_int(pair[0]), read_int(pair[1])  # type: ignore[index]  # tuple or list, exact type checked above
    if a is None or b is None:
        refuse(
            sched,
            job,
            slot,
            f"{what} ({shown(pair[0])}, {shown(pair[1])}) is not integers",  # type: ignore[index]  # tuple or list, exact type checked above
        )
    return a, b


def _key(sched: str, slot: int, what: str, key: object) -> int:
    j = read_int(key)
    if j is None:
        refuse(sched, None, slot, f"{what}: job id {shown(key)} is not an integer")
    return j


def read_mapping(
    sched: str, slot: int, what: str, mapping: object, limit: int
) -> dict[int, object]:
    """The entries of a scheduler's mapping, read once, keyed by ``int`` job id.

    Keys must be exact integers; a key seen twice (a ``Mapping`` whose
    ``items()`` yields a job twice) or more than ``limit + 1`` entries (more
    than there are jobs it may name, plus one for the engine to name the
    stranger) is refused.  Values are returned as given for
    the setting's reader to copy.
    """
    if type(mapping) is dict:
        # Fast path (no scheduler code runs): keys are unique, and stay unique as ``int``
        # since equal numbers hash alike; one C-level copy, then the key types.  (Not for
        # a MappingProxyType: it may wrap any mapping, whose methods are the scheduler's.)
        out = dict(mapping)
        if len(out) > limit + 1:
            refuse(sched, None, slot, f"{what} names more than the {limit} jobs it may")
        if PLAIN_INT.issuperset(map(type, out)):
            return out
        return {_key(sched, slot, what, k): v for k, v in out.items()}
    out = {}
    try:
        if not isinstance(mapping, Mapping):
            refuse(sched, None, slot, f"{what} is a {type(mapping).__name__}, not a mapping")
        for n, item in enumerate(mapping.items()):
            if n > limit:  # one more lets the engine name the job that does not belong
                refuse(sched, None, slot, f"{what} names more than the {limit} jobs it may")
            if type(item) is not tuple or len(item) != 2:
                refuse(sched, None, slot, f"{what}.items() yielded {shown(item)}, not a pair")
            key, value = item
            j = _key(sched, slot, what, key)
            if j in out:
                refuse(sched, j, slot, f"{what} names the job twice")
            out[j] = value
    except InvalidDecision:
        raise
    except Exception as e:  # the scheduler's own mapping raised while read: its fault, named
        raise InvalidDecision(sched, None, slot, f"reading {what} raised {type(e).__name__}") from e
    return out
