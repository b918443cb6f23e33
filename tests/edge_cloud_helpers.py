"""Hand-made ``edge-cloud`` instances with easy numbers (n_j = 1 mini-batch per slot)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from dmlsched.model.edge_cloud import EdgeCloud, EdgeCloudDecision, EdgeCloudWorkload, EdgeJob


def ec_job(i: int = 0, **kw: Any) -> EdgeJob:
    """m = 1 slot per mini-batch, G = q = 0: n_j = 1 at ζ = 0 and ζ = 1, so p = E·B."""
    spec: dict[str, Any] = dict(
        id=i,
        arrival=0,
        chunks=1,
        minibatches=4,
        epochs=1,
        m=1.0,
        G=0.0,
        q_mb=0.0,
        b_mbps=100.0,
        worker_type=0,
        ps_type=0,
        delay=(1, 100),
    )
    spec.update(kw)
    return EdgeJob(**spec)


def one_worker_system(
    workers: tuple[int, ...] = (0,),
    ps: tuple[int, ...] = (0,),
    storage: tuple[float, ...] | None = None,
) -> EdgeCloud:
    return EdgeCloud((workers,), (ps,), 2, storage)


def workload(
    jobs: tuple[EdgeJob, ...], system: EdgeCloud | None = None, horizon: int = 60
) -> EdgeCloudWorkload:
    return EdgeCloudWorkload(jobs, system or one_worker_system(), horizon)


class Scripted:
    """A scheduler that replays decisions by slot (empty decision otherwise)."""

    name: ClassVar[str] = "scripted"
    setting: ClassVar[str] = "edge-cloud"

    def __init__(self, script: dict[int, EdgeCloudDecision]) -> None:
        self.script = script

    def reset(self, system: EdgeCloud, horizon: int, rng: np.random.Generator) -> None:
        pass

    def decide(self, view: Any) -> EdgeCloudDecision:
        return self.script.get(view.slot, EdgeCloudDecision())


class RandomEdge:
    """Seeded random decisions, valid unless a slot draws one of ``KINDS`` (with ``p_bad``):
    each kind breaks one constraint of ILP (2) or the engine's rules, where it can.
    :meth:`valid` is a valid decision for the same view (the run goes on after a refusal)."""

    name: ClassVar[str] = "random-edge"
    setting: ClassVar[str] = "edge-cloud"
    KINDS = (
        "extra-chunk",
        "bad-worker",
        "wrong-type",
        "early",
        "clash",
        "ps-missing",
        "ps-extra",
        "ps-clash",
        "ps-type",
        "zeta-edge-ps",
        "cloud-preempt",
        "run-undispatched",
        "run-finished",
        "dup-chunk",
        "redispatch",
        "bad-ps",
        "storage",
        "trained",
    )

    def __init__(self, seed: int, p_bad: float = 0.0) -> None:
        self.seed = seed
        self.p_bad = p_bad

    def reset(self, system: EdgeCloud, horizon: int, rng: np.random.Generator) -> None:
        self.r = np.random.default_rng(self.seed)

    def decide(self, v: Any) -> EdgeCloudDecision:
        r = self.r
        kind = self.KINDS[r.integers(len(self.KINDS))] if r.random() < self.p_bad else None
        return self.make(v, kind)

    def valid(self, v: Any) -> EdgeCloudDecision:
        return self.make(v, None)

    def make(self, v: Any, kind: str | None) -> EdgeCloudDecision:
        r = self.r
        S = v.system.servers
        disp: dict[int, tuple] = {}
        run: dict[int, tuple] = {}
        ps: dict[int, tuple] = {}
        stored = list(v.storage_used)
        for j in v.pending:
            if r.random() < 0.5:
                continue
            job = v.jobs[j]
            q = v.system.qualified_workers(job.worker_type)
            edge = 0.0 if r.random() < 0.2 else 0.7
            pl = tuple(
                q[r.integers(len(q))] if q and r.random() < edge else (S, 0)
                for _ in range(job.chunks)
            )
            add = [0.0] * S
            for srv, _ in pl:
                if srv < S:
                    add[srv] += job.chunk_gb
            fits = all(stored[s] + add[s] <= v.system.storage_of(s) for s in range(S))
            if fits or kind == "storage":
                disp[j] = pl
                stored = [a + b for a, b in zip(stored, add, strict=True)]
        if disp and kind in ("extra-chunk", "bad-worker", "wrong-type"):
            j = next(iter(disp))
            pl = list(disp[j])
            if kind == "extra-chunk":
                pl.append((S, 0))
            elif kind == "bad-worker":
                pl[0] = (0, 99)
            else:
                wt = v.system.worker_types[0]
                pl[0] = (0, int(r.integers(len(wt)))) if wt else (0, 0)
            disp[j] = tuple(pl)
        used: set = set()
        used_ps: set = set()
        for j in v.active:
            rem = v.remaining[j]
            job = v.jobs[j]
            pl = v.placement[j]
            chunks = []
            for d in range(len(rem)):
                s, w = pl[d]
                if rem[d] <= 0 or v.dispatched_at[j] + job.delay[s] > v.slot:
                    continue
                cloud_started = s == S and rem[d] < job.epochs * job.minibatches
                if cloud_started or (r.random() < 0.8 and (s == S or (s, w) not in used)):
                    chunks.append(d)
                    if s < S:
                        used.add((s, w))
            if not chunks:
                continue
            run[j] = tuple(chunks)
            cands = [
                (s, p)
                for s in range(S)
                for p, k in enumerate(v.system.ps_types[s])
                if k == job.ps_type and (s, p) not in used_ps
            ]
            if v.zeta[j] or not cands or r.random() < 0.3:
                ps[j] = (S, 0)
            else:
                ps[j] = cands[r.integers(len(cands))]
                used_ps.add(ps[j])
        if kind is not None:
            self._break(v, kind, disp, run, ps)
        return EdgeCloudDecision(disp, run, ps)

    def _break(self, v: Any, kind: str, disp: dict, run: dict, ps: dict) -> None:
        r = self.r
        S = v.system.servers
        act = list(v.active)
        ready = {
            j: [v.dispatched_at[j] + v.jobs[j].delay[srv] for srv, _ in v.placement[j]] for j in act
        }

        def add(j: int, d: int) -> None:
            run[j] = tuple(sorted({*run.get(j, ()), d}))
            ps.setdefault(j, (S, 0))

        if kind == "early":  # the last chunk to get its data, one slot early at best (2i)
            late = [j for j in act if max(ready[j]) > v.slot]
            if late:
                j = min(late, key=lambda j: max(ready[j]))
                add(j, int(np.argmax(ready[j])))
        if kind == "clash":  # two ready, unfinished chunks on one edge worker (2d)
            on: dict[tuple, tuple] = {}
            for j, d in ((i, k) for i in act for k in range(len(v.placement[i]))):
                srv, w = v.placement[j][d]
                if srv == S or ready[j][d] > v.slot or v.remaining[j][d] <= 0:
                    continue
                if (srv, w) in on:
                    add(*on[(srv, w)])
                    add(j, d)
                    break
                on[(srv, w)] = (j, d)
        if kind == "ps-missing" and run:
            ps.pop(next(iter(run)), None)
        if kind == "ps-extra" and act:
            ps[act[-1]] = (S, 0)
        if kind == "ps-clash":  # two jobs on one edge PS of their type (2f)
            for s in range(S):
                for p, k in enumerate(v.system.ps_types[s]):
                    two = [j for j in run if v.jobs[j].ps_type == k and not v.zeta[j]][:2]
                    if len(two) == 2:
                        ps[two[0]] = ps[two[1]] = (s, p)
                        return
        if kind == "ps-type" and ps:
            ps[next(iter(ps))] = (0, int(r.integers(3)))
        if kind == "bad-ps" and ps:
            ps[next(iter(ps))] = (S + 1, 0)
        if kind == "zeta-edge-ps":
            for j in ps:
                if v.zeta.get(j):
                    ps[j] = (0, 0)
        if kind == "cloud-preempt":  # one started cloud chunk left out
            for j in list(run):
                full = v.jobs[j].epochs * v.jobs[j].minibatches
                cloud = [
                    d for d in run[j] if v.placement[j][d][0] == S and v.remaining[j][d] < full
                ]
                if cloud:
                    run[j] = tuple(d for d in run[j] if d != cloud[-1])
                    if not run[j]:
                        del run[j]
                        ps.pop(j, None)
                    break
        if kind == "trained":  # a trained chunk of the job with the fewest of them
            done = {j: [d for d, x in enumerate(v.remaining[j]) if x <= 0] for j in act}
            some = [j for j in act if done[j]]
            if some:
                j = min(some, key=lambda j: len(done[j]))
                add(j, done[j][0])
        if kind == "run-undispatched" and v.pending:
            run[v.pending[0]] = (0,)
        if kind == "run-finished" and v.finished:
            run[next(iter(v.finished))] = (0,)
        if kind == "dup-chunk" and run:
            j = next(iter(run))
            run[j] = run[j] + run[j][:1]
        if kind == "redispatch" and act:
            disp[act[0]] = v.placement[act[0]]
