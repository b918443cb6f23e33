"""Why PD-ORS's roundings fail as printed: every rounding of a run, dissected.

:class:`DiagnosingPdors` runs PD-ORS unchanged (its own random stream is
untouched; the diagnosis draws from a separate generator) and, for each
external rounding Alg. 4 performs (Eq. (27)–(28) on the per-machine x̄ of
the LP relaxation of Problem (23)), records:

* ``fractional``: coordinates of G_δ x̄ that are not integers (only they are
  random); ``capped``: those on a machine whose packing row (24) is tight,
  i.e. rounding that coordinate up (everything else down) breaks (24);
* for each of the S draws, which rows it breaks: the workload row (26),
  the packing rows (24), the PS rule (Eq. (2) as ⌈W/γ⌉, which Problem (23)
  as printed lacks and our LP adds as Σ s ≥ Σ w/γ);
* for a failed rounding: ``box_feasible`` — whether *any* point of the box
  [⌊G_δ x̄⌋, ⌈G_δ x̄⌉] (every outcome the rounding can produce) meets all
  rows (an exact 0/1 program on HiGHS; if not, no number of attempts can
  succeed); ``p_feasible`` — the share of feasible draws among
  ``extra_draws`` more; ``integer_feasible`` — whether the integer Problem
  (23) is feasible at all on the plain capacities (node-capped MILP);
  ``spread_ok`` — whether rounding the *other* natural optimal x̄, each
  machine class's total split evenly over its machines (the LP optimum an
  interior-point solver without crossover tends to, instead of a vertex),
  finds a feasible draw in S attempts.

Sync jobs only (the journal model; (3.4)'s async load is not linear).
``summarize`` folds the records into the figures of ``docs/pdors-rounding.md``;
``python -m dmlsched.experiments.rounding_diagnosis`` prints them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from dmlsched.errors import SolverFailed
from dmlsched.schedulers.cluster.pdors import Pdors, PdorsOracle, _SlotData
from dmlsched.solvers.highs import INF, LinearModel
from dmlsched.solvers.rounding import scaled_round

__all__ = ["DiagnosingPdors", "RoundingRecord", "summarize"]

_TOL = 1e-9


@dataclass(frozen=True)
class RoundingRecord:
    job: int
    workers: float  # the workload row's bound m
    support: int  # machines with x̄ > 0
    fractional: int
    capped: int
    failed: bool
    draws_cover: float  # share of the S draws breaking (26)
    draws_packing: float  # … (24)
    draws_ps: float  # … the PS rule
    box_feasible: bool | None = None
    p_feasible: float | None = None
    integer_feasible: bool | None = None
    spread_ok: bool | None = None
    box_feasible_no_ps: bool | None = None  # … without the PS rule (our addition to (23))
    vertex_box_feasible: bool | None = None  # the box of HiGHS's own per-machine vertex


class _DiagOracle(PdorsOracle):
    def _round(self, d: _SlotData, m: int) -> Any:
        before = self.sched.failed_
        out = super()._round(d, m)
        if self.job.mode == "sync":
            self.sched.diagnose(self, d, m, self.sched.failed_ > before)  # type: ignore[attr-defined]  # sched is the diagnosing subclass that made this oracle
        return out


class DiagnosingPdors(Pdors):
    """PD-ORS plus a record per external rounding; not registered."""

    def __init__(self, diag_seed: int = 0, extra_draws: int = 20_000, **kw: Any) -> None:
        super().__init__(**kw)
        self.diag_seed = diag_seed
        self.extra_draws = extra_draws

    def _setup(self) -> None:
        super()._setup()
        self.diag_rng_ = np.random.default_rng([self.diag_seed, 27])
        self.records_: list[RoundingRecord] = []

    def _oracle(self, job: Any, quanta: Any, bounds: Any) -> PdorsOracle:
        return _DiagOracle(self, job, quanta, bounds)

    # -- one rounding ---------------------------------------------------------
    def diagnose(self, o: PdorsOracle, d: _SlotData, m: int, failed: bool) -> None:
        H = o.H
        x_full = o.disaggregate(d, m)
        sup = np.flatnonzero((x_full[:H] > 0) | (x_full[H:] > 0))
        n = sup.size
        x_bar = np.concatenate([x_full[sup], x_full[H + sup]])
        gain = o.gain(m, d)
        xs = gain * x_bar
        lo = np.floor(xs + _TOL)
        frac = (xs - lo) > _TOL
        a, b = o.alpha[o.res], o.beta[o.res]
        ub = np.maximum(d.free[sup][:, o.res], 0.0)
        ub_tol = ub + _TOL * np.maximum(1.0, ub)
        base = lo[:n, None] * a + lo[n:, None] * b  # every coordinate rounded down
        up_w = np.any(base + a > ub_tol, axis=1)  # rounding w_h up alone breaks (24)
        up_s = np.any(base + b > ub_tol, axis=1)
        capped = int(np.sum(frac[:n] & up_w) + np.sum(frac[n:] & up_s))
        draws = self._draws(xs, self.attempts)
        cov, pack, ps = self._violations(o, draws, n, m, a, b, ub_tol)
        rec: dict[str, Any] = dict(
            job=o.job.id,
            workers=float(m),
            support=int(n),
            fractional=int(frac.sum()),
            capped=capped,
            failed=bool(failed),
            draws_cover=float(cov.mean()),
            draws_packing=float(pack.mean()),
            draws_ps=float(ps.mean()),
        )
        if failed:
            rec["box_feasible"] = self._box_feasible(o, lo, lo + frac, n, m, a, b, ub)
            rec["box_feasible_no_ps"] = self._box_feasible(
                o, lo, lo + frac, n, m, a, b, ub, ps_rule=False
            )
            rec["vertex_box_feasible"] = self._vertex_box_feasible(o, d, m, gain)
            more = self._draws(xs, self.extra_draws)
            c2, p2, s2 = self._violations(o, more, n, m, a, b, ub_tol)
            rec["p_feasible"] = float(np.mean(~(c2 | p2 | s2)))
            rec["integer_feasible"] = self._integer_feasible(o, d, m)
            rec["spread_ok"] = self._spread_ok(o, d, m, gain)
        self.records_.append(RoundingRecord(**rec))

    def _draws(self, xs: np.ndarray, k: int) -> np.ndarray:
        lo = np.floor(xs + _TOL)
        frac = np.clip(xs - lo, 0.0, 1.0)
        return lo[None, :] + (self.diag_rng_.random((k, xs.size)) < frac[None, :])

    @staticmethod
    def _violations(
        o: PdorsOracle,
        cand: np.ndarray,
        n: int,
        m: int,
        a: np.ndarray,
        b: np.ndarray,
        ub_tol: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        W = cand[:, :n].sum(axis=1)
        S = cand[:, n:].sum(axis=1)
        cover = m - _TOL > W
        use = cand[:, :n, None] * a + cand[:, n:, None] * b
        packing = np.any(use > ub_tol, axis=(1, 2))
        ps = (S * o.job.gamma < W - _TOL) | (o.job.max_workers < W)
        return cover, packing, ps

    @staticmethod
    def _box_feasible(
        o: PdorsOracle,
        lo: np.ndarray,
        hi: np.ndarray,
        n: int,
        m: int,
        a: np.ndarray,
        b: np.ndarray,
        ub: np.ndarray,
        ps_rule: bool = True,
    ) -> bool:
        """Is there an integer point in [lo, hi] meeting (24), (26), (4) and Σ s γ ≥ Σ w?"""
        rows, cols, vals, rlo, rhi = [], [], [], [], []
        r = 0
        for h in range(n):
            for k in range(len(a)):
                if a[k] == 0 and b[k] == 0:
                    continue
                rows += [r, r]
                cols += [h, n + h]
                vals += [a[k], b[k]]
                rlo.append(-INF)
                rhi.append(ub[h, k] + _TOL * max(1.0, ub[h, k]))
                r += 1
        rows += [r] * n
        cols += list(range(n))
        vals += [1.0] * n
        rlo.append(float(m))
        rhi.append(float(o.job.max_workers))
        r += 1
        if ps_rule:
            rows += [r] * (2 * n)
            cols += list(range(2 * n))
            vals += [-1.0] * n + [o.job.gamma] * n
            rlo.append(0.0)
            rhi.append(INF)
            r += 1
        mat = sp.csc_matrix((vals, (rows, cols)), shape=(r, 2 * n))
        model = LinearModel(
            np.zeros(2 * n),
            mat,
            np.asarray(rlo),
            np.asarray(rhi),
            lo,
            hi,
            integrality=np.ones(2 * n, dtype=bool),
            name="pdors-box",
            max_nodes=10_000,
        )
        try:
            model.solve()
        except SolverFailed:
            return False
        return True

    def _vertex_box_feasible(self, o: PdorsOracle, d: _SlotData, m: int, gain: float) -> bool:
        """Round HiGHS's own vertex of the per-machine LP (no classes): is its box feasible?"""
        from dmlsched.schedulers.cluster.pdors import per_machine_lp

        H = o.H
        cost = o.unit_costs(d.price)
        lp = per_machine_lp(o.job, d.free, cost, self.cost_floor)
        got = lp.solve(float(m))
        if got is None:
            return False
        x = gain * got[1]
        sup = np.flatnonzero((x[:H] > _TOL) | (x[H:] > _TOL))
        xs = np.concatenate([x[sup], x[H + sup]])
        lo = np.floor(xs + _TOL)
        hi = lo + ((xs - lo) > _TOL)
        ub = np.maximum(d.free[sup][:, o.res], 0.0)
        a, b = o.alpha[o.res], o.beta[o.res]
        return self._box_feasible(o, lo, hi, sup.size, m, a, b, ub)

    @staticmethod
    def _integer_feasible(o: PdorsOracle, d: _SlotData, m: int) -> bool:
        cost = o.unit_costs(d.price)
        return o._exact(d, m, cost, 0) is not None

    def _spread_ok(self, o: PdorsOracle, d: _SlotData, m: int, gain: float) -> bool:
        H = o.H
        x = d.lp[m][1]
        C = d.classes.n
        per = np.concatenate([x[:C], x[C:]])
        count = d.classes.count
        w = (per[:C] / count)[d.classes.of]
        s = (per[C:] / count)[d.classes.of]
        x_even = np.concatenate([w, s])
        sup = np.flatnonzero((x_even[:H] > 0) | (x_even[H:] > 0))
        n = sup.size
        x_bar = np.concatenate([x_even[sup], x_even[H + sup]])
        a, b = o.alpha[o.res], o.beta[o.res]
        ub = np.maximum(d.free[sup][:, o.res], 0.0)
        ub_tol = ub + _TOL * np.maximum(1.0, ub)

        def accept(cand: np.ndarray) -> np.ndarray:
            c, p, s_ = self._violations(o, cand, n, m, a, b, ub_tol)
            return ~(c | p | s_)

        price = d.price[sup]
        cost = o.unit_costs(price)
        res = scaled_round(
            x_bar, gain, self.diag_rng_, cost=cost, extra=accept, attempts=self.attempts
        )
        return res.success


def summarize(records: list[RoundingRecord]) -> dict[str, float]:
    """Shares over roundings (all) and over failed roundings."""
    n = len(records)
    failed = [r for r in records if r.failed]
    f = len(failed)

    def share(xs: list[bool | None]) -> float:
        vals = [bool(x) for x in xs if x is not None]
        return float(np.mean(vals)) if vals else math.nan

    out = {
        "roundings": float(n),
        "failed": float(f),
        "failed_share": f / n if n else math.nan,
        "mean_fractional": float(np.mean([r.fractional for r in records])) if n else math.nan,
        "mean_capped": float(np.mean([r.capped for r in records])) if n else math.nan,
        "with_capped_share": share([r.capped > 0 for r in records]),
    }
    if f:
        out.update(
            {
                "failed_with_capped": share([r.capped > 0 for r in failed]),
                "failed_draws_cover": float(np.mean([r.draws_cover for r in failed])),
                "failed_draws_packing": float(np.mean([r.draws_packing for r in failed])),
                "failed_draws_ps": float(np.mean([r.draws_ps for r in failed])),
                "failed_box_infeasible": share([not r.box_feasible for r in failed]),
                "failed_p_feasible": float(np.mean([r.p_feasible or 0.0 for r in failed])),
                "failed_integer_feasible": share([r.integer_feasible for r in failed]),
                "failed_spread_ok": share([r.spread_ok for r in failed]),
                "failed_box_infeasible_no_ps": share([not r.box_feasible_no_ps for r in failed]),
                "failed_vertex_box_infeasible": share([not r.vertex_box_feasible for r in failed]),
            }
        )
    ok = [r for r in records if not r.failed]
    if ok:
        out["ok_with_capped"] = share([r.capped > 0 for r in ok])
    return out


def _main() -> None:  # pragma: no cover - a measurement script
    import argparse

    from dmlsched.experiments import defs  # noqa: F401
    from dmlsched.experiments.catalogue import get
    from dmlsched.rng import make_rng, spawn
    from dmlsched.sim.engine import simulate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiment")
    ap.add_argument("point")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--g-delta", default="1.0", help="a number, eq29 or eq30")
    args = ap.parse_args()
    g: float | str = args.g_delta if args.g_delta in ("eq29", "eq30") else float(args.g_delta)
    exp = get(args.experiment)
    point = type(exp.points[0])(args.point)
    recs: list[RoundingRecord] = []
    for seed in range(args.seeds):
        wl = exp.build(point, seed, False)
        kw = dict(exp.scheduler_params.get("pd-ors", {}))
        sched = DiagnosingPdors(diag_seed=seed, g_delta=g, **kw)
        _, rng = spawn(make_rng(seed), 2)
        m = simulate("cluster", wl, sched, rng).metrics
        print(f"seed {seed}: utility {m['total_utility']:.4g}", flush=True)
        recs += sched.records_
    for k, v in summarize(recs).items():
        print(f"{k:28s} {v:.4g}")


if __name__ == "__main__":  # pragma: no cover
    _main()
