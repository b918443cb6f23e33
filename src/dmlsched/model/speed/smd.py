"""SMD speed model: per-layer schedules (Lemmas 1–2), η1–η3, Eq. (4)/(5).

Layer times are per mini-batch (see :mod:`dmlsched.model.interval` for units);
layers are indexed 1..N in the paper and 0..N−1 here.  BP runs from layer N
down to 1 starting at time 0, so BP of layer j ends at Σ_{k≥j} b_k.

* Sequential [22]: t = Σ b + 2 Σ r + Σ f, η1 = η2 = η3 = 1.
* Wait-free, **Lemma 1**: κ_N = b_N, κ_j = max{Σ_{k≥j} b_k, κ_{j+1} + r_{j+1}};
  s_N = b_N + r_N, s_j = max{κ_j + r_j, s_{j+1} + r_{j+1}}; τ_1 = s_1 + r_1,
  τ_j = τ_{j−1} + f_{j−1}; t = τ_N + f_N.  Push j is [κ_j, κ_j + r_j], pull j
  is [s_j, s_j + r_j].
* Priority with slicing, **Lemma 2**: e_1 = Σ b + r_1 + φ; for j ≥ 2,
  e_j = e_1 + Σ_{k=2}^j r_k − Σ_{k=1}^{j−1} b_k when that is positive and
  the channel stays busy (see :func:`priority_schedule` for why not the
  printed max_{k<j} e_k), else the transfer is hidden in BP; τ_1 = e_1,
  τ_j = max{τ_{j−1} + f_{j−1}, e_j}; t = τ_N + f_N.

**η from a timeline** (Sec. III-C: η1 = H_f/Σf, η2 = H_b/Σb,
η3 = H_r/(2Σr)).  The paper defines H_f, H_b, H_r only through its Fig. 4
example (η1 = 1, η2 = b_4/Σb, η3 = (2r_4 + r_3 + r_2 + r_1)/(2Σr)), which
fixes the attribution rule used here: an instant of [0, t) counts as
communication whenever a transfer is in flight, otherwise as FP or BP when
that runs; H_r = t − H_f − H_b (idle waiting counts as communication).  So
H_f + H_b + H_r = t.  Communication in flight: wait-free — the union of its
push and pull intervals; priority — during BP, the busy time of one channel
serving each layer's r_j from the end of its BP (a fluid queue, order does
not change the busy time) — the schedule of Lemma 2 computed exactly.

Speed (iterations per second), with t_f = Σf/m per sample, t_b = Σb, g in
Gb over B in Gbps:

* Eq. (4), sync: f = 1/(η1 (K/w) t_f + η2 t_b + 2η3 (g/p)/(B/w) + β1 w + β2 p)
* Eq. (5), async: f = w/(η1 m t_f + η2 t_b + 2η3 α (g/p)/(B/w) + β1 w + β2 p)

and the completion time E/f in the job's time unit.  The θ coefficients of
the inner problems (9)/(10) are :func:`theta_sync` / :func:`theta_async`
(in seconds; divide by ``time_unit_s``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlsched.model.interval import IntervalJob

__all__ = [
    "Etas",
    "LayerSchedule",
    "completion_time",
    "etas",
    "job_etas",
    "phase_split",
    "priority_schedule",
    "sequential_time",
    "speed",
    "theta_async",
    "theta_sync",
    "wait_free_schedule",
]

_GBIT_PER_MB = 8e-3
_MS = 1e-3


@dataclass(frozen=True)
class Etas:
    eta1: float
    eta2: float
    eta3: float


@dataclass(frozen=True)
class LayerSchedule:
    """A per-sample timeline: FP starts τ_j, per-sample time t and the parts."""

    tau: tuple[float, ...]
    t: float
    h_f: float
    h_b: float
    h_r: float
    kappa: tuple[float, ...] = ()  # wait-free: push starts
    s: tuple[float, ...] = ()  # wait-free: pull starts
    e: tuple[float, ...] = ()  # priority: communication end times


def sequential_time(f: tuple[float, ...], b: tuple[float, ...], r: tuple[float, ...]) -> float:
    """Sequential model [22]: t = Σb + 2Σr + Σf."""
    return float(sum(b) + 2 * sum(r) + sum(f))


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for lo, hi in sorted(iv for iv in intervals if iv[1] > iv[0]):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _outside(lo: float, hi: float, cover: list[tuple[float, float]]) -> float:
    """Length of [lo, hi] not covered by the disjoint sorted intervals ``cover``."""
    length = max(hi - lo, 0.0)
    for c_lo, c_hi in cover:
        length -= max(0.0, min(hi, c_hi) - max(lo, c_lo))
    return length


def phase_split(
    f: tuple[float, ...],
    b: tuple[float, ...],
    tau: tuple[float, ...],
    t: float,
    comm: list[tuple[float, float]],
) -> tuple[float, float, float]:
    """(H_f, H_b, H_r): FP and BP time with no transfer in flight, and the rest."""
    cover = _union(comm)
    n = len(b)
    bp_end = np.cumsum(np.asarray(b, dtype=float)[::-1])[::-1]  # BP of j ends at Σ_{k≥j} b_k
    h_b = sum(_outside(bp_end[j] - b[j], bp_end[j], cover) for j in range(n))
    h_f = sum(_outside(tau[j], tau[j] + f[j], cover) for j in range(n))
    return float(h_f), float(h_b), float(t - h_f - h_b)


def wait_free_schedule(
    f: tuple[float, ...], b: tuple[float, ...], r: tuple[float, ...]
) -> LayerSchedule:
    """Lemma 1 (wait-free model)."""
    n = len(b)
    suffix_b = np.cumsum(np.asarray(b, dtype=float)[::-1])[::-1]
    kappa = [0.0] * n
    s = [0.0] * n
    kappa[n - 1] = float(b[n - 1])
    s[n - 1] = float(b[n - 1] + r[n - 1])
    for j in range(n - 2, -1, -1):
        kappa[j] = max(float(suffix_b[j]), kappa[j + 1] + r[j + 1])
        s[j] = max(kappa[j] + r[j], s[j + 1] + r[j + 1])
    tau = [0.0] * n
    tau[0] = s[0] + r[0]
    for j in range(1, n):
        tau[j] = tau[j - 1] + f[j - 1]
    t = tau[n - 1] + f[n - 1]
    comm = [(kappa[j], kappa[j] + r[j]) for j in range(n)] + [(s[j], s[j] + r[j]) for j in range(n)]
    h_f, h_b, h_r = phase_split(f, b, tuple(tau), t, comm)
    return LayerSchedule(tuple(tau), t, h_f, h_b, h_r, kappa=tuple(kappa), s=tuple(s))


def _priority_fluid(
    b: tuple[float, ...], r: tuple[float, ...], phi: float
) -> tuple[list[float], list[tuple[float, float]]]:
    """One channel, preemptive priority (lower layer first), work r_j from the end of BP j.

    Layer 1 additionally waits for the slice in flight (φ).  Returns the end
    time of each layer's transfer and the channel's busy intervals.
    """
    n = len(b)
    ready = np.cumsum(np.asarray(b, dtype=float)[::-1])[::-1]  # BP of j ends at Σ_{k≥j} b_k
    left = [float(r[j]) for j in range(n)]
    left[0] += phi
    end = [float(ready[j]) for j in range(n)]  # zero work: done when ready
    busy: list[tuple[float, float]] = []
    clock = float(ready[n - 1])
    arrivals = sorted({float(x) for x in ready})
    while True:
        avail = [j for j in range(n) if ready[j] <= clock and left[j] > 0.0]
        nxt = [a for a in arrivals if a > clock]
        if not avail:
            if not nxt:
                break
            clock = nxt[0]
            continue
        j = min(avail)  # highest priority: closest to the input layer
        stop = min(clock + left[j], nxt[0]) if nxt else clock + left[j]
        left[j] = 0.0 if stop >= clock + left[j] else left[j] - (stop - clock)
        if busy and abs(busy[-1][1] - clock) <= 1e-12:
            busy[-1] = (busy[-1][0], stop)
        else:
            busy.append((clock, stop))
        clock = stop
        if left[j] == 0.0:
            end[j] = clock
    return end, busy


def priority_schedule(
    f: tuple[float, ...], b: tuple[float, ...], r: tuple[float, ...], phi: float
) -> LayerSchedule:
    """Lemma 2 (priority-based model with parameter slicing of size φ).

    e_1 = Σb + r_1 + φ as in the lemma.  For j ≥ 2 the printed recursion adds
    Σ_{k=2}^j r_k to max_{k<j} e_k, which already contains Σ_{k=2}^{j−1} r_k,
    so it counts every transfer once per later layer (per-sample times grow
    quadratically in N).  We compute e_j from the schedule the lemma
    describes — one channel, preemptive priority to lower layers, layer j
    ready at the end of its BP — which gives the lemma's
    e_j = e_1 + Σ_{k=2}^j r_k − Σ_{k=1}^{j−1} b_k whenever the channel stays
    busy from the end of BP j, and a transfer finished before Σb is hidden
    (the lemma's e_j = 0; we keep its true end time, which τ_j ignores).
    τ_1 = e_1, τ_j = max{τ_{j−1} + f_{j−1}, e_j}, t = τ_N + f_N.
    """
    n = len(b)
    e, busy = _priority_fluid(b, r, phi)
    tau = [0.0] * n
    tau[0] = e[0]
    for j in range(1, n):
        tau[j] = max(tau[j - 1] + f[j - 1], e[j])
    t = tau[n - 1] + f[n - 1]
    h_f, h_b, h_r = phase_split(f, b, tuple(tau), t, busy)
    return LayerSchedule(tuple(tau), t, h_f, h_b, h_r, e=tuple(e))


def etas(
    f: tuple[float, ...],
    b: tuple[float, ...],
    r: tuple[float, ...],
    model: str,
    phi: float = 0.0,
) -> Etas:
    """η1 = H_f/Σf, η2 = H_b/Σb, η3 = H_r/(2Σr) (1 where a total is 0)."""
    if model == "sequential":
        return Etas(1.0, 1.0, 1.0)
    if model == "wait-free":
        sch = wait_free_schedule(f, b, r)
    elif model == "priority":
        sch = priority_schedule(f, b, r, phi)
    else:
        raise ValueError(f"unknown communication model {model!r}")

    def ratio(h: float, total: float) -> float:
        return float(h / total) if total > 0 else 1.0

    return Etas(ratio(sch.h_f, sum(f)), ratio(sch.h_b, sum(b)), ratio(sch.h_r, 2 * sum(r)))


def job_etas(job: IntervalJob) -> Etas:
    return etas(job.fp_ms, job.bp_ms, job.comm_ms, job.comm_model, job.slice_ms)


def _parts(job: IntervalJob, eta: Etas | None) -> tuple[Etas, float, float, float]:
    """(η, t_f per sample, t_b, g/B) in seconds."""
    eta = eta or job_etas(job)
    t_f = sum(job.fp_ms) * _MS / job.minibatch
    t_b = sum(job.bp_ms) * _MS
    g_over_b = job.grad_mb * _GBIT_PER_MB / job.ps_bandwidth
    return eta, t_f, t_b, g_over_b


def speed(job: IntervalJob, workers: Any, ps: Any, eta: Etas | None = None) -> Any:
    """Eq. (4) (sync) or Eq. (5) (async): iterations per second; arrays broadcast."""
    eta, t_f, t_b, gb = _parts(job, eta)
    w = np.asarray(workers, dtype=float)
    p = np.asarray(ps, dtype=float)
    common = eta.eta2 * t_b + job.beta1 * w + job.beta2 * p
    if job.mode == "sync":
        return 1.0 / (eta.eta1 * job.global_batch / w * t_f + common + 2 * eta.eta3 * gb * w / p)
    return w / (eta.eta1 * job.minibatch * t_f + common + 2 * eta.eta3 * job.alpha * gb * w / p)


def completion_time(job: IntervalJob, workers: Any, ps: Any, eta: Etas | None = None) -> Any:
    """E/f(p, w) in the job's time unit (arrays broadcast)."""
    return job.iterations / speed(job, workers, ps, eta) / job.time_unit_s


def theta_sync(job: IntervalJob, eta: Etas | None = None) -> tuple[float, ...]:
    """Problem (9): E/f = θ1 w + θ2 p + θ3 + θ4 w/p + θ5/w (seconds)."""
    eta, t_f, t_b, gb = _parts(job, eta)
    e = job.iterations
    return (
        e * job.beta1,
        e * job.beta2,
        e * eta.eta2 * t_b,
        2 * e * eta.eta3 * gb,
        eta.eta1 * e * job.global_batch * t_f,
    )


def theta_async(job: IntervalJob, eta: Etas | None = None) -> tuple[float, ...]:
    """Problem (10): E/f = θ1 + θ2 p/w + θ3/w + θ4/p (seconds)."""
    eta, t_f, t_b, gb = _parts(job, eta)
    e = job.iterations
    return (
        e * job.beta1,
        e * job.beta2,
        e * (eta.eta1 * job.minibatch * t_f + eta.eta2 * t_b),
        2 * e * job.alpha * eta.eta3 * gb,
    )
