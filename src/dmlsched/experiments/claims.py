"""Paper claims checked on per-point means, with a 95% interval over seeds.

Three forms cover the catalogue:

* :class:`Beats` — ``winner``'s metric is better (higher, or lower when
  ``higher=False``) than each of ``losers`` at every point;
* :class:`Bound` — every point's mean of ``scheduler``'s metric is ≤ or ≥ a
  value (e.g. approx_ratio ≥ 0.95);
* :class:`Report` — no verdict, the value is reported (e.g. "paper: 30–50%");
* :class:`Versus` — no verdict: ours beside a value the paper or a peer
  simulator prints for the same jobs, with the ratio and the reasons they
  differ in ``text``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Beats", "Bound", "Claim", "ClaimResult", "Report", "Versus", "mean_ci"]


def mean_ci(values: np.ndarray) -> tuple[float, float]:
    """Mean and the half-width of its 95% Student-t interval (0 for one value)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan")
    m = float(v.mean())
    if v.size < 2:
        return m, 0.0
    from scipy import stats  # deferred: scipy.stats costs ~1 s of CLI start-up

    half = float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))
    return m, half


@dataclass(frozen=True)
class ClaimResult:
    text: str
    held: bool | None  # None: reported only
    evidence: str


def _means(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    sub = df[df["metric"] == metric]
    return sub.groupby(["value", "scheduler"], sort=False)["metric_value"].mean().unstack()


@dataclass(frozen=True)
class Beats:
    metric: str
    winner: str
    losers: tuple[str, ...]
    higher: bool = True
    text: str = ""
    points: tuple[str, ...] | None = None  # None: every point

    def check(self, df: pd.DataFrame) -> ClaimResult:
        means = _means(df, self.metric)
        if self.points is not None:
            means = means[means.index.isin(self.points)]
        text = self.text or (
            f"{self.winner} has {'higher' if self.higher else 'lower'} {self.metric} than "
            f"{', '.join(self.losers)} at every point"
        )
        if self.winner not in means or not all(lo in means for lo in self.losers):
            return ClaimResult(text, None, "missing schedulers in results")
        bad = []
        for point, row in means.iterrows():
            for lo in self.losers:
                ok = row[self.winner] > row[lo] if self.higher else row[self.winner] < row[lo]
                if not ok:
                    bad.append(
                        f"{point}: {self.winner} {row[self.winner]:.4g} vs {lo} {row[lo]:.4g}"
                    )
        evidence = "held at all points" if not bad else "failed at " + "; ".join(bad)
        return ClaimResult(text, not bad, evidence)


@dataclass(frozen=True)
class Bound:
    metric: str
    scheduler: str
    op: str  # "<=" or ">="
    value: float
    text: str = ""

    def check(self, df: pd.DataFrame) -> ClaimResult:
        means = _means(df, self.metric)
        text = (
            self.text or f"{self.scheduler} {self.metric} {self.op} {self.value:g} at every point"
        )
        if self.scheduler not in means:
            return ClaimResult(text, None, "missing scheduler in results")
        col = means[self.scheduler]
        ok = col <= self.value + 1e-12 if self.op == "<=" else col >= self.value - 1e-12
        lo, hi = float(col.min()), float(col.max())
        return ClaimResult(text, bool(ok.all()), f"range of means {lo:.4g} – {hi:.4g}")


@dataclass(frozen=True)
class Report:
    metric: str
    scheduler: str
    text: str

    def check(self, df: pd.DataFrame) -> ClaimResult:
        means = _means(df, self.metric)
        if self.scheduler not in means:
            return ClaimResult(self.text, None, "missing scheduler in results")
        col = means[self.scheduler]
        return ClaimResult(self.text, None, f"measured {col.min():.4g} – {col.max():.4g}")


@dataclass(frozen=True)
class Versus:
    """``scheduler``'s mean ``metric`` at each of ``points`` beside the printed ``theirs``."""

    metric: str
    scheduler: str
    points: tuple[str, ...]
    theirs: float
    text: str

    def check(self, df: pd.DataFrame) -> ClaimResult:
        means = _means(df, self.metric)
        if self.scheduler not in means:
            return ClaimResult(self.text, None, "missing scheduler in results")
        col = means[self.scheduler]
        got = [(p, float(col[p])) for p in self.points if p in col.index and np.isfinite(col[p])]
        if not got:
            return ClaimResult(self.text, None, "no finite result at " + ", ".join(self.points))
        parts = [f"{p}: ours {v:,.6g} = {v / self.theirs:.3f} × theirs" for p, v in got]
        return ClaimResult(self.text, None, f"theirs {self.theirs:,.6g}; " + "; ".join(parts))


Claim = Beats | Bound | Report | Versus
