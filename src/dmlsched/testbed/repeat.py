"""The testbed against itself: the same held-out cells run twice, job by job.

The simulator's side of a cell is the same in every run (same seed, the same
decisions and speed model); only the testbed's side can differ.  For each
(scheduler, emulation), over the jobs the testbed finished in both runs:

* each run's sim-vs-real error |s − r| / r (median, p90), and both pooled;
* *real vs real*: |r₁ − r₂| / r₁ per job (median, p90, max): how far the
  testbed is from itself;
* *best possible p90 over both* (:func:`floor_p90`): the lowest p90 of the 2n
  errors |p − rₖ| / rₖ that any prediction could reach, even one chosen per
  job knowing both of its real JCTs.  A p90 ≤ 10% against single runs is
  within reach only where this floor is well below 10%.

Jobs unfinished on the testbed in either run are left out and counted.

``python -m dmlsched.testbed.repeat FIRST SECOND [--min-seed 1]`` prints the
Markdown table for the runs under ``FIRST`` and ``SECOND`` (each as
``python -m dmlsched.testbed.pooled`` reads them; cells in only one are
skipped).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dmlsched.testbed.pooled import read_cells, require_runs

__all__ = ["Repeat", "floor_p90", "render", "repeats"]

_TOL = 1e-12  # slack for the rounding of the boundaries computed in ``floor_p90``


def floor_p90(lo: Sequence[float], hi: Sequence[float], q: float = 90.0) -> float:
    """The least ``numpy.percentile(errors, q)`` over per-job predictions p_j, where job j
    contributes the two errors |p_j − lo_j| / lo_j and |p_j − hi_j| / hi_j (lo_j ≤ hi_j,
    both > 0).

    numpy's (linear) percentile of m sorted errors e is (1 − f)·e[i] + f·e[i+1],
    h = q/100·(m − 1), i = ⌊h⌋, f = h − i; so it is ≤ (1 − f)w + f·u exactly when at
    most K₁ = m − i − 1 errors exceed w and at most K₂ = m − i − 2 exceed u (w ≤ u).
    For a job, with d = (hi − lo)/(hi + lo) (both errors equal d at
    p = 2·lo·hi/(lo + hi)), the cheapest ways to keep its errors under (w, u) are:
    both ≤ w (iff d ≤ w; none above w); one ≤ w and the other ≤ u (one above w, none
    above u; iff p can meet both, see ``_one_each``); both ≤ u (iff d ≤ u; two above
    w, none above u); or one of them 0 (p at a real JCT: one above w and one above u,
    always).  Which (w, u) are feasible is then counting; the least objective lies
    where w and u meet these conditions' boundaries — some job's d, or the u (w) one
    job needs for "one each" given the other — and every such pair is tried.
    ``tests/testbed/test_repeat.py`` checks the result against a search over
    predictions on small cases.
    """
    lo_a = np.asarray(lo, dtype=float)
    hi_a = np.asarray(hi, dtype=float)
    n = lo_a.size
    if n == 0:
        return math.nan
    if (lo_a <= 0).any() or (hi_a < lo_a).any():
        raise ValueError("floor_p90 needs 0 < lo ≤ hi for every job")
    m = 2 * n
    h = q / 100.0 * (m - 1)
    i = math.floor(h)
    f = h - i
    k1, k2 = m - i - 1, max(m - i - 2, 0)
    d = (hi_a - lo_a) / (hi_a + lo_a)

    def u_for(w: float) -> np.ndarray:  # per job: the least u with "one each" at w
        return np.maximum(w, np.minimum(1 - lo_a * (1 + w) / hi_a, hi_a * (1 - w) / lo_a - 1))

    def w_for(u: float) -> np.ndarray:  # per job: the least w with "one each" at u
        w = np.minimum(hi_a * (1 - u) / lo_a - 1, 1 - lo_a * (1 + u) / hi_a)
        return np.clip(w, 0.0, u)

    pairs: set[tuple[float, float]] = set()
    ws = {0.0, *d.tolist()}
    for w in ws:
        for u in {w, *d[d >= w].tolist(), *u_for(w).tolist()}:
            pairs.add((w, float(u)))
    for u in {*d.tolist(), *u_for(0.0).tolist()}:
        for w in {*w_for(u).tolist(), *d[d <= u].tolist(), 0.0}:
            pairs.add((float(w), u))
    if f == 0:  # the percentile is e[i] itself: u is free
        pairs |= {(w, math.inf) for w in ws}
    best = math.inf
    for w, u in sorted(pairs):
        if w > u:
            continue
        val = w if f == 0 else (1 - f) * w + f * u
        if val < best and _feasible(lo_a, hi_a, d, w, u, k1, k2):
            best = val
    return float(best)


def _one_each(lo: np.ndarray, hi: np.ndarray, w: float, u: float) -> np.ndarray:
    """Per job: whether some p puts one error ≤ w and the other ≤ u (within ``_TOL``)."""
    return (hi * (1 - u) <= lo * (1 + w) + _TOL) | (hi * (1 - w) <= lo * (1 + u) + _TOL)


def _feasible(
    lo: np.ndarray, hi: np.ndarray, d: np.ndarray, w: float, u: float, k1: int, k2: int
) -> bool:
    both_w = d <= w + _TOL
    one_each = ~both_w & _one_each(lo, hi, w, u)
    rest = ~both_w & ~one_each
    both_u = rest & (d <= u + _TOL)  # two above w, none above u — or one above each
    n_b, n_c, n_d = int(one_each.sum()), int(both_u.sum()), int((rest & ~both_u).sum())
    x = max(0, n_c + n_d - k2)  # jobs of n_c that must keep both under u
    return x <= n_c and n_b + n_c + n_d + x <= k1


@dataclass(frozen=True)
class Repeat:
    """One (scheduler, emulation): its jobs finished on the testbed in both runs."""

    scheduler: str
    emulation: str
    first: np.ndarray  # real JCTs, run 1
    second: np.ndarray  # real JCTs, run 2
    sim_first: np.ndarray  # sim-vs-real errors against run 1
    sim_second: np.ndarray  # … against run 2
    left_out: int  # jobs started but unfinished on the testbed in either run
    runs: int  # cells found in both

    @property
    def real_vs_real(self) -> np.ndarray:
        return np.abs(self.first - self.second) / self.first

    @property
    def floor(self) -> float:
        return floor_p90(np.minimum(self.first, self.second), np.maximum(self.first, self.second))


def repeats(
    first: Path, second: Path, experiment: str = "testbed-pdors", min_seed: int = 1
) -> dict[tuple[str, str], Repeat]:
    """(scheduler, emulation) → its :class:`Repeat` over the cells under both roots."""
    other = {
        (c.scheduler, c.emulation, c.seed): c for c in read_cells(second, experiment, min_seed)
    }
    acc: dict[tuple[str, str], dict[str, list[float]]] = {}
    left: dict[tuple[str, str], int] = {}
    runs: dict[tuple[str, str], int] = {}
    for a in read_cells(first, experiment, min_seed):
        b = other.get((a.scheduler, a.emulation, a.seed))
        if b is None:
            continue
        key = (a.scheduler, a.emulation)
        runs[key] = runs.get(key, 0) + 1
        lists = acc.setdefault(key, {"r1": [], "r2": [], "e1": [], "e2": []})
        left.setdefault(key, 0)
        for job, ma in a.jobs.items():
            mb = b.jobs.get(job, {})
            r1, r2 = ma.get("real_jct", math.nan), mb.get("real_jct", math.nan)
            if not (math.isfinite(r1) and math.isfinite(r2)):
                started = math.isfinite(ma.get("sim_error", math.nan)) or math.isfinite(
                    mb.get("sim_error", math.nan)
                )
                left[key] += int(started)
                continue
            lists["r1"].append(r1)
            lists["r2"].append(r2)
            lists["e1"].append(ma["sim_error"])
            lists["e2"].append(mb["sim_error"])
    return {
        key: Repeat(
            key[0],
            key[1],
            np.array(v["r1"]),
            np.array(v["r2"]),
            np.array(v["e1"]),
            np.array(v["e2"]),
            left[key],
            runs[key],
        )
        for key, v in sorted(acc.items())
    }


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _mp(e: np.ndarray) -> str:
    if not e.size:
        return "—"
    return f"{_pct(float(np.median(e)))} / {_pct(float(np.percentile(e, 90)))}"


def render(reps: dict[tuple[str, str], Repeat]) -> str:
    """Markdown: one row per (emulation, scheduler)."""
    lines = [
        "| mode | scheduler | runs | jobs (left out) | first runs | second runs | both | "
        "real vs real: median / p90 (max) | best possible p90 over both |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (sched, mode), r in sorted(reps.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        rr = r.real_vs_real
        real = f"{_mp(rr)} ({_pct(float(rr.max()))})" if rr.size else "—"
        both = np.concatenate((r.sim_first, r.sim_second))
        lines.append(
            f"| {mode} | {sched} | {r.runs} | {r.first.size} ({r.left_out}) | "
            f"{_mp(r.sim_first)} | {_mp(r.sim_second)} | {_mp(both)} | {real} | "
            f"{_pct(r.floor) if r.first.size else '—'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("first", type=Path)
    ap.add_argument("second", type=Path)
    ap.add_argument("--experiment", default="testbed-pdors")
    ap.add_argument("--min-seed", type=int, default=1, help="held-out workload seeds from here")
    a = ap.parse_args(argv)
    require_runs("first", a.first, a.experiment, a.min_seed)
    require_runs("second", a.second, a.experiment, a.min_seed)
    print(render(repeats(a.first, a.second, a.experiment, a.min_seed)), end="")


if __name__ == "__main__":
    main()
