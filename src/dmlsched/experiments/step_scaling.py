"""``dmlsched calibrate --step-profile FILE``: fit saturating step curves to a GPU profile.

A step-scaling profile is JSON: per model, per-worker batch → seconds of one
forward + backward + update step (``../shared/profiles/h200-step-scaling.json``
and the ``step_scaling.py`` that measured it), plus ``grad_mb``: each model's
gradient in MB, keyed by the model's name or by its part before the first
``_`` (``resnet50`` for ``resnet50_224``).  Other keys (``device``, ``torch``)
are kept as notes.

For each model, :func:`fit_curve` fits t(b) = max(t0, τ·b) + c
(:mod:`dmlsched.model.speed.saturating`) by **minimax relative error** — the
largest |t(b) − y_b| / y_b over the batches, the claim the fit is judged
on — then, among the minimax fits, the smallest sum of relative errors
(ties: the smallest c and A = t0 + c, the largest τ: a curve whose linear
branch was never measured saturates right after the largest batch
measured).  Exact: for each split of the sorted batches into a flat prefix
and a linear rest, the model is linear in (t0 + c, τ, c), so each split is
one linear program (scipy's HiGHS); the best split wins.

:func:`monotone_floor` is what no fit of a non-decreasing curve can beat:
for two batches b_i < b_j with y_i > y_j, any non-decreasing t misses one of
them by at least (y_i − y_j)/(y_i + y_j); the floor is the largest over
pairs (the minimax error of the best isotonic fit).  A measurement whose
step time *falls* as the batch grows (noise, or a faster kernel chosen at
a larger batch) sets it.

``--compute`` (``compare``, ``reproduce``): :func:`compute_speed` turns
``linear`` (Eq. (1) as printed: no speed model), ``saturating`` (the curves
fitted to ``../shared/profiles/h200-step-scaling.json``) or a step-scaling
file's PATH into the engine's speed model; :class:`WithCompute` puts it on
every workload an experiment builds.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import linprog

from dmlsched.errors import InvalidInput
from dmlsched.model.speed.saturating import SaturatingSpeed, StepCurve

__all__ = [
    "CurveFit",
    "StepProfile",
    "WithCompute",
    "compute_speed",
    "default_step_profile",
    "fit_curve",
    "fit_profile",
    "monotone_floor",
    "read_step_profile",
    "with_compute",
    "write_step_fits",
]

_TIE = 1e-6  # weight of the tie-breaking terms (relative to the sum of errors)
_REPO = Path(__file__).resolve().parents[3]


def default_step_profile() -> Path:
    """``<repo>/../shared/profiles/h200-step-scaling.json`` (or further up, as traces do)."""
    for up in _REPO.parents:
        if (up / "shared" / "profiles").is_dir():
            return up / "shared" / "profiles" / "h200-step-scaling.json"
    return _REPO.parent / "shared" / "profiles" / "h200-step-scaling.json"


@functools.lru_cache(maxsize=8)
def _fitted(path: str) -> SaturatingSpeed:
    return SaturatingSpeed(tuple(f.curve for f in fit_profile(path)))


def compute_speed(spec: str | None) -> SaturatingSpeed | None:
    """The engine's speed model for ``--compute spec`` (None: Eq. (1) as printed)."""
    if spec is None or spec == "linear":
        return None
    path = default_step_profile() if spec == "saturating" else Path(spec)
    if not path.is_file():
        where = f"saturating needs {path}" if spec == "saturating" else "no such file"
        raise InvalidInput("compute", spec, f"linear | saturating | PATH ({where})")
    return _fitted(str(path.resolve()))


@dataclass(frozen=True)
class WithCompute:
    """An experiment's ``build`` whose cluster workloads get ``--compute spec``'s speed model
    (picklable: process pools and Ray send it to every worker)."""

    build: Callable[..., Any]
    spec: str

    def __call__(self, point: Any, seed: int, quick: bool) -> Any:
        return with_compute(self.build(point, seed, quick), self.spec)


def with_compute(workload: Any, spec: str) -> Any:
    """``workload`` with ``--compute spec``'s speed model (a cluster workload on Eq. (1))."""
    from dmlsched.model.cluster import ClusterWorkload

    if not isinstance(workload, ClusterWorkload) or workload.speed is not None:
        raise InvalidInput("compute", spec, "only for cluster workloads on Eq. (1) (no --speed)")
    return dataclasses.replace(workload, speed=compute_speed(spec))


@dataclass(frozen=True)
class StepProfile:
    """One model's measurements: sorted batches, seconds per step, gradient MB."""

    name: str
    batches: tuple[int, ...]
    seconds: tuple[float, ...]
    grad_mb: float


@dataclass(frozen=True)
class CurveFit:
    """A model's fitted curve and its relative error at every measured batch."""

    profile: StepProfile
    curve: StepCurve
    errors: tuple[float, ...]  # (t(b) − y_b) / y_b, signed, per batch
    floor: float  # monotone_floor of the measurements

    @property
    def max_error(self) -> float:
        return max(abs(e) for e in self.errors)


def read_step_profile(path: Path | str) -> tuple[list[StepProfile], dict[str, str]]:
    """The models of a step-scaling JSON file (module docstring) and its notes."""
    p = Path(path)
    try:
        blob = json.loads(p.read_text())
    except (OSError, ValueError) as e:
        raise InvalidInput("step-profile", str(p), f"a step-scaling JSON file ({e})") from e
    if not isinstance(blob, dict):
        raise InvalidInput("step-profile", str(p), "a JSON object")
    grads = blob.get("grad_mb") or {}
    if not isinstance(grads, dict):
        raise InvalidInput("grad_mb", grads, "an object: model -> MB")
    out: list[StepProfile] = []
    notes: dict[str, str] = {}
    for name, val in blob.items():
        if name == "grad_mb":
            continue
        if not isinstance(val, dict):
            notes[name] = str(val)
            continue
        pts: list[tuple[int, float]] = []
        for b, s in val.items():
            try:
                bi, sf = int(b), float(s)
            except (TypeError, ValueError):
                raise InvalidInput(f"{name}.{b}", s, "batch (integer) -> seconds") from None
            if bi < 1 or not (sf > 0 and math.isfinite(sf)):
                raise InvalidInput(f"{name}.{b}", s, "batch >= 1 -> seconds > 0")
            pts.append((bi, sf))
        if len(pts) < 2:
            raise InvalidInput(name, len(pts), "at least two batches")
        pts.sort()
        given: Any = grads.get(  # JSON: float() decides whether it is a number
            name, grads.get(name.split("_", 1)[0], float("nan"))
        )
        try:
            g = float(given)
        except (TypeError, ValueError):
            raise InvalidInput(f"grad_mb.{name}", given, "MB > 0") from None
        out.append(StepProfile(name, tuple(b for b, _ in pts), tuple(s for _, s in pts), g))
    if not out:
        raise InvalidInput("step-profile", str(p), "at least one model: {batch: seconds}")
    return out, notes


def monotone_floor(batches: tuple[int, ...], seconds: tuple[float, ...]) -> float:
    """The smallest largest relative error of any non-decreasing curve (module docstring)."""
    worst = 0.0
    for i in range(len(batches)):
        for j in range(i + 1, len(batches)):
            if batches[i] < batches[j] and seconds[i] > seconds[j]:
                worst = max(worst, (seconds[i] - seconds[j]) / (seconds[i] + seconds[j]))
    return worst


def _split_lp(b: np.ndarray, y: np.ndarray, k: int, e_max: float | None) -> tuple | None:
    """Variables (A, τ, c, e[, r_1..r_n]) of split k (the first k batches flat), in scaled
    units; minimax (``e_max`` None) or, with e ≤ ``e_max``, the tie-broken sum of errors."""
    n = len(b)
    second = e_max is not None
    nv = 4 + (n if second else 0)
    rows: list[np.ndarray] = []
    rhs: list[float] = []

    def row(**coef: float) -> np.ndarray:
        r = np.zeros(nv)
        for key, v in coef.items():
            r[int(key[1:]) if key.startswith("r") else "Atce".index(key)] = v
        return r

    for i in range(n):
        # prediction p_i = A (flat) or τ b_i + c (linear); |p_i − y_i| ≤ e y_i (and ≤ r_i y_i)
        p = row(A=1.0) if i < k else row(t=b[i], c=1.0)
        for err in ("e", f"r{4 + i}") if second else ("e",):
            rows += [p - row(**{err: y[i]}), -p - row(**{err: y[i]})]
            rhs += [y[i], -y[i]]
    if k > 0:  # flat batches: τ b ≤ t0 = A − c (the largest is enough)
        rows.append(row(t=b[k - 1], c=1.0, A=-1.0))
        rhs.append(0.0)
    if k < n:  # linear batches: τ b ≥ t0 (the smallest is enough)
        rows.append(row(A=1.0, t=-b[k], c=-1.0))
        rhs.append(0.0)
    rows.append(row(c=1.0, A=-1.0))  # t0 ≥ 0
    rhs.append(0.0)
    bounds: list[tuple[float, float | None]] = [(0, None)] * nv
    if second:
        bounds[3] = (0, e_max)
        obj = np.zeros(nv)
        obj[4:] = 1.0
        obj[:4] = [_TIE, -_TIE, _TIE, 0.0]  # smaller A and c, larger τ
    else:
        obj = row(e=1.0)
    res = linprog(obj, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=bounds, method="highs")
    if res.status != 0:
        return None
    return float(res.fun), res.x[:4]


def fit_curve(prof: StepProfile) -> CurveFit:
    """Minimax fit of t(b) = max(t0, τ·b) + c to one model (module docstring)."""
    b_raw = np.array(prof.batches, dtype=float)
    y_raw = np.array(prof.seconds, dtype=float)
    ys, bs = float(np.median(y_raw)), float(b_raw.max())  # scaled units: LP numerics
    b, y = b_raw / bs, y_raw / ys
    n = len(b)
    firsts = [_split_lp(b, y, k, None) for k in range(n + 1)]
    e_star = min(f[0] for f in firsts if f is not None)
    best: tuple[float, int, np.ndarray] | None = None
    for k, first in enumerate(firsts):
        if first is None or first[0] > e_star * (1 + 1e-6) + 1e-12:
            continue
        got = _split_lp(b, y, k, e_star * (1 + 1e-6) + 1e-12)
        if got is not None and (best is None or got[0] < best[0] - 1e-12):
            best = (got[0], k, got[1])
    assert best is not None  # the minimax split is feasible at its own error
    A, tau, c, _ = best[2]
    curve = StepCurve(
        prof.name,
        t0_s=max(0.0, (A - c)) * ys,
        tau_s=max(0.0, tau) * ys / bs,
        overhead_s=max(0.0, c) * ys,
        grad_mb=prof.grad_mb,
    )
    pts = zip(prof.batches, prof.seconds, strict=True)
    errors = tuple(curve.seconds(bi) / yi - 1.0 for bi, yi in pts)
    return CurveFit(prof, curve, errors, monotone_floor(prof.batches, prof.seconds))


def fit_profile(path: Path | str) -> list[CurveFit]:
    """Every model of a step-scaling file, fitted."""
    profiles, _ = read_step_profile(path)
    return [fit_curve(p) for p in profiles]


def write_step_fits(fits: list[CurveFit], source: str, out: Path | None = None) -> str:
    """The fits as Markdown (returned); with ``out``, also ``step_fit.md``, ``.json``, ``.png``."""
    lines = [
        f"# Saturating step curves fitted to {source}",
        "",
        "t(b) = max(t0, τ·b) + c, minimax relative error; floor = the least largest error "
        "of any non-decreasing curve on these measurements.",
        "",
        "| model | t0 ms | τ µs/sample | c ms | b_sat | grad MB | max error | floor |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in fits:
        c = f.curve
        sat = f"{c.saturation_batch:.0f}" if math.isfinite(c.saturation_batch) else "∞"
        if c.saturation_batch >= max(f.profile.batches) * (1 - 1e-6):
            sat = f"≥ {max(f.profile.batches)}"  # the linear branch was never measured
        lines.append(
            f"| {c.name} | {1e3 * c.t0_s:.3f} | {1e6 * c.tau_s:.3f} | {1e3 * c.overhead_s:.3f} "
            f"| {sat} | {c.grad_mb:.3g} | {100 * f.max_error:.1f}% | {100 * f.floor:.1f}% |"
        )
    lines += ["", "Error at every batch ((fit − measured) / measured):", ""]
    for f in fits:
        cells = ", ".join(
            f"{b}: {1e3 * y:.2f} ms {100 * e:+.1f}%"
            for b, y, e in zip(f.profile.batches, f.profile.seconds, f.errors, strict=True)
        )
        lines.append(f"- **{f.curve.name}** — {cells}")
    text = "\n".join(lines) + "\n"
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "step_fit.md").write_text(text)
        blob = {
            f.curve.name: {
                "t0_s": f.curve.t0_s,
                "tau_s": f.curve.tau_s,
                "overhead_s": f.curve.overhead_s,
                "grad_mb": f.curve.grad_mb,
                "max_error": f.max_error,
                "floor": f.floor,
                "errors": dict(zip(map(str, f.profile.batches), f.errors, strict=True)),
            }
            for f in fits
        }
        (out / "step_fit.json").write_text(json.dumps(blob, indent=1) + "\n")
        _plot(fits, out / "step_fit.png")
    return text


def _plot(fits: list[CurveFit], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(fits), figsize=(3.6 * len(fits), 3.4), squeeze=False)
    for ax, f in zip(axes[0], fits, strict=True):
        bs = np.geomspace(min(f.profile.batches), max(f.profile.batches), 200)
        ax.plot(f.profile.batches, [1e3 * s for s in f.profile.seconds], "o", label="measured")
        ax.plot(bs, [1e3 * f.curve.seconds(b) for b in bs], "-", label="max(t0, τ·b) + c")
        lin = f.profile.seconds[0] / f.profile.batches[0]
        ax.plot(bs, [1e3 * lin * b for b in bs], ":", label="τ·b (linear, from the first)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_ylim(0.5e3 * min(f.profile.seconds), 3e3 * max(f.profile.seconds))
        ax.set_title(f"{f.curve.name} (max error {100 * f.max_error:.1f}%)", fontsize=9)
        ax.set_xlabel("per-worker batch")
        ax.set_ylabel("ms per step")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
