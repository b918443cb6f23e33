"""One slot of mlBroker's problem (8) / (9) / (10) in matrix form.

Used by the ``mlbroker`` scheduler (one-shot P̃_ft, Eq. (10)) and by
:mod:`dmlsched.offline.geo` (P_f (9) and the MILP (8) over all slots).

Variables of slot t for the N active jobs (flat vector, :class:`Layout`)::

    q[i,r,r'] (N·R·R)  g[i,r,r'] (N·R·R)  y[i,r]  s[i,r]  v[i,r] (N·R each)
    x[r,k]  u1[r,k] (R·K; u2 = 1 − u1 substitutes (8e))

Rows (one family per constraint of (8)):

* (8a)  Σ_r q[i,r,r'] − P_i y[i,r'] ≤ 0
* (8b)  Σ_r' q[i,r,r'] = D_i^r(t)
* (8c)  a_k^r h_k^r − x_k^r − M_k^r u1_k^r ≤ 0,  h_k^r = Σ_i n_{i,k} y[i,r] + m_{i,k} s[i,r]
* (8d)  b_k^r h_k^r − x_k^r + M_k^r u1_k^r ≤ M_k^r − e_k^r   (−M u2 with u2 = 1 − u1)
* (8f)  Σ_r s[i,r] = 1
* (8g)  y[i,r] + s[i,r] − U_i v[i,r] ≤ 0
* (8i)  Σ_r' g[i,r,r'] − y[i,r] = 0
* (8j)  W_i s[i,r'] − Σ_r g[i,r,r'] ≤ 0,   W_i = ⌈Σ_r D_i^r(t)/P_i⌉

Objective (linear part): Σ d^{rr'} q + Σ x + Σ d^{rr'} B_i g (C_1 + C_2^* + C_4).

Gaps decided here:

* **Bound y ≤ W_i.**  Added to every slot (no worker beyond W_i in one DC
  can help: W_i workers already absorb all of the job's data and satisfy
  (8j)), so that usage has the finite bound h̄_k^r = Σ_i n_{i,k} W_i + m_{i,k}.
* **M_k^r** = max{e_k^r, (a_k^r − b_k^r) h̄_k^r − e_k^r}: the smallest
  constant with M ≥ |b h + e − a h| for every reachable h (Sec. 3.3), which
  keeps the MILP exact.  ``big_m="threshold"`` uses M = e_k^r instead
  (exact only while h ≤ 2 l_k^r; the relaxation then prices every unit at
  (a + b)/2 instead of leaving (M − e)/(a + b) units free).
* **U_i** = W_i + 1, the tightest constant with U v ≥ y + s given y ≤ W_i.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dmlsched.model.geo import GeoSites
from dmlsched.model.speed.mlbroker import workers_needed
from dmlsched.numerics import matvec

__all__ = ["Layout", "SlotData", "SlotProblem", "big_m", "build_slot"]


@dataclass(frozen=True)
class SlotData:
    """Per-job arrays of one slot (rows = active jobs in a fixed order)."""

    D: np.ndarray  # (N, R) GB
    P: np.ndarray  # (N,)
    n: np.ndarray  # (N, K)
    m: np.ndarray  # (N, K)
    B: np.ndarray  # (N,)
    c: np.ndarray  # (N,)

    @property
    def W(self) -> np.ndarray:
        return np.array(
            [workers_needed(float(d.sum()), float(p)) for d, p in zip(self.D, self.P, strict=True)],
            dtype=float,
        )

    @property
    def jobs(self) -> int:
        return int(self.D.shape[0])

    @classmethod
    def from_jobs(cls, jobs: list, t: int) -> SlotData:
        R = jobs[0].data.shape[1] if jobs else 0
        K = len(jobs[0].worker_demand) if jobs else 0
        return cls(
            D=np.array([j.data_at(t) for j in jobs], dtype=float).reshape(len(jobs), R),
            P=np.array([j.capacity for j in jobs], dtype=float),
            n=np.array([j.worker_demand for j in jobs], dtype=float).reshape(len(jobs), K),
            m=np.array([j.ps_demand for j in jobs], dtype=float).reshape(len(jobs), K),
            B=np.array([j.exchange_gb for j in jobs], dtype=float),
            c=np.array([j.deploy_cost for j in jobs], dtype=float),
        )


@dataclass(frozen=True)
class Layout:
    N: int
    R: int
    K: int

    @property
    def q(self) -> slice:
        return slice(0, self.N * self.R * self.R)

    @property
    def g(self) -> slice:
        o = self.N * self.R * self.R
        return slice(o, 2 * o)

    def _nr(self, k: int) -> slice:
        o = 2 * self.N * self.R * self.R + k * self.N * self.R
        return slice(o, o + self.N * self.R)

    @property
    def y(self) -> slice:
        return self._nr(0)

    @property
    def s(self) -> slice:
        return self._nr(1)

    @property
    def v(self) -> slice:
        return self._nr(2)

    @property
    def x(self) -> slice:
        o = 2 * self.N * self.R * self.R + 3 * self.N * self.R
        return slice(o, o + self.R * self.K)

    @property
    def u1(self) -> slice:
        o = 2 * self.N * self.R * self.R + 3 * self.N * self.R + self.R * self.K
        return slice(o, o + self.R * self.K)

    @property
    def size(self) -> int:
        return self.u1.stop

    def unpack(self, z: np.ndarray) -> dict[str, np.ndarray]:
        N, R, K = self.N, self.R, self.K
        return {
            "q": z[self.q].reshape(N, R, R),
            "g": z[self.g].reshape(N, R, R),
            "y": z[self.y].reshape(N, R),
            "s": z[self.s].reshape(N, R),
            "v": z[self.v].reshape(N, R),
            "x": z[self.x].reshape(R, K),
            "u1": z[self.u1].reshape(R, K),
        }


@dataclass(frozen=True)
class SlotProblem:
    layout: Layout
    c: np.ndarray
    a_eq: sp.csr_matrix
    b_eq: np.ndarray
    a_ub: sp.csr_matrix
    b_ub: np.ndarray
    lb: np.ndarray
    ub: np.ndarray


def big_m(sites: GeoSites, data: SlotData, mode: str = "valid") -> np.ndarray:
    """M_k^r of (8c)/(8d), shape (R, K) (see the module docstring)."""
    e = sites.e
    if mode == "threshold":
        return np.maximum(e, 1e-9)
    if mode != "valid":
        raise ValueError(f"big_m must be 'valid' or 'threshold', got {mode!r}")
    hbar = matvec(data.n.T, data.W) + data.m.sum(axis=0)  # (K,) same bound in every DC
    return np.maximum(e, (sites.a - sites.b) * hbar[None, :] - e) + 1e-9


def build_slot(sites: GeoSites, data: SlotData, mode: str = "valid") -> SlotProblem:
    """The slot's linear part of (8)/(9)/(10); see the module docstring."""
    N, R, K = data.jobs, sites.dcs, sites.kinds
    L = Layout(N, R, K)
    W = data.W
    U = W + 1.0
    M = big_m(sites, data, mode)
    e = sites.e
    NR = N * R
    ii, rr, ss = np.meshgrid(np.arange(N), np.arange(R), np.arange(R), indexing="ij")
    qidx = (ii * R * R + rr * R + ss).ravel()  # flat index of q[i,r,r']
    i_f, r_f, s_f = ii.ravel(), rr.ravel(), ss.ravel()
    nr = np.arange(NR)
    job_of_nr = nr // R
    r_of_nr = nr % R

    c = np.zeros(L.size)
    c[L.q] = np.tile(sites.d.ravel(), N)
    c[L.g] = (data.B[:, None] * sites.d.ravel()[None, :]).ravel()
    c[L.x] = 1.0

    rows_ub: list[np.ndarray] = []
    cols_ub: list[np.ndarray] = []
    vals_ub: list[np.ndarray] = []
    b_ub: list[np.ndarray] = []
    n_ub = 0

    def add_ub(r: np.ndarray, col: np.ndarray, val: np.ndarray) -> None:
        rows_ub.append(r + n_ub)
        cols_ub.append(col)
        vals_ub.append(val)

    # (8a) Σ_r q[i,r,r'] − P_i y[i,r'] ≤ 0, row (i, r')
    add_ub(i_f * R + s_f, L.q.start + qidx, np.ones(qidx.size))
    add_ub(nr, L.y.start + nr, -data.P[job_of_nr])
    b_ub.append(np.zeros(NR))
    n_ub += NR
    # (8c)/(8d): h_k^r coefficients, row (r, k)
    rk_row = (r_of_nr[:, None] * K + np.arange(K)[None, :]).ravel()
    y_col = np.repeat(L.y.start + nr, K)
    s_col = np.repeat(L.s.start + nr, K)
    n_val = data.n[job_of_nr].ravel() if N else np.zeros(0)
    m_val = data.m[job_of_nr].ravel() if N else np.zeros(0)
    rk = np.arange(R * K)
    for price_, sign_u in ((sites.a.ravel(), -1.0), (sites.b.ravel(), 1.0)):
        pr = price_[rk_row]
        add_ub(rk_row, y_col, pr * n_val)
        add_ub(rk_row, s_col, pr * m_val)
        add_ub(rk, L.x.start + rk, -np.ones(R * K))
        add_ub(rk, L.u1.start + rk, sign_u * M.ravel())
        b_ub.append(np.zeros(R * K) if sign_u < 0 else M.ravel() - e.ravel())
        n_ub += R * K
    # (8g) y + s − U v ≤ 0
    add_ub(nr, L.y.start + nr, np.ones(NR))
    add_ub(nr, L.s.start + nr, np.ones(NR))
    add_ub(nr, L.v.start + nr, -U[job_of_nr])
    b_ub.append(np.zeros(NR))
    n_ub += NR
    # (8j) W_i s[i,r'] − Σ_r g[i,r,r'] ≤ 0, row (i, r')
    add_ub(nr, L.s.start + nr, W[job_of_nr])
    add_ub(i_f * R + s_f, L.g.start + qidx, -np.ones(qidx.size))
    b_ub.append(np.zeros(NR))
    n_ub += NR

    rows_eq: list[np.ndarray] = []
    cols_eq: list[np.ndarray] = []
    vals_eq: list[np.ndarray] = []
    b_eq: list[np.ndarray] = []
    # (8b) Σ_r' q[i,r,r'] = D, row (i, r)
    rows_eq.append(i_f * R + r_f)
    cols_eq.append(L.q.start + qidx)
    vals_eq.append(np.ones(qidx.size))
    b_eq.append(data.D.ravel())
    n_eq = NR
    # (8f) Σ_r s[i,r] = 1, row i
    rows_eq.append(n_eq + job_of_nr)
    cols_eq.append(L.s.start + nr)
    vals_eq.append(np.ones(NR))
    b_eq.append(np.ones(N))
    n_eq += N
    # (8i) Σ_r' g[i,r,r'] − y[i,r] = 0, row (i, r)
    rows_eq.append(n_eq + i_f * R + r_f)
    cols_eq.append(L.g.start + qidx)
    vals_eq.append(np.ones(qidx.size))
    rows_eq.append(n_eq + nr)
    cols_eq.append(L.y.start + nr)
    vals_eq.append(-np.ones(NR))
    b_eq.append(np.zeros(NR))
    n_eq += NR

    a_ub = sp.csr_matrix(
        (np.concatenate(vals_ub), (np.concatenate(rows_ub), np.concatenate(cols_ub))),
        shape=(n_ub, L.size),
    )
    a_eq = sp.csr_matrix(
        (np.concatenate(vals_eq), (np.concatenate(rows_eq), np.concatenate(cols_eq))),
        shape=(n_eq, L.size),
    )
    lb = np.zeros(L.size)
    ub = np.full(L.size, np.inf)
    ub[L.y] = W[job_of_nr]  # WLOG cut y ≤ W_i
    # (8b) with D_i^r = 0 forces q[i,r,·] = 0: state it as bounds so solvers drop them.
    ub[L.q.start + qidx[(data.D.ravel() == 0)[i_f * R + r_f]]] = 0.0
    ub[L.s] = 1.0
    ub[L.v] = 1.0
    ub[L.u1] = 1.0
    return SlotProblem(L, c, a_eq, np.concatenate(b_eq), a_ub, np.concatenate(b_ub), lb, ub)
