"""PS ↔ worker messages over TCP: a fixed header and a raw float32 payload.

Why plain sockets: a PS exchange is one request and one reply of a known
numpy buffer per step; a 40-byte header on a stream socket carries it with
zero copies (``recv_into`` the destination array) and lets the ``local``
emulation shape every byte (:mod:`.shaping`).  ``torch.distributed.rpc``
would add a TensorPipe agent, a rendezvous store and its own threads per
process — more moving parts to clean up after a crash, and traffic we could
not shape in ``local`` mode.

Frame: ``kind`` (u8), ``flags`` (u8), ``shard`` (u16), ``nsamples`` (u32),
``step`` (i64), ``loss`` (f64), ``nbytes`` (u64), then ``nbytes`` of payload
(float32, native order — both ends run on this machine).

A :class:`Channel` counts bytes in and out (header included), optionally
reserves them in the run's token buckets before sending (``local`` mode's
bandwidth cap, in chunks so concurrent flows interleave) and optionally
sleeps a fixed delay per message (the application-level latency of a slow
path: this machine has no ``netem``).  A shaped channel also measures its
*pacing lag*: how long after a chunk's reservation said it could go the
next chunk of the same message reserves (the sleep's overshoot and the
send) — the flow model's ``fifo`` transport needs it (a lag-free
simulation of the buckets finds schedules real senders never keep), and
``testbed calibrate`` records it.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dmlsched.testbed.shaping import TokenBuckets

__all__ = ["HEADER", "Channel", "Frame", "Kind", "connect"]

HEADER = struct.Struct("=BBHIqdQ")
_CHUNK = 64 * 1024  # bytes reserved per token-bucket request (few lock round trips)


class Kind:
    PULL = 1  # worker → PS: send me the current shard
    PUSH = 2  # worker → PS: gradient (sync: for ``step``), loss and samples
    PARAMS = 3  # PS → worker: shard after the update
    STOP = 4  # PS → worker: the job stops (preempted, moved, done)
    HELLO = 5  # worker → PS on connect: ``shard`` = worker index


@dataclass
class Frame:
    kind: int
    flags: int
    shard: int
    nsamples: int
    step: int
    loss: float
    payload: np.ndarray | None


class Channel:
    """One TCP connection with byte counters, shaping and delay (see module docstring)."""

    def __init__(
        self,
        sock: socket.socket,
        buckets: TokenBuckets | None = None,
        bucket_ids: Sequence[int] = (),
        delay_s: float = 0.0,
    ) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = sock
        self.buckets = buckets if bucket_ids else None
        self.bucket_ids = tuple(bucket_ids)
        self.delay_s = delay_s
        self.bytes_out = 0
        self.bytes_in = 0
        self.comm_s = 0.0  # wall time spent in send/recv (incl. shaping waits)
        self.lag_s = 0.0  # pacing lag summed over lag_n chunks (module docstring)
        self.lag_n = 0
        self._due: float | None = None  # when the message's last chunk was allowed to go

    def send(
        self,
        kind: int,
        *,
        payload: np.ndarray | None = None,
        step: int = 0,
        loss: float = 0.0,
        nsamples: int = 0,
        shard: int = 0,
        flags: int = 0,
    ) -> None:
        t0 = time.perf_counter()
        body = payload.data.cast("B") if payload is not None else memoryview(b"")
        head = HEADER.pack(kind, flags, shard, nsamples, step, loss, len(body))
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.buckets is None:
            self.sock.sendall(head)
            if len(body):
                self.sock.sendall(body)
        else:
            self._due = None  # the gap before a message's header is the caller's work
            self._shaped(memoryview(head))
            for i in range(0, len(body), _CHUNK):
                self._shaped(body[i : i + _CHUNK])
        self.bytes_out += len(head) + len(body)
        self.comm_s += time.perf_counter() - t0

    def _shaped(self, data: memoryview) -> None:
        assert self.buckets is not None
        now = time.monotonic()
        if self._due is not None:  # this chunk continues a message
            self.lag_s += max(0.0, now - self._due)
            self.lag_n += 1
        wait = self.buckets.reserve(self.bucket_ids, len(data))
        self._due = now + wait
        if wait > 0:
            time.sleep(wait)
        self.sock.sendall(data)

    def _recv_exact(self, view: memoryview) -> None:
        got = 0
        while got < len(view):
            n = self.sock.recv_into(view[got:])
            if n == 0:
                raise ConnectionError("peer closed")
            got += n

    def recv(self, out: np.ndarray | None = None) -> Frame:
        """Next frame; the payload lands in ``out`` when it has the right size."""
        t0 = time.perf_counter()
        head = bytearray(HEADER.size)
        self._recv_exact(memoryview(head))
        kind, flags, shard, nsamples, step, loss, nbytes = HEADER.unpack(head)
        payload = None
        if nbytes:
            if out is None or out.nbytes != nbytes:
                out = np.empty(nbytes // 4, dtype=np.float32)
            self._recv_exact(out.data.cast("B"))
            payload = out
        self.bytes_in += HEADER.size + nbytes
        self.comm_s += time.perf_counter() - t0
        return Frame(kind, flags, shard, nsamples, step, loss, payload)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


#: where every listening process of a run (a PS, a data mover's receiver) binds: one
#: aligned block, below Linux's ephemeral ports (32768–60999), so a segment whose source
#: port lies in it comes from the listening side (``netns`` links classify by it)
LISTEN_BASE, LISTEN_PORTS = 0x5000, 0x400


def listen(host: str, backlog: int, port: int = 0) -> socket.socket:
    """A listening socket on ``port``, or on the first free port of the listen block.

    Bound and listening in one step per port: with ``SO_REUSEADDR`` two sockets not yet
    listening may bind the same port, and the second then fails in ``listen``."""
    for cand in [port] if port else range(LISTEN_BASE, LISTEN_BASE + LISTEN_PORTS):
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            srv.bind((host, cand))
            srv.listen(backlog)
            return srv
        except OSError as e:
            srv.close()
            if port or e.errno != errno.EADDRINUSE:
                raise
    raise OSError(
        errno.EADDRINUSE,
        f"no free port in {LISTEN_BASE}–{LISTEN_BASE + LISTEN_PORTS - 1} on {host}",
    )


def connect(host: str, port: int, timeout_s: float = 30.0) -> socket.socket:
    """Connect, retrying while the PS is still coming up (until ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            s = socket.create_connection((host, port), timeout=timeout_s)
            s.settimeout(None)
            return s
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
