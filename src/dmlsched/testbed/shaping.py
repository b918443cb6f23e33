"""Token buckets shared by every process of a ``local``-mode run (the transport's tc).

``local`` emulation runs all machines in the host's network namespace, so no
qdisc can tell one emulated machine's traffic from another's.  Instead every
message that leaves a machine reserves its bytes in two buckets: the sender
machine's *egress* bucket and the receiver machine's *ingress* bucket — the
two directions tc caps in ``netns`` mode (see :mod:`.emulation`); a message
between two processes of one machine reserves in that machine's *loopback*
bucket (``lo``'s qdisc in ``netns`` mode).

The buckets live in one small file mapped by every process of the run
(``/dev/shm`` when present); a reservation takes an exclusive ``lockf`` lock,
refills by elapsed ``CLOCK_MONOTONIC`` time (system-wide, so comparable across
processes), subtracts the bytes and returns how long the caller must sleep
before sending (a *debt* bucket: a reservation may drive the level negative,
and every later reservation waits for the debt too — so concurrent senders
share the rate in arrival order, as a FIFO qdisc does).  Rate 0 = unlimited.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["TokenBuckets"]

_REC = struct.Struct("=ddd")  # rate (bytes/s, 0 = unlimited), level (bytes), last refill (s)
_HEAD = struct.Struct("=Q")  # number of buckets


class TokenBuckets:
    """Buckets ``3h`` (egress of machine h), ``3h + 1`` (ingress), ``3h + 2`` (loopback)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_RDWR)
        size = os.fstat(self._fd).st_size
        self._map = mmap.mmap(self._fd, size)
        (self.count,) = _HEAD.unpack_from(self._map, 0)

    @staticmethod
    def create(
        path: Path | str,
        rates_bps: Sequence[float],
        burst_bytes: float,
        loopback_bps: Sequence[float] | None = None,
    ) -> TokenBuckets:
        """Three buckets per machine; rates in bits/s (0 = unlimited)."""
        lo = list(loopback_bps) if loopback_bps is not None else [0.0] * len(rates_bps)
        n = 3 * len(rates_bps)
        buf = bytearray(_HEAD.size + n * (_REC.size + 8))
        _HEAD.pack_into(buf, 0, n)
        now = time.monotonic()
        for h, bps in enumerate(rates_bps):
            for k, r in ((3 * h, bps), (3 * h + 1, bps), (3 * h + 2, lo[h])):
                _REC.pack_into(buf, _HEAD.size + k * _REC.size, r / 8.0, burst_bytes, now)
        # the burst (bucket depth) is stored once after the records
        struct.pack_into("=d", buf, _HEAD.size + n * _REC.size, burst_bytes)
        tmp = Path(f"{path}.tmp")
        tmp.write_bytes(bytes(buf))
        os.replace(tmp, path)
        return TokenBuckets(path)

    def _burst(self) -> float:
        return struct.unpack_from("=d", self._map, _HEAD.size + self.count * _REC.size)[0]

    def reserve(self, buckets: Sequence[int], nbytes: int) -> float:
        """Take ``nbytes`` from every bucket listed; seconds to wait before sending."""
        if not buckets:
            return 0.0
        fcntl.lockf(self._fd, fcntl.LOCK_EX)
        try:
            now = time.monotonic()
            burst = self._burst()
            wait = 0.0
            for k in buckets:
                off = _HEAD.size + k * _REC.size
                rate, level, last = _REC.unpack_from(self._map, off)
                if rate <= 0:
                    continue
                level = min(burst, level + (now - last) * rate) - nbytes
                _REC.pack_into(self._map, off, rate, level, now)
                if level < 0:
                    wait = max(wait, -level / rate)
            return wait
        finally:
            fcntl.lockf(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        self._map.close()
        os.close(self._fd)
