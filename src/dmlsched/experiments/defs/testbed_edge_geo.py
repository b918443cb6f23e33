"""A_online Figs. 4–6 and mlBroker Table 4 with real processes (opt-in, closed loop).

The testbed drives the ``edge-cloud`` and ``geo`` engine states
(:mod:`dmlsched.testbed.edge_geo`): the scheduler sees the measured
progress, the engine referees every decision and credits what the
processes did; beside each measured run, the same scheduler simulated with
the model's speeds is the prediction.  Both need a few minutes per cell;
run with ``--workers 1`` (cells take a machine-wide lock anyway).

**testbed-aonline-fig4/5/6** — two edge servers (two workers and one PS
each) and the cloud as three emulated machines; the cloud's link is half
the edge cap with 20 ms added per message (the papers' slower cloud path);
jobs are async MLP-256 jobs on digits (:func:`~dmlsched.testbed.workload.
testbed_edge_workload`, m and b from the cached calibration profile: the
link model's step with the PS on another machine vs all on one).  Per slot
a job's trained chunks become workers on their servers and its PS one PS
process; its measured mini-batches ÷ its trained chunks are credited to
each.  Fig. 4 ``total_jct`` (÷ SRTF's gives the JCT rate; Σ c_j − r_j with
c_j the slot in which the measured progress completed the job's chunks),
Fig. 5 ``preemptions`` (stops and resizes of an unfinished job's
processes; ``sim_``: the simulation's chunk-level count), Fig. 6
``comm_seconds`` (workers' seconds in send/receive; ``sim_``: the 2q/b
share of every chunk-slot the run trained).  J ∈ {3, 5} jobs (quick: 3).

**testbed-mlbroker-table4** — three zones as three emulated machines joined
by the capped inter-zone link (10 Mbit/s); Sec. 6.4's three DCs, Table 3
models, 3–8-slot jobs, 60 GB per job per slot, 10-s slots; data moves
q^{rr'} are real transfers of ``BYTES_PER_GB`` bytes per model GB.  A job's
workers train the data sent to their zone as far as they ran (P_i GB per
worker per slot of measured running time); what they did not train is
routed again in the next slot (``unprocessed_gb``: left when jobs ended).
Costs from the measurement, with the engine's prices: C1 = moved bytes (÷
the scale) × d^{rr'}; C2 = Eq. (3) on the usage the processes' measured
running time gives per slot and zone (worker-seconds ÷ slot × n_k plus
PS-seconds ÷ slot × m_k), with the volume discount; C3 = c_i per zone
where a job's processes appear; C4 = B_i × d^{rr'} per measured worker–PS
connection-slot across zones.  ``sim_*``: the engine's prices of the same
decisions; ``model_total_cost``: the scheduler simulated with the model's
speeds.
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
    """One closed-loop run of ``scheduler`` on the edge-cloud testbed (module docstring)."""
    from dmlsched.model.speed.aonline import comm_slots, processing_capacity
    from dmlsched.rng import make_rng, spawn
    from dmlsched.sim.engine import simulate
    from dmlsched.testbed.edge_geo import run_edge_cloud
    from dmlsched.testbed.runtime import Testbed, TrainSpec
    from dmlsched.testbed.workload import testbed_edge_workload

    CAL_DIR.mkdir(parents=True, exist_ok=True)
    with (CAL_DIR / "lock").open("w") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
        prof = _profile("local", quick)
        edge = _link_step(prof, (1, 0), (0, 1))  # one async worker, its PS elsewhere
        cloud = _link_step(prof, (1,), (1,))
        wl_rng, rng = spawn(make_rng(seed), 2)
        wl = testbed_edge_workload(
            int(point), wl_rng, slot_seconds=EDGE_SLOT_S, edge_step_s=edge, cloud_step_s=cloud
        )
        model = simulate("edge-cloud", wl, exp.make_scheduler(scheduler), rng).metrics
        S = wl.system.servers
        # the processes train until the engine says the job's chunks are done
        specs = {
            j.id: TrainSpec(job=j.id, target=1e15, mode="async", seed=100 + j.id) for j in wl.jobs
        }
        with Testbed(
            S + 1,
            CAL_DIR / "runs" / f"{exp.id}-{scheduler}-{point}-{seed}",
            ext_mbit=[EXT_MBIT] * S + [EXT_MBIT / 2],
            int_mbit=INT_MBIT,
            delay_ms=[0.0] * S + [20.0],
        ) as tb:
            name, params = exp.resolve(scheduler)
            run = run_edge_cloud(wl, name, tb, specs, EDGE_SLOT_S, seed, scheduler_params=params)
    jobs = {j.id: j for j in wl.jobs}
    sim_comm = 0.0
    zeta: dict[int, int] = {}
    for plan in run.plans:  # the 2q/b share of each chunk-slot trained at ζ = 0, Eq. (1)
        zeta.update({j: d.zeta for j, d in plan.new.items()})
        for j, chunks in plan.run.items():
            if not zeta[j]:
                n = processing_capacity(jobs[j], 0)
                sim_comm += len(chunks) * n * comm_slots(jobs[j]) * EDGE_SLOT_S
    assert run.result is not None
    m = run.result.metrics
    return {
        "total_jct": m["total_jct"],
        "sim_total_jct": model["total_jct"],
        "jct_error": abs(model["total_jct"] - m["total_jct"]) / m["total_jct"]
        if m["total_jct"] > 0
        else math.nan,
        "completed_jobs": m["completed_jobs"],
        "preemptions": float(sum(run.preemptions.values()) + sum(run.resizes.values())),
        "sim_preemptions": model["preemptions"],
        "comm_seconds": float(sum(st.comm_s for st in run.status.values())),
        "sim_comm_seconds": float(sim_comm),
        "slots_run": float(run.slots_run),
        "wall_seconds": run.wall_s,
    }


def geo_cell(exp: Experiment, scheduler: str, point: Point, seed: int, quick: bool) -> dict:
    """One closed-loop run of ``scheduler`` on the geo testbed, costs measured (module
    docstring)."""
    from dmlsched.experiments.defs.mlbroker import _instance
    from dmlsched.model.geo import resource_cost
    from dmlsched.rng import make_rng, spawn
    from dmlsched.sim.engine import simulate
    from dmlsched.testbed.edge_geo import run_geo
    from dmlsched.testbed.runtime import Testbed, TrainSpec

    jobs_n, slots_n = (4, 6) if quick else (6, 10)
    wl = _instance(seed, 3, slots_n, jobs_n, data_gb=60.0, models=True, duration=(3, 8))
    model = simulate("geo", wl, exp.make_scheduler(scheduler), spawn(make_rng(seed), 2)[1]).metrics
    R = wl.sites.dcs
    jobs = {j.id: j for j in wl.jobs}
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
            name, params = exp.resolve(scheduler)
            run = run_geo(
                wl,
                name,
                tb,
                specs,
                GEO_SLOT_S,
                seed,
                bytes_per_gb=BYTES_PER_GB,
                scheduler_params=params,
            )
    ps_site = {
        (plan.slot, j): int(np.argmax(plan.s[k]))
        for plan in run.plans
        for k, j in enumerate(plan.ids)
    }
    sites = wl.sites
    c1 = sum(b / BYTES_PER_GB * sites.d[mv.src, mv.dst] for _, mv, b in run.moved)
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
    assert run.result is not None
    m = run.result.metrics
    real = {"cost_transfer": c1, "cost_resource": c2, "cost_deploy": c3, "cost_communication": c4}
    real["total_cost"] = sum(real.values())
    out = {k: float(v) for k, v in real.items()}
    for k in real:
        out[f"sim_{k}"] = float(m[k])
    out["total_cost_error"] = abs(out["sim_total_cost"] - out["total_cost"]) / out["total_cost"]
    out["model_total_cost"] = float(model["total_cost"])
    out["unprocessed_gb"] = float(sum(run.unprocessed.values()))
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
                "slots_run",
                "wall_seconds",
            ),
            build=lambda point, seed, quick: None,
            cell=edge_cell,
            claims=(Report(metric, "a-online", f"A_online's measured {what}"),),
            default_seeds=1,
            plot="bar",
            reproduces=f"A_online testbed {fig.replace('fig', 'Fig. ')} (closed loop)",
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
            "model_total_cost",
            "unprocessed_gb",
            "moved_bytes",
            "wall_seconds",
        ),
        build=lambda point, seed, quick: None,
        cell=geo_cell,
        claims=(Report("total_cost", "mlbroker", "mlBroker's measured total cost"),),
        default_seeds=1,
        plot="bar",
        reproduces="mlBroker Table 4 (closed loop, measured running time and bytes)",
        opt_in=True,
    )
)
