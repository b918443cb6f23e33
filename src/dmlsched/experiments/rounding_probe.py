"""Alg. 4's rounding measured the way the thesis counts it (Figs. 3.13–3.14).

The thesis's Alg. 4 runs its external part (Steps 8–11: LP relaxation of
(3.22), scale by G, round by (3.26)–(3.27), repeat until feasible) for every
θ(t, v) it evaluates, whether or not Step 12 then picks the internal case.
Our PD-ORS rounds lazily, only the cells on the DP's chosen path, and with
co-location ~40× faster than external communication (thesis regime) that
path is almost always internal: ~0.3 roundings per run, too few to plot.

:class:`ProbingPdors` runs PD-ORS unchanged and, for every new slot state a
job's DP prices, rounds the slot's external LP solution at its largest
feasible workload bound (the hardest cover row) with the run's G on a
separate generator (the run's own random stream is untouched), against the
*plain* capacities Ĉ (the thesis has no safety margin), up to ``attempts``
draws.  It records attempts to the first feasible rounding and that
rounding's cost ÷ the LP cost.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from dmlsched.schedulers.cluster.pdors import Pdors, PdorsOracle
from dmlsched.solvers.rounding import scaled_round

__all__ = ["ProbingPdors"]


def _packing_matrix(oracle: PdorsOracle) -> sp.csr_matrix:
    """Rows (24) per used resource r and machine h (r-major): α^r w_h + β^r s_h."""
    H, R = oracle.H, len(oracle.res)
    h = np.tile(np.arange(H), R)
    a = np.repeat(oracle.alpha[oracle.res], H)
    b = np.repeat(oracle.beta[oracle.res], H)
    data = np.column_stack([a, b]).ravel()
    cols = np.column_stack([h, H + h]).ravel()
    return sp.csr_matrix((data, cols, np.arange(R * H + 1) * 2), shape=(R * H, 2 * H))


class _ProbingOracle(PdorsOracle):
    def costs(self, t: int, price: np.ndarray, free: np.ndarray, key: bytes) -> np.ndarray:
        new = key not in self.cache
        out = super().costs(t, price, free, key)
        if new:
            self.sched.probe(self, t)  # type: ignore[attr-defined]  # sched is the probing subclass that made this oracle
        return out


class ProbingPdors(Pdors):
    """PD-ORS plus a rounding probe per (job, new slot state); not registered."""

    def __init__(self, probe_gain: float, probe_attempts: int, probe_seed: int, **kw: Any) -> None:
        super().__init__(**kw)
        self.probe_gain = probe_gain
        self.probe_attempts = probe_attempts
        self.probe_seed = probe_seed

    def _setup(self) -> None:
        super()._setup()
        self.probe_rng_ = np.random.default_rng([self.probe_seed, 313])
        self.probe_attempts_: list[int] = []
        self.probe_ratios_: list[float] = []
        self.probe_failed_ = 0

    def _oracle(self, job: Any, quanta: Any, bounds: Any) -> PdorsOracle:
        return _ProbingOracle(self, job, quanta, bounds)

    def probe(self, oracle: PdorsOracle, t: int) -> None:
        key = oracle.slot_key[t]
        d = oracle.cache[key]
        plain = [m for m in d.lp if m not in d.lp_margin] or list(d.lp)
        if not plain:
            return
        m = max(plain)
        lp_cost = d.lp[m][0]
        x_bar = oracle.disaggregate(d, m)  # the per-machine x̄ of the class LP
        H = oracle.H
        cost = oracle.unit_costs(d.price)
        res = scaled_round(
            x_bar,
            self.probe_gain,
            self.probe_rng_,
            cost=cost,
            cover=(np.concatenate([np.ones(H), np.zeros(H)])[None, :], np.array([float(m)])),
            packing=(_packing_matrix(oracle), np.maximum(d.free[:, oracle.res].T.reshape(-1), 0.0)),
            extra=oracle._engine_rules,
            attempts=self.probe_attempts,
            repair=oracle._trim,
        )
        if not res.success:
            self.probe_failed_ += 1
            return
        self.probe_attempts_.append(res.attempts)
        if lp_cost > 0:
            self.probe_ratios_.append(res.cost / lp_cost)

    @property
    def stats(self) -> dict[str, Any]:
        out = dict(super().stats)
        n = len(self.probe_attempts_) + self.probe_failed_
        out["probe_roundings"] = float(n)
        out["probe_failures"] = float(self.probe_failed_) / n if n else 0.0
        out["probe_attempts"] = (
            float(np.mean(self.probe_attempts_)) if self.probe_attempts_ else 0.0
        )
        out["probe_ratio"] = float(np.mean(self.probe_ratios_)) if self.probe_ratios_ else 1.0
        return out
