"""A_online = A_greedy (Alg. 2–4) + A_ps (Alg. 5) (Wang et al., Sec. IV).

On arrival of job j (slot r_j), A_greedy dispatches its chunks one by one.
For chunk d and every qualified worker w on edge server s it computes
Eq. (5)::

    Q_jdsw = Δ_js/D_j + (1/D_j) Σ_{d'∈A(t0), γ_{j'd'} ≥ γ_jd} p̂_{j'd'}(t0) + (1/D_j) E_jB_j/n_jsw
             + (E_jB_j/n_jsw) Σ_{d'∈A(t0), γ_{j'd'} < γ_jd} 1/D_{j'}

with t0 = r_j + Δ_js, A(t0) the chunks pending on w at t0 in the current
plan and p̂ their remaining processing time (slots), and γ_jd =
n_jsw / (E_j D_j B_j) the HAPRF rate.  The cloud has no queue (Alg. 3 lines
2–8): Q = (Δ_{j s_c} + E_jB_j/n_j)/D_j, with ζ_j = 1 for the first chunk
and ζ_j = 0 once a chunk went to the edge (Alg. 2 lines 17–20).  The chunk
goes to argmin Q (line 11); if that is the cloud, all remaining chunks follow
(lines 12–16).  Otherwise only the chosen worker's Q is recomputed for the
next chunk (lines 21–22).

Dual variables (Sec. IV-C): α_jd = min_{s,w} Q_jdsw (the chosen Q);
β_sw(t) = Σ 1/D_j over chunks uncompleted on w at t, counted from r_j —
kept as one interval [r_j, planned completion) per chunk, extended by p
when a later chunk preempts it (the postponement of Alg. 4 lines 3–7), so
Σα = Σ_t β (Lemma 4) holds for the plan.  ``dual_bound(ε)`` =
ε/(1+ε)·Σα is the dual objective D_I of (11), a lower bound on OPT_I.

Scheduling (HAPRF): every slot each edge worker trains its highest-γ chunk
among those whose data has arrived (ties: earlier dispatch first), which
preempts lower-γ chunks; cloud chunks train every slot from arrival to
completion.  A_ps (Alg. 5) gives each training job a PS (:mod:`._ps`).

Storage (Sec. VI): a worker on s is a candidate only while s has room for
one more chunk of u_j GB (the "fine-tuned Alg. 2"); the cloud is unlimited.

``edge_only=True`` is A_online-E (Sec. V baselines): the cloud is never a
candidate.  Decision where the paper is silent: an A_online-E job with no
qualified edge worker with storage room waits (pending) and retries every
slot.  Processing times are whole slots, p = ⌈E_jB_j/n_jsw⌉ (y ∈ {0, 1}).

Ties of line 11's argmin Q (the paper names none): the edge before the cloud,
then the lowest server and worker index (the heap orders equal Q by server,
the cloud numbered after every edge server).

``a-online`` is the paper as printed; the gaps filled are the ones above
(whole slots, FIFO ties, ties of argmin Q to the edge, the ζ of the cloud's Q
after an edge placement as Sec. IV-C's text says, the storage check of
Sec. VI, A_online-E's waiting).
``a-online+`` (:class:`AOnlinePlus`) adds two named options, ``last_chunk``
and ``cloud_check``; ``ablation-aonline`` measures each.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.edge_cloud import EdgeCloud, EdgeCloudDecision, EdgeJob
from dmlsched.model.speed.aonline import chunk_slots, processing_capacity
from dmlsched.model.views import EdgeCloudView
from dmlsched.schedulers._shared.priority import haprf_key
from dmlsched.schedulers.edge_cloud._ps import assign_ps, ps_pools
from dmlsched.schedulers.protocols import register

__all__ = [
    "AOnline",
    "AOnlineEdge",
    "AOnlinePlus",
    "QResult",
    "Queued",
    "calculate_q",
    "q_of_pending",
    "timeline",
]

_TOL = 1e-9
#: A_greedy evaluates Eq. (5) lazily (see ``_bounds``: the same choices; ``False``
#: evaluates every worker first, the reference the tests compare with)
LAZY_Q = True
#: relative shrink of a busy worker's lower bound on Q (``_bounds``): the rounding of
#: Eq. (5)'s three additions and three products is below 1e-15
_BOUND_SLACK = 1e-9
#: slots subtracted from a first chunk's mini-batches left / n_j (``_head_bounds``): the
#: whole slots left are ⌈that − 1e-9⌉ ≥ it − 1e-9, up to the division's rounding
_LEFT_SLACK = 1e-6


@dataclass
class Queued:
    """A chunk in an edge worker's HAPRF queue."""

    key: tuple[float, int]  # haprf_key: ascending = higher priority
    job: int
    chunk: int
    ready: int  # r_j + Δ_js: first slot its data is on the worker
    rate: float  # n_jsw
    inv_d: float  # 1/D_j (the average weight μ_jd)
    work: float  # E_j B_j
    row: int = -1  # its row in ``AOnline.queued_`` while queued


@dataclass(frozen=True)
class QResult:
    q: float
    start: int  # t*
    postponed: tuple[Queued, ...]  # A_2
    wait: int  # Σ_{A_1} p̂


def remaining_slots(remaining_batches: float, rate: float) -> int:
    """Whole slots still needed at ``rate`` mini-batches per slot."""
    if remaining_batches <= 0:
        return 0
    return max(1, math.ceil(remaining_batches / rate - _TOL))


def timeline(
    queue: list[Queued], rem: dict[tuple[int, int], int], now: int, t0: int
) -> list[tuple[Queued, int]]:
    """HAPRF on one worker from slot ``now`` to ``t0``: pending chunks at t0 and p̂(t0).

    ``queue`` is sorted by key; ``rem`` gives each chunk's remaining slots at
    ``now``.  Returns chunks with ready ≤ t0 and work left at t0, in key order.
    """
    left = {(e.job, e.chunk): rem[(e.job, e.chunk)] for e in queue}
    tau = now
    while tau < t0:
        head = None
        for e in queue:
            if e.ready <= tau and left[(e.job, e.chunk)] > 0:
                head = e
                break
        if head is None:
            nxt = [e.ready for e in queue if e.ready > tau and left[(e.job, e.chunk)] > 0]
            if not nxt:
                break
            tau = min(min(nxt), t0)
            continue
        # run the head until it finishes, a higher-priority chunk arrives, or t0
        stop = t0
        for e in queue:
            if e.key >= head.key:
                break
            if e.ready > tau and left[(e.job, e.chunk)] > 0:
                stop = min(stop, e.ready)
        k = (head.job, head.chunk)
        run = min(left[k], stop - tau)
        left[k] -= run
        tau += run
    return [
        (e, left[(e.job, e.chunk)]) for e in queue if e.ready <= t0 and left[(e.job, e.chunk)] > 0
    ]


def calculate_q(
    queue: list[Queued],
    rem: dict[tuple[int, int], int],
    now: int,
    delay: int,
    new_key: tuple[float, int],
    p: int,
    inv_d: float,
) -> QResult:
    """Alg. 3 lines 9–12 / Eq. (5) for an edge worker; ``delay`` = Δ_js, ``p`` = ⌈E_jB_j/n_jsw⌉."""
    return q_of_pending(timeline(queue, rem, now, now + delay), now, delay, new_key, p, inv_d)


def q_of_pending(
    pend: list[tuple[Queued, int]],
    now: int,
    delay: int,
    new_key: tuple[float, int],
    p: int,
    inv_d: float,
) -> QResult:
    """:func:`calculate_q` given the worker's pending chunks at t0 (:func:`timeline`)."""
    t0 = now + delay
    wait = 0
    low_weight = 0.0
    postponed = []
    for e, left in pend:
        if e.key <= new_key:  # γ' ≥ γ (ties: already queued first) -> A_1
            wait += left
        else:  # A_2: delayed by p
            low_weight += e.inv_d
            postponed.append(e)
    q = inv_d * delay + inv_d * wait + inv_d * p + p * low_weight
    return QResult(q, max(t0 + wait, t0), tuple(postponed), wait)


@register
class AOnline:
    """``a-online``: Alg. 1 with A_greedy over edge and cloud, HAPRF, A_ps."""

    name: ClassVar[str] = "a-online"
    setting: ClassVar[str] = "edge-cloud"

    def __init__(
        self,
        edge_only: bool = False,
        last_chunk: bool = False,
        cloud_check: bool = False,
    ) -> None:
        self.edge_only = edge_only
        self.last_chunk = last_chunk
        self.cloud_check = cloud_check

    # ------------------------------------------------------------------ lifecycle
    def reset(self, system: EdgeCloud, horizon: int, rng: np.random.Generator) -> None:
        for opt in ("edge_only", "last_chunk", "cloud_check"):
            if not isinstance(getattr(self, opt), bool):
                raise InvalidInput(opt, getattr(self, opt), "true | false", self.name)
        self.system_ = system
        self.rng_ = rng
        self.pools_ = ps_pools(system)
        self.by_type_: dict[int, list[tuple[int, int]]] = {}
        for s, row in enumerate(system.worker_types):
            for w, k in enumerate(row):
                self.by_type_.setdefault(int(k), []).append((s, w))
        self.types_ = {k: _TypeWorkers.of(sw, system) for k, sw in self.by_type_.items()}
        self.busy_ = np.zeros(system.edge_workers, dtype=bool)  # gid in queues_
        self.heads_: list[tuple[int, Queued]] = []  # (gid, its first chunk) after the last slot
        self.head_ = _Heads.none(system.edge_workers)
        self.backlog_: _Backlog | None = None  # every queued chunk after the last slot
        self.queued_ = _QueuedRows()  # the same, kept as rows while chunks join and leave
        self.queues_: dict[int, list[Queued]] = {}  # edge worker gid -> HAPRF queue
        self.keys_: dict[int, list[tuple[float, int]]] = {}
        self.cloud_: dict[int, tuple[np.ndarray, int]] = {}  # job -> (chunks, ready slot)
        self.cloud_left_: dict[int, tuple[int, tuple[int, ...]]] = {}  # its unfinished ones
        self.rates_: dict[int, float] = {}
        self.fresh_: dict[int, float] = {}  # jobs dispatched this slot: E_j B_j
        self.ps_type_: dict[int, int] = {}
        self.zeta_: dict[int, int] = {}
        self.seq_ = 0
        self.alpha_: dict[tuple[int, int], float] = {}
        self.beta_: dict[tuple[int, int], list[float]] = {}  # (j,d) -> [start, end, weight]
        self.job_end_: dict[int, float] = {}  # planned completion (exclusive) per job
        self.undo_: list[tuple] | None = None  # cloud_check's trial placement log
        self.pending_: dict[int, dict[int, list[tuple[Queued, int]]]] = {}
        self.storage_ = np.array([system.storage_of(s) for s in range(system.servers)])
        # edge_only: (worker type, chunk GB, D_j) -> chunks the edge has room for, while
        # the storage in use is ``room_used_`` (jobs that do not fit retry every slot)
        self.room_chunks_: dict[tuple[int, float, int], int] = {}
        self.room_used_: list[float] = []

    # ------------------------------------------------------------------ duals
    def alpha_sum(self) -> float:
        return float(sum(self.alpha_.values()))

    def beta_sum(self) -> float:
        """Σ_s Σ_w Σ_t β_sw(t) of the current plan."""
        return float(sum(w * (end - start) for start, end, w in self.beta_.values()))

    def dual_bound(self, eps: float) -> float:
        """D_I = ε/(1+ε) Σ α (Appendix D): a lower bound on OPT_I of (11)."""
        return eps / (1.0 + eps) * self.alpha_sum()

    # ------------------------------------------------------------------ per slot
    def decide(self, view: EdgeCloudView) -> EdgeCloudDecision:
        t = view.slot
        self.fresh_ = {}
        self.pending_ = {}  # worker -> Δ -> its timeline this slot (``_q``)
        rem = _RemainingSlots(self, view)
        dispatch: dict[int, tuple[tuple[int, int], ...]] = {}
        used = list(view.storage_used)
        if used != self.room_used_:
            self.room_chunks_.clear()
            self.room_used_ = list(used)
        greedy = self._greedy_last_chunk if self.last_chunk else self._greedy
        if view.pending and LAZY_Q and not self.last_chunk:
            self._head_bounds(view)
        for j in view.pending:
            job = view.jobs[j]
            self.ps_type_[j] = job.ps_type
            places = greedy(job, t, rem, used)
            if places is not None:
                dispatch[j] = places
        run = self._haprf_run(view, t)
        ps = assign_ps(
            self.system_, self.pools_, run, self.ps_type_, self.zeta_, view.last_ps, self.rng_
        )
        return EdgeCloudDecision(dispatch=dispatch, run=run, ps=ps)

    # ------------------------------------------------------------------ Alg. 2
    def _room(self, job: EdgeJob, used: list[float]) -> np.ndarray | None:
        """Free storage per edge server, or ``None`` when ``edge_only`` and the servers
        of the job's worker type cannot hold all D_j chunks (Sec. VI)."""
        if self.edge_only and job.chunk_gb > 0:
            D = job.chunks
            key = (job.worker_type, job.chunk_gb, D)
            chunks = self.room_chunks_.get(key)
            if chunks is None:
                room = self.storage_ - np.array(used)
                servers = {s for s, _ in self.by_type_.get(job.worker_type, ())}
                chunks = self.room_chunks_[key] = sum(
                    D if math.isinf(room[s]) else math.floor(room[s] / job.chunk_gb + 1e-9)
                    for s in servers
                )
            if chunks < D:  # a job that does not fit retries every slot: no array for it
                return None
        return self.storage_ - np.array(used)

    def _greedy(
        self, job: EdgeJob, now: int, rem: _RemainingSlots, used: list[float]
    ) -> tuple[tuple[int, int], ...] | None:
        room = self._room(job, used)
        if room is None:
            return None
        system = self.system_
        S = system.servers
        terms = _JobTerms.of(job, system.speedup)
        inv_d, p_edge = terms.inv_d, terms.p_edge

        def fits(s: int) -> bool:
            return bool(room[s] >= job.chunk_gb - 1e-12)

        # lines 3–8: Q for the first chunk on every qualified worker (and the cloud).  The
        # heap holds exact entries (Q, server, worker, version); with LAZY_Q the workers not
        # yet evaluated wait in ``lazy``, a stream sorted like the heap, by lower bound.
        heap: list[tuple[float, int, int, int]] = []
        version: dict[tuple[int, int], int] = {}
        results: dict[tuple[int, int], QResult] = {}
        key = haprf_key(terms.rate0, terms.total_work, self.seq_)
        lazy = self._bounds(job, now, room, key, terms) if LAZY_Q else _Stream.none()
        if not LAZY_Q:  # the reference: every qualified worker evaluated first
            for s, w in self.by_type_.get(job.worker_type, ()):
                if fits(s):
                    g = system.worker_gid(s, w)
                    res = self._q(
                        g, self.queues_.get(g, []), rem, now, job.delay[s], key, p_edge, inv_d
                    )
                    results[(s, w)] = res
                    version[(s, w)] = 0
                    heap.append((res.q, s, w, 0))
        idle: dict[int, list[int]] = {}  # server -> its idle workers, the one in play last
        cloud_q = None
        if not self.edge_only:
            p_c1 = chunk_slots(job, 1, system.speedup)
            cloud_q = inv_d * (job.delay[S] + p_c1)  # Alg. 3 line 8 with ζ_j = 1
            heap.append((cloud_q, S, 0, 0))
            version[(S, 0)] = 0
        if not heap and lazy.empty:
            return None
        heapq.heapify(heap)
        check = self.cloud_check and not self.edge_only
        if check:  # a trial: job-level price of the plan (a-online+'s option)
            self.undo_ = []
        seq0 = self.seq_
        end = float(job.arrival)
        cost = 0.0

        places: list[tuple[int, int]] = []
        for d in range(job.chunks):
            while True:  # line 11, lazily skipping stale entries and full servers
                q, s, w, ver = lazy.pop_before(heap)
                if ver < 0:  # a busy worker's bound on top: its Q now
                    if fits(s):
                        g = system.worker_gid(s, w)
                        res = self._q(
                            g, self.queues_[g], rem, now, job.delay[s], key, p_edge, inv_d
                        )
                        results[(s, w)] = res
                        version[(s, w)] = 0
                        heapq.heappush(heap, (res.q, s, w, 0))
                    continue
                if (s, w) not in version and s < S:  # an idle worker from the stream: exact
                    g = system.worker_gid(s, w)
                    results[(s, w)] = self._q(g, [], rem, now, job.delay[s], key, p_edge, inv_d)
                    version[(s, w)] = 0
                if version.get((s, w)) == ver and (s == S or fits(s)):
                    break
            if s == S:  # lines 12–16: the rest of the job goes to the cloud
                zeta = 1 if d == 0 else 0
                c_end = float(now + job.delay[S] + chunk_slots(job, zeta, system.speedup))
                cost += max(0.0, c_end - end)
                self._place_cloud(job, d, zeta, q, now, places)
                break
            # edge: α_jd = min Q (line 23), UPDATEVARIABLES (Alg. 4)
            res = results[(s, w)]
            if check:
                cost += max(0.0, res.start + p_edge - end) + self._others_cost(res, p_edge)
                end = max(end, float(res.start + p_edge))
            if d == 0 and cloud_q is not None:  # lines 17–20: cloud Q with ζ_j = 0
                version[(S, 0)] += 1
                heapq.heappush(heap, (inv_d * (job.delay[S] + p_edge), S, 0, version[(S, 0)]))
            idle_here = idle.get(s)
            if idle_here is None:
                idle_here = idle[s] = lazy.idle_on(s)
            if idle_here and idle_here[-1] == w:  # it was its server's idle one: the next in line
                idle_here.pop()
                if idle_here:
                    results[(s, idle_here[-1])] = res
                    version[(s, idle_here[-1])] = 0
                    heapq.heappush(heap, (res.q, s, idle_here[-1], 0))
            # lines 21–22: only the chosen worker's Q changes for the next chunk
            results[(s, w)] = self._assign(job, d, s, w, res, q, terms, now, rem, room, places)
            version[(s, w)] += 1
            heapq.heappush(heap, (results[(s, w)].q, s, w, version[(s, w)]))
        if check:
            places = self._cloud_check(job, places, cost, now, rem, seq0)
        return self._dispatched(job, places, used)

    def _bounds(
        self, job: EdgeJob, now: int, room: np.ndarray, key: tuple[float, int], terms: _JobTerms
    ) -> _Stream:
        """A_greedy's qualified workers with room, before any is evaluated (``_greedy``).

        * Idle workers (empty queue) of a server all have the same Q — Eq. (5)
          with nothing pending, (Δ + p)/D_j: the lowest-numbered one is a
          candidate with that exact Q (version 0), the rest of the server's wait
          in ``idle`` for it to be chosen.
        * A busy worker is a candidate with a lower bound on its Q (version −1):
          (Δ + p)/D_j — its Q with nothing pending, ≤ its Q since float addition
          and multiplication by a number ≥ 0 are monotone — plus, when the first
          (highest-priority) chunk of its queue (``_head_bounds``) is ready by
          t0 = now + Δ and certainly still has L > 0 slots left then (it runs at
          most from max(now, its ready slot) to t0), that chunk's least share of
          Eq. (5): L/D_j if it ranks above the new chunk (A_1: wait ≥ L), else
          p/D_j' (A_2); the sum is shrunk by a relative 1e-9, far beyond the
          rounding of either side, so the bound stays ≤ the Q computed in floats.
        * Or, when larger, the same over the worker's whole queue (``_Backlog``):
          between now and t0 the worker trains at most Δ slots in all, so the
          chunks ranking above the new one that are ready by t0 and have A whole
          slots left now still have at least A − Δ at t0 (wait ≥ max(0, A − Δ));
          every chunk ranking below it that is ready by t0 and has more than Δ
          slots left is still pending at t0 and adds its 1/D_j' to A_2's weight.
          Chunks queued earlier in this slot are left out: a lower bound on fewer
          chunks is lower still.

        An exact entry taken off the top is below every bound still waiting, so
        it is below every Q not yet computed: the same choices as computing all.
        """
        tw = self.types_.get(job.worker_type)
        if tw is None:
            return _Stream.none()
        inv_d, p = terms.inv_d, terms.p_edge
        fit = room[tw.s] >= job.chunk_gb - 1e-12
        busy = self.busy_[tw.g]
        idle = np.flatnonzero(fit & ~busy)
        first = np.ones(len(idle), dtype=bool)  # the lowest-numbered idle worker per server
        first[1:] = tw.s[idle[1:]] != tw.s[idle[:-1]]
        heads = idle[first]
        busy_at = np.flatnonzero(fit & busy)
        delay = np.asarray(job.delay)
        at = np.concatenate((heads, busy_at))
        dl = delay[tw.s[at]]
        base = inv_d * dl + inv_d * 0 + inv_d * p + p * 0.0  # Eq. (5), nothing pending
        g = tw.g[busy_at]
        h = self.head_
        dlb = dl[len(heads) :]
        # the first chunk runs at most from its ready slot (or now) to t0 = now + Δ
        left = h.left[g] - (dlb - np.maximum(h.ready[g] - now, 0))
        left[h.ready[g] > now + dlb] = -np.inf  # not ready by t0: not pending
        above = h.key0[g] <= key[0]  # every queued chunk has a lower sequence number
        share = np.where(left > 0, np.where(above, inv_d * left, p * h.inv_d[g]), 0.0)
        lo = base[len(heads) :]
        base[len(heads) :] = np.maximum(lo, (lo + share) * (1.0 - _BOUND_SLACK))
        bl = self.backlog_
        if bl is not None and len(g):
            d_e = delay[bl.server]  # Δ of each queued chunk's server for this job
            ready = bl.ready <= now + d_e
            up = bl.key0 <= key[0]
            a_i, b_i = ready & up, ready & ~up & (bl.left > d_e)
            workers = self.system_.edge_workers
            a = np.bincount(bl.g[a_i], weights=bl.left[a_i], minlength=workers)[g]
            b = np.bincount(bl.g[b_i], weights=bl.inv_d[b_i], minlength=workers)[g]
            whole = inv_d * dlb + inv_d * np.maximum(a - dlb, 0.0) + inv_d * p + p * b
            np.maximum(lo, whole * (1.0 - _BOUND_SLACK), out=lo)  # lo: a view of base
        ver = np.zeros(len(at), dtype=np.int64)
        ver[len(heads) :] = -1
        s, w = tw.s[at], tw.w[at]
        order = np.lexsort((w, s, base))
        return _Stream(
            base[order].tolist(),
            s[order].tolist(),
            w[order].tolist(),
            ver[order].tolist(),
            tw.s[idle],
            tw.w[idle],
        )

    def _head_bounds(self, view: EdgeCloudView) -> None:
        """``head_`` for this slot from each busy worker's first chunk after the last one
        (``_bounds``).

        Such a chunk is still in its worker's queue if it has work left, with
        ⌈b/n_j − 1e-9⌉ whole slots left (b its mini-batches left now), at least
        b/n_j − ``_LEFT_SLACK`` (0 once its job finished).  Read from every active
        job's array at once, not chunk by chunk, for every queued chunk
        (``backlog_``) and the first of each queue (``head_``).
        """
        heads = self.heads_
        self.head_ = head = _Heads.none(self.system_.edge_workers)
        self.backlog_ = None
        remaining = view.remaining
        if not heads or not remaining:
            return
        jobs = np.fromiter(remaining, dtype=np.int64, count=len(remaining))
        arrays = [remaining[j] for j in remaining]
        start = np.zeros(len(arrays), dtype=np.int64)
        np.cumsum([len(a) for a in arrays[:-1]], out=start[1:])
        flat = np.concatenate(arrays)
        rate = np.array([self.rates_[j] for j in remaining])
        by_id = np.argsort(jobs)
        q = self.queued_
        rows = np.flatnonzero(q.alive[: q.n])
        qj = q.job[rows]
        k = np.minimum(np.searchsorted(jobs[by_id], qj), len(jobs) - 1)
        on = jobs[by_id[k]] == qj  # the chunk's job is active (else it has finished)
        at = by_id[k[on]]
        left = np.zeros(len(rows))  # a finished job's chunks: nothing left
        left[on] = np.maximum(flat[start[at] + q.chunk[rows[on]]] / rate[at] - _LEFT_SLACK, 0.0)
        qg = q.g[rows]
        self.backlog_ = _Backlog(
            qg, self.system_.worker_server[qg], q.key0[rows], q.ready[rows], left, q.inv_d[rows]
        )
        heads_at = np.fromiter((e.row for _, e in heads), dtype=np.int64, count=len(heads))
        g = q.g[heads_at]
        head.left[g] = left[np.searchsorted(rows, heads_at)]
        head.inv_d[g] = q.inv_d[heads_at]
        head.key0[g] = q.key0[heads_at]
        head.ready[g] = q.ready[heads_at]

    def _assign(
        self,
        job: EdgeJob,
        d: int,
        s: int,
        w: int,
        res: QResult,
        alpha: float,
        terms: _JobTerms,
        now: int,
        rem: _RemainingSlots,
        room: np.ndarray,
        places: list[tuple[int, int]],
    ) -> QResult:
        """Chunk d to edge worker (s, w): α_jd = ``alpha`` (Alg. 2 line 23), UPDATEVARIABLES
        (Alg. 4); returns the worker's Q for the job's next chunk (lines 21–22)."""
        g = self.system_.worker_gid(s, w)
        self.alpha_[(job.id, d)] = alpha
        entry = Queued(
            haprf_key(terms.rate0, terms.total_work, self.seq_),
            job.id,
            d,
            now + job.delay[s],
            terms.rate0,
            terms.inv_d,
            job.work_per_chunk,
        )
        self.seq_ += 1
        self._update_variables(g, entry, res, terms.p_edge, job.arrival)
        rem.fresh(job.id, d, terms.p_edge)
        room[s] -= job.chunk_gb
        places.append((s, w))
        nk = haprf_key(terms.rate0, terms.total_work, self.seq_)
        return self._q(g, self.queues_[g], rem, now, job.delay[s], nk, terms.p_edge, terms.inv_d)

    def _dispatched(
        self, job: EdgeJob, places: list[tuple[int, int]], used: list[float]
    ) -> tuple[tuple[int, int], ...]:
        """The job is placed: ζ_j, its rate n_j, a new HAPRF sequence number, its storage."""
        S = self.system_.servers
        if job.id not in self.cloud_:
            self.zeta_[job.id] = 0
        self.seq_ += 1
        self.rates_[job.id] = processing_capacity(job, self.zeta_[job.id], self.system_.speedup)
        self.fresh_[job.id] = job.work_per_chunk
        edge = False
        for s, _ in places:
            if s < S:
                used[s] += job.chunk_gb
                edge = True
        if edge:
            self.room_chunks_.clear()
            self.room_used_ = list(used)
        return tuple(places)

    def _q(
        self,
        g: int,
        queue: list[Queued],
        rem: _RemainingSlots,
        now: int,
        delay: int,
        key: tuple[float, int],
        p: int,
        inv_d: float,
    ) -> QResult:
        """:func:`calculate_q` with worker ``g``'s timeline kept for the slot: within a
        slot it changes only when a chunk joins or leaves ``g``'s queue (``_touch``)."""
        kept = self.pending_.setdefault(g, {})
        hit = kept.get(delay)
        if hit is None:
            hit = kept[delay] = timeline(queue, rem, now, now + delay)
        return q_of_pending(hit, now, delay, key, p, inv_d)

    def _touch(self, g: int) -> None:
        """Worker ``g``'s queue changed: forget its kept timelines."""
        self.pending_.pop(g, None)

    def _place_cloud(
        self, job: EdgeJob, d: int, zeta: int, q: float, now: int, places: list
    ) -> None:
        """Alg. 2 lines 12–16: chunks d..D−1 to the cloud, α = q, β over [r_j, end)."""
        S = self.system_.servers
        p_c = chunk_slots(job, zeta, self.system_.speedup)
        ready = now + job.delay[S]
        for dd in range(d, job.chunks):
            self.alpha_[(job.id, dd)] = q
            self.beta_[(job.id, dd)] = [float(job.arrival), float(ready + p_c), 1.0 / job.chunks]
            places.append((S, 0))
        self._raise_end(job.id, float(ready + p_c))
        self.cloud_[job.id] = (np.arange(d, job.chunks), ready)
        self.zeta_[job.id] = zeta

    # ------------------------------------------------------------------ a-online+ (last chunk)
    def _others_cost(self, res: QResult, p: int) -> float:
        """Increase of other jobs' planned completions when ``res.postponed`` slip by p."""
        ends: dict[int, float] = {}
        for e in res.postponed:
            end = self.beta_[(e.job, e.chunk)][1] + p
            if end > ends.get(e.job, -math.inf):
                ends[e.job] = end
        return sum(max(0.0, end - self.job_end_.get(j, end)) for j, end in ends.items())

    def _cloud_check(
        self,
        job: EdgeJob,
        places: list[tuple[int, int]],
        cost: float,
        now: int,
        rem: _RemainingSlots,
        seq0: int,
    ) -> list[tuple[int, int]]:
        """``cloud_check``: keep a plan that uses the edge only if its price beats all-cloud.

        The whole job in the cloud at ζ = 1 has JCT Δ_{j s_c} + p¹ (as an end
        slot, r_j + Δ + p¹) and adds nothing to other jobs' completions.
        """
        S = self.system_.servers
        all_cloud = float(now + job.delay[S] + chunk_slots(job, 1, self.system_.speedup))
        if any(s < S for s, _ in places) and cost >= all_cloud - job.arrival:
            self._rollback(job, rem)
            self.seq_ = seq0
            self.cloud_.pop(job.id, None)
            self.cloud_left_.pop(job.id, None)
            places = []
            self._place_cloud(job, 0, 1, all_cloud - job.arrival, now, places)
        self.undo_ = None
        return places

    def _rollback(self, job: EdgeJob, rem: _RemainingSlots) -> None:
        """Undo a trial placement (``cloud_check``): queue inserts, postponements, ends, α/β."""
        assert self.undo_ is not None
        for rec in reversed(self.undo_):
            if rec[0] == "insert":
                _, g, entry = rec
                self._touch(g)
                i = self.queues_[g].index(entry)
                del self.queues_[g][i]
                self.queued_.drop(entry.row)
                del self.keys_[g][i]
                if not self.queues_[g]:
                    del self.queues_[g]
                    del self.keys_[g]
                    self.busy_[g] = False
            elif rec[0] == "postpone":
                _, j, d, p = rec
                self.beta_[(j, d)][1] -= p
            else:
                _, j, old = rec
                if old is None:
                    self.job_end_.pop(j, None)
                else:
                    self.job_end_[j] = old
        for d in range(job.chunks):
            self.alpha_.pop((job.id, d), None)
            self.beta_.pop((job.id, d), None)
            rem.pop((job.id, d), None)
        self.undo_ = None

    def _greedy_last_chunk(
        self, job: EdgeJob, now: int, rem: _RemainingSlots, used: list[float]
    ) -> tuple[tuple[int, int], ...] | None:
        """A_greedy with the job-level price of ``last_chunk`` (class docstring of AOnlinePlus).

        With ``cloud_check`` the plan is tried first (every change logged and
        undone), then the cheaper of it and the whole job in the cloud at
        ζ = 1 is committed (the trial is re-run, which is deterministic).
        """
        system = self.system_
        S = system.servers
        sp = system.speedup
        room = self._room(job, used)
        if room is None:
            return None
        seq0 = self.seq_
        if self.cloud_check and not self.edge_only:
            all_cloud = float(now + job.delay[S] + chunk_slots(job, 1, sp)) - job.arrival
            self.undo_ = []
            trial = self._plan(job, now, rem, room.copy(), True)
            assert trial is not None  # the cloud always has room
            self._rollback(job, rem)
            self.seq_ = seq0
            self.cloud_.pop(job.id, None)
            self.cloud_left_.pop(job.id, None)
            places: list[tuple[int, int]] = []
            if any(s < S for s, _ in trial[0]) and trial[1] < all_cloud:
                plan = self._plan(job, now, rem, room, True)
                assert plan is not None
                places = plan[0]
            else:
                self._place_cloud(job, 0, 1, all_cloud, now, places)
        else:
            plan = self._plan(job, now, rem, room, not self.edge_only)
            if plan is None:
                return None
            places = plan[0]
        return self._dispatched(job, places, used)

    def _plan(
        self, job: EdgeJob, now: int, rem: _RemainingSlots, room: np.ndarray, allow_cloud: bool
    ) -> tuple[list[tuple[int, int]], float] | None:
        """Place the job's chunks by job-level price; (places, Σ prices), None if stuck."""
        system = self.system_
        S = system.servers
        D = job.chunks
        sp = system.speedup
        terms = _JobTerms.of(job, sp)
        inv_d, p_edge = terms.inv_d, terms.p_edge

        def fits(s: int) -> bool:
            return bool(room[s] >= job.chunk_gb - 1e-12)

        results: dict[tuple[int, int], tuple[QResult, float]] = {}
        key = haprf_key(terms.rate0, terms.total_work, self.seq_)
        for s, w in self.by_type_.get(job.worker_type, ()):
            if fits(s):
                g = system.worker_gid(s, w)
                res = calculate_q(
                    self.queues_.get(g, []), rem, now, job.delay[s], key, p_edge, inv_d
                )
                results[(s, w)] = (res, self._others_cost(res, p_edge))
        if not results and not allow_cloud:
            return None
        cloud_ready = now + job.delay[S]
        places: list[tuple[int, int]] = []
        end = float(job.arrival)  # the job's planned completion so far (r_j: nothing placed)
        cost = 0.0  # Σ of the chosen marginal prices
        for d in range(D):
            best = None
            for (s, w), (res, other) in results.items():
                if not fits(s):
                    continue
                k = (max(0.0, res.start + p_edge - end) + other, res.q)
                if best is None or k < best[0]:
                    best = (k, s, w)
            if allow_cloud:
                zeta = 1 if d == 0 else 0
                c_end = cloud_ready + chunk_slots(job, zeta, sp)
                k = (max(0.0, c_end - end), inv_d * (job.delay[S] + chunk_slots(job, zeta, sp)))
                if best is None or k < best[0]:
                    best = (k, S, 0)
            if best is None:  # no room left on the edge and no cloud
                return None
            (price, _), s, w = best
            cost += price
            if s == S:
                self._place_cloud(job, d, 1 if d == 0 else 0, price, now, places)
                break
            res, _ = results[(s, w)]
            end = max(end, float(res.start + p_edge))
            res = self._assign(job, d, s, w, res, price, terms, now, rem, room, places)
            results[(s, w)] = (res, self._others_cost(res, p_edge))
        return places, cost

    def _update_variables(self, g: int, entry: Queued, res: QResult, p: int, arrival: int) -> None:
        """Alg. 4: schedule d on [t*, t*+p), postpone A_2 by p, grow β."""
        queue = self.queues_.setdefault(g, [])
        keys = self.keys_.setdefault(g, [])
        self.busy_[g] = True
        self._touch(g)
        i = bisect.bisect_right(keys, entry.key)
        keys.insert(i, entry.key)
        queue.insert(i, entry)
        entry.row = self.queued_.add(g, entry)
        if self.undo_ is not None:
            self.undo_.append(("insert", g, entry))
        for e in res.postponed:
            self.beta_[(e.job, e.chunk)][1] += p
            self._raise_end(e.job, self.beta_[(e.job, e.chunk)][1])
            if self.undo_ is not None:
                self.undo_.append(("postpone", e.job, e.chunk, p))
        self.beta_[(entry.job, entry.chunk)] = [float(arrival), float(res.start + p), entry.inv_d]
        self._raise_end(entry.job, float(res.start + p))

    def _raise_end(self, job: int, end: float) -> None:
        old = self.job_end_.get(job)
        if old is None or end > old:
            if self.undo_ is not None:
                self.undo_.append(("end", job, old))
            self.job_end_[job] = end

    # ------------------------------------------------------------------ HAPRF execution
    def _haprf_run(self, view: EdgeCloudView, t: int) -> dict[int, tuple[int, ...]]:
        run: dict[int, list[int]] = {}
        remaining = view.remaining
        self.heads_ = heads = []
        for g in list(self.queues_):
            queue, keys = self.queues_[g], self.keys_[g]
            i = 0
            while i < len(queue):
                e = queue[i]
                arr = remaining.get(e.job)
                done = e.job not in self.fresh_ and (arr is None or arr[e.chunk] <= 0)
                if done:
                    del queue[i]
                    del keys[i]
                    self.queued_.drop(e.row)
                    continue
                if e.ready <= t:
                    run.setdefault(e.job, []).append(e.chunk)
                    break
                i += 1
            if queue:
                heads.append((g, queue[0]))
            else:
                del self.queues_[g]
                del self.keys_[g]
                self.busy_[g] = False
        out = {j: tuple(sorted(c)) for j, c in run.items()}
        for j in list(self.cloud_):
            chunks, ready = self.cloud_[j]
            arr = remaining.get(j)
            if j not in self.fresh_ and arr is None:
                del self.cloud_[j]
                self.cloud_left_.pop(j, None)
                continue
            if ready <= t:
                left = chunks if arr is None else chunks[arr[chunks] > 0]
                if not len(left):
                    continue
                # chunks only ever finish: the same count is the same chunks, so their
                # tuple (ascending, as ``chunks``) is made once per change
                hit = self.cloud_left_.get(j)
                if hit is None or hit[0] != len(left):
                    hit = self.cloud_left_[j] = (len(left), tuple(left.tolist()))
                mine = out.get(j)
                out[j] = hit[1] if mine is None else tuple(sorted(mine + hit[1]))
        return out


@register
class AOnlineEdge(AOnline):
    """``a-online-edge``: A_online-E, the same algorithm restricted to edge servers."""

    name: ClassVar[str] = "a-online-edge"

    def __init__(self, edge_only: bool = True) -> None:
        super().__init__(edge_only=edge_only)


@register
class AOnlinePlus(AOnline):
    """``a-online+``: A_online with ``last_chunk`` and ``cloud_check`` on.

    * ``last_chunk`` — a job completes only with its last chunk (2j), but
      Eq. (5) prices a chunk by its average share, (Δ + wait + p)/D_j, and a
      preempted chunk of job j' by p/D_j'.  Here the price of a placement is
      what it adds to planned completions: max(0, end_d − E_j) for the job
      (E_j its planned completion so far, r_j before the first chunk; end_d =
      t* + p on an edge worker, r_j + Δ_{j s_c} + p(ζ) in the cloud) plus,
      for every job j' with chunks in A_2, max(0, max_{d'} end_{j'd'} + p −
      E_{j'}) — zero when the postponed chunk is not (and does not become)
      its job's last.  Ties are broken by Eq. (5).  Ends are the plan's (β's
      intervals, with Alg. 4's postponements), as Eq. (5) uses the plan.
    * ``cloud_check`` — before committing a plan that uses the edge, compare
      its price (the sum of the chunks' marginal prices: the job's planned
      JCT plus what it adds to others') with the whole job in the cloud at
      ζ = 1 (JCT Δ_{j s_c} + p¹, nothing added to others); take the cheaper.
      Mixed plans are where A_online loses (``docs/aonline-claims.md``: the
      edge part finishes after the ζ = 0 cloud part).  Works with either
      pricing: with Eq. (5) the plan is Alg. 2's, its price is still the
      job-level one.

    Duals: α_jd is the chosen price, so Lemma 4 and ``dual_bound`` hold only
    for ``a-online`` (the paper's prices).
    """

    name: ClassVar[str] = "a-online+"

    def __init__(
        self,
        edge_only: bool = False,
        last_chunk: bool = True,
        cloud_check: bool = True,
    ) -> None:
        super().__init__(edge_only, last_chunk, cloud_check)


class _RemainingSlots(dict):
    """(job, chunk) -> remaining whole slots at the start of this slot, filled lazily."""

    def __init__(self, sched: AOnline, view: EdgeCloudView) -> None:
        super().__init__()
        self._sched = sched
        self._view = view

    def fresh(self, job: int, chunk: int, p: int) -> None:
        self[(job, chunk)] = p

    def __missing__(self, k: tuple[int, int]) -> int:
        j, d = k
        arr = self._view.remaining.get(j)
        v = 0 if arr is None else remaining_slots(float(arr[d]), self._sched.rates_[j])
        self[k] = v
        return v


class _JobTerms(NamedTuple):
    """What A_greedy reads of job j once: n_j at ζ = 0, E_j D_j B_j, 1/D_j, p = ⌈E_jB_j/n_j⌉."""

    rate0: float
    total_work: float
    inv_d: float
    p_edge: int

    @classmethod
    def of(cls, job: EdgeJob, speedup: float) -> _JobTerms:
        return cls(
            processing_capacity(job, 0, speedup),
            job.work_per_chunk * job.chunks,
            1.0 / job.chunks,
            chunk_slots(job, 0, speedup),
        )


class _TypeWorkers(NamedTuple):
    """The edge workers of one type in (server, worker) order: server, worker, gid."""

    s: np.ndarray
    w: np.ndarray
    g: np.ndarray

    @classmethod
    def of(cls, workers: list[tuple[int, int]], system: EdgeCloud) -> _TypeWorkers:
        s = np.array([s for s, _ in workers], dtype=np.int64)
        w = np.array([w for _, w in workers], dtype=np.int64)
        return cls(s, w, system.worker_offset[s].astype(np.int64) + w)


class _QueuedRows:
    """The chunks in the edge workers' HAPRF queues as array rows (``_Backlog`` reads them
    once a slot): a row is written when a chunk joins a queue and marked dead when it
    leaves; the arrays double when full."""

    _FIELDS = ("g", "job", "chunk", "ready", "key0", "inv_d", "alive")

    def __init__(self, size: int = 64) -> None:
        self.n = 0
        self.g = np.zeros(size, dtype=np.int64)
        self.job = np.zeros(size, dtype=np.int64)
        self.chunk = np.zeros(size, dtype=np.int64)
        self.ready = np.zeros(size, dtype=np.int64)
        self.key0 = np.zeros(size)
        self.inv_d = np.zeros(size)
        self.alive = np.zeros(size, dtype=bool)

    def add(self, g: int, e: Queued) -> int:
        i = self.n
        if i == len(self.g):
            for name in self._FIELDS:
                a = getattr(self, name)
                setattr(self, name, np.concatenate((a, np.zeros_like(a))))
        self.g[i], self.job[i], self.chunk[i], self.ready[i] = g, e.job, e.chunk, e.ready
        self.key0[i], self.inv_d[i], self.alive[i] = e.key[0], e.inv_d, True
        self.n = i + 1
        return i

    def drop(self, row: int) -> None:
        self.alive[row] = False


class _Backlog(NamedTuple):
    """Every chunk queued on an edge worker after the last slot (``AOnline._head_bounds``):
    its worker (gid) and server, the first part of its HAPRF key (−γ), its ready slot,
    its whole slots left now, at least (0: its job finished), and its 1/D_j'."""

    g: np.ndarray
    server: np.ndarray
    key0: np.ndarray
    ready: np.ndarray
    left: np.ndarray
    inv_d: np.ndarray


class _Heads(NamedTuple):
    """Per edge worker (gid), the first chunk of its HAPRF queue after the last slot
    (``AOnline._head_bounds``): its whole slots left now, at least (−inf: none), its
    1/D_j', the first part of its HAPRF key (−γ) and its ready slot."""

    left: np.ndarray
    inv_d: np.ndarray
    key0: np.ndarray
    ready: np.ndarray

    @classmethod
    def none(cls, workers: int) -> _Heads:
        return cls(
            np.full(workers, -np.inf),
            np.zeros(workers),
            np.zeros(workers),
            np.zeros(workers, dtype=np.int64),
        )


class _Stream:
    """A_greedy's candidates not yet in its heap, in the heap's order (``AOnline._bounds``),
    and the idle workers with room of each server (their lowest first)."""

    __slots__ = ("i", "idle_s", "idle_w", "q", "s", "ver", "w")

    def __init__(
        self,
        q: list[float],
        s: list[int],
        w: list[int],
        ver: list[int],
        idle_s: np.ndarray,
        idle_w: np.ndarray,
    ) -> None:
        self.q, self.s, self.w, self.ver = q, s, w, ver
        self.idle_s, self.idle_w = idle_s, idle_w
        self.i = 0

    @classmethod
    def none(cls) -> _Stream:
        empty = np.zeros(0, dtype=np.int64)
        return cls([], [], [], [], empty, empty)

    @property
    def empty(self) -> bool:
        return self.i >= len(self.q)

    def pop_before(self, heap: list[tuple[float, int, int, int]]) -> tuple[float, int, int, int]:
        """The least of the stream's next entry and the heap's top, taken off."""
        i = self.i
        if i < len(self.q):
            top = (self.q[i], self.s[i], self.w[i], self.ver[i])
            if not heap or top < heap[0]:
                self.i = i + 1
                return top
        return heapq.heappop(heap)

    def idle_on(self, server: int) -> list[int]:
        """Server ``server``'s idle workers with room at the job's start, the lowest last."""
        lo, hi = np.searchsorted(self.idle_s, [server, server + 1])
        return self.idle_w[lo:hi][::-1].tolist()
