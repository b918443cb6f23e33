"""Reference loops: a run's scheduling bookkeeping compiled, and nothing else.

"Fast" is measured against the machine, not against an older commit: each
loop here does, in one numba function over arrays, the bookkeeping one
engine run does for one scheduler — which jobs wait and run, where their
tasks go, what each machine has left, progress slot by slot, completions
and JCTs — and nothing else: no checks of a decision, no views or private
copies, no events or metrics beyond the JCTs.  The loop's JCTs equal the
engine's for the same run (``tests/bench/test_reference.py``), so it is
the same run, done by hand.  ``dmlsched bench`` reports the engine's time
as a multiple of the loop's.

The loops restate the engine's logic on purpose and share none of its code
but their inputs (the task order, the speed models' rates, the gang sizes and
FIFO's draws, the tolerance): :func:`_place`, for one, repeats the first-fit
scan of :mod:`dmlsched.schedulers._shared.placement_kernels` line for line.
A loop that called the engine's kernels would carry their bugs, and the equal
JCTs of the test would then prove nothing; written twice, a bug in either
copy makes the two runs differ.  Do not merge them.

:func:`fifo_loop` — ``fifo`` on a ``cluster`` workload (as
:mod:`dmlsched.schedulers.cluster.fifo` and :mod:`dmlsched.sim.cluster`):

* jobs queue in arrival order; the head waits until it fits (head-of-line
  blocking) and is rejected only when it does not fit with nothing running;
* a job's gang (W workers, S = ⌈W/γ⌉ PSs) is given (:func:`fifo_inputs`: the
  request, else FIFO's uniform [1, 30] draw, capped by F — the same draws);
* tasks in ``task_order`` go round-robin from a pointer shared by all jobs, each
  to the first machine (cyclically) with room for it; a placement is kept until
  the job completes and released at the next decision;
* the rate of a job is Eq. (1) at its gang (:func:`~dmlsched.model.speed.pdors.
  job_rate`, internal iff all tasks share one machine — both values computed
  beforehand, outside the loop);
* time is event-driven: decisions at arrival slots and in the slot after a
  completion; work is added slot by slot (the engine's floats), a job completes
  in the slot its work reaches E·K (within the engine's 10⁻⁹), and its JCT counts
  from its arrival slot to the moment in that slot its work ran out.

:func:`srtf_loop` — ``srtf`` (its default, ``cloud_overflow``) on an
``edge-cloud`` workload (as :mod:`dmlsched.schedulers.edge_cloud.srtf`, its
``_joblevel`` and :mod:`dmlsched.sim.edge_cloud`): every slot, active edge jobs
(dispatch order) and pending jobs (arrival order) by remaining slots, then
arrival, then id; a pending job takes the D_j free qualified workers with
storage room ordered by (hosting a chunk, Δ_js, id), or the cloud (ζ = 1) when
there are not enough; an edge job trains all its unfinished chunks only when
its data is there and none of its workers is claimed by a job before it; cloud
jobs train from their data's arrival; chunks lose n_j mini-batches a slot (ζ's
rate); the engine's storage account per server.  A_ps's PS choice is left out:
a job's rate depends on ζ_j only, never on which PS serves it.  Its dispatch and
completion slots equal the engine's, job for job.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from dmlsched.bench import benchmark
from dmlsched.model.cluster import ClusterWorkload
from dmlsched.model.edge_cloud import EdgeCloudWorkload
from dmlsched.model.speed.aonline import chunk_slots, processing_capacity
from dmlsched.model.speed.pdors import job_rate
from dmlsched.schedulers._shared.gang import gang_sizes
from dmlsched.schedulers._shared.placement import EPS
from dmlsched.schedulers._shared.placement_kernels import _task_order
from dmlsched.workloads.traces import default_trace_dir

__all__ = [
    "FifoInputs",
    "SrtfInputs",
    "fifo_inputs",
    "fifo_loop",
    "run_fifo",
    "run_srtf",
    "srtf_inputs",
    "srtf_loop",
]

_DONE_TOL = 1e-9  # as the engine (sim.cluster)


class FifoInputs(NamedTuple):
    """Per job, in (arrival, id) order: the loop's arrays."""

    ids: np.ndarray
    arrival: np.ndarray
    wd: np.ndarray  # N × R worker demand
    pd: np.ndarray  # N × R PS demand
    workers: np.ndarray
    ps: np.ndarray
    total: np.ndarray  # E·K
    rate_int: np.ndarray  # Eq. (1) with every task on one machine
    rate_ext: np.ndarray  # … spread over machines
    capacity: np.ndarray  # H × R
    horizon: int


def fifo_inputs(wl: ClusterWorkload, rng: np.random.Generator) -> FifoInputs:
    """The loop's inputs for ``wl`` (sync jobs), with FIFO's gang draws from ``rng`` —
    the generator the engine would hand the scheduler (the same numbers)."""
    jobs = sorted(wl.jobs, key=lambda j: (j.arrival, j.id))
    if any(j.requested_workers or j.mode != "sync" for j in jobs):
        raise ValueError("the FIFO loop places sync jobs without requested gangs (round-robin)")
    sizes = gang_sizes(jobs, rng)
    w = np.array([s[0] for s in sizes], dtype=np.int64)
    s = np.array([s[1] for s in sizes], dtype=np.int64)
    one = [job_rate(j, [0], [a], [b]) for j, (a, b) in zip(jobs, sizes, strict=True)]
    two = [job_rate(j, [0, 1], [a, 0], [0, b]) for j, (a, b) in zip(jobs, sizes, strict=True)]
    return FifoInputs(
        ids=np.array([j.id for j in jobs], dtype=np.int64),
        arrival=np.array([j.arrival for j in jobs], dtype=np.int64),
        wd=np.array([j.worker_demand for j in jobs], dtype=float),
        pd=np.array([j.ps_demand for j in jobs], dtype=float),
        workers=w,
        ps=s,
        total=np.array([j.total_work for j in jobs], dtype=float),
        rate_int=np.array(one),
        rate_ext=np.array(two),
        capacity=np.array(wl.cluster.capacity, dtype=float),
        horizon=int(wl.horizon),
    )


@njit(cache=True)
def _place(free, wd, pd, workers, ps, h, eps, pool_m, pool_w, pool_s, at):
    """Round-robin placement of one gang from pointer ``h`` (``free`` unchanged):
    (machines used, new pointer), the machines and counts written to the pools at
    ``at`` in first-use order; 0 machines when a task fits nowhere."""
    H, R = free.shape
    order = _task_order(workers, ps)
    n = order.shape[0]
    left = np.empty((n, R))
    used = 0
    for t in range(n):
        d = pd if order[t] else wd
        found = -1
        slot = -1
        for k in range(H):
            m = (h + k) % H
            u = -1
            for i in range(used):
                if pool_m[at + i] == m:
                    u = i
                    break
            ok = True
            for r in range(R):
                room = left[u, r] if u >= 0 else free[m, r]
                if not room >= d[r] - eps:
                    ok = False
                    break
            if ok:
                found = m
                slot = u
                break
        if found < 0:
            return 0, h
        if slot < 0:
            slot = used
            pool_m[at + slot] = found
            pool_w[at + slot] = 0
            pool_s[at + slot] = 0
            for r in range(R):
                left[slot, r] = free[found, r]
            used += 1
        for r in range(R):
            left[slot, r] -= d[r]
        if order[t]:
            pool_s[at + slot] += 1
        else:
            pool_w[at + slot] += 1
        h = (found + 1) % H
    return used, h


@njit(cache=True)
def _take(free, wd, pd, pool_m, pool_w, pool_s, a, n, sign):
    for i in range(a, a + n):
        m = pool_m[i]
        for r in range(free.shape[1]):
            free[m, r] -= sign * (pool_w[i] * wd[r] + pool_s[i] * pd[r])


@njit(cache=True)
def fifo_loop(arrival, wd, pd, workers, ps, total, rate_int, rate_ext, capacity, horizon, eps):
    """One FIFO run (module docstring): per job (input order) its JCT in slots (NaN if
    unfinished) and state (0 never placed, 1 running at the end, 2 done, 3 rejected)."""
    N = arrival.shape[0]
    free = capacity.copy()
    thr = total * (1 - 1e-9)
    done = np.zeros(N)
    rate = np.zeros(N)
    jct = np.full(N, np.nan)
    state = np.zeros(N, dtype=np.int8)
    size = workers + ps
    start = np.zeros(N, dtype=np.int64)  # its entries in the pools
    used = np.zeros(N, dtype=np.int64)
    cap = int(size.sum())
    pool_m = np.empty(cap, dtype=np.int64)
    pool_w = np.empty(cap, dtype=np.int64)
    pool_s = np.empty(cap, dtype=np.int64)
    run = np.empty(N, dtype=np.int64)
    n_run = 0
    ended = np.empty(N, dtype=np.int64)  # completed, released at the next decision
    n_ended = 0
    head = 0  # first job still queued (input order is arrival order)
    arrived = 0
    last_arrival = arrival[N - 1] if N else -1
    h = 0
    at = 0
    t = -1
    while t + 1 < horizon:
        t += 1
        if t > last_arrival and head == arrived and n_run == 0:
            break
        while arrived < N and arrival[arrived] == t:
            arrived += 1
        for i in range(n_ended):
            j = ended[i]
            _take(free, wd[j], pd[j], pool_m, pool_w, pool_s, start[j], used[j], -1.0)
        n_ended = 0
        while head < arrived:
            j = head
            n, h2 = _place(
                free, wd[j], pd[j], workers[j], ps[j], h, eps, pool_m, pool_w, pool_s, at
            )
            if n == 0:
                if n_run > 0:
                    break
                state[j] = 3
                head += 1
                continue
            start[j] = at
            used[j] = n
            at += n
            h = h2
            _take(free, wd[j], pd[j], pool_m, pool_w, pool_s, start[j], n, 1.0)
            rate[j] = rate_int[j] if n == 1 else rate_ext[j]
            state[j] = 1
            run[n_run] = j
            n_run += 1
            head += 1
        end = horizon
        if arrived < N and arrival[arrived] < end:
            end = arrival[arrived]
        slots = max(end - t, 1)
        k = 0
        hit = False
        while k < slots and not hit:
            k += 1
            for i in range(n_run):
                j = run[i]
                before = done[j]
                done[j] = before + rate[j]
                if done[j] >= thr[j]:
                    hit = True
                    left = max(0.0, total[j] - before)
                    jct[j] = (t + k - 1 - arrival[j]) + min(1.0, left / rate[j])
        t += k - 1
        if hit:
            kept = 0
            for i in range(n_run):
                j = run[i]
                if done[j] >= thr[j]:
                    state[j] = 2
                    ended[n_ended] = j
                    n_ended += 1
                else:
                    run[kept] = j
                    kept += 1
            n_run = kept
    return jct, state


def run_fifo(inputs: FifoInputs) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fifo_loop` on ``inputs`` (per job in input order: JCT, state)."""
    return fifo_loop(
        inputs.arrival, inputs.wd, inputs.pd, inputs.workers, inputs.ps, inputs.total,
        inputs.rate_int, inputs.rate_ext, inputs.capacity, inputs.horizon, EPS,
    )  # fmt: skip


# The loop and the engine on the same run in one fresh process: the workload is built
# once (its time reported apart), each side runs once untimed (numba loads and compiles
# or reads its cache), then they alternate; CPU seconds, medians.
_CHILD = """
import json, statistics, sys, time
from dmlsched.bench.reference import fifo_inputs, run_fifo
from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.traces import load_trace, trace_cluster
jobs, machines, slots, pairs = map(int, sys.argv[1:5])
c0 = time.process_time()
wl = trace_cluster(load_trace("philly"), jobs, machines, slots, make_rng(0))
build = time.process_time() - c0
def engine():
    _, rng = spawn(make_rng(0), 2)
    c = time.process_time()
    simulate("cluster", wl, make_scheduler("cluster", "fifo"), rng, record_events=False)
    return time.process_time() - c
_, rng = spawn(make_rng(0), 2)
inputs = fifo_inputs(wl, rng)
def loop():
    c = time.process_time()
    run_fifo(inputs)
    return time.process_time() - c
first_loop, first_engine = loop(), engine()
loops, engines = [], []
for _ in range(pairs):
    loops.append(loop())
    engines.append(engine())
print(json.dumps({"build": build, "loop": statistics.median(loops),
                  "engine": statistics.median(engines), "engine_first": first_engine}))
"""


def _against_loop(jobs: int, machines: int, slots: int, pairs: int) -> dict[str, float]:
    import json
    import subprocess
    import sys

    cmd = [sys.executable, "-c", _CHILD, str(jobs), str(machines), str(slots), str(pairs)]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


_EDGE_CHILD = """
import json, statistics, sys, time
from dmlsched.bench.reference import run_srtf, srtf_inputs
from dmlsched.rng import make_rng
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.edge_cloud import edge_cloud_workload
jobs, servers, slots, pairs = map(int, sys.argv[1:5])
wl = edge_cloud_workload(jobs, servers, slots, make_rng(0))
inputs = srtf_inputs(wl)
def engine():
    c = time.process_time()
    simulate("edge-cloud", wl, make_scheduler("edge-cloud", "srtf"), make_rng(1),
             record_events=False)
    return time.process_time() - c
def loop():
    c = time.process_time()
    run_srtf(inputs)
    return time.process_time() - c
loop(), engine()
loops, engines = [], []
for _ in range(pairs):
    loops.append(loop())
    engines.append(engine())
print(json.dumps({"loop": statistics.median(loops), "engine": statistics.median(engines)}))
"""


@benchmark("reference")
def engine_against_loops() -> dict[str, float]:
    """``fifo_10k_{engine,loop}_s`` and ``fifo_10k_loop_ratio``: FIFO on 10,000 Philly
    jobs × 1,000 machines × 1,000 slots, the engine's CPU ÷ the loop's (3 pairs);
    ``srtf_edge_{engine,loop}_s``, ``srtf_edge_loop_ratio``: edge-cloud SRTF on the
    A_online paper's instance (300 jobs, 100 servers, 300 slots)."""
    import json
    import subprocess
    import sys

    out: dict[str, float] = {}
    if default_trace_dir("philly") is not None:
        got = _against_loop(10_000, 1_000, 1_000, 3)
        out["fifo_10k_engine_s"] = got["engine"]
        out["fifo_10k_loop_s"] = got["loop"]
        out["fifo_10k_loop_ratio"] = got["engine"] / got["loop"]
    cmd = [sys.executable, "-c", _EDGE_CHILD, "300", "100", "300", "3"]
    got = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    out["srtf_edge_engine_s"] = got["engine"]
    out["srtf_edge_loop_s"] = got["loop"]
    out["srtf_edge_loop_ratio"] = got["engine"] / got["loop"]
    return out


@benchmark("reference-100k", default=False)
def fifo_100k_against_loop() -> dict[str, float]:
    """The same at 100,000 jobs × 10,000 machines (issue's acceptance size), with the
    workload's build time (``philly_100k_build_s``, CPU) and the engine's first run
    (``fifo_100k_engine_first_s``: numba's loading included)."""
    if default_trace_dir("philly") is None:
        return {}
    got = _against_loop(100_000, 10_000, 1_000, 3)
    return {
        "philly_100k_build_s": got["build"],
        "fifo_100k_engine_s": got["engine"],
        "fifo_100k_engine_first_s": got["engine_first"],
        "fifo_100k_loop_s": got["loop"],
        "fifo_100k_loop_ratio": got["engine"] / got["loop"],
    }


# ---------------------------------------------------------------- edge-cloud: SRTF


class SrtfInputs(NamedTuple):
    """Per job, in (arrival, id) order, and the system: the edge-cloud loop's arrays."""

    ids: np.ndarray
    arrival: np.ndarray
    chunks: np.ndarray  # D_j
    wtype: np.ndarray
    delay: np.ndarray  # N × (S + 1): Δ_js, the cloud last
    work: np.ndarray  # E_j B_j per chunk
    chunk_gb: np.ndarray
    rate_edge: np.ndarray  # n_j with ζ = 0 (speed augmentation included)
    rate_cloud: np.ndarray  # … ζ = 1
    p_edge: np.ndarray  # ⌈E_j B_j / n_j⌉ at ζ = 0 (a pending job's remaining slots)
    wserver: np.ndarray  # per edge worker (flat id): its server
    type_ptr: np.ndarray  # workers of type k: type_workers[type_ptr[k]:type_ptr[k + 1]]
    type_workers: np.ndarray
    storage: np.ndarray  # U_s (inf: unlimited)
    horizon: int


def srtf_inputs(wl: EdgeCloudWorkload) -> SrtfInputs:
    """The edge-cloud loop's inputs for ``wl``."""
    system = wl.system
    jobs = sorted(wl.jobs, key=lambda j: (j.arrival, j.id))
    sp = system.speedup
    kinds = np.asarray(system.worker_kind, dtype=np.int64)
    order = np.argsort(kinds, kind="stable")  # by type, then flat id
    ptr = np.searchsorted(kinds[order], np.arange(system.n_types + 1))
    return SrtfInputs(
        ids=np.array([j.id for j in jobs], dtype=np.int64),
        arrival=np.array([j.arrival for j in jobs], dtype=np.int64),
        chunks=np.array([j.chunks for j in jobs], dtype=np.int64),
        wtype=np.array([j.worker_type for j in jobs], dtype=np.int64),
        delay=np.array([j.delay for j in jobs], dtype=np.int64),
        work=np.array([j.work_per_chunk for j in jobs], dtype=float),
        chunk_gb=np.array([j.chunk_gb for j in jobs], dtype=float),
        rate_edge=np.array([processing_capacity(j, 0, sp) for j in jobs]),
        rate_cloud=np.array([processing_capacity(j, 1, sp) for j in jobs]),
        p_edge=np.array([chunk_slots(j, 0, sp) for j in jobs], dtype=np.int64),
        wserver=np.asarray(system.worker_server, dtype=np.int64),
        type_ptr=ptr.astype(np.int64),
        type_workers=order.astype(np.int64),
        storage=np.array([system.storage_of(s) for s in range(system.servers)]),
        horizon=int(wl.horizon),
    )


@njit(cache=True)
def _stable_by(idx, key):
    """``idx`` stably reordered by ``key[idx]`` ascending."""
    return idx[np.argsort(key[idx], kind="mergesort")]


@njit(cache=True)
def srtf_loop(
    arrival, chunks, wtype, delay, work, chunk_gb, rate_edge, rate_cloud, p_edge,
    wserver, type_ptr, type_workers, storage, horizon,
):  # fmt: skip
    """One ``srtf`` run (its default, ``cloud_overflow``) in the edge-cloud engine's
    terms (``bench.reference`` docstring): per job its completion slot and dispatch slot
    (-1 if none) and final state (2 in the cloud, 3 done)."""
    N = arrival.shape[0]
    S = storage.shape[0]
    W = wserver.shape[0]
    start = np.zeros(N + 1, dtype=np.int64)
    for j in range(N):
        start[j + 1] = start[j] + chunks[j]
    rem = np.empty(start[N])
    for j in range(N):
        rem[start[j] : start[j + 1]] = work[j]
    gid = np.full(start[N], -1, dtype=np.int64)
    state = np.zeros(N, dtype=np.int8)  # 0 not arrived/pending, 1 edge, 2 cloud, 3 done
    ready = np.zeros(N, dtype=np.int64)
    done_at = np.full(N, -1, dtype=np.int64)
    dispatched_at = np.full(N, -1, dtype=np.int64)
    seq = np.zeros(N, dtype=np.int64)  # dispatch order (the engine's ``active`` order)
    hosted = np.zeros(W, dtype=np.int64)
    used = np.zeros(S)  # the engine's storage_used
    released = np.zeros(N, dtype=np.bool_)
    arrived = 0
    n_done = 0
    n_seq = 0
    t = 0
    while t < horizon and n_done < N:
        while arrived < N and arrival[arrived] == t:
            arrived += 1
        # the scheduler forgets jobs that finished (its _release)
        for j in range(arrived):
            if state[j] == 3 and not released[j]:
                released[j] = True
                for i in range(start[j], start[j + 1]):
                    if gid[i] >= 0:
                        hosted[gid[i]] -= 1
        # priority order: active edge jobs (dispatch order), then pending (arrival order)
        cand = np.empty(arrived, dtype=np.int64)
        key = np.zeros(N)
        n = 0
        order_seq = np.argsort(seq[:arrived], kind="mergesort")
        for k in range(arrived):
            j = order_seq[k]
            if state[j] == 1:
                top = 0.0
                for i in range(start[j], start[j + 1]):
                    if rem[i] > top:
                        top = rem[i]
                key[j] = top / rate_edge[j]
                cand[n] = j
                n += 1
        for j in range(arrived):
            if state[j] == 0:
                key[j] = float(p_edge[j])  # ⌈D/D⌉ · chunk slots
                cand[n] = j
                n += 1
        cand = cand[:n]
        ids = np.arange(N).astype(np.float64)
        cand = _stable_by(cand, ids)
        cand = _stable_by(cand, arrival.astype(np.float64))
        cand = _stable_by(cand, key)
        claimed = np.zeros(W, dtype=np.bool_)
        room_used = used.copy()  # the scheduler's copy of the storage in use
        run = np.zeros(start[N], dtype=np.bool_)
        run_order = np.empty(arrived, dtype=np.int64)  # the decision's ``run`` order
        n_run = 0
        for c in range(n):
            j = cand[c]
            if state[j] == 1:
                if ready[j] > t:
                    continue
                free = True
                for i in range(start[j], start[j + 1]):
                    if rem[i] > 0 and claimed[gid[i]]:
                        free = False
                        break
                if free:
                    for i in range(start[j], start[j + 1]):
                        if rem[i] > 0:
                            claimed[gid[i]] = True
                            run[i] = True
                    run_order[n_run] = j
                    n_run += 1
                continue
            D = chunks[j]
            a, b = type_ptr[wtype[j]], type_ptr[wtype[j] + 1]
            avail = np.empty(b - a, dtype=np.int64)
            na = 0
            for k in range(a, b):
                g = type_workers[k]
                s = wserver[g]
                if not claimed[g] and storage[s] - room_used[s] >= chunk_gb[j] - 1e-12:
                    avail[na] = g
                    na += 1
            chosen = np.empty(0, dtype=np.int64)
            if na >= D:
                av = avail[:na]  # ascending ids; then stably by delay, then by hosting
                by_delay = np.zeros(W)
                by_hosting = np.zeros(W)
                for k in range(na):
                    by_delay[av[k]] = float(delay[j, wserver[av[k]]])
                    by_hosting[av[k]] = 1.0 if hosted[av[k]] > 0 else 0.0
                av = _stable_by(av, by_delay)
                av = _stable_by(av, by_hosting)
                chosen = av[:D]
                if chunk_gb[j] > 0:  # (7b) for all its chunks on each server
                    need = np.zeros(S)
                    for k in range(D):
                        need[wserver[chosen[k]]] += chunk_gb[j]
                    for s in range(S):
                        if need[s] > 0 and not storage[s] - room_used[s] >= need[s] - 1e-12:
                            chosen = np.empty(0, dtype=np.int64)
                            break
            seq[j] = n_seq
            n_seq += 1
            dispatched_at[j] = t
            if chosen.shape[0] == 0:  # the whole job to the cloud, ζ = 1
                state[j] = 2
                ready[j] = t + delay[j, S]
                continue
            state[j] = 1
            far = 0
            for k in range(D):
                g = chosen[k]
                gid[start[j] + k] = g
                hosted[g] += 1
                s = wserver[g]
                room_used[s] += chunk_gb[j]
                if delay[j, s] > far:
                    far = delay[j, s]
            used += _held(j, start, gid, wserver, chunk_gb, S)  # the engine's (7b) account
            ready[j] = t + far
            if ready[j] <= t:
                for k in range(D):
                    claimed[chosen[k]] = True
                    run[start[j] + k] = True
                run_order[n_run] = j
                n_run += 1
        by_seq = np.argsort(seq[:arrived], kind="mergesort")
        for k in range(arrived):  # cloud jobs, in dispatch order, once their data is there
            j = by_seq[k]
            if state[j] == 2 and ready[j] <= t:
                any_left = False
                for i in range(start[j], start[j + 1]):
                    if rem[i] > 0:
                        run[i] = True
                        any_left = True
                if any_left:
                    run_order[n_run] = j
                    n_run += 1
        # the engine: credit, completion and storage, in the decision's order
        for r in range(n_run):
            j = run_order[r]
            rate = rate_edge[j] if state[j] == 1 else rate_cloud[j]
            ran = False
            for i in range(start[j], start[j + 1]):
                if run[i]:
                    ran = True
                    rem[i] -= rate
                    if rem[i] <= 1e-9 * work[j]:
                        rem[i] = 0.0
            if ran:
                left = False
                for i in range(start[j], start[j + 1]):
                    if rem[i] > 0:
                        left = True
                        break
                if not left:
                    if state[j] == 1:
                        used -= _held(j, start, gid, wserver, chunk_gb, S)
                    state[j] = 3
                    done_at[j] = t
                    n_done += 1
        t += 1
    return done_at, dispatched_at, state


@njit(cache=True)
def _held(j, start, gid, wserver, chunk_gb, S):
    """Storage job ``j``'s edge chunks hold per server, summed chunk by chunk."""
    add = np.zeros(S)
    for i in range(start[j], start[j + 1]):
        if gid[i] >= 0:
            add[wserver[gid[i]]] += chunk_gb[j]
    return add


def run_srtf(inputs: SrtfInputs) -> np.ndarray:
    """:func:`srtf_loop` on ``inputs``: per job (input order) its completion slot or -1."""
    return srtf_loop(
        inputs.arrival, inputs.chunks, inputs.wtype, inputs.delay, inputs.work,
        inputs.chunk_gb, inputs.rate_edge, inputs.rate_cloud, inputs.p_edge,
        inputs.wserver, inputs.type_ptr, inputs.type_workers, inputs.storage, inputs.horizon,
    )[0]  # fmt: skip
