"""Speed models fitted to the testbed (``dmlsched testbed calibrate``): pure functions.

Two forms, both per synchronous step of global batch F (seconds), for a
placement (machines, w_h, s_h) with W = Σ w_h workers and S = Σ s_h PSs:

* ``eq1`` — PD-ORS Eq. (1) as printed, with fitted τ (s/sample) and the
  fitted per-link times g/b^(i), g/b^(e) (Fact 1 picks one)::

      step = (F/W)·τ + (2/S)·(g/b)

* ``links`` (ours, not the papers') — the bottleneck of the machines'
  shared links, which is what a tc cap on a machine's external link (or a
  token bucket) enforces: in a push (and again in a pull) each worker sends
  g/S to every PS, so machine h's external link carries
  max(w_h·(S − s_h), s_h·(W − w_h))·g/S bytes in each direction; with
  fitted efficiencies η_e, η_i of the caps, a fitted per-step overhead c
  and two fitted overlap fractions κ, ω ∈ [0, 1]::

      e = (2·t_ext − ω·(t_ext − t_one))/η_e     i = 2·t_int/η_i
      step = (F/W)·τ + max(e, i) + κ·min(e, i) + c

  where t_ext = max_h ext_bytes_h / C_h and t_int = max_h w_h·s_h·(g/S) / C^(i)_h
  (machine h's loopback, capped at C^(i)_h) are one push's times at the
  raw caps, and t_one is t_ext of a single worker (its own g through the
  same links).  κ: how much of the shorter of the NIC and loopback times
  adds to the longer (1 = they follow each other, 0 = they overlap: a
  mixed placement's local and remote workers use different links at the
  same time).  ω: how much of a full-duplex link's push and pull overlap
  across workers (0 = the whole pull phase, then the whole push phase, as
  Eq. (1) counts it; 1 = the first worker pushes while the last is still
  pulling, so W workers take (W + 1)·t_one instead of 2W·t_one).  κ = 1,
  ω = 0 is the form as first fitted (profiles without them load so).

Jobs running together (:meth:`CalibratedSpeed.joint_steps`, the engine's
``slot_rates``): a job's step alone is the fitted form; the links it shares
stretch its communication by the ratio a flow-level simulation of every
connection gives (:mod:`dmlsched.model.speed.flows`), a link serving its
flows max-min fairly for the share 1 − ω and in arrival order for ω.  The
arrival-order (``fifo``) simulation is the ``local`` emulation's token
buckets: with the profile's ``pacing`` entry it uses their depth and the
senders' measured pacing lag (absent: a depth of 0 and no lag, as profiles
before calibration version 6 were predicted).

Async jobs (thesis (3.1)): a worker's mini-batch time is the same
expression with W = 1 seen from that worker (its own PSs), summed as rates.

:class:`CalibratedSpeed` implements :class:`dmlsched.model.cluster.SpeedModel`
(work per slot of ``slot_seconds``); it ignores the job's τ, g, b (the
profile describes the testbed's model on the measured machine) and uses only
F, the mode and the placement.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import ClusterJob, Placement
from dmlsched.model.speed.flows import FlowJob, Network, step_seconds

__all__ = ["FORMS", "CalibratedSpeed", "eq1_step", "link_times", "links_step", "one_worker_ext"]

FORMS = ("eq1", "links")
PHASES = 8  # start offsets the flow-level model averages over (joint_steps)
LAGGED_STEPS = (60, 40)  # steps, warm-up of a lagged fifo simulation: it settles first
_MIN_STEP_S = 1e-6  # a fit with τ = c = 0 must not promise infinite speed


def eq1_step(
    batch: int,
    workers: int,
    ps: int,
    internal: bool,
    tau_s: float,
    g_over_b_int: float,
    g_over_b_ext: float,
) -> float:
    """Eq. (1): seconds per sync step of F samples (module docstring)."""
    g_over_b = g_over_b_int if internal else g_over_b_ext
    return batch / workers * tau_s + 2.0 / ps * g_over_b


def link_times(
    workers: Sequence[int],
    ps: Sequence[int],
    ext_caps: Sequence[float],
    int_caps: Sequence[float],
    grad_bytes: float,
) -> tuple[float, float]:
    """(external, internal) seconds of one push at the raw caps (module docstring).

    External: max_h max(w_h (S − s_h), s_h (W − w_h))·g/S ÷ C_h; internal
    (machine h's loopback carries w_h·s_h·g/S): max_h w_h s_h·g/S ÷ C^(i)_h.
    Caps in bytes/s per listed machine; a cap of 0 or inf means uncapped (0 s).
    """
    W, S = sum(workers), sum(ps)
    t_ext = t_int = 0.0
    for w, s, ce, ci in zip(workers, ps, ext_caps, int_caps, strict=True):
        ext = max(w * (S - s), s * (W - w)) * grad_bytes / S
        loc = w * s * grad_bytes / S
        if ext and 0 < ce < float("inf"):
            t_ext = max(t_ext, ext / ce)
        if loc and 0 < ci < float("inf"):
            t_int = max(t_int, loc / ci)
    return t_ext, t_int


def one_worker_ext(
    workers: Sequence[int], ps: Sequence[int], ext_caps: Sequence[float], grad_bytes: float
) -> float:
    """t_one: the largest external time of one push of a single worker of the placement."""
    S = sum(ps)
    t = 0.0
    for h, w in enumerate(workers):
        if w:
            one = [1 if q == h else 0 for q in range(len(workers))]
            t = max(t, link_times(one, ps, ext_caps, [0.0] * len(ps), grad_bytes)[0])
    return t if S else 0.0


def combine(ext_s: float, int_s: float, overlap: float) -> float:
    """max(e, i) + κ·min(e, i): a step's NIC and loopback seconds together."""
    return max(ext_s, int_s) + overlap * min(ext_s, int_s)


def links_step(
    batch: int,
    workers: Sequence[int],
    ps: Sequence[int],
    ext_caps: Sequence[float],
    int_caps: Sequence[float],
    grad_bytes: float,
    tau_s: float,
    inv_eta_ext: float,
    inv_eta_int: float,
    overhead_s: float,
    overlap: float = 1.0,
    pipeline: float = 0.0,
) -> float:
    """The ``links`` form (module docstring)."""
    t_ext, t_int = link_times(workers, ps, ext_caps, int_caps, grad_bytes)
    t_one = one_worker_ext(workers, ps, ext_caps, grad_bytes) if pipeline and t_ext else 0.0
    e = (2.0 * t_ext - pipeline * (t_ext - t_one)) * inv_eta_ext
    W = sum(workers)
    return batch / W * tau_s + combine(e, 2.0 * t_int * inv_eta_int, overlap) + overhead_s


@dataclass(frozen=True)
class CalibratedSpeed:
    """A fitted speed model as the engine's ``SpeedModel`` (module docstring).

    ``ext_mbit[h]`` is machine h's external cap (one value = every machine).
    """

    form: str
    slot_seconds: float
    batch_tau_s: float  # τ, seconds per sample
    grad_bytes: float
    g_over_b_int: float = 0.0  # eq1
    g_over_b_ext: float = 0.0  # eq1
    inv_eta_ext: float = 1.0  # links
    inv_eta_int: float = 1.0  # links
    overhead_s: float = 0.0  # links
    overlap: float = 1.0  # links: κ (1 = NIC and loopback times add up)
    pipeline: float = 0.0  # links: ω (0 = a link's pull and push phases do not overlap)
    ext_mbit: tuple[float, ...] = (20.0,)
    int_mbit: tuple[float, ...] = (0.0,)  # 0 = uncapped loopback
    ref_mbit: float = 0.0  # eq1: the cap g_over_b_ext was fitted at (0 = this run's)
    start_s: float = 0.0  # seconds a job's first incarnation runs no step (0: papers' credit)
    restart_s: float = 0.0  # the same for a later one (resumed, moved, resized)
    bucket_bytes: float = 0.0  # links, fifo: the token buckets' depth (local emulation)
    pacing_lag_s: float = 0.0  # links, fifo: a chunk's mean lag after its reservation

    def __post_init__(self) -> None:
        if self.form not in FORMS:
            raise InvalidInput("form", self.form, " | ".join(FORMS))
        if not self.slot_seconds > 0:
            raise InvalidInput("slot_seconds", self.slot_seconds, "> 0")
        for name in ("bucket_bytes", "pacing_lag_s"):
            if not getattr(self, name) >= 0:
                raise InvalidInput(name, getattr(self, name), ">= 0")
        for name in ("start_s", "restart_s"):
            v = getattr(self, name)
            if not 0 <= v < self.slot_seconds:
                raise InvalidInput(name, v, f">= 0 and < the slot ({self.slot_seconds:g} s)")

    @property
    def start_slots(self) -> float:
        """The share of its first slot a job's first incarnation loses (the engine's charge)."""
        return self.start_s / self.slot_seconds

    @property
    def restart_slots(self) -> float:
        """The share of its first slot a later incarnation loses (the engine's charge)."""
        return self.restart_s / self.slot_seconds

    @staticmethod
    def _cap(caps: tuple[float, ...], h: int) -> float:
        mbit = caps[h] if len(caps) > 1 else caps[0]
        return mbit * 1e6 / 8.0 if mbit > 0 else float("inf")

    def step_seconds(
        self, batch: int, machines: Sequence[int], workers: Sequence[int], ps: Sequence[int]
    ) -> float:
        """Seconds per sync step of ``batch`` samples on the placement."""
        W, S = sum(workers), sum(ps)
        if self.form == "eq1":
            used = {m for m, w, s in zip(machines, workers, ps, strict=True) if w or s}
            g_b_ext = self.g_over_b_ext
            if self.ref_mbit > 0:  # b^(e) scales with the slowest used machine's cap
                slowest = min(self._cap(self.ext_mbit, m) for m in used) * 8 / 1e6
                g_b_ext *= self.ref_mbit / slowest
            return eq1_step(
                batch, W, S, len(used) == 1, self.batch_tau_s, self.g_over_b_int, g_b_ext
            )
        return links_step(
            batch,
            workers,
            ps,
            [self._cap(self.ext_mbit, m) for m in machines],
            [self._cap(self.int_mbit, m) for m in machines],
            self.grad_bytes,
            self.batch_tau_s,
            self.inv_eta_ext,
            self.inv_eta_int,
            self.overhead_s,
            self.overlap,
            self.pipeline,
        )

    def rate(
        self,
        job: ClusterJob,
        machines: Sequence[int],
        workers: Sequence[int],
        ps: Sequence[int],
    ) -> float:
        """Work per slot: samples (sync) or mini-batches (async, (3.1) per worker)."""
        if sum(workers) <= 0 or sum(ps) <= 0:
            return 0.0
        if job.mode == "sync":
            return (
                job.batch
                / max(self.step_seconds(job.batch, machines, workers, ps), _MIN_STEP_S)
                * (self.slot_seconds)
            )
        total = 0.0
        for m, w in zip(machines, workers, strict=True):
            if w <= 0:
                continue
            # one worker of machine m against all PSs: its own links (W = 1 per worker)
            one = [1 if q == m else 0 for q in machines]
            step = max(self.step_seconds(job.batch, machines, one, list(ps)), _MIN_STEP_S)
            total += w / step * self.slot_seconds
        return total

    def network(self, machines: int) -> Network:
        """Machines 0..machines-1's links at the fitted efficiencies (bytes/s; ∞: uncapped)."""
        ext = tuple(self._cap(self.ext_mbit, h) / self.inv_eta_ext for h in range(machines))
        loop = tuple(self._cap(self.int_mbit, h) / self.inv_eta_int for h in range(machines))
        return Network(ext, ext, loop, burst_bytes=self.bucket_bytes)

    def flow_job(self, batch: int, p: Placement) -> FlowJob:
        """The placement's processes and per-step constants for :mod:`.flows`."""
        W, S = p.total_workers, p.total_ps
        return FlowJob(
            tuple(m for m, w in zip(p.machines, p.workers, strict=True) for _ in range(w)),
            tuple(m for m, s in zip(p.machines, p.ps, strict=True) for _ in range(s)),
            self.grad_bytes / S,
            batch / W * self.batch_tau_s + self.overhead_s,
        )

    def joint_steps(self, items: Sequence[tuple[int, Placement]]) -> list[float]:
        """Seconds per sync step of (batch, placement) pairs running together (``links``).

        Each job's step alone is the fitted ``links`` form (its κ, ω, η and
        overhead kept); the links it shares stretch its communication — the
        step minus its compute τ·F/W + c — by the ratio, among the others
        to alone, of a flow-level simulation of every connection
        (:func:`dmlsched.model.speed.flows.step_seconds`, averaged over
        ``PHASES`` start offsets: jobs start at unrelated times).  A link
        serves its flows partly in arrival order and partly max-min fairly:
        the ratio is (1 − ω)·fair + ω·fifo, ω the fitted share of a single
        job's push/pull overlap — the same property of the link (ω = 1: one
        message at a time, as the token buckets; ω = 0: TCP flows shared
        evenly, no pipelining).
        """
        solo = [
            self.step_seconds(b, p.machines, p.workers, p.ps)
            if p.total_workers and p.total_ps
            else math.inf
            for b, p in items
        ]
        live = [k for k, (_, p) in enumerate(items) if p.total_workers and p.total_ps]
        if self.form != "links" or len(live) < 2:
            return solo
        H = 1 + max(m for k in live for m in items[k][1].machines)
        net = self.network(H)
        fj = tuple(self.flow_job(*items[k]) for k in live)
        out = list(solo)
        stretch = [0.0] * len(fj)
        for transport, weight in (("fair", 1.0 - self.pipeline), ("fifo", self.pipeline)):
            if weight <= 0:
                continue
            lag = self.pacing_lag_s if transport == "fifo" else 0.0
            shared = _flow_steps(fj, net, transport, PHASES, lag)
            for n, (f, sh) in enumerate(zip(fj, shared, strict=True)):
                alone = _flow_steps((f,), net, transport, 1, lag)[0]
                comm = alone - f.compute_s
                stretch[n] += weight * ((sh - f.compute_s) / comm if comm > 1e-9 * alone else 1.0)
        for k, f, x in zip(live, fj, stretch, strict=True):
            out[k] = f.compute_s + (solo[k] - f.compute_s) * x
        return out

    def slot_rates(self, items: Sequence[tuple[ClusterJob, Placement]]) -> list[float]:
        """Rates of jobs running together: the ``links`` form shares every machine's links.

        Sync jobs: :meth:`joint_steps` (the flow-level model); async jobs and
        the ``eq1`` form: each job's rate alone.
        """
        solo = [self.rate(j, p.machines, p.workers, p.ps) for j, p in items]
        if self.form != "links" or any(j.mode != "sync" for j, _ in items):
            return solo
        steps = self.joint_steps([(j.batch, p) for j, p in items])
        return [
            j.batch / max(st, _MIN_STEP_S) * self.slot_seconds if r > 0 else 0.0
            for (j, _), st, r in zip(items, steps, solo, strict=True)
        ]


@functools.lru_cache(maxsize=4096)
def _flow_steps(
    jobs: tuple[FlowJob, ...], net: Network, transport: str, phases: int, lag_s: float
) -> tuple[float, ...]:
    if lag_s > 0:
        steps, warmup = LAGGED_STEPS
        return tuple(
            step_seconds(
                jobs, net, transport, steps=steps, warmup=warmup, phases=phases, lag_s=lag_s
            )
        )
    return tuple(step_seconds(jobs, net, transport, phases=phases))
