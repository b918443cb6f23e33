"""An executor behind the service's agent protocol: machines, assignments and progress over HTTP.

The service talks to machines through one protocol (:mod:`dmlsched.service.agent`):
a machine joins (``POST /v1/machines``, ``agent: true``), proves itself alive
and pulls its part of the allocation (``POST /v1/agents/<m>/heartbeat``), and
the machine holding a job's PS 0 reports its work (``…/progress``).  An
:class:`ExecutorDriver` speaks it for every machine an executor offers, so the
service decides, checks and fences exactly as it does with agents — nothing
the executor says is taken on trust:

* **machines**: every node the executor reports up joins with its capacity and
  is kept alive by heartbeats; a node that goes down (a Slurm node ``DOWN``,
  its slurmd silent) gets none, so the service times it out, takes it down
  and reschedules its jobs — the service's own fencing;
* **assignments**: each heartbeat returns the machine's jobs with their whole
  placement and incarnation; the union over machines is the desired state,
  handed to :meth:`Executor.apply <dmlsched.service.executors.base.Executor.apply>`;
* **progress**: for each job, the work counter of the run of its current
  incarnation is reported as the machine holding PS 0 (the one the service
  accepts it from), once per change.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from typing import Any

import httpx

from dmlsched.service.executors.base import Assignment, Executor, JobReport, Node
from dmlsched.testbed.runtime import TrainSpec

__all__ = ["ExecutorDriver", "assignments", "train_spec"]

SEED_BASE = 1000  # a job's seed: the agents' (dmlsched.service.agent)


def train_spec(task: Mapping[str, Any]) -> TrainSpec:
    """What a heartbeat's task says to train (as the service's agents read it)."""
    req = task["request"]
    job = int(task["job"])
    return TrainSpec(
        job=job,
        target=float(task["work"]),
        mode=str(req.get("mode", "sync")),
        batch=int(req.get("batch", 1)),
        seed=SEED_BASE + job,
    )


def assignments(beats: Mapping[str, Mapping[str, Any]]) -> dict[int, Assignment]:
    """The desired state from the machines' heartbeat answers (machine → answer)."""
    out: dict[int, Assignment] = {}
    for answer in beats.values():
        index = answer["machines"]
        for t in answer["tasks"]:
            job = int(t["job"])
            if job in out:
                continue
            order = sorted(t["placement"], key=lambda name: index[name])
            counts = [(m, int(t["placement"][m][0]), int(t["placement"][m][1])) for m in order]
            req = t["request"]
            out[job] = Assignment.from_counts(
                train_spec(t),
                int(t["incarnation"]),
                counts,
                worker_demand=tuple(float(x) for x in req["worker_demand"]),
                ps_demand=tuple(float(x) for x in req["ps_demand"]),
            )
    return out


def _ps0(a: Assignment) -> str:
    return next(s.machine for s in a.placement if s.ps)


class ExecutorDriver:
    """Speaks the agent protocol for ``executor``'s machines (module docstring)."""

    def __init__(self, http: httpx.Client, executor: Executor, *, poll: float = 0.5) -> None:
        self.http = http
        self.executor = executor
        self.poll = poll
        self.joined: dict[str, tuple[float, ...]] = {}
        self.sent: dict[tuple[int, int, int], float] = {}  # (job, incarnation, run) -> work
        self.want: dict[int, Assignment] = {}
        self.refused = 0  # progress reports the service would not take
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def step(self) -> dict[int, Assignment]:
        """One round: join and beat for live nodes, apply the union, report progress."""
        beats: dict[str, Mapping[str, Any]] = {}
        for node in self.executor.nodes():
            if not node.up:
                continue  # no heartbeat: the service times the machine out and fences it
            answer = self._beat(node)
            if answer is not None:
                beats[node.name] = answer
        self.want = assignments(beats)
        self.executor.apply(self.want)
        for rep in self.executor.poll().values():
            self._report(rep)
        return self.want

    def _beat(self, node: Node) -> Mapping[str, Any] | None:
        if self.joined.get(node.name) != node.capacity:
            self._join(node)
        r = self.http.post(f"/v1/agents/{node.name}/heartbeat")
        if r.status_code == 404:  # a service restarted on an empty log
            self._join(node)
            r = self.http.post(f"/v1/agents/{node.name}/heartbeat")
        r.raise_for_status()
        answer = r.json()
        if not answer.get("up", True):  # taken down while we were away: join again
            self._join(node)
            return None
        return dict(answer)

    def _join(self, node: Node) -> None:
        body = {"name": node.name, "capacity": list(node.capacity), "agent": True}
        self.http.post("/v1/machines", json=body).raise_for_status()
        self.joined[node.name] = node.capacity

    def _report(self, rep: JobReport) -> None:
        a = self.want.get(rep.job)
        if a is None or a.incarnation != rep.incarnation or rep.state == "failed":
            return  # only the run of the job's current incarnation speaks for it
        key = (rep.job, rep.incarnation, rep.run)
        if rep.work <= self.sent.get(key, -1.0):
            return
        body = {
            "job": rep.job,
            "work": rep.work,
            "loss": rep.loss,
            "report": f"r{rep.run}-{rep.work:.0f}",
        }
        r = self.http.post(f"/v1/agents/{_ps0(a)}/progress", json=body)
        if r.status_code == 409:
            self.refused += 1
        elif r.status_code >= 400:
            return  # try again next round
        self.sent[key] = rep.work

    # ---- a background loop (dmlsched serve --executor ...) --------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="executor-driver", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(httpx.HTTPError):
                self.step()
            self._stop.wait(self.poll)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        with contextlib.suppress(Exception):
            self.executor.close()
