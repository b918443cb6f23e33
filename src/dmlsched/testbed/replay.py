"""Replay engine-validated decisions of any setting on the testbed (open loop).

For settings whose engine validates inline (``edge-cloud``, ``geo``) the
testbed does not decide slot by slot: :func:`record` runs the setting's
engine with the registered scheduler, keeping every decision the engine
accepted (so every decision passed the engine's own validation), and
:func:`replay` executes them slot by slot — each job's placement as
workers/PSs per machine, plus bulk data moves between machines — and
measures what happened.  The engine's metrics for the same decisions are
the prediction.

Open loop means the scheduler never sees measured progress: a job the
testbed trains more slowly than the engine assumed is still unfinished when
its decisions end.  With ``overrun_slots`` > 0 such a job keeps its last
placement for up to that many extra slots after its last decision (its JCT
then includes them; ``overrun`` counts them); capacity is not re-checked
for overruns.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dmlsched.model.cluster import Placement
from dmlsched.testbed.executor import ClusterExecutor, canonical
from dmlsched.testbed.runtime import JobStatus, Testbed, TrainSpec
from dmlsched.testbed.training import TaskConfig

__all__ = ["Move", "ReplayRun", "ReplaySlot", "record", "replay"]


def record(setting: str, workload: Any, scheduler: str, seed: int, params: dict | None = None):
    """(engine RunResult, decisions by slot) of ``scheduler`` on ``workload``."""
    from dmlsched.rng import make_rng, spawn
    from dmlsched.schedulers.protocols import make_scheduler
    from dmlsched.sim.engine import simulate

    inner = make_scheduler(setting, scheduler, **(params or {}))
    decisions: list[Any] = []

    class Recording:
        name = type(inner).name

        def reset(self, *a: Any) -> None:
            inner.reset(*a)

        def decide(self, view: Any) -> Any:
            d = inner.decide(view)
            decisions.append(d)
            return d

    Recording.setting = setting  # type: ignore[attr-defined]
    _, rng = spawn(make_rng(seed), 2)
    res = simulate(setting, workload, Recording(), rng)
    return res, decisions


@dataclass(frozen=True)
class Move:
    """``nbytes`` from machine ``src`` to ``dst`` in a slot (a data transfer)."""

    job: int
    src: int
    dst: int
    nbytes: int


@dataclass(frozen=True)
class ReplaySlot:
    placements: Mapping[int, Placement]
    moves: tuple[Move, ...] = ()


@dataclass
class ReplayRun:
    slot_seconds: float
    start: float = 0.0
    status: dict[int, JobStatus] = field(default_factory=dict)
    jct: dict[int, float] = field(default_factory=dict)  # slots from the arrival slot's start
    # (slot, job) → machine → (worker-seconds, PS-seconds)
    proc_seconds: dict[tuple[int, int], dict[int, tuple[float, float]]] = field(
        default_factory=dict
    )
    moved: list[tuple[int, int, int, int, int]] = field(default_factory=list)  # slot,job,s,d,B
    preemptions: dict[int, int] = field(default_factory=dict)
    resizes: dict[int, int] = field(default_factory=dict)
    moves_of_jobs: dict[int, int] = field(default_factory=dict)
    overrun: dict[int, int] = field(default_factory=dict)
    slots_run: int = 0
    wall_s: float = 0.0


def _start_moves(tb: Testbed, slot: int, moves: tuple[Move, ...]) -> list[tuple[Move, Any]]:
    base = tb.task_base()
    out = []
    for k, mv in enumerate(moves):
        d = tb.job_root / "moves"
        common = dict(
            job_dir=str(d),
            job=mv.job,
            inc=slot,
            mode="sync",
            hidden=1,
            lr=0.0,
            batch=1,
            seed=0,
            target=0.0,
            ps_machines=(mv.dst,),
            worker_machines=(mv.src,),
            extra={"nbytes": mv.nbytes},
            **base,
        )
        tb.spawn(mv.dst, TaskConfig(role="recv", index=k, **common))  # type: ignore[arg-type]
        tb.spawn(mv.src, TaskConfig(role="send", index=k, **common))  # type: ignore[arg-type]
        out.append((mv, d / f"inc-{slot}" / f"recv-{k}.json"))
    return out


def replay(
    tb: Testbed,
    specs: Mapping[int, TrainSpec],
    arrivals: Mapping[int, int],
    slots: list[ReplaySlot],
    slot_seconds: float,
    *,
    overrun_slots: int = 0,
    on_slot: Callable[[int, dict[int, str]], None] | None = None,
) -> ReplayRun:
    """Execute ``slots`` one per ``slot_seconds`` (module docstring)."""
    import json

    ex = ClusterExecutor(tb, specs)
    run = ReplayRun(slot_seconds)
    start = run.start = time.time()
    last: dict[int, Placement] = {}
    last_slot = {j: k for k, sl in enumerate(slots) for j in sl.placements}
    pending_moves: list[tuple[int, Move, Any]] = []
    t = 0
    try:
        while True:
            status = ex.measure()
            for j, st in status.items():
                if st.done and st.done_time is not None and j not in run.jct:
                    run.jct[j] = (st.done_time - start) / slot_seconds - arrivals[j]
            if t < len(slots):
                alloc = dict(slots[t].placements)
                moves = slots[t].moves
            else:
                alloc, moves = {}, ()
            for j, p in alloc.items():
                last[j] = p
            if overrun_slots:  # the engine thought these done; reality has work left
                for j, p in last.items():
                    behind = t > last_slot[j] and not status[j].done
                    if behind and run.overrun.get(j, 0) < overrun_slots:
                        alloc[j] = p
                        run.overrun[j] = run.overrun.get(j, 0) + 1
            alloc = {j: p for j, p in alloc.items() if not status[j].done and canonical(p)}
            if t >= len(slots) and not alloc:
                break
            acts = ex.apply(alloc).actions
            for mv, path in _start_moves(tb, t, moves):
                pending_moves.append((t, mv, path))
            if on_slot:
                on_slot(t, acts)
            t += 1
            wait = start + t * slot_seconds - time.time()
            if wait > 0:
                time.sleep(wait)
            for j, job in ex.jobs.items():
                ps = job.process_seconds(start + (t - 1) * slot_seconds, start + t * slot_seconds)
                if ps:
                    run.proc_seconds[(t - 1, j)] = ps
    finally:
        ex.close()
        run.wall_s = time.time() - start
    for slot, mv, path in pending_moves:
        got = 0
        for _ in range(100):  # a transfer that outlived the run finishes within seconds
            try:
                got = int(json.loads(path.read_text())["bytes"])
                break
            except (OSError, ValueError, KeyError):
                time.sleep(0.1)
        run.moved.append((slot, mv.job, mv.src, mv.dst, got))
    run.status = ex.measure()
    for j, st in run.status.items():  # jobs that finished in the last slot
        if st.done and st.done_time is not None and j not in run.jct:
            run.jct[j] = (st.done_time - start) / slot_seconds - arrivals[j]
    run.slots_run = t
    run.preemptions = dict(ex.preemptions)
    run.resizes = dict(ex.resizes)
    run.moves_of_jobs = dict(ex.moves)
    return run
