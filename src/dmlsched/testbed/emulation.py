"""Emulated machines: ``local`` (token buckets) and ``netns`` (namespaces + tc).

Both give each machine h an address, a way to start its agent, an external
link capped at ``ext_mbit[h]`` in each direction and an uncapped internal
path (loopback) — Fact 1's b^(e) and b^(i).

``int_mbit`` optionally caps each machine's loopback too (b^(i) finite; by
default it is the loopback's own speed).

``netns`` (needs root and ``ip``/``tc``)::

    dmlt-<id>-m0 ─ eth0 10.77.0.1 ─┐
    dmlt-<id>-m1 ─ eth0 10.77.0.2 ─┼─ p<h> ─ br0   (in dmlt-<id>-sw)
    dmlt-<id>-m2 ─ eth0 10.77.0.3 ─┘

A machine's egress is capped on its ``eth0``, its ingress on the
switch-side ``p<h>``; traffic between two processes of one machine uses its
own loopback.  Each capped link is an ``htb`` at the cap whose bandwidth is
shared out in round robin, one packet at a time, over per-connection queues
(:func:`_capped`): a TCP connection's direction is hashed into one of
:data:`QUEUES` equal leaf classes by the port of the side that connected
(every listening process of a run binds in one aligned block of ports,
:data:`~dmlsched.testbed.transport.LISTEN_BASE`, below the ephemeral ports
each namespace connects from, so a segment whose source port lies in the
block comes from a listening PS and is hashed by its destination port).
That is the flow model's max-min fair share per connection.  One FIFO
queue per link (a ``tbf``) leaves the share to TCP, and which job of a ring
wins the link changes from run to run (one job 13× slower than alone,
another 1.8×: ``docs/testbed.md``).
Segmentation offload is limited to one 1,500-byte packet (``gso_max_size``;
loopback MTU 1,500) so the buckets can be a few packets deep: a deep bucket
would let most of a step's gradient (77 KB) pass at once and make the cap
depend on the message size.
Nothing is created in the host's namespace:
deleting the run's namespaces removes every veth, the bridge and every
qdisc.  This machine has no ``netem``: latency is added by the transport
(``delay_ms``).

``local`` runs every process in the host's namespace on 127.0.0.1 and
enforces the same caps in the transport (:mod:`.shaping`).

CPU share (optional, both modes): a cgroup per machine with
``cpu.max`` (cgroup v2, when its ``cpu`` controller is enabled) or
``cpu.cfs_quota_us`` (cgroup v1); without either the share is skipped and
:attr:`Emulation.notes` says why.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from dmlsched.errors import InvalidInput
from dmlsched.testbed.shaping import TokenBuckets
from dmlsched.testbed.state import RunState
from dmlsched.testbed.transport import LISTEN_BASE, LISTEN_PORTS

__all__ = ["EMULATIONS", "Emulation", "netns_available"]

EMULATIONS = ("local", "netns")
_SUBNET = "10.77.0"
_MTU = 1500
BUCKET_BYTES = 4096  # local mode's bucket depth: a step's messages are paced, not burst
QUEUES = 256  # per-connection queues of a capped netns link (a u32 hash table's most)
_FIRST_CLASS = 0x100  # leaf classes 1:100 … 1:1ff
_DEFAULT_CLASS = 0x2000  # what is not TCP (ARP)
_LISTEN_MASK = 0xFFFF & ~(LISTEN_PORTS - 1)  # u32's mask for "in the listen block"
_EPHEMERAL = "32768 60999"  # Linux's default, set in every namespace: outside the block
_V2 = Path("/sys/fs/cgroup")
_V1 = Path("/sys/fs/cgroup/cpu")


def netns_available() -> str | None:
    """None when ``netns`` mode can run here, else the reason it cannot."""
    import os

    if os.geteuid() != 0:
        return "netns emulation needs root"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"netns emulation needs `{tool}` (iproute2)"
    return None


def _sh(cmd: list[str], stdin: str | None = None) -> None:
    r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")


def _burst(mbit: float) -> int:
    """A class's bucket depth: four packets, or 4 ms at the rate (a 250 Hz timer tick) if more."""
    return max(4 * (_MTU + 14), int(mbit * 1e6 / 8 * 0.004))


def _capped(ns: str, dev: str, mbit: float, burst: int) -> None:
    """Cap ``dev``'s egress in namespace ``ns`` at ``mbit``, shared per connection.

    ``htb``: class 1:1 at the cap; under it :data:`QUEUES` leaf classes
    1:100… and a default one for what is not TCP, each assured an equal part
    and allowed the whole cap, so backlogged leaves share it in round robin
    (quantum one packet).  A ``u32`` hash table picks the leaf from bits 1–8
    of the connecting side's port (Linux connects from even ports: bit 0
    says little): the source port, or the destination port when the source
    port lies in the listen block (module docstring).
    """
    quantum = _MTU + 14
    leaf = f"rate {mbit / (QUEUES + 1):.6f}mbit ceil {mbit}mbit burst {burst} cburst {burst}"
    lines = [
        f"qdisc add dev {dev} root handle 1: htb default {_DEFAULT_CLASS:x}",
        f"class add dev {dev} parent 1: classid 1:1 htb rate {mbit}mbit ceil {mbit}mbit "
        f"burst {burst} cburst {burst} quantum {quantum}",
        f"class add dev {dev} parent 1:1 classid 1:{_DEFAULT_CLASS:x} htb {leaf} quantum {quantum}",
        *(
            f"class add dev {dev} parent 1:1 classid 1:{_FIRST_CLASS + i:x} htb {leaf} "
            f"quantum {quantum}"
            for i in range(QUEUES)
        ),
        f"filter add dev {dev} parent 1: prio 1 protocol ip u32",
        f"filter add dev {dev} parent 1: prio 1 handle 2: protocol ip u32 divisor {QUEUES}",
        # TCP header word 0 at IP offset 20 (no IP options): source port, destination port
        f"filter add dev {dev} parent 1: prio 1 protocol ip u32 ht 800:: "
        f"match ip protocol 6 0xff match ip sport {LISTEN_BASE} {_LISTEN_MASK:#06x} "
        "hashkey mask 0x000001fe at 20 link 2:",
        f"filter add dev {dev} parent 1: prio 1 protocol ip u32 ht 800:: "
        "match ip protocol 6 0xff hashkey mask 0x01fe0000 at 20 link 2:",
        *(
            f"filter add dev {dev} parent 1: prio 1 protocol ip u32 ht 2:{i:x}: "
            f"match u32 0 0 flowid 1:{_FIRST_CLASS + i:x}"
            for i in range(QUEUES)
        ),
    ]
    _sh(["ip", "netns", "exec", ns, "tc", "-batch", "-"], stdin="\n".join(lines) + "\n")


class Emulation:
    """H machines of one run (see module docstring); ``start`` then ``stop``."""

    def __init__(
        self,
        mode: str,
        machines: int,
        ext_mbit: Sequence[float | None],
        state: RunState,
        cpu_share: float | None = None,
        int_mbit: float | None = None,
    ) -> None:
        if mode not in EMULATIONS:
            raise InvalidInput("emulation", mode, " | ".join(EMULATIONS))
        if machines < 1:
            raise InvalidInput("machines", machines, ">= 1")
        if len(ext_mbit) != machines:
            raise InvalidInput("ext_mbit", len(ext_mbit), f"{machines} values")
        if cpu_share is not None and not cpu_share > 0:
            raise InvalidInput("cpu_share", cpu_share, "> 0 (cores per machine)")
        if mode == "netns" and (why := netns_available()):
            raise InvalidInput("emulation", mode, f"local ({why})")
        self.mode = mode
        self.machines = machines
        self.ext_mbit = tuple(ext_mbit)
        self.int_mbit = int_mbit
        self.state = state
        self.cpu_share = cpu_share
        self.notes: list[str] = []
        self.buckets_path = ""
        self._cgroups: list[Path] = []

    # ---- names and addresses ---------------------------------------------------------
    def ns(self, h: int) -> str:
        return f"{self.state.prefix}-m{h}"

    @property
    def switch(self) -> str:
        return f"{self.state.prefix}-sw"

    def hosts(self) -> tuple[str, ...]:
        """Address other machines use to reach PSs on machine h."""
        if self.mode == "local":
            return ("127.0.0.1",) * self.machines
        return tuple(f"{_SUBNET}.{h + 1}" for h in range(self.machines))

    def add_controller(self) -> str:
        """Give the switch's bridge an address; returns it (``netns`` mode, after ``start``).

        A daemon run in the switch's namespace — a cluster's controller, say —
        then reaches every machine, and every machine reaches it, over the
        bridge: uncapped (the caps sit on the machines' links), and nothing is
        created in the host's namespace.
        """
        if self.mode != "netns":
            raise InvalidInput("emulation", self.mode, "netns (a switch to address)")
        addr = f"{_SUBNET}.254"
        _sh(["ip", "-n", self.switch, "addr", "add", f"{addr}/24", "dev", "br0"])
        return addr

    @property
    def bind(self) -> str:
        return "127.0.0.1" if self.mode == "local" else "0.0.0.0"

    def agent_argv(self, h: int, data_seed: int = 0) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "dmlsched.testbed.agent",
            "--run-id",
            self.state.run_id,
            "--machine",
            str(h),
            "--data-seed",
            str(data_seed),
        ]
        return ["ip", "netns", "exec", self.ns(h), *cmd] if self.mode == "netns" else cmd

    # ---- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        if self.mode == "local":
            path = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path("/tmp")
            tb = path / f"{self.state.prefix}-tb"
            self.state.add("files", str(tb))
            rates = [(m or 0.0) * 1e6 for m in self.ext_mbit]
            lo = [(self.int_mbit or 0.0) * 1e6] * self.machines
            TokenBuckets.create(tb, rates, burst_bytes=BUCKET_BYTES, loopback_bps=lo).close()
            self.buckets_path = str(tb)
        else:
            self._start_netns()
        if self.cpu_share is not None:
            self._start_cgroups()

    def _start_netns(self) -> None:
        sw = self.switch
        self.state.add("namespaces", sw)
        _sh(["ip", "netns", "add", sw])
        _sh(["ip", "-n", sw, "link", "add", "br0", "type", "bridge"])
        _sh(["ip", "-n", sw, "link", "set", "br0", "up"])
        _sh(["ip", "-n", sw, "link", "set", "lo", "up"])
        for h in range(self.machines):
            ns = self.ns(h)
            self.state.add("namespaces", ns)
            _sh(["ip", "netns", "add", ns])
            _sh(["ip", "netns", "exec", ns, "sh", "-c",
                 f"echo {_EPHEMERAL} > /proc/sys/net/ipv4/ip_local_port_range"])  # fmt: skip
            peer = f"p{h}"
            link = ["ip", "link", "add", "eth0", "netns", ns, "type", "veth"]
            _sh([*link, "peer", "name", peer, "netns", sw])
            # segments of one packet: htb can then run with a burst of a few packets, so a
            # step's gradient (tens of KB) is paced at the cap instead of passing in one burst
            for where, dev in ((ns, "eth0"), (sw, peer), (ns, "lo")):
                _sh(["ip", "-n", where, "link", "set", dev, "gso_max_size", str(_MTU)])
            _sh(["ip", "-n", ns, "link", "set", "lo", "mtu", str(_MTU)])
            _sh(["ip", "-n", ns, "addr", "add", f"{_SUBNET}.{h + 1}/24", "dev", "eth0"])
            _sh(["ip", "-n", ns, "link", "set", "lo", "up"])
            _sh(["ip", "-n", ns, "link", "set", "eth0", "up"])
            _sh(["ip", "-n", sw, "link", "set", peer, "master", "br0"])
            _sh(["ip", "-n", sw, "link", "set", peer, "up"])
            if self.int_mbit:
                lo_burst = _burst(self.int_mbit)
                self.state.add("qdiscs", f"{ns}/lo htb {self.int_mbit:g}mbit")
                _capped(ns, "lo", self.int_mbit, lo_burst)
            mbit = self.ext_mbit[h]
            if mbit:
                burst = _burst(mbit)
                for where, dev in ((ns, "eth0"), (sw, peer)):
                    self.state.add("qdiscs", f"{where}/{dev} htb {mbit:g}mbit")
                    _capped(where, dev, mbit, burst)

    def _start_cgroups(self) -> None:
        v2 = (_V2 / "cgroup.controllers").exists() and "cpu" in (
            (_V2 / "cgroup.subtree_control").read_text().split()
        )
        base = _V2 if v2 else _V1 if (_V1 / "cpu.cfs_quota_us").exists() else None
        if base is None:
            self.notes.append("cpu share skipped: no cgroup v2 cpu controller and no cgroup v1 cpu")
            self.cpu_share = None
            return
        period = 100_000
        quota = int(self.cpu_share * period)  # type: ignore[operator]  # _start_cgroups runs only when cpu_share is set
        for h in range(self.machines):
            cg = base / f"{self.state.prefix}-m{h}"
            self.state.add("cgroups", str(cg))
            try:
                cg.mkdir()
                if v2:
                    (cg / "cpu.max").write_text(f"{quota} {period}")
                else:
                    (cg / "cpu.cfs_period_us").write_text(str(period))
                    (cg / "cpu.cfs_quota_us").write_text(str(quota))
            except OSError as e:
                self.notes.append(f"cpu share skipped: {cg}: {e}")
                self.cpu_share = None
                return
            self._cgroups.append(cg)
        kind = "cgroup v2 cpu.max" if v2 else "cgroup v1 cpu.cfs_quota_us"
        self.notes.append(f"cpu share {self.cpu_share:g} core(s) per machine via {kind}")

    def attach(self, h: int, pid: int) -> None:
        """Put machine h's agent (and so its future children) into its cgroup."""
        if self._cgroups:
            (self._cgroups[h] / "cgroup.procs").write_text(str(pid))
