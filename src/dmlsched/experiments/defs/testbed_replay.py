"""A_online Figs. 4–6 and mlBroker Table 4 with real processes (opt-in, open loop).

The ``edge-cloud`` and ``geo`` engines validate decisions inline, so these
experiments use :mod:`dmlsched.testbed.replay`: the engine runs the
registered scheduler (every decision it accepted is kept) and the testbed
executes those decisions slot by slot; the engine's metrics for the same
decisions are the prediction, reported beside the measurement.  Both need a
few minutes per cell; run with ``--workers 1`` (cells take a machine-wide
lock anyway).

**testbed-aonline-fig4/5/6** — two edge servers (two workers and one PS
each) and the cloud as three emulated machines; the cloud's link is half
the edge cap with 20 ms added per message (the papers' slower cloud path);
jobs are async MLP-256 jobs on digits (:func:`~dmlsched.testbed.workload.
testbed_edge_workload`, m and b from the cached calibration profile: the
link model's step with the PS on another machine vs all on one).  Per slot
a job's trained chunks become workers on their servers and its PS one PS
process.  A job whose chunks the engine thought done keeps its last
placement up to 10 more slots (overrun).  Fig. 4 ``total_jct`` (÷ SRTF's
gives the JCT rate; Σ c_j − r_j with c_j the slot the job finished in, the
engine's convention — ``total_jct_fractional`` counts the part slot too),
Fig. 5 ``preemptions`` (testbed: stops and resizes of an unfinished job;
engine: its chunk-level count), Fig. 6 ``comm_seconds`` (testbed:
workers' seconds in send/receive; engine: the 2q/b share of every trained
chunk-slot).  J ∈ {3, 5} jobs (quick: 3).

**testbed-mlbroker-table4** — three zones as three emulated machines joined
by the capped inter-zone link (10 Mbit/s); Sec. 6.4's three DCs, Table 3
models, 3–8-slot jobs, 60 GB per job per slot, 10-s slots; data moves
q^{rr'} are real transfers of ``BYTES_PER_GB`` bytes per model GB.  Costs
from the measurement, with the engine's prices: C1 = moved bytes (÷ the
scale) × d^{rr'}; C2 = Eq. (3) on the usage the processes' measured
running time gives per slot and zone (worker-seconds ÷ slot × n_k plus
PS-seconds ÷ slot × m_k), with the volume discount; C3 = c_i per zone where
a job's processes appear; C4 = B_i × d^{rr'} per measured worker–PS
connection-slot across zones.  Jobs train continuously while active.
"""

from __future__ import annotations

import fcntl
import math
from collections import defaultdict

import numpy as np

from dmlsched.experiments.catalogue import Experiment, Point, register
from dmlsched.experiments.claims import Report
from dmlsched.experiments.defs.testbed import CAL_DIR, EXT_MBIT, INT_MBIT, _profile

__all__ = ["BYTES_PER_GB", "edge_cell", "geo_cell"]

BYTES_PER_GB = 50_000  # real bytes moved per model GB (data moves shrink 20,000×)
EDGE_SLOT_S = 10.0
GEO_SLOT_S = 10.0


def _link_step(prof: dict, workers: tuple[int, ...], ps: tuple[int, ...]) -> float:
    from dmlsched.workloads.speed_profile import profile_speed

    sp = profile_speed(prof, form="links", ext_mbit=(EXT_MBIT,), int_mbit=(INT_MBIT,))
    return sp.step_seconds(64, tuple(range(len(workers))), workers, ps)


def edge_cell(exp: Experiment, scheduler: str, point: Point, seed: int, quick: bool) -> dict:
    """One replay of ``scheduler``'s edge-cloud decisions (module docstring)."""
    from dmlsched.model.cluster import Placement
    from dmlsched.model.speed.aonline import comm_slots, processing_capacity
    from dmlsched.rng import make_rng, spawn
    from dmlsched.testbed.replay import ReplaySlot, record, replay
    from dmlsched.testbed.runtime import Testbed, TrainSpec
    from dmlsched.testbed.workload import testbed_edge_workload

    CAL_DIR.mkdir(parents=True, exist_ok=True)
    with (CAL_DIR / "lock").open("w") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
        prof = _profile("local", quick)
        edge = _link_step(prof, (1, 0), (0, 1))  # one async worker, its PS elsewhere
        cloud = _link_step(prof, (1,), (1,))
        wl = testbed_edge_workload(
            int(point),
            spawn(make_rng(seed), 2)[0],
            slot_seconds=EDGE_SLOT_S,
            edge_step_s=edge,
            cloud_step_s=cloud,
        )
        res, decisions = record("edge-cloud", wl, scheduler, seed)
        S = wl.system.servers
        jobs = {j.id: j for j in wl.jobs}
        where: dict[int, tuple] = {}
        slots = []
        sim_comm = 0.0
        for d in decisions:
            where.update(d.dispatch)
            placements = {}
            for j, chunks in d.run.items():
                if not chunks:
                    continue
                per = defaultdict(int)
                for c in chunks:
                    per[where[j][c][0]] += 1
                ps_m = d.ps[j][0]
                ms = sorted(set(per) | {ps_m})
                placements[j] = Placement(
                    tuple(ms),
                    tuple(per.get(m, 0) for m in ms),
                    tuple(1 if m == ps_m else 0 for m in ms),
                )
                zeta = int(all(where[j][c][0] == S for c in range(jobs[j].chunks)))
                if not zeta:  # the 2q/b share of each trained chunk-slot, Eq. (1)
                    n = processing_capacity(jobs[j], 0)
                    sim_comm += len(chunks) * n * comm_slots(jobs[j]) * EDGE_SLOT_S
            slots.append(ReplaySlot(placements))
        specs = {
            j.id: TrainSpec(
                job=j.id, target=float(j.chunks * j.work_per_chunk), mode="async", seed=100 + j.id
            )
            for j in wl.jobs
        }
        caps = [EXT_MBIT] * S + [EXT_MBIT / 2]
        delay = [0.0] * S + [20.0]
        with Testbed(
            S + 1,
            CAL_DIR / "runs" / f"{exp.id}-{scheduler}-{point}-{seed}",
            ext_mbit=caps,
            int_mbit=INT_MBIT,
            delay_ms=delay,
        ) as tb:
            run = replay(
                tb, specs, {j.id: j.arrival for j in wl.jobs}, slots, EDGE_SLOT_S, overrun_slots=10
            )
    # the engine's JCT is c_j − r_j with c_j the completion slot (2j): the same for the testbed
    real = [
        math.floor(run.jct[j.id] + j.arrival) - j.arrival
        if j.id in run.jct
        else run.slots_run - j.arrival
        for j in wl.jobs
    ]
    m = res.metrics
    out = {
        "total_jct": float(sum(real)),
        "total_jct_fractional": float(
            sum(run.jct.get(j.id, run.slots_run - j.arrival) for j in wl.jobs)
        ),
        "sim_total_jct": float(m["total_jct"]),
        "jct_error": abs(m["total_jct"] - sum(real)) / sum(real) if sum(real) > 0 else math.nan,
        "completed_jobs": float(len(run.jct)),
        "preemptions": float(sum(run.preemptions.values()) + sum(run.resizes.values())),
        "sim_preemptions": float(m["preemptions"]),
        "comm_seconds": float(sum(st.comm_s for st in run.status.values())),
        "sim_comm_seconds": float(sim_comm),
        "overrun_slots": float(sum(run.overrun.values())),
        "wall_seconds": run.wall_s,
    }
    return out


def geo_cell(exp: Experiment, scheduler: str, point: Point, seed: int, quick: bool) -> dict:
    """One replay of ``scheduler``'s geo decisions, costs measured (module docstring)."""
    from dmlsched.experiments.defs.mlbroker import _instance
    from dmlsched.model.cluster import Placement
    from dmlsched.model.geo import resource_cost
    from dmlsched.testbed.replay import Move, ReplaySlot, record, replay
    from dmlsched.testbed.runtime import Testbed, TrainSpec

    jobs_n, slots_n = (4, 6) if quick else (6, 10)
    wl = _instance(seed, 3, slots_n, jobs_n, data_gb=60.0, models=True, duration=(3, 8))
    res, decisions = record("geo", wl, scheduler, seed)
    R = wl.sites.dcs
    jobs = {j.id: j for j in wl.jobs}
    slots = []
    ps_site: dict[tuple[int, int], int] = {}
    for t, d in enumerate(decisions):
        placements, moves = {}, []
        for i, p in d.placements.items():
            ps_site[(t, i)] = p.ps
            if sum(p.workers) == 0:
                continue
            placements[i] = Placement(
                tuple(range(R)),
                tuple(int(w) for w in p.workers),
                tuple(1 if r == p.ps else 0 for r in range(R)),
            )
            q = np.asarray(p.transfers)
            for r in range(R):
                for r2 in range(R):
                    if r != r2 and q[r, r2] > 1e-9:
                        moves.append(Move(i, r, r2, int(q[r, r2] * BYTES_PER_GB)))
        slots.append(ReplaySlot(placements, tuple(moves)))
    specs = {j.id: TrainSpec(job=j.id, target=1e15, seed=200 + j.id) for j in wl.jobs}
    CAL_DIR.mkdir(parents=True, exist_ok=True)
    with (CAL_DIR / "lock").open("w") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
        with Testbed(
            R,
            CAL_DIR / "runs" / f"{exp.id}-{scheduler}-{seed}",
            ext_mbit=EXT_MBIT,
            int_mbit=INT_MBIT,
        ) as tb:
            run = replay(tb, specs, {j.id: j.arrival for j in wl.jobs}, slots, GEO_SLOT_S)
    sites = wl.sites
    c1 = sum(b / BYTES_PER_GB * sites.d[s, d_] for _, _, s, d_, b in run.moved)
    c2 = c3 = c4 = 0.0
    seen: dict[int, set[int]] = defaultdict(set)
    for t in range(run.slots_run):
        h = np.zeros((R, sites.kinds))
        for i, job in jobs.items():
            ps = run.proc_seconds.get((t, i), {})
            zones = {r for r, (w, p) in ps.items() if w > 0 or p > 0}
            c3 += job.deploy_cost * len(zones - seen[i])
            seen[i] = zones
            for r, (w, p) in ps.items():
                h[r] += np.asarray(job.worker_demand) * w / GEO_SLOT_S
                h[r] += np.asarray(job.ps_demand) * p / GEO_SLOT_S
                site = ps_site.get((t, i))
                if site is not None and r != site:
                    c4 += job.exchange_gb * sites.d[r, site] * w / GEO_SLOT_S
        c2 += resource_cost(h, sites)
    m = res.metrics
    real = {"cost_transfer": c1, "cost_resource": c2, "cost_deploy": c3, "cost_communication": c4}
    real["total_cost"] = sum(real.values())
    out = {k: float(v) for k, v in real.items()}
    for k in real:
        out[f"sim_{k}"] = float(m[k])
    out["total_cost_error"] = abs(out["sim_total_cost"] - out["total_cost"]) / out["total_cost"]
    out["moved_bytes"] = float(sum(b for *_, b in run.moved))
    out["wall_seconds"] = run.wall_s
    return out


_AONLINE = ("a-online", "srtf", "tiresias-l", "batchsche")
for fig, metric, what in (
    ("fig4", "total_jct", "JCT (÷ SRTF's = JCT rate)"),
    ("fig5", "preemptions", "preemption frequency"),
    ("fig6", "comm_seconds", "communication overhead"),
):
    register(
        Experiment(
            id=f"testbed-aonline-{fig}",
            setting="edge-cloud",
            title=f"Testbed A_online {fig.replace('fig', 'Fig. ')}: {what}, measured vs engine",
            param="jobs",
            points=(3, 5),
            quick_points=(3,),
            schedulers=_AONLINE,
            metrics=(
                metric,
                f"sim_{metric}",
                "jct_error",
                "completed_jobs",
                "overrun_slots",
                "wall_seconds",
            ),
            build=lambda point, seed, quick: None,
            cell=edge_cell,
            claims=(Report(metric, "a-online", f"A_online's measured {what}"),),
            default_seeds=1,
            plot="bar",
            reproduces=f"A_online testbed {fig.replace('fig', 'Fig. ')} (replayed decisions)",
            opt_in=True,
        )
    )

register(
    Experiment(
        id="testbed-mlbroker-table4",
        setting="geo",
        title="Testbed mlBroker Table 4: measured cost parts vs engine",
        param="zones",
        points=(3,),
        quick_points=(3,),
        schedulers=("mlbroker", "local", "central", "oasis-geo"),
        metrics=(
            "total_cost",
            "sim_total_cost",
            "total_cost_error",
            "cost_transfer",
            "cost_resource",
            "cost_deploy",
            "cost_communication",
            "moved_bytes",
            "wall_seconds",
        ),
        build=lambda point, seed, quick: None,
        cell=geo_cell,
        claims=(Report("total_cost", "mlbroker", "mlBroker's measured total cost"),),
        default_seeds=1,
        plot="bar",
        reproduces="mlBroker Table 4 (replayed decisions, measured running time and bytes)",
        opt_in=True,
    )
)
