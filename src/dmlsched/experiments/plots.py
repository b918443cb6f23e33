"""One PNG per metric: mean ± 95% interval over seeds, per scheduler."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: no display on CI or servers
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from dmlsched.experiments.claims import mean_ci

__all__ = ["plot_metric"]


def _is_numeric(values: list[str]) -> bool:
    try:
        [float(v) for v in values]
    except ValueError:
        return False
    return True


def plot_metric(
    df: pd.DataFrame, metric: str, param: str, title: str, path: Path, kind: str = "line"
) -> Path | None:
    sub = df[df["metric"] == metric]
    if sub.empty:
        return None
    points = list(dict.fromkeys(sub["value"]))
    scheds = list(dict.fromkeys(sub["scheduler"]))
    numeric = _is_numeric(points) and kind == "line" and len(points) > 1
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    width = 0.8 / max(len(scheds), 1)
    for k, s in enumerate(scheds):
        stats = [
            mean_ci(sub[(sub["scheduler"] == s) & (sub["value"] == p)]["metric_value"].to_numpy())
            for p in points
        ]
        means = np.array([m for m, _ in stats])
        cis = np.array([c for _, c in stats])
        if numeric:
            x = np.array([float(p) for p in points])
            ax.errorbar(x, means, yerr=cis, marker="o", capsize=3, label=s)
        else:
            x = np.arange(len(points)) + (k - (len(scheds) - 1) / 2) * width
            ax.bar(x, means, width=width, yerr=cis, capsize=3, label=s)
    if not numeric:
        ax.set_xticks(np.arange(len(points)), points)
    ax.set_xlabel(param)
    ax.set_ylabel(metric.replace("_", " "))
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path
