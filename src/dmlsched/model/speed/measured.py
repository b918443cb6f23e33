"""A measured speed model: per-step time from throughput profiles, not Eq. (1).

The profiles are the Pollux authors' measurements (OSDI'21, Sec. 5.3;
``../shared/peers/pollux-osdi21/profiles``), loaded by
:mod:`dmlsched.workloads.profiles` and passed in as :class:`AppProfile` values —
this module does no I/O.  **Those jobs synchronise gradients by all-reduce,
not through parameter servers**: the model ignores where a job's PSs sit and
counts only how its workers (GPUs) spread over machines.

Per-step time of a placement (workers per machine, zeros dropped) at a local
(per-GPU) batch follows the Pollux simulator's ``get_throughput``:

* the placement is normalised to its lexicographically smallest rotation
  (``(2, 1, 1)`` and ``(1, 2, 1)`` are the same measurement);
* if that placement was measured (``placements.csv``: up to 4 nodes × 4
  GPUs), step and sync time are interpolated linearly in the local batch;
* otherwise they are interpolated linearly over (nodes spanned, replicas,
  local batch) on the per-(nodes, replicas, local batch) means of
  ``placements.csv`` together with ``scalability.csv`` (6–16 nodes), nodes
  capped at 16 as Pollux does.  Pollux interpolates on a Delaunay
  triangulation (scipy ``LinearNDInterpolator``); we interpolate separably
  (local batch, then replicas, then nodes — see :class:`_Interp`): the same
  measurements and the same values at every measured point, without a
  seconds-long triangulation per application.

Decisions where the simulator errs out instead (documented, tested): local
batches, replica and node counts outside the measured range are clamped to
it.

Gradient accumulation as in Pollux's ``update_local_bsz``: the local batch
l = ⌈F / W⌉; if l exceeds the application's largest local batch,
``accum = ⌈l / max_local⌉ − 1`` extra micro-steps of
``atomic = ⌈l / (accum + 1)⌉`` samples each run before the synchronising step,
costing ``step + accum · (step − sync)`` seconds for W · atomic · (accum + 1)
samples.

:class:`MeasuredSpeed` implements the engine's
:class:`dmlsched.model.cluster.SpeedModel`: ``rate`` = samples per slot of
``slot_seconds`` for the job's application (looked up by job id — the
workload loader knows each job's application; nothing is added to
:class:`ClusterJob`).  It memoises interpolators and results, which is its
only state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import ClusterJob

__all__ = [
    "AppProfile",
    "MeasuredSpeed",
    "accumulation",
    "normalise_placement",
    "step_time",
]

_MAX_NODES = 16  # Pollux caps num_nodes at 16 before interpolating


@dataclass(frozen=True)
class AppProfile:
    """One application's measurements.

    * ``placements``: placement (GPUs per node) → (local_bsz, step_time,
      sync_time) arrays, sorted by local batch;
    * ``grid``: rows (num_nodes, num_replicas, local_bsz, step_time,
      sync_time) — per-(nodes, replicas, local batch) means of the placement
      rows plus the scalability rows;
    * ``max_local_bsz``: the largest local batch one GPU takes (Pollux's
      ``max_local_bsz``; larger local batches accumulate).
    """

    name: str
    placements: Mapping[tuple[int, ...], tuple[np.ndarray, np.ndarray, np.ndarray]]
    grid: np.ndarray
    max_local_bsz: int

    @property
    def min_local_bsz(self) -> int:
        return int(min(v[0][0] for v in self.placements.values()))


def normalise_placement(workers: Sequence[int]) -> tuple[int, ...]:
    """Drop zeros and take the lexicographically smallest rotation (as Pollux)."""
    p = tuple(int(w) for w in workers if w)
    if not p:
        return ()
    return min(p[i:] + p[:i] for i in range(len(p)))


def accumulation(global_batch: int, workers: int, max_local: int) -> tuple[int, int]:
    """(atomic local batch, extra accumulation steps) for F over W GPUs."""
    local = math.ceil(global_batch / workers - 1e-8)
    accum = max(0, math.ceil(local / max_local - 1e-8) - 1)
    atomic = math.ceil(local / (accum + 1) - 1e-8)
    return atomic, accum


class _Interp:
    """Separable linear interpolation over the (nodes, replicas, local batch) grid.

    Built once per profile (the model's only state besides memos): per node
    count, the sorted replica counts and, per (nodes, replicas), the local
    batch curve.  A query interpolates linearly in the local batch on each
    curve, then in replicas between the two bracketing measured counts, then
    in nodes between the two bracketing measured node counts; coordinates
    outside the measured range are clamped to it (the nearest edge).
    """

    def __init__(self, prof: AppProfile) -> None:
        g = prof.grid
        by: dict[int, dict[int, list[tuple[float, float, float]]]] = {}
        for n, r, lb, st, sy in g:
            by.setdefault(int(n), {}).setdefault(int(r), []).append((lb, st, sy))
        self.nodes = np.array(sorted(by), dtype=float)
        self.curves: dict[int, tuple[np.ndarray, list[np.ndarray]]] = {}
        for n, reps in by.items():
            rs = sorted(reps)
            curves = []
            for r in rs:
                arr = np.array(sorted(reps[r]), dtype=float)
                lbs, idx = np.unique(arr[:, 0], return_inverse=True)
                cnt = np.bincount(idx)
                curves.append(
                    np.stack(
                        [lbs, np.bincount(idx, arr[:, 1]) / cnt, np.bincount(idx, arr[:, 2]) / cnt]
                    )
                )
            self.curves[n] = (np.array(rs, dtype=float), curves)

    @staticmethod
    def _bracket(xs: np.ndarray, x: float) -> tuple[int, int, float]:
        x = min(max(x, xs[0]), xs[-1])
        hi = int(np.searchsorted(xs, x))
        if xs[hi] == x:
            return hi, hi, 0.0
        lo = hi - 1
        return lo, hi, (x - xs[lo]) / (xs[hi] - xs[lo])

    def _at_nodes(self, n: int, r: float, lb: float) -> np.ndarray:
        rs, curves = self.curves[n]
        lo, hi, f = self._bracket(rs, r)

        def val(c: np.ndarray) -> np.ndarray:
            x = min(max(lb, c[0, 0]), c[0, -1])
            return np.array([np.interp(x, c[0], c[1]), np.interp(x, c[0], c[2])])

        a = val(curves[lo])
        return a if lo == hi else (1 - f) * a + f * val(curves[hi])

    def nd(self, x: np.ndarray) -> np.ndarray:
        n, r, lb = (float(v) for v in np.asarray(x).reshape(-1)[:3])
        lo, hi, f = self._bracket(self.nodes, n)
        a = self._at_nodes(int(self.nodes[lo]), r, lb)
        if lo == hi:
            return a
        return (1 - f) * a + f * self._at_nodes(int(self.nodes[hi]), r, lb)


def step_time(
    prof: AppProfile, placement: Sequence[int], local_bsz: float, _cache: _Interp | None = None
) -> tuple[float, float]:
    """(step_time, sync_time) in seconds of ``placement`` at ``local_bsz``.

    See the module docstring for the interpolation rules.
    """
    key = normalise_placement(placement)
    if not key:
        raise InvalidInput("placement", tuple(placement), "at least one GPU")
    lo = prof.min_local_bsz
    hi = int(max(v[0][-1] for v in prof.placements.values()))
    lb = float(min(max(local_bsz, lo), hi))
    if key in prof.placements:
        x, st, sy = prof.placements[key]
        lb = float(min(max(lb, x[0]), x[-1]))
        return float(np.interp(lb, x, st)), float(np.interp(lb, x, sy))
    interp = _cache or _Interp(prof)
    nodes = min(len(key), _MAX_NODES)
    out = interp.nd(np.array([[nodes, sum(key), lb]], dtype=float))
    return float(out[0]), float(out[1])


class MeasuredSpeed:
    """Engine speed model from measured profiles (see the module docstring).

    ``apps`` maps job id → application name (a key of ``profiles``);
    ``slot_seconds`` converts seconds per step into samples per slot.  For
    sync (BSP, fixed global batch F) jobs only — what the profiles measure.
    """

    def __init__(
        self,
        profiles: Mapping[str, AppProfile],
        apps: Mapping[int, str],
        slot_seconds: float,
    ) -> None:
        if not slot_seconds > 0:
            raise InvalidInput("slot_seconds", slot_seconds, "> 0")
        missing = sorted({a for a in apps.values() if a not in profiles})
        if missing:
            raise InvalidInput("application", missing[0], " | ".join(sorted(profiles)))
        self.profiles = dict(profiles)
        self.apps = dict(apps)
        self.slot_seconds = float(slot_seconds)
        self._interp: dict[str, _Interp] = {}  # built on first use per application
        self._memo: dict[tuple[str, tuple[int, ...], int], float] = {}

    def seconds_per_step(self, app: str, placement: Sequence[int], batch: int) -> tuple[float, int]:
        """(seconds, samples) of one synchronising step of global batch ``batch``."""
        prof = self.profiles[app]
        key = normalise_placement(placement)
        w = sum(key)
        atomic, accum = accumulation(batch, w, prof.max_local_bsz)
        interp = self._interp.get(app)
        if interp is None:
            interp = self._interp[app] = _Interp(prof)
        st, sy = step_time(prof, key, atomic, interp)
        total = st + accum * max(st - sy, 0.0)
        return total, w * atomic * (accum + 1)

    def rate(
        self,
        job: ClusterJob,
        machines: Sequence[int],
        workers: Sequence[int],
        ps: Sequence[int],
    ) -> float:
        """Samples per slot; 0 without workers or (as Eq. (1)) without a PS."""
        if sum(workers) <= 0 or sum(ps) <= 0:
            return 0.0
        app = self.apps.get(job.id)
        if job.mode != "sync":
            raise InvalidInput(
                "mode", job.mode, "sync (measured all-reduce profiles)", f"job {job.id}"
            )
        if app is None:
            raise InvalidInput("job", job.id, "a job with a profiled application")
        key = normalise_placement(workers)
        memo = (app, key, job.batch)
        hit = self._memo.get(memo)
        if hit is None:
            secs, samples = self.seconds_per_step(app, key, job.batch)
            hit = self._memo[memo] = samples / secs * self.slot_seconds
        return hit
