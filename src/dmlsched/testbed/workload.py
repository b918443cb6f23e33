"""Testbed workloads: ``cluster`` jobs sized for real processes, with what to train.

A testbed job is a :class:`~dmlsched.model.cluster.ClusterJob` (what the
scheduler sees) plus a :class:`~dmlsched.testbed.runtime.TrainSpec` (what
the processes train): the MLP of :mod:`.training` on digits, K = 1,437
training samples, global batch F = 64, E epochs drawn from ``epochs``.

**Time dilation.** The schedulers' unit conventions (τ in slots per sample,
g in MB, b in Gbps, one slot = 3600 s in ``comm_slots``) are kept; a testbed
slot lasts ``slot_seconds`` real seconds, so the job's τ is (seconds per
sample) ÷ ``slot_seconds`` and its bandwidths are the real Gbps ×
``slot_seconds``/3600 — Eq. (1) in slot units is then the same number for
the scheduler as for the testbed.

**What the scheduler is told.** Without a profile, nominal values: τ =
2.5e-5 s/sample, g = the model's size, b^(i) = the loopback cap (10 Gbps
when uncapped), b^(e) = the external cap.  With a calibration profile, its
Eq. (1) constants that bound the calibration probes from above
(``scheduler_eq1``, see :mod:`.calibrate`) — what a careful operator who
has calibrated would enter (τ at least 0.1 µs: a fit may put all of a
step into g/b).

**What the engine knows.** Those told constants are deliberately slow — an
upper bound on every probe's step time — so they cannot also be what the
engine bounds measured progress by: a job on a placement faster than the
slowest probe (one worker, one remote PS) really does up to ~8× what they
say, over the engine's slack (:data:`dmlsched.sim.drive.MEASURED_SLACK`).
With a profile the workload's ``speed`` (the engine's own model, never
shown to schedulers) is therefore the profile's fitted default form at the
run's slot length and caps; without one it stays Eq. (1) on the nominal
constants, which are the caps themselves.

Machines: capacity (GPU 1, CPU 4, memory 8 GB, storage 8 GB); a worker or a
PS takes 0 GPU, 1 CPU, 1 GB, 1 GB — so at most four processes per machine,
and a job that wants Fact 1's internal rate must fit on one machine.
Gangs (``gangs`` = (lo, hi)): each job asks for W ∈ [lo, hi] workers
(``ClusterJob.requested_workers``: FIFO and Tiresias give a job its request;
the others choose their own counts) — without it, those two draw W ∈ [1, 30]
and reject what three 4-process machines cannot hold.
Utilities: PD-ORS's sigmoid θ1/(1 + e^{θ2(t − θ3)}) with θ1 ∈ [1, 100],
θ2 ∈ [0.5, 2], θ3 ∈ [2, 6] slots.  Arrivals: uniform over the first
``arrive_within`` slots.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import Cluster, ClusterJob, ClusterWorkload
from dmlsched.model.utility import Sigmoid
from dmlsched.testbed.runtime import TrainSpec
from dmlsched.testbed.training import n_params
from dmlsched.workloads.speed_profile import profile_speed

__all__ = ["TestbedWorkload", "testbed_workload"]

K_TRAIN = 1437
NOMINAL_TAU_S = 2.5e-5
MIN_TAU_S = 1e-7  # ClusterJob needs τ > 0; a fit may put all of a step into g/b
MACHINE = (1.0, 4.0, 8.0, 8.0)
PROCESS = (0.0, 1.0, 1.0, 1.0)


@dataclass(frozen=True)
class TestbedWorkload:
    __test__ = False  # not a pytest test class
    workload: ClusterWorkload
    specs: dict[int, TrainSpec]
    slot_seconds: float
    ext_mbit: float
    int_mbit: float | None


def _dilate_gbps(gbps: float, slot_seconds: float) -> float:
    return gbps * slot_seconds / 3600.0


def testbed_workload(
    jobs: int,
    machines: int,
    slots: int,
    rng: np.random.Generator,
    *,
    slot_seconds: float,
    ext_mbit: float = 10.0,
    int_mbit: float | None = 50.0,
    epochs: tuple[int, int] = (10, 30),
    batch: int = 64,
    hidden: int = 256,
    mode: str = "sync",
    gamma: tuple[float, float] = (1.0, 2.0),
    arrive_within: int = 3,
    profile: dict | None = None,
    gangs: tuple[int, int] | None = None,
) -> TestbedWorkload:
    """A seeded testbed instance (module docstring)."""
    if jobs < 1:
        raise InvalidInput("jobs", jobs, ">= 1")
    if not slot_seconds > 0:
        raise InvalidInput("slot_seconds", slot_seconds, "> 0")
    if not ext_mbit > 0:
        raise InvalidInput("ext_mbit", ext_mbit, "> 0")
    g_bytes = 4.0 * n_params(hidden)
    g_mb = g_bytes / 1e6
    if profile is not None:
        eq1 = profile.get("scheduler_eq1") or profile["forms"]["eq1"]
        tau_s = max(float(eq1["batch_tau_s"]), MIN_TAU_S)
        b_int = g_bytes * 8 / float(eq1["g_over_b_int"]) / 1e9 if eq1["g_over_b_int"] else 10.0
        b_ext = g_bytes * 8 / float(eq1["g_over_b_ext"]) / 1e9 if eq1["g_over_b_ext"] else 1.0
        # the profile's b^(e) was fitted at its own cap: scale to this run's
        b_ext *= ext_mbit / float(profile["ext_mbit"][0])
    else:
        tau_s = NOMINAL_TAU_S
        b_int = (int_mbit or 10_000.0) / 1000.0
        b_ext = ext_mbit / 1000.0
    out_jobs = []
    specs = {}
    for i in range(jobs):
        e = int(rng.integers(epochs[0], epochs[1] + 1))
        arrival = int(rng.integers(0, max(1, min(arrive_within, slots))))
        theta1 = float(rng.uniform(1, 100))
        theta2 = float(rng.uniform(0.5, 2.0))
        theta3 = float(rng.uniform(2, 6))
        g = float(rng.uniform(*gamma))
        job = ClusterJob(
            id=i,
            arrival=arrival,
            epochs=e,
            samples=K_TRAIN,
            batch=batch,
            grad_mb=g_mb,
            tau=tau_s / slot_seconds,
            gamma=g,
            worker_demand=PROCESS,
            ps_demand=PROCESS,
            b_int=_dilate_gbps(b_int, slot_seconds),
            b_ext=_dilate_gbps(b_ext, slot_seconds),
            utility=Sigmoid(theta1, theta2, theta3),
            mode=mode,  # type: ignore[arg-type]  # ClusterJob checks mode: sync | async
        )
        out_jobs.append(job)
        target = job.total_work
        specs[i] = TrainSpec(
            job=i, target=target, mode=mode, batch=batch, hidden=hidden, lr=0.1, seed=1000 + i
        )
    if gangs is not None:  # drawn after every other field: those stay what they were
        asked = rng.integers(gangs[0], gangs[1] + 1, size=jobs).tolist()
        out_jobs = [
            dataclasses.replace(j, requested_workers=min(int(w), j.max_workers))
            for j, w in zip(out_jobs, asked, strict=True)
        ]
    out_jobs.sort(key=lambda j: (j.arrival, j.id))
    wl = ClusterWorkload(
        tuple(out_jobs),
        Cluster.uniform(machines, MACHINE),
        slots,
        source="testbed",
        slot_seconds=slot_seconds,
        speed=None
        if profile is None
        else profile_speed(
            profile,
            slot_seconds=slot_seconds,
            ext_mbit=(ext_mbit,),
            int_mbit=(int_mbit or 0.0,),
        ),
        notes=(
            f"testbed: {jobs} MLP-{hidden} jobs on digits, F={batch}, E in {list(epochs)}, "
            f"{machines} machines, {slot_seconds:g}-s slots, ext {ext_mbit:g} Mbit/s, "
            f"int {int_mbit or 'uncapped'} Mbit/s",
        ),
    )
    if math.isnan(b_ext):
        raise InvalidInput("profile", "b_ext", "finite")
    return TestbedWorkload(wl, specs, slot_seconds, ext_mbit, int_mbit)


def testbed_edge_workload(
    jobs: int,
    rng: np.random.Generator,
    *,
    slot_seconds: float,
    edge_step_s: float,
    cloud_step_s: float,
    servers: int = 2,
    chunks: tuple[int, int] = (2, 3),
    minibatches: int = 8,
    epochs: tuple[int, int] = (6, 16),
    arrive_within: int = 3,
):
    """A small ``edge-cloud`` instance for the testbed (A_online Sec. V, scaled down).

    ``servers`` edge servers with two workers and one PS each (one type), the
    cloud unlimited; D ∈ ``chunks`` chunks of B = ``minibatches`` mini-batches
    of 64 samples, E ∈ ``epochs``; transfer delays Δ = 1 slot to the edge and 2
    to the cloud (the papers' [1, 4] and [10, 15], shrunk to a short run).
    Eq. (1)'s timing from measured steps: a mini-batch takes ``edge_step_s``
    with the PS elsewhere (ζ = 0) and ``cloud_step_s`` with everything in the
    cloud (ζ = 1), so m = cloud_step_s / slot_seconds, G = 0 and b is the
    bandwidth for which 2q/b adds the difference (time-dilated: × slot/3600).
    """
    from dmlsched.model.edge_cloud import EdgeCloud, EdgeCloudWorkload, EdgeJob

    system = EdgeCloud(
        tuple((0, 0) for _ in range(servers)), tuple((0,) for _ in range(servers)), 1
    )
    q_mb = 4.0 * n_params(256) / 1e6
    extra_s = max(edge_step_s - cloud_step_s, 1e-6)
    b_mbps = 2.0 * q_mb * 8.0 * slot_seconds / (3600.0 * extra_s)
    out = []
    for i in range(jobs):
        out.append(
            EdgeJob(
                id=i,
                arrival=int(rng.integers(0, arrive_within)),
                chunks=int(rng.integers(chunks[0], chunks[1] + 1)),
                minibatches=minibatches,
                epochs=int(rng.integers(epochs[0], epochs[1] + 1)),
                m=cloud_step_s / slot_seconds,
                G=0.0,
                q_mb=q_mb,
                b_mbps=b_mbps,
                worker_type=0,
                ps_type=0,
                delay=(*([1] * servers), 2),
                model="mlp-256",
            )
        )
    out.sort(key=lambda j: (j.arrival, j.id))
    return EdgeCloudWorkload(
        tuple(out),
        system,
        60,
        source="testbed",
        notes=(
            f"testbed edge-cloud: {jobs} jobs, {servers} edge servers + cloud, "
            f"{slot_seconds:g}-s slots",
        ),
    )
