"""The simulator's view of a testbed run: the same scheduler in the engine, and the run replayed.

Predictions with a speed model (the calibrated profile, or Eq. (1) on the
jobs' own fields when none is given):

* ``sim_jct`` — the engine runs the same scheduler on the same workload
  (closed loop: its decisions may differ if its progress differs), asked
  every slot (``event_driven=False``: the same result, and a view of every
  slot's remaining work); ``sim_progress`` — each job's share of its work
  the engine got through by the horizon (1 when it completed);
  ``sim_started`` — the jobs the engine ever ran;
* ``replay_jct`` — the testbed's own decisions, slot by slot, with the
  model's rates (after the job's last real slot, its last placement goes on);
  within a slot, as in the engine, a job the replay completes leaves the
  links to the others (:func:`dmlsched.sim.cluster.work.shared_slot`), and
  from then on it is not running;
* per slot, the predicted work of each job's placement beside the measured
  one (``rows``' ``pred_work`` beside ``work``): the rate of the slot's whole
  set of placements, as the testbed ran them.

Rates of jobs running together come from the model's ``slot_rates`` when it
has one (shared links), as in the engine.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlsched.model.cluster import ClusterJob, Placement, SpeedModel
from dmlsched.model.speed.pdors import job_rate
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.cluster.work import restart_shares, shared_slot
from dmlsched.testbed.run import SlotRow, TestbedRun
from dmlsched.testbed.workload import TestbedWorkload

__all__ = ["Prediction", "predict", "slot_rates"]


@dataclass(frozen=True)
class Prediction:
    sim_jct: dict[int, float]  # NaN: the engine did not finish the job by the horizon
    replay_jct: dict[int, float]
    sim_metrics: dict[str, float]
    rows: list[SlotRow]
    sim_progress: dict[int, float] = dataclasses.field(default_factory=dict)
    sim_started: frozenset[int] = frozenset()


def slot_rates(
    speed: SpeedModel | None, items: Sequence[tuple[ClusterJob, Placement]]
) -> list[float]:
    """Work per slot of jobs running together, as the engine credits it."""
    joint = getattr(speed, "slot_rates", None)
    if joint is not None and len(items) > 1:
        return [float(r) for r in joint(items)]
    rate_of = speed.rate if speed is not None else job_rate
    return [float(rate_of(j, p.machines, p.workers, p.ps)) for j, p in items]


class _Recorder:
    """The scheduler, recording each slot's remaining work and allocations (a view's copy)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.slots: list[tuple[int, dict[int, float], dict[int, Placement]]] = []

    def reset(self, *a: Any) -> None:
        self.inner.reset(*a)

    def decide(self, view: Any) -> Any:
        d = self.inner.decide(view)
        allocs = {
            int(j): Placement(tuple(p.machines), tuple(p.workers), tuple(p.ps))
            for j, p in d.allocations.items()
        }
        self.slots.append((view.slot, dict(view.remaining), allocs))
        return d


def predict(
    tw: TestbedWorkload, run: TestbedRun, speed: SpeedModel | None, scheduler_params=None
) -> Prediction:
    """The simulator's view of the same run (module docstring)."""
    from dmlsched.sim.cluster import simulate_cluster

    wl = dataclasses.replace(tw.workload, speed=speed) if speed is not None else tw.workload
    inner = make_scheduler("cluster", run.scheduler, **(scheduler_params or {}))
    # the engine names a scheduler by its class's ``name``
    rec = type("Recording", (_Recorder,), {"name": type(inner).name})(inner)
    _, rng = spawn(make_rng(run.seed), 2)
    res = simulate_cluster(wl, rec, rng, record_events=False, event_driven=False)
    sim_jct = {j.id: float(v) for j, v in zip(wl.jobs, res.series["jct"], strict=True)}
    jobs = {j.id: j for j in wl.jobs}
    started = frozenset(
        j for _, _, allocs in rec.slots for j, p in allocs.items() if p.total_workers > 0
    )
    progress = _sim_progress(jobs, sim_jct, rec, speed)
    rows: list[SlotRow] = []
    by_slot: dict[int, list[tuple[SlotRow, Placement]]] = defaultdict(list)
    for r in sorted(run.rows, key=lambda r: (r.slot, r.job)):  # one order, however stored
        ms, ws, ss = zip(*r.placement, strict=True) if r.placement else ((), (), ())
        by_slot[r.slot].append((r, Placement(tuple(ms), tuple(ws), tuple(ss))))
    for _, group in sorted(by_slot.items()):
        items = [(jobs[r.job], p) for r, p in group]
        for (r, _), rate in zip(group, slot_rates(speed, items), strict=True):
            rows.append(dataclasses.replace(r, pred_work=rate))
    replay = _replay(jobs, by_slot, speed)
    return Prediction(sim_jct, replay, dict(res.metrics), rows, progress, started)


def _rates_of(
    speed: SpeedModel | None, items: list[tuple[ClusterJob, Placement]]
) -> Callable[[np.ndarray], np.ndarray]:
    """Rates of the ``items`` at the given positions running together."""
    return lambda alive: np.array(slot_rates(speed, [items[i] for i in alive.tolist()]))


def _replay(
    jobs: dict[int, ClusterJob],
    by_slot: dict[int, list[tuple[SlotRow, Placement]]],
    speed: SpeedModel | None,
) -> dict[int, float]:
    """Each job's JCT at the model's rates on the testbed's own placements (module
    docstring), new incarnations charged as the engine charges them; NaN for a job the
    run never placed."""
    done = dict.fromkeys(jobs, 0.0)
    jct = dict.fromkeys(jobs, math.nan)
    last: dict[int, tuple[int, float]] = {}  # job → its last slot and rate there
    # new incarnations pay the speed model's charges, as in the engine (work.restart_shares)
    start = float(getattr(speed, "start_slots", 0.0))
    restart = float(getattr(speed, "restart_slots", 0.0))
    placed: dict[int, Placement] = {}  # job → its placement in the slot before
    ran: set[int] = set()
    for slot, group in sorted(by_slot.items()):
        ids = [r.job for r, _ in group if math.isnan(jct[r.job]) and r.placement]
        items = [(jobs[r.job], p) for r, p in group if r.job in ids]
        shares = restart_shares(ids, [p for _, p in items], placed, ran, start, restart)
        # the slot after a slot with no rows ran nothing: every job restarts there
        placed = {j: p for j, (_, p) in zip(ids, items, strict=True)} if slot + 1 in by_slot else {}
        ran.update(ids)
        if not ids:
            continue
        rates = np.array(slot_rates(speed, items))
        last.update((j, (slot, rate)) for j, rate in zip(ids, rates.tolist(), strict=True))
        total = np.array([jobs[j].total_work for j in ids])
        before = np.array([done[j] for j in ids]) - rates * np.array(shares)
        got = shared_slot(before, total, total, rates, _rates_of(speed, items))
        for k, j in enumerate(ids):
            done[j] = float(before[k] + got.work[k])
            if got.completed[k]:
                jct[j] = slot - jobs[j].arrival + float(got.at[k])
    for j, (slot, rate) in last.items():  # after its last real slot, that placement goes on
        if math.isnan(jct[j]) and rate > 0:
            jct[j] = slot + 1 - jobs[j].arrival + (jobs[j].total_work - done[j]) / rate
    return jct


def _sim_progress(
    jobs: dict[int, ClusterJob],
    sim_jct: dict[int, float],
    rec: _Recorder,
    speed: SpeedModel | None,
) -> dict[int, float]:
    """Each job's share of its work the engine did by the horizon (module docstring).

    The last view the engine showed has the work left at the start of its
    slot; that slot's own work (its allocations at the model's rates) is
    added.
    """
    out = {j: 1.0 if sim_jct[j] == sim_jct[j] else 0.0 for j in jobs}
    if not rec.slots:
        return out
    _, remaining, allocs = rec.slots[-1]
    running = [j for j in allocs if j in remaining and allocs[j].total_workers > 0]
    last = dict(
        zip(running, slot_rates(speed, [(jobs[j], allocs[j]) for j in running]), strict=True)
    )
    for j, left in remaining.items():
        if out[j] < 1.0:
            total = jobs[j].total_work
            out[j] = min(1.0, max(0.0, (total - left + last.get(j, 0.0)) / total))
    return out
