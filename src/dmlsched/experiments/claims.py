"""Paper claims, decided on paired statistics over seeds.

The same seed is the same workload for every scheduler of an experiment, so a
claim comparing schedulers is decided on the **paired per-seed differences**.
Every decision reads a 95% two-sided Student-t interval of a mean
(:func:`mean_interval`, ``scipy.stats.t``; each look of a sequential run
reads its own level, :mod:`dmlsched.experiments.looks`) and gives one label:

* **HELD** — the interval excludes zero in the claim's direction;
* **NOT HELD** — it excludes zero the other way;
* **TIE** — it lies inside the equivalence band ±``band`` (relative, 1% by
  default, of the larger of the two means compared): the two are equal for
  every practical purpose, whichever side of zero the interval is;
* **UNDECIDED** — none of these (the seeds do not settle it).

A claim over several points (and several baselines) combines its
comparisons: NOT HELD if any is NOT HELD (the claim says "at every point"),
HELD if all are HELD, else UNDECIDED if any is UNDECIDED, else TIE.  Each
comparison is tested at 95% on its own (no multiplicity correction: HELD
needs every comparison to hold, which only gets harder with more of them).
With fewer than :data:`MIN_SEEDS` seeds every verdict says so; one seed gives
no interval at all (UNDECIDED).

Claim forms:

* :class:`Beats` — ``winner``'s metric is higher (``higher=False``: lower)
  than each of ``losers`` at every point; with ``ties`` the claim is "at least
  as good" (non-inferiority: HELD when the interval's worse end stays inside
  the band);
* :class:`Bound` — ``scheduler``'s mean metric is ≤ / ≥ ``value`` at every
  point (``<`` / ``>``: strictly, so an interval inside the band around the
  value is a TIE), decided on the interval of the mean, never the mean alone;
* :class:`Trend` — the metric (or, with ``versus``, the gain over another
  scheduler) grows (``rising``) or falls from the first point of the sweep to
  the last, on the paired per-seed difference between the two end points;
* :class:`Across` — ``scheduler``'s metric here is higher (or lower) than in
  another experiment, or than another metric, at every point, paired by
  (point, seed) (PD-ORS Figs. 14 vs 15: the same jobs' arrivals, another class
  mix; mlBroker Fig. 6: the ratio at small P_i vs at large);
* :class:`Report` / :class:`Versus` — no verdict (REPORTED): a value, or ours
  beside a value the paper or a peer prints.

**Vacuous claims.**  A claim that a simple reference passes too says nothing
about the algorithm: :func:`judge` checks the same claim with the subject
replaced by the reference — the claim's ``reference`` series, or, for
:class:`Bound` and :class:`Trend` without one, every other series of the
experiment that is not a variant of the subject (the weakest baseline among
them decides) — and labels a HELD claim **VACUOUS** when every reference
passes it as well.  The report says which references were run and how they
fared, or that the run has none.

**Excluded cells.**  A cell whose metric is NaN is *excluded*: the value is
undefined there (e.g. OPT/ALG with OPT = ALG = 0) and must not count as any
number; a pair with an excluded side is left out, and every result says how
many cells it excluded.  An infinite value (OPT > 0 = ALG) is a value: a
sample holding +inf has an infinite mean (the interval is that infinity),
one holding both signs has none (UNDECIDED).

**The `+` variant.**  A claim is stated for the as-printed scheduler
(``pd-ors``); :meth:`for_scheduler` gives the same claim for another one
(``pd-ors+``), so a report can give both verdicts.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # claims only read frames given to them; pandas is slow to import
    import pandas as pd

__all__ = [
    "BAND",
    "CONFIDENCE",
    "LABELS",
    "MIN_SEEDS",
    "VERDICT_RULES",
    "Across",
    "Beats",
    "Bound",
    "Claim",
    "ClaimResult",
    "Interval",
    "Report",
    "Trend",
    "Versus",
    "check_both",
    "combine",
    "decide",
    "fmt_ci",
    "judge",
    "mean_ci",
    "mean_interval",
    "pct",
    "plus_of",
]

CONFIDENCE = 0.95  # two-sided: each one-sided decision is at 2.5%
BAND = 0.01  # equivalence band, relative to the larger of the means compared
MIN_SEEDS = 5  # fewer seeds than this: every verdict says so
HELD, NOT_HELD, TIE, UNDECIDED, VACUOUS = "HELD", "NOT HELD", "TIE", "UNDECIDED", "VACUOUS"
REPORTED, NOT_RUN = "REPORTED", "NOT RUN"
#: every label a result can carry, in the report's column order
LABELS = (HELD, NOT_HELD, TIE, UNDECIDED, VACUOUS, REPORTED, NOT_RUN)
_VERDICTS = (HELD, NOT_HELD, TIE, UNDECIDED, VACUOUS)
#: how a verdict is reached, in one paragraph (summaries and the reproduction report)
VERDICT_RULES = (
    "Verdicts are paired over seeds (the same seed is the same workload for every "
    f"scheduler): HELD / NOT HELD when the {CONFIDENCE:.0%} Student-t interval of the "
    "per-seed difference (of the mean, for a bound) excludes zero in / against the "
    "claim's direction, TIE when it lies inside the stated equivalence band (±1% of the "
    "larger mean unless a claim says otherwise), UNDECIDED otherwise; a claim over several "
    "points or baselines is NOT HELD if any comparison is, HELD if all are.  VACUOUS: "
    "HELD, but a simple reference (the weakest baseline or a trivial policy) passes it "
    f"too.  Verdicts on fewer than {MIN_SEEDS} seeds say so."
)


@dataclass(frozen=True)
class Interval:
    """The mean of ``n`` values and its two-sided ``CONFIDENCE`` interval [low, high]."""

    mean: float
    low: float
    high: float
    n: int

    def fmt(self) -> str:
        if self.n == 0:
            return "no pairs"
        if math.isinf(self.low) and self.low == self.high:
            return f"{self.mean:+g} ({self.n} seeds)"
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            return f"{self.mean:+.4g} (no interval from {self.n} seed{'s' * (self.n != 1)})"
        return f"{self.mean:+.4g} [{self.low:+.3g}, {self.high:+.3g}]"


def mean_interval(values: Iterable[float], confidence: float = CONFIDENCE) -> Interval:
    """Student-t interval of the mean of ``values`` (NaN left out; see module docstring).

    One value gives no interval (−∞, ∞); values all equal give a zero-width
    one; a +inf (−inf) value makes the mean and the interval +inf (−inf).
    """
    v = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)
    v = v[~np.isnan(v)]
    n = int(v.size)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    pos, neg = bool(np.isposinf(v).any()), bool(np.isneginf(v).any())
    if pos and neg:
        return Interval(math.nan, -math.inf, math.inf, n)
    if pos or neg:
        inf = math.inf if pos else -math.inf
        return Interval(inf, inf, inf, n)
    m = float(v.mean())
    if n < 2:
        return Interval(m, -math.inf, math.inf, n)
    sd = float(v.std(ddof=1))
    if sd == 0.0:
        return Interval(m, m, m, n)
    from scipy import stats  # deferred: scipy.stats is slow to import

    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return Interval(m, m - half, m + half, n)


def mean_ci(values: np.ndarray) -> tuple[float, float]:
    """Mean and the half-width of its 95% Student-t interval (0 for one value).

    Non-finite values are left out (NaN: an excluded cell; ±inf has no mean
    to speak of — callers count them, see :func:`fmt_ci`).  For tables; the
    verdicts use :func:`mean_interval`.
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan")
    iv = mean_interval(v)
    if v.size < 2:
        return iv.mean, 0.0
    return iv.mean, (iv.high - iv.low) / 2


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


def decide(iv: Interval, band: float = 0.0, strict: bool = True) -> str:
    """The label of an interval of an *oriented* quantity (positive: the claim's way).

    ``strict`` ("better than"): TIE inside [−band, band], HELD above 0, NOT
    HELD below 0.  Not strict ("at least as good"; bounds ≤ / ≥): HELD when
    the low end is ≥ −band, NOT HELD when the high end is below 0.
    """
    lo, hi = iv.low, iv.high
    if iv.n == 0 or math.isnan(lo) or math.isnan(hi):
        return UNDECIDED
    if strict:
        if -band <= lo and hi <= band:
            return TIE
        if lo > 0:
            return HELD
        if hi < 0:
            return NOT_HELD
        return UNDECIDED
    if lo >= -band:
        return HELD
    if hi < 0:
        return NOT_HELD
    return UNDECIDED


def combine(labels: Sequence[str]) -> str:
    """One claim's label from its comparisons' (module docstring)."""
    if NOT_HELD in labels:
        return NOT_HELD
    if all(lb == HELD for lb in labels):
        return HELD
    if UNDECIDED in labels:
        return UNDECIDED
    return TIE


@dataclass(frozen=True)
class ClaimResult:
    text: str
    label: str  # one of LABELS
    evidence: str
    value: str = ""  # the deciding comparison (or the range for Report)
    excluded: int = 0  # (point, seed) cells excluded (NaN) from the check
    cells: int = 0  # (point, seed) cells of the subject scheduler
    seeds: int = 0  # fewest seeds behind any comparison (0: none)
    test: str = ""  # the stated test, e.g. "paired t 95%, TIE band ±1%"
    reference: str = ""  # how the simple references fared (judge)

    @property
    def verdict(self) -> str:
        return self.label

    @property
    def held(self) -> bool | None:
        """True for HELD, False for NOT HELD, None for every other label."""
        return {HELD: True, NOT_HELD: False}.get(self.label)

    @property
    def decided(self) -> bool:
        return self.label in _VERDICTS

    @property
    def seeds_note(self) -> str:
        """ "" or "N seeds < 5" — said on every verdict decided on too few."""
        if self.decided and self.seeds < MIN_SEEDS:
            return f"{self.seeds} seed{'s' * (self.seeds != 1)} < {MIN_SEEDS}"
        return ""


# -- reading a frame ---------------------------------------------------------------
def _per_point(df: pd.DataFrame, metric: str, scheduler: str) -> dict[Any, dict[int, float]]:
    """point → {seed: value} of ``scheduler``'s metric (NaN = excluded), in sweep order."""
    sub = df[(df["metric"] == metric) & (df["scheduler"] == scheduler)]
    out: dict[Any, dict[int, float]] = {}
    for p, s, v in zip(sub["value"], sub["seed"], sub["metric_value"], strict=True):
        out.setdefault(p, {})[int(s)] = float(v)
    return out


def _present(df: pd.DataFrame, metric: str) -> set[str]:
    return set(df[df["metric"] == metric]["scheduler"])


def _arr(d: Mapping[int, float]) -> np.ndarray:
    return np.array([d[s] for s in sorted(d)], dtype=float)


def _exclusions(per: Mapping[Any, Mapping[int, float]]) -> tuple[int, int, str]:
    n = sum(len(v) for v in per.values())
    k = sum(int(np.isnan(list(v.values())).sum()) for v in per.values())
    note = f"; {k} of {n} cells excluded (metric undefined, e.g. OPT = ALG = 0)" if k else ""
    return k, n, note


def _paired(a: Mapping[int, float], b: Mapping[int, float]) -> np.ndarray:
    """a − b over the seeds both have and neither excluded (inf − inf = 0: equal values)."""
    out = []
    for s in sorted(a.keys() & b.keys()):
        x, y = a[s], b[s]
        if math.isnan(x) or math.isnan(y):
            continue
        out.append(0.0 if x == y else x - y)
    return np.array(out, dtype=float)


def _scale(*means: float) -> float:
    """The band's scale: the larger finite |mean| (0 if none is finite)."""
    finite = [abs(m) for m in means if math.isfinite(m)]
    return max(finite, default=0.0)


def _nanmean(d: Mapping[int, float]) -> float:
    v = _arr(d)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return math.nan
    with np.errstate(invalid="ignore"):
        return float(np.mean(v))


@dataclass(frozen=True)
class _Comparison:
    """One decided comparison of a claim (a point, or a point and a baseline)."""

    label: str
    iv: Interval
    rel_low: float  # the interval's claim-side end relative to the band's scale
    where: str  # "at 60: pd-ors 120 ± 4 vs drf 100 ± 3"


def _summarize(
    text: str,
    comps: list[_Comparison],
    test: str,
    excluded: tuple[int, int, str],
    what: str = "comparison",
) -> ClaimResult:
    k, n, note = excluded
    if not comps:
        return ClaimResult(text, UNDECIDED, "every point excluded" + note, "", k, n, 0, test)
    label = combine([c.label for c in comps])
    pool = [c for c in comps if c.label == label] or comps
    decider = min(pool, key=lambda c: c.rel_low)
    counts = {lb: sum(c.label == lb for c in comps) for lb in (HELD, NOT_HELD, TIE, UNDECIDED)}
    tally = ", ".join(f"{v} {lb}" for lb, v in counts.items() if v)
    s = "s" * (len(comps) != 1)
    evidence = f"{len(comps)} {what}{s}: {tally}"
    bad = [c.where for c in comps if c.label == NOT_HELD]
    if bad:
        evidence += "; not held " + "; ".join(bad[:4]) + (" …" if len(bad) > 4 else "")
    value = f"{decider.where}; difference {decider.iv.fmt()}"
    seeds = min(c.iv.n for c in comps)
    return ClaimResult(text, label, evidence + note, value, k, n, seeds, test)


def pct(confidence: float) -> str:
    """0.95 as "95%", 0.985 as "98.5%"."""
    return f"{100 * confidence:.4g}%"


def _band_text(band: float) -> str:
    return f"TIE band ±{band:.0%}" if band >= 0.01 else f"TIE band ±{band:g} (relative)"


# -- the claim forms ------------------------------------------------------------------
class _ClaimBase:
    """Fields and helpers shared by the claim forms."""

    def for_scheduler(self, old: str, new: str) -> Any:
        """The same claim with scheduler ``old`` replaced by ``new`` wherever it appears."""
        changes: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]  # every claim form is a dataclass
            v = getattr(self, f.name)
            if f.name in ("winner", "scheduler") and v == old:
                changes[f.name] = new
            elif f.name == "losers" and old in v:
                changes[f.name] = tuple(new if x == old else x for x in v)
        return dataclasses.replace(self, **changes) if changes else self  # type: ignore[type-var]  # every claim form is a dataclass

    @property
    def subject(self) -> str:
        return getattr(self, "winner", None) or getattr(self, "scheduler")  # noqa: B009

    @property
    def needs(self) -> tuple[str, ...]:
        """Other experiments whose results this claim reads (:class:`Across`)."""
        return ()

    def default_references(self) -> bool:
        """Whether, without a declared ``reference``, the other series are references."""
        return False

    def involved(self) -> set[str]:
        """Series the claim itself names (never a reference of it)."""
        return {self.subject}


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
    ties: bool = False  # True: "at least as good" (non-inferiority within the band)
    points: tuple[str, ...] | None = None  # None: every point
    band: float = BAND
    reference: tuple[str, ...] = ()  # a trivial policy that should not pass (judge)
    factor: float = 1.0  # the winner against factor × each loser (a printed ratio, e.g. 0.76)

    def involved(self) -> set[str]:
        return {self.winner, *self.losers}

    def check(
        self,
        df: pd.DataFrame,
        frames: Mapping[str, pd.DataFrame] | None = None,
        confidence: float = CONFIDENCE,
    ) -> ClaimResult:
        better = (
            ("at least as high" if self.higher else "at most as low")
            if self.ties
            else ("higher" if self.higher else "lower")
        )
        times = f"{self.factor:g} × " if self.factor != 1.0 else ""
        text = self.text or (
            f"{self.winner} has {better} {self.metric} than {times}"
            f"{', '.join(self.losers)} at every point"
        )
        test = f"paired t {pct(confidence)} per point and baseline, {_band_text(self.band)}"
        present = _present(df, self.metric)
        if self.winner not in present or not all(lo in present for lo in self.losers):
            return ClaimResult(text, NOT_RUN, "missing schedulers in results", test=test)
        win = _per_point(df, self.metric, self.winner)
        if self.points is not None:
            win = {p: v for p, v in win.items() if str(p) in self.points}
        los = {lo: _per_point(df, self.metric, lo) for lo in self.losers}
        sign = 1.0 if self.higher else -1.0
        comps: list[_Comparison] = []
        for point, wv in win.items():
            for lo, per in los.items():
                lv = per.get(point, {})
                if self.factor != 1.0:
                    lv = {k: self.factor * v for k, v in lv.items()}
                d = _paired(wv, lv) * sign
                if d.size == 0:
                    continue  # every seed excluded at this point
                iv = mean_interval(d, confidence)
                band = self.band * _scale(_nanmean(wv), _nanmean(lv))
                label = decide(iv, band, strict=not self.ties)
                rel = iv.low / band if band > 0 and math.isfinite(iv.low) else iv.low
                where = (
                    f"at {point}: {self.winner} {fmt_ci(_arr(wv))} vs {times}{lo} "
                    f"{fmt_ci(_arr(lv))}"
                )
                comps.append(_Comparison(label, iv, rel, where))
        return _summarize(text, comps, test, _exclusions(win))


@dataclass(frozen=True)
class Bound(_ClaimBase):
    metric: str
    scheduler: str
    op: str  # "<=" / ">=" (the interval on the bound's side) or "<" / ">" (strictly: TIE band)
    value: float
    text: str = ""
    paper: str = ""
    reason: str = ""
    shown_by: str = ""
    points: tuple[str, ...] | None = None  # None: every point
    band: float = BAND  # strict bounds only, relative to |value|
    reference: tuple[str, ...] = ()

    def default_references(self) -> bool:
        return True

    def check(
        self,
        df: pd.DataFrame,
        frames: Mapping[str, pd.DataFrame] | None = None,
        confidence: float = CONFIDENCE,
    ) -> ClaimResult:
        if self.op not in ("<=", ">=", "<", ">"):
            raise ValueError(f"Bound.op must be <=, >=, < or >, got {self.op!r}")
        text = (
            self.text or f"{self.scheduler} {self.metric} {self.op} {self.value:g} at every point"
        )
        strict = self.op in ("<", ">")
        band = self.band * abs(self.value) if strict else 0.0
        test = f"t interval of the mean ({pct(confidence)}) per point" + (
            f", {_band_text(self.band)} around {self.value:g}" if strict else ""
        )
        per = _per_point(df, self.metric, self.scheduler)
        if not per:
            return ClaimResult(text, NOT_RUN, "missing scheduler in results", test=test)
        if self.points is not None:
            per = {p: v for p, v in per.items() if str(p) in self.points}
        sign = -1.0 if self.op.startswith("<") else 1.0
        comps: list[_Comparison] = []
        for point, vals in per.items():
            v = _arr(vals)
            v = v[~np.isnan(v)]
            if v.size == 0:
                continue
            iv = mean_interval(v, confidence)
            # oriented: positive = on the bound's side
            lo, hi = (iv.low - self.value, iv.high - self.value)
            if sign < 0:
                lo, hi = -hi, -lo
            oriented = Interval(sign * (iv.mean - self.value), lo, hi, iv.n)
            label = decide(oriented, band, strict=strict)
            comps.append(
                _Comparison(
                    label,
                    oriented,
                    lo,
                    f"at {point}: {fmt_ci(_arr(vals))} (bound {self.op} {self.value:g})",
                )
            )
        res = _summarize(text, comps, test, _exclusions(per), what="point")
        if comps:  # the value: the interval of the mean itself, not the distance to the bound
            decider = min(
                [c for c in comps if c.label == res.label] or comps, key=lambda c: c.rel_low
            )
            res = dataclasses.replace(res, value=decider.where)
        return res


@dataclass(frozen=True)
class Trend(_ClaimBase):
    """The metric grows (``rising``), falls (``rising=False``) or stays flat
    (``rising=None``) from the sweep's first point to its last.

    Decided on the per-seed difference f(last) − f(first), f the scheduler's
    metric or, with ``versus``, its gain over ``versus`` (metric − versus's
    metric, same seed).  The band is relative to the larger |mean| of the
    metric at the two ends.  Grows / falls: TIE when the change is inside the
    band (flat).  Flat: HELD when the change's interval is inside the band,
    NOT HELD when it lies wholly outside it, else UNDECIDED.
    """

    metric: str
    scheduler: str
    rising: bool | None = True
    versus: str = ""
    text: str = ""
    paper: str = ""
    reason: str = ""
    shown_by: str = ""
    band: float = BAND
    reference: tuple[str, ...] = ()
    points: tuple[str, ...] | None = None  # the sweep's points to read, in order (None: all)

    def default_references(self) -> bool:
        return not self.versus

    def involved(self) -> set[str]:
        return {self.scheduler, *([self.versus] if self.versus else [])}

    def check(
        self,
        df: pd.DataFrame,
        frames: Mapping[str, pd.DataFrame] | None = None,
        confidence: float = CONFIDENCE,
    ) -> ClaimResult:
        way = {True: "grows", False: "falls", None: "stays flat"}[self.rising]
        what = f"{self.scheduler}'s {self.metric}" + (
            f" gain over {self.versus}" if self.versus else ""
        )
        text = self.text or f"{what} {way} from the first point of the sweep to the last"
        test = f"paired t {pct(confidence)} on last − first point per seed, " + (
            _band_text(self.band) if self.rising is not None else f"flat band ±{self.band:.0%}"
        )
        per = _per_point(df, self.metric, self.scheduler)
        other = _per_point(df, self.metric, self.versus) if self.versus else {}
        if not per or (self.versus and not other):
            return ClaimResult(text, NOT_RUN, "missing schedulers in results", test=test)
        points = list(per)
        if self.points is not None:
            order = {p: i for i, p in enumerate(self.points)}
            points = sorted((p for p in points if str(p) in order), key=lambda p: order[str(p)])
        if len(points) < 2:
            return ClaimResult(text, UNDECIDED, "one point: no trend to check", test=test)
        first, last = points[0], points[-1]

        def f(p: Any) -> dict[int, float]:
            mine = per.get(p, {})
            if not self.versus:
                return dict(mine)
            theirs = other.get(p, {})
            return {
                s: (0.0 if mine[s] == theirs[s] else mine[s] - theirs[s])
                for s in mine.keys() & theirs.keys()
            }

        a, b = f(first), f(last)
        d = _paired(b, a) * (-1.0 if self.rising is False else 1.0)
        k, n, note = _exclusions(per)
        if d.size == 0:
            return ClaimResult(text, UNDECIDED, "no seed at both ends" + note, "", k, n, 0, test)
        iv = mean_interval(d, confidence)
        band = self.band * _scale(_nanmean(per.get(first, {})), _nanmean(per.get(last, {})))
        if self.rising is None:  # flat: inside the band; against: wholly outside it
            inside = -band <= iv.low and iv.high <= band
            outside = iv.low > band or iv.high < -band
            label = HELD if inside else NOT_HELD if outside else UNDECIDED
        else:
            label = decide(iv, band, strict=True)
        fa, fb = _arr(a), _arr(b)
        value = f"{what} at {first}: {fmt_ci(fa)}, at {last}: {fmt_ci(fb)}; change {iv.fmt()}"
        evidence = f"end points {first} → {last}" + note
        return ClaimResult(text, label, evidence, value, k, n, iv.n, test)


@dataclass(frozen=True)
class Across(_ClaimBase):
    """``scheduler``'s metric here is higher (``higher``) than ``other_metric`` (default:
    the same) in experiment ``other`` (default: this one), at every point, paired by
    (point, seed)."""

    metric: str
    scheduler: str
    other: str = ""
    higher: bool = True
    text: str = ""
    paper: str = ""
    reason: str = ""
    shown_by: str = ""
    band: float = BAND
    reference: tuple[str, ...] = ()
    other_metric: str = ""

    @property
    def needs(self) -> tuple[str, ...]:
        return (self.other,) if self.other else ()

    def check(
        self,
        df: pd.DataFrame,
        frames: Mapping[str, pd.DataFrame] | None = None,
        confidence: float = CONFIDENCE,
    ) -> ClaimResult:
        their_metric = self.other_metric or self.metric
        there = f"in {self.other}" if self.other else f"its {their_metric}"
        text = self.text or (
            f"{self.scheduler}'s {self.metric} is {'higher' if self.higher else 'lower'} "
            f"than {there} at every point"
        )
        test = f"paired t {pct(confidence)} per point (same seeds), {_band_text(self.band)}"
        theirs_df = (frames or {}).get(self.other) if self.other else df
        if theirs_df is None:
            return ClaimResult(text, NOT_RUN, f"needs the results of {self.other}", test=test)
        mine = _per_point(df, self.metric, self.scheduler)
        theirs = _per_point(theirs_df, their_metric, self.scheduler)
        if not mine or not theirs:
            return ClaimResult(text, NOT_RUN, "missing scheduler in results", test=test)
        sign = 1.0 if self.higher else -1.0
        comps = []
        for point, mv in mine.items():
            tv = theirs.get(point, {})
            d = _paired(mv, tv) * sign
            if d.size == 0:
                continue
            iv = mean_interval(d, confidence)
            band = self.band * _scale(_nanmean(mv), _nanmean(tv))
            label = decide(iv, band, strict=True)
            rel = iv.low / band if band > 0 and math.isfinite(iv.low) else iv.low
            at = f"at {point}: {self.metric} {fmt_ci(_arr(mv))} vs {there} {fmt_ci(_arr(tv))}"
            comps.append(_Comparison(label, iv, rel, at))
        return _summarize(text, comps, test, _exclusions(mine), what="point")


@dataclass(frozen=True)
class Report(_ClaimBase):
    metric: str
    scheduler: str
    text: str
    paper: str = ""
    reason: str = ""
    shown_by: str = ""

    def check(
        self,
        df: pd.DataFrame,
        frames: Mapping[str, pd.DataFrame] | None = None,
        confidence: float = CONFIDENCE,
    ) -> ClaimResult:
        per = _per_point(df, self.metric, self.scheduler)
        if not per:
            return ClaimResult(self.text, NOT_RUN, "missing scheduler in results")
        k, n, note = _exclusions(per)
        means = {p: _nanmean(v) for p, v in per.items()}
        live = {p: m for p, m in means.items() if not math.isnan(m)}
        if not live:
            return ClaimResult(self.text, REPORTED, "every point excluded" + note, "", k, n)
        p_lo = min(live, key=live.__getitem__)
        p_hi = max(live, key=live.__getitem__)
        value = f"{fmt_ci(_arr(per[p_lo]))} (at {p_lo}) to {fmt_ci(_arr(per[p_hi]))} (at {p_hi})"
        return ClaimResult(
            self.text, REPORTED, f"measured {live[p_lo]:.4g} – {live[p_hi]:.4g}" + note, value, k, n
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

    def check(
        self,
        df: pd.DataFrame,
        frames: Mapping[str, pd.DataFrame] | None = None,
        confidence: float = CONFIDENCE,
    ) -> ClaimResult:
        per = _per_point(df, self.metric, self.scheduler)
        if not per:
            return ClaimResult(self.text, NOT_RUN, "missing scheduler in results")
        got = [
            (p, _arr(v), _nanmean(v))
            for p, v in per.items()
            if str(p) in self.points and np.isfinite(_nanmean(v))
        ]
        if not got:
            return ClaimResult(self.text, REPORTED, "no finite result at " + ", ".join(self.points))
        parts = [f"{p}: ours {m:,.6g} = {m / self.theirs:.3f} × theirs" for p, _, m in got]
        value = "; ".join(f"at {p}: {fmt_ci(v)} vs theirs {self.theirs:,.6g}" for p, v, _ in got)
        return ClaimResult(
            self.text, REPORTED, f"theirs {self.theirs:,.6g}; " + "; ".join(parts), value
        )


Claim = Beats | Bound | Trend | Across | Report | Versus


def plus_of(name: str, schedulers: tuple[str, ...] | list[str]) -> str | None:
    """The ``+`` variant of ``name`` (e.g. ``pd-ors+``) if it is among ``schedulers``."""
    plus = name + "+"
    return plus if plus in schedulers else None


def _base(name: str) -> str:
    return name.removesuffix("+")


Series = Mapping[str, tuple[str, Mapping[str, Any]]]  # label → (registry name, parameters)


def _family(label: str, series: Series) -> str:
    """The scheduler a series runs, without ``+``: ``pd-ors-interior`` → ``pd-ors``."""
    return _base(series[label][0] if label in series else label)


def _references(
    claim: Claim, df: pd.DataFrame, schedulers: Sequence[str], series: Series
) -> list[str]:
    """The simple references of ``claim`` in this run (module docstring, "Vacuous"):
    never the subject's own family (its readings, its ``+`` variant, their ablations)."""
    declared = getattr(claim, "reference", ())
    present = _present(df, claim.metric)
    if declared:
        return [r for r in declared if r in present]
    if not claim.default_references():
        return []
    family = _family(claim.subject, series)
    skip = claim.involved()
    return [
        s
        for s in schedulers
        if s in present
        and s not in skip
        and s != "opt"
        and _family(s, series) != family
        and not s.startswith(family)
    ]


def _as_reference(claim: Claim, ref: str) -> Claim:
    """The same claim with the reference in the subject's place."""
    if isinstance(claim, Beats):
        losers = tuple(lo for lo in claim.losers if lo != ref)
        return dataclasses.replace(claim, winner=ref, losers=losers)
    return dataclasses.replace(claim, scheduler=ref)


def judge(
    claim: Claim,
    df: pd.DataFrame,
    schedulers: Sequence[str],
    frames: Mapping[str, pd.DataFrame] | None = None,
    series: Series | None = None,
    confidence: float = CONFIDENCE,
) -> ClaimResult:
    """``claim.check`` plus the reference check: HELD becomes VACUOUS when every
    simple reference passes the claim too (module docstring); ``series``: the
    experiment's labels that are readings of a registered scheduler; ``confidence``:
    of every interval (a sequential run's looks each read theirs at a higher one:
    :mod:`dmlsched.experiments.looks`)."""
    res = claim.check(df, frames, confidence)
    if not res.decided:
        return res
    refs = _references(claim, df, schedulers, series or {})
    if not refs:
        note = "simple reference: none in this run"
        declared = getattr(claim, "reference", ())
        if declared:
            note = "simple reference " + ", ".join(declared) + ": not run"
        return dataclasses.replace(res, reference=note)
    checked = [(r, _as_reference(claim, r).check(df, frames, confidence)) for r in refs]
    parts = ", ".join(f"{r} {rr.label}" for r, rr in checked)
    if res.label == HELD and all(rr.label == HELD for _, rr in checked):
        return dataclasses.replace(
            res, label=VACUOUS, reference=f"simple reference passes it too: {parts}"
        )
    return dataclasses.replace(res, reference=f"simple reference: {parts}")


def check_both(
    claim: Claim,
    df: pd.DataFrame,
    schedulers: tuple[str, ...] | list[str],
    frames: Mapping[str, pd.DataFrame] | None = None,
    series: Series | None = None,
    confidence: float = CONFIDENCE,
) -> tuple[ClaimResult, str | None, ClaimResult | None]:
    """(as-printed result, the ``+`` scheduler or None, its result or None), each judged
    (:func:`judge`)."""
    printed = judge(claim, df, schedulers, frames, series, confidence)
    plus = plus_of(claim.subject, schedulers)
    if plus is None:
        return printed, None, None
    twin = claim.for_scheduler(claim.subject, plus)
    return printed, plus, judge(twin, df, schedulers, frames, series, confidence)
