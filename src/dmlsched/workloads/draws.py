"""The draws of :func:`~dmlsched.workloads.synthetic.random_job` for many sync jobs at once.

``random_job`` draws a sync job's fields one scalar call at a time (about 18
calls, a microsecond or more each: at 100,000 jobs that alone is seconds).
:func:`sync_job_draws` gives the very numbers ``n`` successive calls would
draw, and leaves the generator exactly where they would leave it, from one
block of the bit generator's raw 64-bit outputs.  It applies NumPy's own
algorithms (``numpy/random/src/distributions``) to those outputs:

* a double (``random``; ``uniform(a, b)`` = a + (b − a)·d; the draw
  ``choice(k, p=p)`` makes) is d = (x >> 11) · 2⁻⁵³ of one raw output x;
* a bounded integer ``integers(lo, hi)`` (hi − lo ≤ 2³²) is Lemire's method on
  32-bit draws: with r = hi − lo, m = u · r for a 32-bit draw u, and the
  value is lo + (m >> 32) unless the low half of m is below (2³² − r) mod r,
  in which case the draw is rejected and repeated;
* 32-bit draws come in pairs from one raw output: its low half, and its high
  half kept by the bit generator (PCG64's ``has_uint32``/``uinteger``) for the
  next 32-bit draw, even across doubles and calls;
* ``choice(3, p=p)`` is the number of entries of p's normalised cumulative sum
  that are ≤ d.

How: a job's raw outputs are laid out the same way every time given whether
a 32-bit half is buffered when it starts (:func:`_layout`), except that the
last double is drawn only for time-sensitive classes and that a rejected
integer draw takes one more 32-bit draw.  A Python pass over the jobs reads
only each class draw to place every job; NumPy then reads every field at its
place and checks every integer draw for a rejection (probability below 2⁻¹³
per draw even for K's range, so a few per 100,000 jobs).  The first job with
a rejection is redrawn one call at a time (:func:`_one_job`), and the jobs
after it are placed again from where it ended.

Only for :class:`numpy.random.PCG64` (what :func:`dmlsched.rng.make_rng` and
its spawned children use); for any other bit generator :func:`sync_job_draws`
returns ``None`` and the caller draws job by job.  ``tests/workloads/
test_draws.py`` checks the numbers, and the generator's state afterwards,
against ``random_job`` over many seeds and mixes, seeds whose draws include
rejections, and chunk boundaries.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from dmlsched.workloads.synthetic import _WORKER_MAX_SYNC

__all__ = ["SyncDraws", "sync_job_draws"]

_M32 = 0xFFFFFFFF
_TO_DOUBLE = 1.0 / 9007199254740992.0  # 2**-53, NumPy's next_double
_MEM = int(_WORKER_MAX_SYNC[2]) + 1
_STO = int(_WORKER_MAX_SYNC[3]) + 1


class _Op(NamedTuple):
    """One scalar draw of ``random_job`` (sync), in its order."""

    field: str
    kind: str  # "double" (uniform), "int" (integers, high exclusive) or "class" (choice)
    low: float
    high: float


# random_job's sync draws, in order; the θ2 double that follows for classes 1 and 2
# is drawn separately (_THETA2): it comes last, so it shifts nothing before it
_OPS: tuple[_Op, ...] = (
    _Op("b", "double", 0.1, 4.0),
    _Op("w_gpu", "int", 0, 5),
    _Op("w_cpu", "int", 1, 11),
    _Op("w_mem", "int", 2, _MEM),
    _Op("w_storage", "int", 5, _STO),
    _Op("p_cpu", "int", 1, 11),
    _Op("p_mem", "int", 2, _MEM),
    _Op("p_storage", "int", 5, _STO),
    _Op("epochs", "int", 50, 201),
    _Op("samples", "int", 20000, 500001),
    _Op("batch", "int", 1, 201),
    _Op("grad_mb", "double", 30, 575),
    _Op("tau", "double", 1e-5, 1e-4),
    _Op("gamma", "int", 1, 11),
    _Op("cls", "class", 0, 0),
    _Op("theta1", "double", 1, 100),
    _Op("theta3", "double", 1, 15),
)
_CHUNK = 4096  # jobs placed and read at once
_THETA2 = {1: (0.01, 1.0), 2: (4.0, 6.0)}  # class → uniform range of θ2 (class 0: θ2 = 0)


@dataclass(frozen=True)
class SyncDraws:
    """Per job (arrays of length n): the fields ``random_job`` draws for a sync job.

    ``worker``/``ps``: n × 4 demands (GPU, vCPU, mem, storage; a PS has no GPU);
    ``b_ext`` = the drawn b^(e); ``cls`` = the utility class (0, 1, 2).
    """

    b_ext: np.ndarray
    worker: np.ndarray
    ps: np.ndarray
    epochs: np.ndarray
    samples: np.ndarray
    batch: np.ndarray
    grad_mb: np.ndarray
    tau: np.ndarray
    gamma: np.ndarray
    cls: np.ndarray
    theta1: np.ndarray
    theta2: np.ndarray
    theta3: np.ndarray


class _Source(NamedTuple):
    """Where one op of a job reads: ``offset`` of a raw output from the job's first
    (-1: the high half the generator holds when the job starts) and, for a 32-bit
    draw, which half (0 low, 1 high); a double reads a whole output."""

    offset: int
    half: int


class _Layout(NamedTuple):
    sources: tuple[_Source, ...]  # per op of _OPS
    raws: int  # raw outputs the job uses, θ2 not counted
    buffered: int  # 1 if a high half is held when the job ends
    last_low: int  # offset of the last output whose low half was drawn (its high half is held)


def _layout(buffered: int) -> _Layout:
    """The raw outputs each op reads when no integer draw is rejected."""
    pos, held, last_low = 0, buffered, -1
    sources = []
    for op in _OPS:
        if op.kind == "int":
            if held:
                sources.append(_Source(last_low, 1))
                held = 0
            else:
                sources.append(_Source(pos, 0))
                held, last_low = 1, pos
                pos += 1
        else:
            sources.append(_Source(pos, 0))
            pos += 1
    return _Layout(tuple(sources), pos, held, last_low)


_LAYOUTS = (_layout(0), _layout(1))
_CLASS_OP = next(i for i, op in enumerate(_OPS) if op.kind == "class")
_OFFSETS = np.array([[lay.sources[i].offset for lay in _LAYOUTS] for i in range(len(_OPS))])
_HALVES = np.array([[lay.sources[i].half for lay in _LAYOUTS] for i in range(len(_OPS))])
_RAWS = np.array([lay.raws for lay in _LAYOUTS])


def _cdf(mix: Sequence[float]) -> np.ndarray:
    """``Generator.choice``'s cumulative sum for p = mix / Σ mix (as sigmoid_utility)."""
    p = np.asarray(mix) / np.sum(mix)
    cdf = p.cumsum()
    cdf /= cdf[-1]
    return cdf


class _Stream:
    """Raw outputs of a copy of the generator, fetched in blocks as needed; ``sensitive``
    holds, per output read as a double d, whether ``first`` ≤ d (then the class is ≥ 1
    and θ2 is drawn), as bytes for a fast Python pass."""

    def __init__(self, bit_generator: np.random.PCG64, n: int, first: float) -> None:
        self._copy = np.random.PCG64()
        self._copy.state = bit_generator.state
        self._bound = np.uint64(math.ceil(first * 9007199254740992.0))
        self.raw = np.empty(0, dtype=np.uint64)
        self.sensitive = b""
        self.ensure(n)

    def ensure(self, end: int) -> None:
        if end > len(self.raw):
            more = self._copy.random_raw(max(end - len(self.raw), 4096))
            self.raw = np.concatenate([self.raw, more])
            # d = (x >> 11)·2⁻⁵³ ≥ first  ⟺  x >> 11 ≥ ⌈first·2⁵³⌉ (exact: a power-of-two scale)
            self.sensitive += ((more >> np.uint64(11)) >= self._bound).tobytes()

    def item(self, at: int) -> int:
        self.ensure(at + 1)
        return int(self.raw[at])


class _State(NamedTuple):
    """The generator between jobs: raw outputs used, whether a high half is held,
    and the held value (PCG64's ``has_uint32``/``uinteger``; kept when used)."""

    pos: int
    buffered: int
    held: int


def _one_job(stream: _Stream, state: _State, cdf: np.ndarray) -> tuple[list[float], float, _State]:
    """One job drawn call by call, rejections included: (values by op, θ2, state after)."""
    pos, buffered, held = state

    def raw() -> int:
        nonlocal pos
        pos += 1
        return stream.item(pos - 1)

    def u32() -> int:
        nonlocal buffered, held
        if buffered:
            buffered = 0
            return held
        x = raw()
        buffered, held = 1, x >> 32
        return x & _M32

    def double() -> float:
        return (raw() >> 11) * _TO_DOUBLE

    values: list[float] = []
    for op in _OPS:
        if op.kind == "double":
            values.append(op.low + (op.high - op.low) * double())
        elif op.kind == "class":
            values.append(int(np.searchsorted(cdf, double(), side="right")))
        else:
            r = int(op.high) - 1 - int(op.low)
            m = u32() * (r + 1)
            if (m & _M32) < r + 1:
                threshold = (_M32 - r) % (r + 1)
                while (m & _M32) < threshold:
                    m = u32() * (r + 1)
            values.append(int(op.low) + (m >> 32))
    theta2 = 0.0
    cls = int(values[_CLASS_OP])
    if cls:
        lo, hi = _THETA2[cls]
        theta2 = lo + (hi - lo) * double()
    return values, theta2, _State(pos, buffered, held)


class _Placed(NamedTuple):
    """Jobs placed assuming no rejection: each one's first raw output, whether a
    high half was held at its start, and the output that half came from (-1: the
    value held before the first of them)."""

    offset: np.ndarray
    buffered: np.ndarray
    held_at: np.ndarray
    end: _State


def _place(stream: _Stream, count: int, state: _State) -> _Placed:
    """Place ``count`` jobs from ``state``: one Python step per job, reading its class."""
    offset, flags, held_at = [], [], []
    pos, buffered, _ = state
    at = -1
    lays = [(ly.raws, ly.sources[_CLASS_OP].offset, ly.buffered, ly.last_low) for ly in _LAYOUTS]
    stream.ensure(pos + count * (int(_RAWS.max()) + 1) + 1)
    sensitive = stream.sensitive
    for _ in range(count):
        raws, class_at, ends_buffered, last_low = lays[buffered]
        offset.append(pos)
        flags.append(buffered)
        held_at.append(at)
        at = pos + last_low
        pos += raws + sensitive[pos + class_at]  # θ2 iff class ≥ 1
        buffered = ends_buffered
    held = state.held if at < 0 else stream.item(at) >> 32
    return _Placed(
        np.array(offset, dtype=np.int64),
        np.array(flags, dtype=np.int64),
        np.array(held_at, dtype=np.int64),
        _State(pos, buffered, held),
    )


def _read(
    stream: _Stream,
    placed: _Placed,
    held: int,
    cdf: np.ndarray,
    values: np.ndarray,
    ints: np.ndarray,
    theta2: np.ndarray,
) -> int | None:
    """Fill the placed jobs' rows (index 0 = the first placed job); the index of the
    first whose integer draws include a rejection, ``None`` if none does."""
    raw = stream.raw
    par = placed.buffered
    bad = np.zeros(len(par), dtype=bool)
    cls = np.zeros(len(par), dtype=np.int64)
    for i, op in enumerate(_OPS):
        off, half = _OFFSETS[i][par], _HALVES[i][par]
        if op.kind == "int":
            at = np.where(off < 0, placed.held_at, placed.offset + off)
            x = raw[np.maximum(at, 0)]
            u = np.where(half == 1, x >> np.uint64(32), x & np.uint64(_M32))
            u = np.where(at < 0, np.uint64(held), u)
            r = int(op.high) - 1 - int(op.low)
            m = u * np.uint64(r + 1)
            bad |= (m & np.uint64(_M32)) < np.uint64((_M32 - r) % (r + 1))
            ints[:, i] = int(op.low) + (m >> np.uint64(32)).astype(np.int64)
            continue
        d = (raw[placed.offset + off] >> np.uint64(11)).astype(np.float64) * _TO_DOUBLE
        if op.kind == "class":
            cls = np.searchsorted(cdf, d, side="right")
            ints[:, i] = cls
        else:
            values[:, i] = op.low + (op.high - op.low) * d
    last = placed.offset + _RAWS[par]
    d = (raw[last] >> np.uint64(11)).astype(np.float64) * _TO_DOUBLE
    theta2[:] = 0.0
    for c, (lo, hi) in _THETA2.items():
        sel = cls == c
        theta2[sel] = lo + (hi - lo) * d[sel]
    hits = np.flatnonzero(bad)
    return int(hits[0]) if hits.size else None


def sync_job_draws(n: int, rng: np.random.Generator, mix: Sequence[float]) -> SyncDraws | None:
    """What ``n`` calls ``random_job(i, a, rng, mix=mix, mode="sync")`` draw, in one go.

    Leaves ``rng`` in the state those calls leave it in.  ``None`` (and ``rng``
    untouched) when its bit generator is not PCG64.
    """
    bg = rng.bit_generator
    if type(bg) is not np.random.PCG64 or n < 1:
        return None
    start_state = bg.state
    cdf = _cdf(mix)
    stream = _Stream(bg, n * (int(_RAWS.max()) + 1) + 16, float(cdf[0]))
    values = np.zeros((n, len(_OPS)))
    ints = np.zeros((n, len(_OPS)), dtype=np.int64)
    theta2 = np.zeros(n)
    state = _State(0, int(start_state["has_uint32"]), int(start_state["uinteger"]))
    k = 0
    while k < n:
        # in chunks, so that a rejection re-places only the rest of its chunk
        count = min(_CHUNK, n - k)
        placed = _place(stream, count, state)
        part = slice(k, k + count)
        bad = _read(stream, placed, state.held, cdf, values[part], ints[part], theta2[part])
        if bad is None:
            state = placed.end
            k += count
            continue
        j = k + bad  # redraw it call by call; the jobs before it stand
        at = int(placed.held_at[bad])
        held = state.held if at < 0 else stream.item(at) >> 32
        start = _State(int(placed.offset[bad]), int(placed.buffered[bad]), held)
        vals, t2, state = _one_job(stream, start, cdf)
        for i, op in enumerate(_OPS):
            if op.kind == "double":
                values[j, i] = vals[i]
            else:
                ints[j, i] = vals[i]
        theta2[j] = t2
        k = j + 1
    bg.advance(state.pos)
    after = bg.state
    after["has_uint32"], after["uinteger"] = state.buffered, state.held
    bg.state = after
    col = {op.field: i for i, op in enumerate(_OPS)}

    def floats(*fields: str) -> list[np.ndarray]:
        return [ints[:, col[f]].astype(np.float64) for f in fields]

    return SyncDraws(
        b_ext=values[:, col["b"]],
        worker=np.column_stack(floats("w_gpu", "w_cpu", "w_mem", "w_storage")),
        ps=np.column_stack([np.zeros(n), *floats("p_cpu", "p_mem", "p_storage")]),
        epochs=ints[:, col["epochs"]],
        samples=ints[:, col["samples"]],
        batch=ints[:, col["batch"]],
        grad_mb=values[:, col["grad_mb"]],
        tau=values[:, col["tau"]],
        gamma=ints[:, col["gamma"]].astype(np.float64),
        cls=ints[:, col["cls"]],
        theta1=values[:, col["theta1"]],
        theta2=theta2,
        theta3=values[:, col["theta3"]],
    )
