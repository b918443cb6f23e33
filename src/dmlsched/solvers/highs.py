"""The only importer of ``highspy``: LP/MILP models built once, modified, solved.

A model is given in matrix form::

    min / max   c·x + offset
    subject to  row_lower <= A x <= row_upper
                col_lower <=   x <= col_upper,   x_j integer where integrality[j]

:meth:`LinearModel.solve` returns a :class:`Solution` only for an acceptable
status (optimal; a MILP time limit with a feasible incumbent when the caller
allows it) and raises :class:`~dmlsched.errors.SolverFailed` otherwise, so a
status can never be ignored.  Between solves, costs and bounds may be changed
in place (``set_costs``, ``set_row_bounds``, ``set_col_bounds``), which lets
HiGHS warm-start from the previous basis.
"""

from __future__ import annotations

from dataclasses import dataclass

import highspy
import numpy as np
import scipy.sparse as sp

from dmlsched.errors import SolverFailed

__all__ = ["INF", "LinearModel", "Solution", "make_integer"]

INF = highspy.kHighsInf


@dataclass(frozen=True)
class Solution:
    """An accepted solve: primal ``x``, objective, row duals (LP only) and status."""

    status: str
    x: np.ndarray
    objective: float
    row_duals: np.ndarray | None
    row_activity: np.ndarray
    dual_bound: float | None = None  # MILP: best bound on the optimum (≥ objective if max)


class LinearModel:
    """A HiGHS model kept alive between solves."""

    def __init__(
        self,
        c: np.ndarray,
        a: sp.spmatrix | np.ndarray,
        row_lower: np.ndarray,
        row_upper: np.ndarray,
        col_lower: np.ndarray,
        col_upper: np.ndarray,
        *,
        integrality: np.ndarray | None = None,
        maximize: bool = False,
        name: str = "lp",
        time_limit: float | None = None,
        mip_rel_gap: float = 1e-6,
        threads: int = 1,
        mip_abs_gap: float | None = None,
        max_nodes: int | None = None,
    ) -> None:
        self.name = name
        self._h = highspy.Highs()
        self._h.setOptionValue("output_flag", False)
        self._h.setOptionValue("random_seed", 0)
        self._h.setOptionValue("threads", threads)
        self._h.setOptionValue("mip_rel_gap", mip_rel_gap)
        if mip_abs_gap is not None:
            self._h.setOptionValue("mip_abs_gap", float(mip_abs_gap))
        if time_limit is not None:
            self._h.setOptionValue("time_limit", float(time_limit))
        if max_nodes is not None:  # a deterministic MILP limit (same result on every machine)
            self._h.setOptionValue("mip_max_nodes", int(max_nodes))
        a_csc = sp.csc_matrix(a, dtype=float)
        n_row, n_col = a_csc.shape
        lp = highspy.HighsLp()
        lp.num_col_ = n_col
        lp.num_row_ = n_row
        lp.col_cost_ = np.asarray(c, dtype=float)
        lp.col_lower_ = np.asarray(col_lower, dtype=float)
        lp.col_upper_ = np.asarray(col_upper, dtype=float)
        lp.row_lower_ = np.asarray(row_lower, dtype=float)
        lp.row_upper_ = np.asarray(row_upper, dtype=float)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = a_csc.indptr.astype(np.int32)
        lp.a_matrix_.index_ = a_csc.indices.astype(np.int32)
        lp.a_matrix_.value_ = a_csc.data.astype(float)
        lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
        self.is_mip = integrality is not None and bool(np.any(integrality))
        if self.is_mip:
            lp.integrality_ = [
                highspy.HighsVarType.kInteger if flag else highspy.HighsVarType.kContinuous
                for flag in np.asarray(integrality, dtype=bool)
            ]
        status = self._h.passModel(lp)
        if status == highspy.HighsStatus.kError:
            raise SolverFailed("load error", name)
        self.n_col = n_col
        self.n_row = n_row

    def set_costs(self, c: np.ndarray) -> None:
        idx = np.arange(self.n_col, dtype=np.int32)
        self._h.changeColsCost(self.n_col, idx, np.asarray(c, dtype=float))

    def set_row_bounds(self, rows: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.int32)
        self._h.changeRowsBounds(  # type: ignore[attr-defined]  # highspy's stubs omit this binding
            len(rows), rows, np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
        )

    def set_col_bounds(self, cols: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
        cols = np.asarray(cols, dtype=np.int32)
        self._h.changeColsBounds(
            len(cols), cols, np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
        )

    def solve(self, *, accept_feasible: bool = False) -> Solution:
        """Solve; return the solution or raise ``SolverFailed``.

        ``accept_feasible`` lets a MILP that hit a limit (nodes, time) return its
        best incumbent (the status string then says so; ``dual_bound`` bounds
        the optimum).
        """
        self._h.run()
        status = self._h.getModelStatus()
        ms = highspy.HighsModelStatus
        info = self._h.getInfo()
        has_primal = info.primal_solution_status == 2  # kSolutionStatusFeasible
        ok = status == ms.kOptimal or (
            accept_feasible
            and status in (ms.kTimeLimit, ms.kIterationLimit, ms.kSolutionLimit, ms.kInterrupt)
            and has_primal
        )
        if not ok:
            raise SolverFailed(self._h.modelStatusToString(status), self.name)
        sol = self._h.getSolution()
        duals = None if self.is_mip else np.asarray(sol.row_dual, dtype=float)
        return Solution(
            status=self._h.modelStatusToString(status),
            x=np.asarray(sol.col_value, dtype=float),
            objective=float(info.objective_function_value),
            row_duals=duals,
            row_activity=np.asarray(sol.row_value, dtype=float),
            dual_bound=float(info.mip_dual_bound) if self.is_mip else None,
        )


def set_coefficients(
    model: LinearModel, rows: np.ndarray, cols: np.ndarray, values: np.ndarray
) -> None:
    """Change matrix entries A[row, col] in place (e.g. a grid point's ratio bound).

    Appended for SMD Alg. 1, whose grid constraints ζ_j(x) ≤ ν_j put ν_j in
    the matrix after the Charnes–Cooper transform.
    """
    for r, c, v in zip(rows, cols, values, strict=True):
        model._h.changeCoeff(int(r), int(c), float(v))


def clear_basis(model: LinearModel) -> None:
    """Discard the previous basis so the next solve starts cold.

    After many in-place matrix changes HiGHS may answer "Unknown" from a
    stale basis; a cold re-solve settles the status.
    """
    model._h.clearSolver()


def pass_columns(
    model: LinearModel,
    c: np.ndarray,
    start: np.ndarray,
    index: np.ndarray,
    value: np.ndarray,
    row_lower: np.ndarray,
    row_upper: np.ndarray,
    col_lower: np.ndarray,
    col_upper: np.ndarray,
) -> None:
    """Replace ``model``'s problem by the LP (minimize) given column-wise as CSC arrays.

    Appended for PD-ORS, whose external LP is rebuilt for every slot state:
    re-using one HiGHS instance (and its options) and skipping scipy saves
    most of the build time of a small LP.  The previous basis is discarded.
    """
    n_col, n_row = len(c), len(row_lower)
    start = np.asarray(start, dtype=np.int32)
    status = model._h.passModel(  # the array overload: no HighsLp object to fill
        n_col,
        n_row,
        int(start[-1]),
        int(highspy.MatrixFormat.kColwise),
        int(highspy.ObjSense.kMinimize),
        0.0,
        np.asarray(c, dtype=float),
        np.asarray(col_lower, dtype=float),
        np.asarray(col_upper, dtype=float),
        np.asarray(row_lower, dtype=float),
        np.asarray(row_upper, dtype=float),
        start,
        np.asarray(index, dtype=np.int32),
        np.asarray(value, dtype=float),
        np.zeros(n_col, dtype=np.int32),  # all continuous
    )
    if status == highspy.HighsStatus.kError:
        raise SolverFailed("load error", model.name)
    model.n_col = n_col
    model.n_row = n_row
    model.is_mip = False


def make_integer(model: LinearModel, max_nodes: int) -> None:
    """Make every column of ``model`` integer, branch and bound capped at ``max_nodes``.

    Appended for PD-ORS's fallback after failed roundings: a node cap, unlike a
    time limit, keeps the run's schedule the same on every machine.
    """
    idx = np.arange(model.n_col, dtype=np.int32)
    kinds = np.full(model.n_col, highspy.HighsVarType.kInteger)
    model._h.changeColsIntegrality(model.n_col, idx, kinds)
    model._h.setOptionValue("mip_max_nodes", int(max_nodes))
    model.is_mip = True
