"""The decision products without BLAS (:mod:`dmlsched.numerics`): ``@``'s values, and
the same bits whatever kernel OpenBLAS picks for the CPU."""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dmlsched.numerics import dot, matmat, matvec

_FLOATS = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@given(
    st.integers(1, 9).flatmap(
        lambda r: st.tuples(
            arrays(float, (7, r), elements=_FLOATS), arrays(float, r, elements=_FLOATS)
        )
    )
)
def test_matvec_and_dot_are_the_products(mv: tuple[np.ndarray, np.ndarray]) -> None:
    m, v = mv
    scale = np.abs(m) @ np.abs(v) + 1.0
    assert np.all(np.abs(matvec(m, v) - m @ v) <= 1e-12 * scale)
    assert abs(dot(m[0], v) - float(m[0] @ v)) <= 1e-12 * scale[0]


def test_matmat_is_the_product() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.random((5, 3)), rng.random((3, 4))
    assert np.allclose(matmat(a, b), a @ b, rtol=1e-14, atol=0)


@pytest.mark.parametrize("resources", range(1, 9))
def test_equal_rows_give_equal_bits_wherever_they_stand(resources: int) -> None:
    """What BLAS does not promise: its kernels take rows in blocks and the rest apart, so
    two equal rows of a price matrix (two identical machines) may differ in the last bit
    and a tie between them is broken by where they stand.  (``m @ v`` splits some of
    these cases on this machine's kernels: 8 resources, seed 0 under Haswell and
    SkylakeX, 4 resources under Prescott.)"""
    for seed in range(20):
        rng = np.random.default_rng(seed)
        row, v = rng.random(resources), rng.random(resources)
        out = matvec(np.tile(row, (37, 1)), v)
        assert len(set(out.tolist())) == 1, seed


_PINNED = """
import json
from tests.sim.test_pinned_bytes import _run
from dmlsched.rng import make_rng
from dmlsched.workloads.synthetic import synthetic_cluster
wl = synthetic_cluster(40, 12, 60, make_rng(7))
got = {s: _run(wl, s) for s in ("oasis", "pd-ors", "pd-ors+")}
got["pd-ors+ machine"] = _run(wl, "pd-ors+", rounding="machine")
print(json.dumps(got))
"""


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.split(":", 1)[-1].split())


@pytest.mark.skipif(platform.machine() != "x86_64", reason="OpenBLAS kernel names are x86-64's")
@pytest.mark.parametrize(("kernel", "needs"), [("Prescott", "pni"), ("SkylakeX", "avx512f")])
def test_pinned_runs_do_not_depend_on_the_blas_kernel(kernel: str, needs: str) -> None:
    """The priced schedulers' pinned runs under other OpenBLAS kernels than the one it
    picks here give the pinned bytes (``Prescott``: SSE3, ``pni`` in /proc/cpuinfo, no
    FMA; ``SkylakeX``: AVX-512)."""
    from tests.sim.test_pinned_bytes import PDORS_PLUS_PER_MACHINE, SYNTHETIC

    if needs not in _cpu_flags():
        pytest.skip(f"this CPU has no {needs} for OpenBLAS's {kernel} kernel")
    env = {**os.environ, "OPENBLAS_CORETYPE": kernel}
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", _PINNED],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    got = json.loads(out)
    want = {s: SYNTHETIC[s] for s in ("oasis", "pd-ors", "pd-ors+")}
    want["pd-ors+ machine"] = PDORS_PLUS_PER_MACHINE
    assert got == want


_EVERY = """
import hashlib, json
from dmlsched.checks.replay import result_bytes
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.schedulers.registration import load_builtin, registered
from dmlsched.sim.engine import simulate
from dmlsched.workloads.builders import WorkloadParams
from dmlsched.workloads.registry import build_workload
load_builtin()
sizes = {
    "cluster": WorkloadParams(jobs=40, machines=12, slots=60),
    "interval": WorkloadParams(jobs=30, machines=10, slots=20),
    "edge-cloud": WorkloadParams(jobs=30, machines=10, slots=40),
    "geo": WorkloadParams(jobs=20, machines=5, slots=10),
}
out = {}
for setting, params in sizes.items():
    for _, name in registered(setting):
        wl_rng, rng = spawn(make_rng(5), 2)
        wl = build_workload(setting, "synthetic", params, wl_rng)
        res = simulate(setting, wl, make_scheduler(setting, name), rng)
        out[setting + "/" + name] = hashlib.sha256(result_bytes(res)).hexdigest()
print(json.dumps(out))
"""
# NumPy's dispatch targets with AVX-512 (names it does not know are ignored)
_NO_AVX512 = "X86_V4 AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"


@functools.cache
def _every(env: tuple[tuple[str, str], ...]) -> dict[str, str]:
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", _EVERY],
        env={**os.environ, **dict(env)},
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="OpenBLAS kernel names are x86-64's")
@pytest.mark.parametrize(
    "numpy_off", [_NO_AVX512, f"X86_V3 {_NO_AVX512}"], ids=["no-avx512", "baseline"]
)
def test_every_scheduler_gives_the_same_bytes_on_a_cpu_without_avx512(numpy_off: str) -> None:
    """Every built-in scheduler of every setting, on a small synthetic workload, gives the
    same bytes as here when NumPy may not use AVX-512 (or nothing above its baseline) and
    OpenBLAS takes its Prescott kernel: the run of a machine without those.  (On a CPU
    without AVX-512 the first case is this machine's own, and passes by construction.)"""
    here = _every(())
    there = _every((("NPY_DISABLE_CPU_FEATURES", numpy_off), ("OPENBLAS_CORETYPE", "Prescott")))
    assert len(here) >= 20
    assert {k for k in here if here[k] != there[k]} == set()
