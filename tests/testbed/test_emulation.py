"""netns links: a capped link shares its cap per TCP connection (one ``htb`` leaf each).

Real namespaces and kernel TCP: skips without root or iproute2.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from dmlsched.testbed.emulation import _FIRST_CLASS, QUEUES, netns_available
from dmlsched.testbed.runtime import Testbed
from dmlsched.testbed.transport import LISTEN_BASE, LISTEN_PORTS

NETNS = netns_available()
needs_netns = pytest.mark.skipif(NETNS is not None, reason=NETNS or "")
BYTES = 100_000

# a PS: listens where the testbed's PSs do (the listen block), echoes what each connection sends
_SERVER = f"""
from dmlsched.testbed.transport import listen
s = listen("0.0.0.0", 2)
print(s.getsockname()[1], flush=True)
for _ in range(2):
    c, _ = s.accept(); got = 0
    while got < {BYTES}:
        got += len(c.recv(65536))
    c.sendall(bytes({BYTES})); c.close()
"""
# two workers in one process: each connects (from an ephemeral port), pushes, waits for the reply
_CLIENTS = f"""
import socket, sys
cs = [socket.create_connection((sys.argv[1], int(sys.argv[2]))) for _ in range(2)]
print(*(c.getsockname()[1] for c in cs), flush=True)
for c in cs:
    c.sendall(bytes({BYTES})); got = 0
    while got < {BYTES}:
        got += len(c.recv(65536))
"""


def _busy_leaves(ns: str, dev: str) -> set[int]:
    """Leaf classes of ``dev``'s htb that carried a connection's bytes."""
    out = subprocess.run(
        ["ip", "netns", "exec", ns, "tc", "-s", "class", "show", "dev", dev],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    busy = set()
    for m in re.finditer(r"class htb 1:([0-9a-f]+) .*?\n\s*Sent (\d+) bytes", out):
        minor, sent = int(m.group(1), 16), int(m.group(2))
        if _FIRST_CLASS <= minor < _FIRST_CLASS + QUEUES and sent >= BYTES // 2:
            busy.add(minor)
    return busy


@needs_netns
def test_each_connection_has_its_own_queue_both_ways(tmp_path):
    with Testbed(
        2, tmp_path / "run", emulation="netns", ext_mbit=50, state_dir=tmp_path / "st"
    ) as tb:
        emu = tb.emu
        server = subprocess.Popen(
            ["ip", "netns", "exec", emu.ns(1), sys.executable, "-c", _SERVER],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert server.stdout is not None
        port = int(server.stdout.readline())
        clients = subprocess.run(
            ["ip", "netns", "exec", emu.ns(0), sys.executable, "-c", _CLIENTS, emu.hosts()[1],
             str(port)],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        assert server.wait(timeout=30) == 0
        ports = [int(p) for p in clients.stdout.split()]
        block = range(LISTEN_BASE, LISTEN_BASE + LISTEN_PORTS)
        assert port in block and not any(p in block for p in ports)  # what the hash relies on
        expected = {_FIRST_CLASS + ((p >> 1) & (QUEUES - 1)) for p in ports}
        assert len(expected) == 2, "two connections in one queue: ports too close to test"
        # pushes leave machine 0 by its eth0, the PS's replies reach it by the switch's p0:
        # each connection in the queue of its worker's port, in both directions
        assert _busy_leaves(emu.ns(0), "eth0") == expected
        assert _busy_leaves(emu.switch, "p0") == expected


def test_listeners_take_the_next_free_port_of_the_block():
    from dmlsched.testbed.transport import listen

    a = listen("127.0.0.1", 1)
    b = listen("127.0.0.1", 1)
    try:
        pa, pb = a.getsockname()[1], b.getsockname()[1]
        block = range(LISTEN_BASE, LISTEN_BASE + LISTEN_PORTS)
        assert pa in block and pb in block and pa != pb
    finally:
        a.close()
        b.close()


def test_the_classifier_matches_the_block_and_nothing_around_it():
    from dmlsched.testbed.emulation import _LISTEN_MASK

    inside = [p for p in range(65536) if p & _LISTEN_MASK == LISTEN_BASE]
    assert inside == list(range(LISTEN_BASE, LISTEN_BASE + LISTEN_PORTS))
    assert LISTEN_BASE + LISTEN_PORTS <= 32768  # below every namespace's ephemeral ports


def test_a_port_lost_between_bind_and_listen_is_passed_over(monkeypatch):
    import errno
    import socket

    from dmlsched.testbed import transport

    lost: list[int] = []

    class Raced(socket.socket):
        """Another PS listens on the port this one just bound (once): listen fails."""

        def listen(self, backlog: int = 0) -> None:
            if not lost:
                lost.append(self.getsockname()[1])
                raise OSError(errno.EADDRINUSE, "Address already in use")
            super().listen(backlog)

    monkeypatch.setattr(transport.socket, "socket", Raced)
    srv = transport.listen("127.0.0.1", 1)
    try:
        assert lost and srv.getsockname()[1] != lost[0]
        assert srv.getsockname()[1] in range(LISTEN_BASE, LISTEN_BASE + LISTEN_PORTS)
    finally:
        srv.close()
