"""The testbed against itself: two runs of the same cells, job by job."""

from __future__ import annotations

import numpy as np
import pytest

from dmlsched.results import CellKey, append_rows, cell_rows
from dmlsched.testbed.repeat import floor_p90, main, render, repeats


def _searched(lo: np.ndarray, hi: np.ndarray, q: float, points: int) -> float:
    """The least percentile over a grid of predictions per job (with both real JCTs and
    the point where both errors are equal among them), every combination at once."""
    grids = []
    for a, b in zip(lo, hi, strict=True):
        g = np.unique(np.concatenate((np.linspace(a, b, points), [2 * a * b / (a + b)])))
        grids.append(np.stack((np.abs(g - a) / a, np.abs(g - b) / b), axis=1))
    idx = np.stack(np.meshgrid(*[np.arange(len(g)) for g in grids], indexing="ij"), axis=-1)
    idx = idx.reshape(-1, len(grids))
    errors = np.concatenate([g[idx[:, k]] for k, g in enumerate(grids)], axis=1)
    return float(np.percentile(errors, q, axis=1).min())


@pytest.mark.parametrize("seed", range(6))
def test_the_floor_is_what_a_search_over_predictions_finds(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 3 if seed % 2 else 4
    lo = rng.uniform(1.0, 3.0, n)
    hi = lo * (1 + rng.choice([0.0, 0.05, 0.3, 0.8], n))
    for q in (90.0, 50.0, 75.0):
        got = floor_p90(lo, hi, q)
        found = _searched(lo, hi, q, 41 if n == 3 else 25)
        assert found >= got - 1e-9  # no prediction beats it: a lower bound
        assert found <= got + 0.04  # and it is reached (to the grid's step)


def test_a_prediction_between_the_balanced_point_and_a_real_jct_can_set_the_floor() -> None:
    # Two 90th percentiles of 8 errors interpolate e[6] and e[7] (0.7 and 0.3): the job far
    # apart does best with one error at the next job's balanced 0.1, neither balanced
    # (its d = 0.5) nor matched to one run (0 and 0.667).
    lo, hi = np.array([1.0, 1.0, 1.0, 1.0]), np.array([3.0, 1.0 + 2 / 9, 1.0, 1.0])
    got = floor_p90(lo, hi)
    assert got == pytest.approx(0.7 * 0.1 + 0.3 * (1 - 1.1 / 3))
    assert got < min(0.5, 0.7 * 0.1 + 0.3 * (2 / 3))
    assert _searched(lo, hi, 90.0, 31) >= got - 1e-9


def test_identical_runs_leave_no_floor_and_bad_input_is_refused() -> None:
    assert floor_p90([2.0, 3.0], [2.0, 3.0]) == 0.0
    with pytest.raises(ValueError, match="lo ≤ hi"):
        floor_p90([2.0], [1.0])


def _run(root, sched, mode, seed, jobs):
    path = root / f"testbed-pdors-{sched}-{mode}-{seed}" / "report" / "results.csv"
    path.parent.mkdir(parents=True)
    rows = []
    for j, (real, err) in enumerate(jobs):
        m = {"sim_error": err, "real_jct": real}
        rows += cell_rows("x", "cluster", CellKey(sched, str(j), seed), "job", m)
    rows += cell_rows("x", "cluster", CellKey(sched, "all", seed), "job", {"loaded_slots": 0.0})
    append_rows(path, rows)


def test_cells_in_both_roots_are_paired_job_by_job(tmp_path, capsys) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _run(a, "drf", "local", 1, [(2.0, 0.1), (4.0, 0.0), (5.0, 0.2)])
    _run(b, "drf", "local", 1, [(3.0, 0.3), (4.0, 0.0), (float("nan"), 0.5)])
    _run(a, "drf", "local", 2, [(1.0, 0.0)])  # not in the second root: skipped
    _run(a, "fifo", "local", 0, [(1.0, 0.0)])  # the calibration seed
    _run(b, "fifo", "local", 0, [(2.0, 0.0)])
    reps = repeats(a, b)
    assert list(reps) == [("drf", "local")]
    r = reps[("drf", "local")]
    assert (r.runs, r.left_out) == (1, 1)
    assert r.first.tolist() == [2.0, 4.0] and r.second.tolist() == [3.0, 4.0]
    assert r.real_vs_real.tolist() == [0.5, 0.0]
    assert r.floor == pytest.approx(floor_p90([2.0, 4.0], [3.0, 4.0]))
    text = render(reps)
    assert "| local | drf | 1 | 2 (1) |" in text and "50.0%" in text
    main([str(a), str(b)])
    assert "| local | drf |" in capsys.readouterr().out


def test_a_root_without_runs_is_named_and_exits_2(tmp_path, capsys) -> None:
    _run(tmp_path / "a", "drf", "local", 1, [(2.0, 0.1)])
    with pytest.raises(SystemExit) as e:
        main([str(tmp_path / "a"), str(tmp_path / "nothing")])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("invalid second=") and "nothing" in err
