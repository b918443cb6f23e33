"""dmlsched.memo: a reference computed once for all of a run's worker processes."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import pytest

from dmlsched.memo import ENV, call_key, shared, shared_folder


@shared(maxsize=8)
def _slow_square(x: int, log: str) -> int:
    with open(log, "a") as f:  # one line per computation, whoever does it
        f.write(f"{os.getpid()} {x}\n")
    return x * x


def _worker(x: int, log: str) -> int:
    return _slow_square(x, log)


def test_workers_of_one_run_compute_each_call_once(tmp_path: Path) -> None:
    log = str(tmp_path / "log")
    with shared_folder() as folder, ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        assert os.environ[ENV] == str(folder)
        got = list(pool.map(_worker, [3, 4, 3, 4, 3, 4, 5], [log] * 7))
    assert got == [9, 16, 9, 16, 9, 16, 25]
    calls = Path(log).read_text().splitlines()
    assert sorted(int(line.split()[1]) for line in calls) == [3, 4, 5]
    assert ENV not in os.environ and not folder.exists()  # nothing outlives the run


def test_without_a_run_folder_it_is_a_per_process_cache(tmp_path: Path) -> None:
    log = str(tmp_path / "log")
    assert ENV not in os.environ
    assert _slow_square(6, log) == _slow_square(6, log) == 36
    assert len(Path(log).read_text().splitlines()) == 1


def test_a_call_is_named_by_its_arguments_contents() -> None:
    import numpy as np
    import scipy.sparse as sp

    a = np.arange(6.0).reshape(2, 3)
    key = call_key("f", (a, 0.1), {"name": "x"})
    assert key == call_key("f", (a.copy(), 0.1), {"name": "x"})  # another object, same content
    assert key == call_key("f", (np.asfortranarray(a), 0.1), {"name": "x"})  # another layout
    b = a.copy()
    b[1, 2] += 1e-12
    assert key != call_key("f", (b, 0.1), {"name": "x"})  # one ulp-scale change is another call
    assert key != call_key("f", (a.astype(np.float32), 0.1), {"name": "x"})
    assert key != call_key("f", (a.reshape(3, 2), 0.1), {"name": "x"})
    assert key != call_key("f", (a, 0.1), {"name": "y"}) != call_key("g", (a, 0.1), {"name": "x"})
    m = sp.random(5, 4, density=0.5, random_state=1, format="csr")
    assert call_key("f", (m,), {}) == call_key("f", (m.tocsc(),), {})  # one matrix, two formats
    assert call_key("f", (m,), {}) != call_key("f", (m * 2,), {})


def test_a_folder_inside_another_is_the_outer_one(tmp_path: Path) -> None:
    with shared_folder() as outer:
        with shared_folder() as inner:
            assert inner == outer and os.environ[ENV] == str(outer)
        assert outer.is_dir() and os.environ[ENV] == str(outer)  # the inner block removes nothing
    assert not outer.exists() and ENV not in os.environ


def _lp(eps: float) -> object:
    import numpy as np

    from dmlsched.solvers.convex import regularized_lp

    one = np.ones(1)
    return regularized_lp(one * 0.3, None, None, None, None, one * 0, one * np.inf,
                          np.array([0]), one * 2, one, eps)  # fmt: skip


def test_workers_of_one_run_solve_an_lp_once_and_get_it_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np

    from dmlsched.solvers import convex

    solves: list[float] = []
    real = convex._solve
    monkeypatch.setattr(convex, "_solve", lambda *a: solves.append(a[0].eps) or real(*a))
    with shared_folder() as folder:
        first, again, other = _lp(0.123), _lp(0.123), _lp(0.5)
        assert len(list(folder.glob("*[0-9a-f]"))) == 2  # one file per distinct solve
    assert solves == [0.123, 0.5]
    assert np.array_equal(first.x, again.x) and not np.array_equal(first.x, other.x)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="read-only"):
        again.x[0] = 1.0  # type: ignore[attr-defined]  # the memo's copy is never changed


def test_a_call_with_an_argument_it_cannot_name_by_content_is_refused() -> None:
    import dataclasses

    import numpy as np

    @dataclasses.dataclass(frozen=True)
    class Spec:
        size: int
        weights: np.ndarray

    big = np.zeros(2000)
    other = big.copy()
    other[1000] = 1.0  # repr would print both as "array([0., 0., 0., ..., 0., 0., 0.])"
    assert call_key("f", (Spec(1, big),), {}) != call_key("f", (Spec(1, other),), {})
    assert call_key("f", (1,), {}) != call_key("f", (1.0,), {}) != call_key("f", ("1",), {})
    with pytest.raises(TypeError, match="object"):
        call_key("f", (object(),), {})
