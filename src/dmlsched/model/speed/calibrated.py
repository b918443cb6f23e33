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

Async jobs (thesis (3.1)): a worker's mini-batch time is the same
expression with W = 1 seen from that worker (its own PSs), summed as rates.

:class:`CalibratedSpeed` implements :class:`dmlsched.model.cluster.SpeedModel`
(work per slot of ``slot_seconds``); it ignores the job's τ, g, b (the
profile describes the testbed's model on the measured machine) and uses only
F, the mode and the placement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import ClusterJob, Placement

__all__ = ["FORMS", "CalibratedSpeed", "eq1_step", "link_times", "links_step", "one_worker_ext"]

FORMS = ("eq1", "links")
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

    def __post_init__(self) -> None:
        if self.form not in FORMS:
            raise InvalidInput("form", self.form, " | ".join(FORMS))
        if not self.slot_seconds > 0:
            raise InvalidInput("slot_seconds", self.slot_seconds, "> 0")

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

    def slot_rates(self, items: Sequence[tuple[ClusterJob, Placement]]) -> list[float]:
        """Rates of jobs running together: ``links`` shares every machine's links.

        Ours (the papers' jobs never share a link).  A job's transfers on a
        link it shares run, on average, at 1 / (1 + Σ_j d_j) of its solo
        speed, where d_j ≤ 1 is the duty cycle of each other job j on that
        link (the share of j's step it keeps the link busy): while two jobs
        transfer at once each gets half the link (TCP's per-connection
        fairness through one FIFO qdisc, roughly per job for these
        all-to-all jobs), and a job that is mostly computing takes little.
        Steps and duty cycles depend on each other: a damped fixed-point
        iteration (at most 100 rounds).  Measured on the FIFO runs of
        ``testbed-pdors`` this sharing predicts the per-slot work better
        than sharing a saturated link in proportion to offered load
        (docs/testbed.md).  Async jobs and the ``eq1`` form: solo rates.
        """
        solo = [self.rate(j, p.machines, p.workers, p.ps) for j, p in items]
        if self.form != "links" or any(j.mode != "sync" for j, _ in items):
            return solo
        # per job: compute part, and per (machine, kind) the busy time per step at full cap
        base: list[float] = []
        busy: list[dict[tuple[int, str], float]] = []
        for job, p in items:
            W, S = p.total_workers, p.total_ps
            base.append(job.batch / max(W, 1) * self.batch_tau_s + self.overhead_s)
            b: dict[tuple[int, str], float] = {}
            if W and S:
                caps = [self._cap(self.ext_mbit, m) for m in p.machines]
                t_ext, _ = link_times(p.workers, p.ps, caps, [0.0] * len(caps), self.grad_bytes)
                t_one = one_worker_ext(p.workers, p.ps, caps, self.grad_bytes)
                # the job's push/pull overlap (ω) shortens its time on every external link
                pipe = 1.0 - self.pipeline * (t_ext - t_one) / (2.0 * t_ext) if t_ext else 1.0
                g = self.grad_bytes / S
                for m, w, s, ce in zip(p.machines, p.workers, p.ps, caps, strict=True):
                    ext = max(w * (S - s), s * (W - w)) * g
                    loc = w * s * g
                    ci = self._cap(self.int_mbit, m)
                    if ext and ce < float("inf"):
                        b[(m, "e")] = 2.0 * ext / ce * self.inv_eta_ext * pipe
                    if loc and ci < float("inf"):
                        b[(m, "i")] = 2.0 * loc / ci * self.inv_eta_int
            busy.append(b)

        def steps(stretch: list[dict[tuple[int, str], float]]) -> list[float]:
            out = []
            for k, b in enumerate(busy):
                te = max((v * stretch[k][lk] for lk, v in b.items() if lk[1] == "e"), default=0.0)
                ti = max((v * stretch[k][lk] for lk, v in b.items() if lk[1] == "i"), default=0.0)
                out.append(max(base[k] + combine(te, ti, self.overlap), _MIN_STEP_S))
            return out

        step = steps([dict.fromkeys(b, 1.0) for b in busy])
        for _ in range(100):
            duty: dict[tuple[int, str], float] = {}  # Σ over jobs of duty cycles per link
            for k, b in enumerate(busy):
                for lk, v in b.items():
                    duty[lk] = duty.get(lk, 0.0) + min(1.0, v / step[k])
            new = steps(
                [
                    {lk: 1.0 + duty[lk] - min(1.0, v / step[k]) for lk, v in b.items()}
                    for k, b in enumerate(busy)
                ]
            )
            done = max(abs(a / b_ - 1.0) for a, b_ in zip(new, step, strict=True)) < 1e-9
            step = [0.5 * (a + b_) for a, b_ in zip(new, step, strict=True)]
            if done:
                break
        return [
            job.batch / st * self.slot_seconds if sum(p.workers) and sum(p.ps) else 0.0
            for (job, p), st in zip(items, step, strict=True)
        ]
