"""Flow-level simulation of PS jobs sharing capped links: step times of jobs running together.

Ours (the papers' jobs never share a link).  The testbed's sync jobs
(:mod:`dmlsched.testbed.training`) open one TCP connection per (worker, PS)
pair; a step is, on every worker, compute → push g/S bytes to each PS → wait
for every PS's reply of g/S bytes, and on every PS, wait for all W pushes →
reply to every worker.  A message between two machines crosses the sender's
NIC out (*egress*) and the receiver's NIC in (*ingress*); one within a
machine crosses its loopback.  Each link has a capacity in bytes per second
(∞: uncapped).  Two transports, as the two emulations shape traffic:

* ``fair`` (``netns``: ``htb`` caps with a queue per connection, TCP) — each connection's messages
  are sent at once (into the socket buffers) and every link shares its
  capacity **max-min fairly among the flows crossing it** (progressive
  filling), recomputed whenever a flow starts or ends;
* ``fifo`` (``local``: the transport's token buckets, :mod:`dmlsched.testbed.shaping`)
  — a process sends its messages one after another, each in 64 KB chunks
  that reserve their bytes in the buckets of the links they cross (debt
  buckets: a reservation waits for every earlier one, in arrival order), as
  :class:`~dmlsched.testbed.transport.Channel` does; a PS replies to its
  workers in worker order.  With ``lag_s`` > 0 every chunk goes
  lag_s · U[½, 3⁄2) after its reservation allowed it (a sender's sleep
  overshoots and its send takes time: the *pacing lag* the testbed
  measures).  Without it the simulation settles into schedules that
  interleave the buckets perfectly and that real senders rarely keep: a
  ring of six one-worker jobs runs at ≈ 2.07× its step alone from nearly
  every start offset, while runs on the local emulation land in either of
  two regimes, ≈ 2.05× or ≈ 2.48× (``docs/testbed.md``); with the lag part
  of the offsets end at ≈ 2.49×, and the mean over offsets lies between
  the two, as the mean over repeated runs does.  The lags are drawn from a
  generator of fixed seed, so the result is still a function of the
  inputs alone; lagged simulations need a longer warm-up to settle.

:func:`step_seconds` simulates the jobs for at least ``steps`` steps of
every job after ``warmup`` (a deterministic cap on events bounds the work)
and returns each job's mean step time.  The *fair* model keeps whatever
phase jobs start in (two identical jobs half a step apart never meet on a
link — one pushes while the other pulls, full duplex — and in lockstep
halve each other), so with ``phases`` = n it returns the mean over n runs
whose job k starts frac(i·k·φ) of its step alone late (i < n, φ the golden
ratio's fractional part: evenly spread offsets); ``phases`` = 1 starts all
at once.  Jobs that
share no capped link with any other are simulated alone.  CPU contention
between processes is not modelled: a worker's compute takes ``compute_s``.
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dmlsched.errors import InvalidInput

__all__ = ["TRANSPORTS", "FlowJob", "Network", "step_seconds"]

TRANSPORTS = ("fair", "fifo")
HEADER_BYTES = 32  # transport.HEADER.size: a message's header, sent (and reserved) first
CHUNK_BYTES = 64 * 1024  # transport._CHUNK: bytes reserved per token-bucket request
_EPS = 1e-12
_PHI = (math.sqrt(5.0) - 1.0) / 2.0  # a Weyl sequence of start offsets: evenly spread phases
MAX_EVENTS = 400_000  # a deterministic bound on one simulation's work
_LAG_SEED = 0  # the fifo lags' fixed draws: the simulation stays a pure function


@dataclass(frozen=True)
class FlowJob:
    """A sync job's processes (the machine of each worker and PS) and per-step constants."""

    worker_machines: tuple[int, ...]
    ps_machines: tuple[int, ...]
    shard_bytes: float  # payload of one push (= one reply): g / S
    compute_s: float  # a worker's seconds from its last reply to its next push

    def __post_init__(self) -> None:
        if not self.worker_machines or not self.ps_machines:
            raise InvalidInput("flow job", self, "at least one worker and one PS")


@dataclass(frozen=True)
class Network:
    """Per machine h: NIC out, NIC in and loopback capacities in bytes/s (∞: uncapped)."""

    egress: tuple[float, ...]
    ingress: tuple[float, ...]
    loopback: tuple[float, ...]
    burst_bytes: float = 0.0  # fifo: bucket depth (shaping.TokenBuckets' burst)

    @functools.cached_property
    def caps(self) -> tuple[float, ...]:
        """Capacity by link id (3h: egress, 3h + 1: ingress, 3h + 2: loopback)."""
        return tuple(
            c
            for h in range(len(self.egress))
            for c in (self.egress[h], self.ingress[h], self.loopback[h])
        )

    def capacity(self, link: int) -> float:
        return self.caps[link]


def _route(src: int, dst: int) -> tuple[int, ...]:
    """Link ids (3h: egress, 3h + 1: ingress, 3h + 2: loopback) a message crosses."""
    return (3 * src + 2,) if src == dst else (3 * src, 3 * dst + 1)


def _capped(job: FlowJob, net: Network) -> set[int]:
    links: set[int] = set()
    for w in job.worker_machines:
        for p in job.ps_machines:
            links.update(_route(w, p) + _route(p, w))
    return {lk for lk in links if net.capacity(lk) < math.inf}


def step_seconds(
    jobs: Sequence[FlowJob],
    net: Network,
    transport: str = "fair",
    *,
    steps: int = 20,
    warmup: int = 3,
    phases: int = 1,
    lag_s: float = 0.0,
) -> list[float]:
    """Each job's mean seconds per step when all run together (module docstring)."""
    if transport not in TRANSPORTS:
        raise InvalidInput("transport", transport, " | ".join(TRANSPORTS))
    out = [0.0] * len(jobs)
    sim = _fair if transport == "fair" else functools.partial(_fifo, lag_s=lag_s)
    for group in _groups(jobs, net):
        sub = [jobs[k] for k in group]
        if len(sub) == 1 or phases <= 1:
            got = sim(sub, net, steps, warmup, [0.0] * len(sub))
        else:  # the mean over start offsets (module docstring)
            alone = [sim([j], net, steps, warmup, [0.0])[0] for j in sub]
            runs = [
                sim(
                    sub, net, steps, warmup, [(i * k * _PHI) % 1.0 * a for k, a in enumerate(alone)]
                )
                for i in range(phases)
            ]
            got = [float(sum(r[k] for r in runs) / phases) for k in range(len(sub))]
        for k, v in zip(group, got, strict=True):
            out[k] = v
    return out


def _groups(jobs: Sequence[FlowJob], net: Network) -> list[list[int]]:
    """Jobs connected through shared capped links (each group simulated on its own)."""
    links = [_capped(j, net) for j in jobs]
    parent = list(range(len(jobs)))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    owner: dict[int, int] = {}
    for k, ls in enumerate(links):
        for lk in sorted(ls):
            if lk in owner:
                parent[find(k)] = find(owner[lk])
            else:
                owner[lk] = k
    groups: dict[int, list[int]] = {}
    for k in range(len(jobs)):
        groups.setdefault(find(k), []).append(k)
    return list(groups.values())


class _Uniforms:
    """Uniform draws in [0, 1) from a generator seeded by ``seed``, a block at a time."""

    def __init__(self, seed: int, block: int = 1024) -> None:
        self._rng = np.random.default_rng(seed)
        self._block = block
        self._buf: list[float] = []

    def next(self) -> float:
        if not self._buf:
            self._buf = self._rng.random(self._block).tolist()[::-1]
        return self._buf.pop()


class _Steps:
    """Step completions of each job's worker 0 and the mean step after the warm-up."""

    def __init__(self, n: int, steps: int, warmup: int) -> None:
        self.times: list[list[float]] = [[] for _ in range(n)]
        self.need = warmup + steps

    def done(self, job: int, t: float) -> None:
        self.times[job].append(t)

    def enough(self) -> bool:
        return all(len(ts) > self.need for ts in self.times)

    def means(self, warmup: int, now: float) -> list[float]:
        out = []
        for ts in self.times:
            if len(ts) > warmup + 1:
                out.append((ts[-1] - ts[warmup]) / (len(ts) - 1 - warmup))
            elif ts:
                out.append(ts[-1] / len(ts))
            else:  # not one step in the event budget
                out.append(now)
        return out


def _fair(
    jobs: list[FlowJob], net: Network, steps: int, warmup: int, offsets: list[float]
) -> list[float]:
    """Fluid flows, max-min fair per link (``fair`` transport)."""
    rec = _Steps(len(jobs), steps, warmup)
    # flows: id -> [remaining bytes, links, job, worker, ps, is_push]
    flows: dict[int, list] = {}
    timers: list[tuple[float, int, int, int]] = []  # (time, seq, job, worker): compute ends
    pushes_left = [[len(j.worker_machines)] * len(j.ps_machines) for j in jobs]
    pulls_left = [[len(j.ps_machines)] * len(j.worker_machines) for j in jobs]
    seq = 0
    t = 0.0
    for jb, j in enumerate(jobs):
        for i in range(len(j.worker_machines)):
            heapq.heappush(timers, (offsets[jb] + j.compute_s, seq, jb, i))
            seq += 1
    nid = 0

    def start(jb: int, i: int, k: int, push: bool) -> None:
        nonlocal nid
        j = jobs[jb]
        w, p = j.worker_machines[i], j.ps_machines[k]
        route = _route(w, p) if push else _route(p, w)
        links = tuple(lk for lk in route if net.capacity(lk) < math.inf)
        flows[nid] = [j.shard_bytes + HEADER_BYTES, links, jb, i, k, push]
        nid += 1

    events = 0
    while not rec.enough() and events < MAX_EVENTS:
        events += 1
        rates = _maxmin(flows, net)
        dt_flow = min(
            (f[0] / rates[fid] if rates[fid] < math.inf else 0.0 for fid, f in flows.items()),
            default=math.inf,
        )
        dt_timer = timers[0][0] - t if timers else math.inf
        dt = max(0.0, min(dt_flow, dt_timer))
        if dt == math.inf:
            break
        t += dt
        finished = []
        for fid, f in flows.items():
            r = rates[fid]
            f[0] = 0.0 if r == math.inf else f[0] - r * dt
            if f[0] <= _EPS * max(1.0, jobs[f[2]].shard_bytes):
                finished.append(fid)
        ready = []
        while timers and timers[0][0] <= t + _EPS:
            ready.append(heapq.heappop(timers))
        for fid in finished:
            _, _, jb, i, k, push = flows.pop(fid)
            if push:
                pushes_left[jb][k] -= 1
                if pushes_left[jb][k] == 0:
                    pushes_left[jb][k] = len(jobs[jb].worker_machines)
                    for w in range(len(jobs[jb].worker_machines)):
                        start(jb, w, k, False)
            else:
                pulls_left[jb][i] -= 1
                if pulls_left[jb][i] == 0:
                    pulls_left[jb][i] = len(jobs[jb].ps_machines)
                    if i == 0:
                        rec.done(jb, t)
                    heapq.heappush(timers, (t + jobs[jb].compute_s, seq, jb, i))
                    seq += 1
        for _, _, jb, i in ready:
            for k in range(len(jobs[jb].ps_machines)):
                start(jb, i, k, True)
    return rec.means(warmup, t)


def _maxmin(flows: dict[int, list], net: Network) -> dict[int, float]:
    """Max-min fair rates by progressive filling: the tightest link fixes its flows' rates."""
    rates = {fid: math.inf for fid, f in flows.items() if not f[1]}
    left = {fid: f[1] for fid, f in flows.items() if f[1]}
    caps = net.caps
    cap: dict[int, float] = {}
    users: dict[int, set[int]] = {}
    for fid, links in left.items():
        for lk in links:
            if lk not in cap:
                cap[lk] = caps[lk]
                users[lk] = {fid}
            else:
                users[lk].add(fid)
    while left:
        lk = min(users, key=lambda x: (cap[x] / len(users[x]), x))
        share = cap[lk] / len(users[lk])
        for fid in sorted(users[lk]):
            rates[fid] = share
            for other in left.pop(fid):
                cap[other] -= share
                if other != lk:
                    users[other].discard(fid)
                    if not users[other]:
                        del users[other]
        del users[lk]
    return rates


def _fifo(
    jobs: list[FlowJob],
    net: Network,
    steps: int,
    warmup: int,
    offsets: list[float],
    lag_s: float = 0.0,
) -> list[float]:
    """Sequential senders over debt token buckets (``fifo`` transport, shaping.py's rule)."""
    rec = _Steps(len(jobs), steps, warmup)
    lags = _Uniforms(_LAG_SEED)
    level: dict[int, float] = {}
    last: dict[int, float] = {}

    def reserve(now: float, links: tuple[int, ...], n: float) -> float:
        wait = 0.0
        for lk in links:
            rate = net.capacity(lk)
            if rate == math.inf:
                continue
            lv = min(
                net.burst_bytes, level.get(lk, net.burst_bytes) + (now - last.get(lk, 0.0)) * rate
            )
            lv -= n
            level[lk], last[lk] = lv, now
            if lv < 0:
                wait = max(wait, -lv / rate)
        return wait

    # a process's queue of messages: (dst kind, job, peer index); the heap holds
    # (time, seq, job, role, index, message position, bytes of it left)
    heap: list[tuple[float, int, int, str, int, int, float]] = []
    seq = 0
    pushes_left = [[len(j.worker_machines)] * len(j.ps_machines) for j in jobs]
    pulls_left = [[len(j.ps_machines)] * len(j.worker_machines) for j in jobs]
    size = [j.shard_bytes for j in jobs]

    def schedule(t: float, jb: int, role: str, idx: int, pos: int, left: float) -> None:
        nonlocal seq
        heapq.heappush(heap, (t, seq, jb, role, idx, pos, left))
        seq += 1

    for jb, j in enumerate(jobs):
        for i in range(len(j.worker_machines)):
            schedule(offsets[jb] + j.compute_s, jb, "w", i, 0, -1.0)  # -1: header first
    t = 0.0
    events = 0
    while heap and not rec.enough() and events < MAX_EVENTS:
        events += 1
        t, _, jb, role, idx, pos, left = heapq.heappop(heap)
        j = jobs[jb]
        if role == "w":  # worker idx sends its push to PS pos
            links = _route(j.worker_machines[idx], j.ps_machines[pos])
            n_peers = len(j.ps_machines)
        else:  # PS idx sends its reply to worker pos
            links = _route(j.ps_machines[idx], j.worker_machines[pos])
            n_peers = len(j.worker_machines)
        n = HEADER_BYTES if left < 0 else min(CHUNK_BYTES, left)
        wait = reserve(t, links, n)
        if lag_s > 0:
            wait += lag_s * (0.5 + lags.next())
        rest = size[jb] if left < 0 else left - n
        if rest > _EPS:  # more chunks of this message
            schedule(t + wait, jb, role, idx, pos, rest)
            continue
        sent = t + wait  # the message is delivered when its last chunk goes
        if pos + 1 < n_peers:
            schedule(sent, jb, role, idx, pos + 1, -1.0)
        if role == "w":
            pushes_left[jb][pos] -= 1
            if pushes_left[jb][pos] == 0:
                pushes_left[jb][pos] = len(j.worker_machines)
                schedule(sent, jb, "p", pos, 0, -1.0)
        else:
            pulls_left[jb][pos] -= 1
            if pulls_left[jb][pos] == 0:
                pulls_left[jb][pos] = len(j.ps_machines)
                if pos == 0:
                    rec.done(jb, sent)
                schedule(sent + j.compute_s, jb, "w", pos, 0, -1.0)
    return rec.means(warmup, t)
