"""Paper claims checked on per-point means, with a 95% interval over seeds.

Three forms cover the catalogue:

* :class:`Beats` — ``winner``'s metric is better (higher, or lower when
  ``higher=False``; with ``ties``, at least as good, to a relative 1e-9 for
  floating point) than each of ``losers`` at every point;
* :class:`Bound` — every point's mean of ``scheduler``'s metric is ≤ or ≥ a
  value (e.g. approx_ratio ≥ 0.95);
* :class:`Report` — no verdict, the value is reported (e.g. "paper: 30–50%");
* :class:`Versus` — no verdict: ours beside a value the paper or a peer
  simulator prints for the same jobs, with the ratio and the reasons they
  differ in ``text``.

Every claim also carries what the reproduction report
(:mod:`dmlsched.experiments.reproduction`) prints beside its verdict:
``paper`` (the paper's own statement or number, e.g. "Fig. 10: 1.0–1.4"),
``reason`` (why it does not hold, when we know; the definitions fill it in)
and ``shown_by`` (the experiment that shows the reason, e.g. an ablation).

**Excluded cells.**  A cell whose metric is NaN is *excluded*: the value is
undefined there (e.g. OPT/ALG with OPT = ALG = 0) and must not count as any
number.  Means skip excluded cells, and every result says how many cells it
excluded; a point with every seed excluded drops out of the check.  An
infinite value (e.g. OPT > 0 = ALG) is a value, not an exclusion.

**The `+` variant.**  A claim is stated for the as-printed scheduler
(``pd-ors``); :meth:`for_scheduler` gives the same claim for another one
(``pd-ors+``), so a report can give both verdicts.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # claims only read frames given to them; pandas is slow to import
    import pandas as pd

__all__ = [
    "Beats",
    "Bound",
    "Claim",
    "ClaimResult",
    "Report",
    "Versus",
    "check_both",
    "fmt_ci",
    "mean_ci",
    "plus_of",
]


def mean_ci(values: np.ndarray) -> tuple[float, float]:
    """Mean and the half-width of its 95% Student-t interval (0 for one value).

    Non-finite values are left out (NaN: an excluded cell; ±inf has no mean
    to speak of — callers count them, see :func:`fmt_ci`).
    """
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


def fmt_ci(values: np.ndarray) -> str:
    """ "mean ± ci", plus how many seeds were infinite or excluded (NaN)."""
    v = np.asarray(values, dtype=float)
    n_nan = int(np.isnan(v).sum())
    n_inf = int(np.isinf(v).sum())
    if n_inf and np.all(np.isinf(v[~np.isnan(v)])):
        body = "inf" if np.all(v[np.isinf(v)] > 0) else "±inf"
    else:
        m, c = mean_ci(v)
        body = f"{m:.4g} ± {c:.2g}"
    notes = []
    if n_inf and body not in ("inf", "±inf"):
        notes.append(f"+{n_inf} of {v.size} seeds infinite")
    if n_nan:
        notes.append(f"{n_nan} of {v.size} seeds excluded")
    return body + (f" ({'; '.join(notes)})" if notes else "")


@dataclass(frozen=True)
class ClaimResult:
    text: str
    held: bool | None  # None: reported only, or nothing left to check
    evidence: str
    value: str = ""  # the deciding point's mean ± 95% interval (or the range for Report)
    excluded: int = 0  # (point, seed) cells excluded (NaN) from the check
    cells: int = 0  # (point, seed) cells of the subject scheduler

    @property
    def verdict(self) -> str:
        if self.held is None:
            return "REPORTED" if "missing" not in self.evidence else "NOT RUN"
        return "HELD" if self.held else "NOT HELD"


def _sub(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    return df[df["metric"] == metric]


def _per_point(df: pd.DataFrame, metric: str, scheduler: str) -> dict[Any, np.ndarray]:
    """point → per-seed values of ``scheduler``'s metric (NaN = excluded), in sweep order."""
    sub = _sub(df, metric)
    sub = sub[sub["scheduler"] == scheduler]
    out: dict[Any, np.ndarray] = {}
    for p in dict.fromkeys(sub["value"]):
        out[p] = sub[sub["value"] == p]["metric_value"].to_numpy(dtype=float)
    return out


def _mean(v: np.ndarray) -> float:
    """Mean over non-excluded seeds (inf stays inf); NaN if all excluded."""
    v = v[~np.isnan(v)]
    if v.size == 0:
        return math.nan
    with np.errstate(invalid="ignore"):
        return float(np.mean(v))


def _exclusions(per: dict[Any, np.ndarray]) -> tuple[int, int, str]:
    n = sum(v.size for v in per.values())
    k = sum(int(np.isnan(v).sum()) for v in per.values())
    note = f"; {k} of {n} cells excluded (metric undefined, e.g. OPT = ALG = 0)" if k else ""
    return k, n, note


class _ClaimBase:
    """Fields and helpers shared by the three claim forms."""

    def for_scheduler(self, old: str, new: str) -> Any:
        """The same claim with scheduler ``old`` replaced by ``new`` wherever it appears."""
        changes: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            v = getattr(self, f.name)
            if f.name in ("winner", "scheduler") and v == old:
                changes[f.name] = new
            elif f.name == "losers" and old in v:
                changes[f.name] = tuple(new if x == old else x for x in v)
        return dataclasses.replace(self, **changes) if changes else self  # type: ignore[type-var]

    @property
    def subject(self) -> str:
        return getattr(self, "winner", None) or getattr(self, "scheduler")  # noqa: B009


@dataclass(frozen=True)
class Beats(_ClaimBase):
    metric: str
    winner: str
    losers: tuple[str, ...]
    higher: bool = True
    text: str = ""
    paper: str = ""
    reason: str = ""
    shown_by: str = ""
    ties: bool = False  # True: "at least as good" (≥ / ≤, to a relative 1e-9) suffices
    points: tuple[str, ...] | None = None  # None: every point

    def check(self, df: pd.DataFrame) -> ClaimResult:
        better = (
            ("at least as high" if self.higher else "at most as low")
            if self.ties
            else ("higher" if self.higher else "lower")
        )
        text = self.text or (
            f"{self.winner} has {better} {self.metric} than {', '.join(self.losers)} at every point"
        )
        present = set(_sub(df, self.metric)["scheduler"])
        if self.winner not in present or not all(lo in present for lo in self.losers):
            return ClaimResult(text, None, "missing schedulers in results")
        win = _per_point(df, self.metric, self.winner)
        if self.points is not None:
            win = {p: v for p, v in win.items() if str(p) in self.points}
        los = {lo: _per_point(df, self.metric, lo) for lo in self.losers}
        k, n, note = _exclusions(win)
        bad: list[str] = []
        worst: tuple[float, str] | None = None
        for point, wv in win.items():
            w_mean = _mean(wv)
            for lo, per in los.items():
                lv = per.get(point, np.array([]))
                l_mean = _mean(lv)
                if math.isnan(w_mean) or math.isnan(l_mean):
                    continue  # every seed excluded at this point
                if self.ties:  # a + variant matching its paper version up to floating point
                    slack = 1e-9 * max(abs(w_mean), abs(l_mean)) if math.isfinite(l_mean) else 0.0
                    ok = w_mean >= l_mean - slack if self.higher else w_mean <= l_mean + slack
                else:
                    ok = w_mean > l_mean if self.higher else w_mean < l_mean
                if not ok:
                    bad.append(f"{point}: {self.winner} {w_mean:.4g} vs {lo} {l_mean:.4g}")
                margin = (w_mean - l_mean) * (1 if self.higher else -1)
                scale = max(abs(w_mean), abs(l_mean), 1e-300)
                rel = margin / scale if math.isfinite(margin) else margin
                if worst is None or rel < worst[0]:
                    worst = (rel, f"at {point}: {self.winner} {fmt_ci(wv)} vs {lo} {fmt_ci(lv)}")
        if worst is None:
            return ClaimResult(text, None, "every point excluded" + note, "", k, n)
        evidence = ("held at all points" if not bad else "failed at " + "; ".join(bad)) + note
        return ClaimResult(text, not bad, evidence, worst[1], k, n)


@dataclass(frozen=True)
class Bound(_ClaimBase):
    metric: str
    scheduler: str
    op: str  # "<=" or ">="
    value: float
    text: str = ""
    paper: str = ""
    reason: str = ""
    shown_by: str = ""

    def check(self, df: pd.DataFrame) -> ClaimResult:
        text = (
            self.text or f"{self.scheduler} {self.metric} {self.op} {self.value:g} at every point"
        )
        per = _per_point(df, self.metric, self.scheduler)
        if not per:
            return ClaimResult(text, None, "missing scheduler in results")
        k, n, note = _exclusions(per)
        means = {p: _mean(v) for p, v in per.items()}
        live = {p: m for p, m in means.items() if not math.isnan(m)}
        if not live:
            return ClaimResult(text, None, "every point excluded" + note, "", k, n)
        le = self.op == "<="
        ok = all(
            (m <= self.value + 1e-12) if le else (m >= self.value - 1e-12) for m in live.values()
        )
        p_worst = max(live, key=live.get) if le else min(live, key=live.get)  # type: ignore[arg-type]
        lo, hi = min(live.values()), max(live.values())
        value = f"at {p_worst}: {fmt_ci(per[p_worst])} (bound {self.op} {self.value:g})"
        return ClaimResult(text, ok, f"range of means {lo:.4g} – {hi:.4g}" + note, value, k, n)


@dataclass(frozen=True)
class Report(_ClaimBase):
    metric: str
    scheduler: str
    text: str
    paper: str = ""
    reason: str = ""
    shown_by: str = ""

    def check(self, df: pd.DataFrame) -> ClaimResult:
        per = _per_point(df, self.metric, self.scheduler)
        if not per:
            return ClaimResult(self.text, None, "missing scheduler in results")
        k, n, note = _exclusions(per)
        means = {p: _mean(v) for p, v in per.items()}
        live = {p: m for p, m in means.items() if not math.isnan(m)}
        if not live:
            return ClaimResult(self.text, None, "every point excluded" + note, "", k, n)
        p_lo = min(live, key=live.get)  # type: ignore[arg-type]
        p_hi = max(live, key=live.get)  # type: ignore[arg-type]
        value = f"{fmt_ci(per[p_lo])} (at {p_lo}) to {fmt_ci(per[p_hi])} (at {p_hi})"
        return ClaimResult(
            self.text, None, f"measured {live[p_lo]:.4g} – {live[p_hi]:.4g}" + note, value, k, n
        )


@dataclass(frozen=True)
class Versus(_ClaimBase):
    """``scheduler``'s mean ``metric`` at each of ``points`` beside the printed ``theirs``."""

    metric: str
    scheduler: str
    points: tuple[str, ...]
    theirs: float
    text: str
    paper: str = ""
    reason: str = ""
    shown_by: str = ""

    def check(self, df: pd.DataFrame) -> ClaimResult:
        per = _per_point(df, self.metric, self.scheduler)
        if not per:
            return ClaimResult(self.text, None, "missing scheduler in results")
        got = [
            (p, v, _mean(v))
            for p, v in per.items()
            if str(p) in self.points and np.isfinite(_mean(v))
        ]
        if not got:
            return ClaimResult(self.text, None, "no finite result at " + ", ".join(self.points))
        parts = [f"{p}: ours {m:,.6g} = {m / self.theirs:.3f} × theirs" for p, _, m in got]
        value = "; ".join(f"at {p}: {fmt_ci(v)} vs theirs {self.theirs:,.6g}" for p, v, _ in got)
        return ClaimResult(
            self.text, None, f"theirs {self.theirs:,.6g}; " + "; ".join(parts), value
        )


Claim = Beats | Bound | Report | Versus


def plus_of(name: str, schedulers: tuple[str, ...] | list[str]) -> str | None:
    """The ``+`` variant of ``name`` (e.g. ``pd-ors+``) if it is among ``schedulers``."""
    plus = name + "+"
    return plus if plus in schedulers else None


def check_both(
    claim: Claim, df: pd.DataFrame, schedulers: tuple[str, ...] | list[str]
) -> tuple[ClaimResult, str | None, ClaimResult | None]:
    """(as-printed result, the ``+`` scheduler or None, its result or None)."""
    printed = claim.check(df)
    plus = plus_of(claim.subject, schedulers)
    if plus is None:
        return printed, None, None
    return printed, plus, claim.for_scheduler(claim.subject, plus).check(df)
