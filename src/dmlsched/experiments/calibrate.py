"""``dmlsched calibrate``: Eq. (1)'s locality slowdown against the Pollux measurements.

For each profiled application, four GPUs (W = 4 workers) spread over k = 1,
2 and 4 machines (measured placements ``4``, ``22``, ``1111``), at the
smallest and the largest measured local batch l:

* **measured slowdown** = measured step time of the placement ÷ the
  single-GPU compute time at l (step − sync time of placement ``1``);
* **predicted slowdown** (PD-ORS Eq. (1) with Fact 1): one step of global
  batch F = 4l takes (F/W)·τ + 2g/(S·b) seconds with τ the same single-GPU
  compute time per sample, g = 4 B × parameters
  (:data:`~dmlsched.workloads.profiles.APPLICATIONS`), S = 1 PS (the
  import's all-reduce mapping, γ = W) and b = b^(i) = 126 Gbps on one machine,
  b^(e) = 50 Gbps otherwise — so Eq. (1) predicts the *same* slowdown for 2
  and 4 machines (Fact 1: any spread makes the bottleneck external);
* **error** = predicted ÷ measured − 1.

These jobs synchronise gradients by **all-reduce (NCCL), not parameter
servers**; the PS model is mapped onto them as the import does, and the
table measures how far that mapping is from real all-reduce step times.

Writes ``DIR/summary.md`` (table + mean absolute error per application) and
``DIR/calibration.png``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dmlsched.model.speed.measured import AppProfile, step_time
from dmlsched.workloads.peers import B_EXT_GBPS, B_INT_GBPS
from dmlsched.workloads.profiles import APPLICATIONS, load_profiles

__all__ = ["CalibrationRow", "calibrate", "calibration_rows", "write_calibration"]

PLACEMENTS = {1: (4,), 2: (2, 2), 4: (1, 1, 1, 1)}


@dataclass(frozen=True)
class CalibrationRow:
    app: str
    local_bsz: int
    nodes: int
    measured_step_s: float
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1.0


def _predicted(app: str, l: float, compute_s: float, nodes: int) -> float:
    g = APPLICATIONS[app].grad_mb
    b = B_INT_GBPS if nodes == 1 else B_EXT_GBPS
    comm = 2.0 * g * 8e-3 / b  # seconds, S = 1
    return (compute_s + comm) / compute_s


def calibration_rows(profiles: dict[str, AppProfile]) -> list[CalibrationRow]:
    rows = []
    for app in sorted(APPLICATIONS):
        prof = profiles[app]
        x = prof.placements[(1,)][0]
        for l in sorted({int(x[0]), int(x[-1])}):
            st1, sy1 = step_time(prof, (1,), l)
            compute = st1 - sy1
            for nodes, pl in PLACEMENTS.items():
                st, _ = step_time(prof, pl, l)
                rows.append(
                    CalibrationRow(
                        app, l, nodes, st, st / compute, _predicted(app, l, compute, nodes)
                    )
                )
    return rows


def write_calibration(rows: list[CalibrationRow], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Calibration: Eq. (1) locality slowdown vs the Pollux measurements",
        "",
        "Four GPUs on 1, 2 or 4 machines (placements 4, 22, 1111); slowdown = step time ÷ "
        "single-GPU compute time at the same local batch.  Predicted: PD-ORS Eq. (1) with "
        f"Fact 1, S = 1 PS, b^(i) = {B_INT_GBPS:g} Gbps, b^(e) = {B_EXT_GBPS:g} Gbps, "
        "g = 4 B × parameters.  **These jobs synchronise by all-reduce, not parameter "
        "servers**: the PS model is mapped onto them (one PS per job), and the error "
        "below is how far that mapping is from measured all-reduce step times.",
        "",
        "| application | local batch | nodes | measured step (s) | measured slowdown "
        "| Eq. (1) slowdown | error |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.app} | {r.local_bsz} | {r.nodes} | {r.measured_step_s:.4g} | "
            f"{r.measured:.3f} | {r.predicted:.3f} | {100 * r.error:+.1f}% |"
        )
    lines += ["", "Mean absolute error per application (all rows):", ""]
    for app in sorted({r.app for r in rows}):
        errs = [abs(r.error) for r in rows if r.app == app]
        lines.append(f"- {app}: {100 * float(np.mean(errs)):.1f}%")
    allerr = [abs(r.error) for r in rows]
    lines += [
        "",
        f"Overall mean absolute error: {100 * float(np.mean(allerr)):.1f}% "
        f"(max {100 * float(np.max(allerr)):.1f}%).",
        "",
        "Eq. (1) predicts one value for 2 and 4 machines (Fact 1); the measurements "
        "differ between them (two GPUs per machine sharing a NIC, placement 22, are "
        "slower than 1111), and at small local batches synchronisation costs far more "
        "than a 50 Gbps link predicts (all-reduce latency and framework overhead, which "
        "Eq. (1) has no term for).  Eq. (1) under-predicts the slowdown in most rows.",
        "",
    ]
    summary = out / "summary.md"
    summary.write_text("\n".join(lines))

    apps = sorted({r.app for r in rows})
    fig, axes = plt.subplots(1, len(apps), figsize=(3 * len(apps), 3.2), sharey=False)
    for ax, app in zip(np.atleast_1d(axes), apps, strict=True):
        sub = [r for r in rows if r.app == app]
        l = min(r.local_bsz for r in sub)
        sub = [r for r in sub if r.local_bsz == l]
        xs = np.arange(len(sub))
        ax.bar(xs - 0.2, [r.measured for r in sub], 0.4, label="measured")
        ax.bar(xs + 0.2, [r.predicted for r in sub], 0.4, label="Eq. (1)")
        ax.set_xticks(xs, [str(r.nodes) for r in sub])
        ax.set_title(f"{app} (local batch {l})", fontsize=8)
        ax.set_xlabel("machines spanned (4 GPUs)")
    np.atleast_1d(axes)[0].set_ylabel("step time ÷ 1-GPU compute")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "calibration.png", dpi=110)
    plt.close(fig)
    return summary


def calibrate(out: Path, profiles_dir: Path | None = None) -> Path:
    """Compute the table for every application and write it under ``out``."""
    return write_calibration(calibration_rows(load_profiles(profiles_dir)), Path(out))
