"""An executor behind the service's agent protocol: machines, assignments and progress over HTTP.

The service talks to machines through one protocol (:mod:`dmlsched.service.agent`):
an admin declares a machine, the machine's agent joins it (``POST
/v1/machines``, ``agent: true``), proves itself alive and pulls its part of the
allocation (``POST /v1/agents/<m>/heartbeat``), and the machine holding a job's
PS 0 reports the job's work counter (``…/progress``).  An
:class:`ExecutorDriver` speaks it for every machine an executor offers, with
that machine's own ``agent`` identity (:func:`read_agent_tokens`: one token per
machine, as each agent has), so the service decides, checks, attributes and
fences exactly as it does with agents — nothing the executor says is taken on
trust:

* **machines**: every node the executor reports up joins (with its capacity:
  the service refuses more than an admin declared) and is kept alive by
  heartbeats; a node that goes down (a Slurm node ``DOWN``, its slurmd silent)
  gets none, so the service times it out, fences it and reschedules its jobs;
  a node the service declared down joins again once it is back;
* **assignments**: each heartbeat returns the machine's jobs with their whole
  placement and *incarnation*; the union over machines is the desired state,
  handed to :meth:`Executor.apply <dmlsched.service.executors.base.Executor.apply>`
  (a job whose incarnation changed — moved, resized, fenced — is stopped and
  started again from its checkpoint);
* **progress**: for each job, the work counter of the run started for its
  current incarnation is reported as the machine holding PS 0 (the one the
  service accepts it from) with the incarnation and the counter the run resumed
  from (its checkpoint's: work done before and not saved is *lost*, never
  counted twice), once per change; 409s (stale incarnation, fenced machine,
  over the physical bound) are counted in :attr:`ExecutorDriver.refused`.
"""

from __future__ import annotations

import contextlib
import csv
import stat
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx

from dmlsched.errors import InvalidInput
from dmlsched.service.executors.base import Assignment, Executor, JobReport, Node
from dmlsched.testbed.runtime import TrainSpec

__all__ = ["ExecutorDriver", "assignments", "read_agent_tokens", "train_spec"]

SEED_BASE = 1000  # a job's seed: the agents' (dmlsched.service.agent)


def read_agent_tokens(path: Path) -> dict[str, str]:
    """Machine → token from the ``agent`` lines of a token file (the service's auth file
    format, ``token,name,agent,machine``; other roles' lines are refused: an executor
    acts as its machines' agents only).  Like the auth file, only its owner may read it."""
    field = "executor-token-file"
    try:
        st = path.stat()
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInput(field, str(path), f"a readable text file ({e})") from None
    if st.st_mode & 0o077:
        raise InvalidInput(
            field, str(path), f"a file only its owner can read (chmod 600), not mode "
            f"{stat.S_IMODE(st.st_mode):04o}"
        )  # fmt: skip
    out: dict[str, str] = {}
    for n, row in enumerate(csv.reader(text.splitlines()), start=1):
        cells = [c.strip() for c in row]
        if not cells or not "".join(cells) or cells[0].startswith("#"):
            continue
        where = f"{path} line {n}"
        if len(cells) != 4 or cells[2] != "agent" or not cells[0] or not cells[3]:
            raise InvalidInput("fields", ",".join(cells[1:]), "token,name,agent,machine", where)
        if cells[3] in out:
            raise InvalidInput("machine", cells[3], "one token per machine", where)
        out[cells[3]] = cells[0]
    if not out:
        raise InvalidInput(field, str(path), "at least one line token,name,agent,machine")
    return out


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
    """Speaks the agent protocol for ``executor``'s machines (module docstring).

    ``tokens``: machine → that machine's agent token; a node without one is not
    offered to the service.  ``base_url``: the service's.
    """

    def __init__(
        self,
        base_url: str,
        executor: Executor,
        tokens: Mapping[str, str],
        *,
        poll: float = 0.5,
        timeout: float = 30.0,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.executor = executor
        self.poll = poll
        self.clients = {
            m: httpx.Client(
                base_url=base_url.rstrip("/"),
                headers={"Authorization": f"Bearer {t}"},
                timeout=timeout,
            )
            for m, t in tokens.items()
        }
        self.joined: dict[str, tuple[float, ...]] = {}
        self.sent: dict[tuple[int, int, int], float] = {}  # (job, incarnation, run) -> work
        self.want: dict[int, Assignment] = {}
        self.refused = 0  # progress reports the service would not take (409)
        self.errors: list[str] = []  # the service's other refusals (a join above capacity)
        self.up: dict[str, bool] = {}  # each node's last state, to log its changes
        self.log = log
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def step(self) -> dict[int, Assignment]:
        """One round: join and beat for live nodes, apply the union, report progress."""
        beats: dict[str, Mapping[str, Any]] = {}
        for node in self.executor.nodes():
            if node.up != self.up.get(node.name):
                self.up[node.name] = node.up
                self._say(f"node {node.name} {'up' if node.up else 'DOWN'}")
            if not node.up or node.name not in self.clients:
                continue  # no heartbeat: the service times the machine out and fences it
            try:  # one node's failed request never keeps the others from beating
                answer = self._beat(node)
            except httpx.HTTPError as e:
                self._say(f"heartbeat of {node.name}: {e}")
                continue
            if answer is not None:
                beats[node.name] = answer
        self.want = assignments(beats)
        self.executor.apply(self.want)
        for rep in self.executor.poll().values():
            self._report(rep)
        return self.want

    def _beat(self, node: Node) -> Mapping[str, Any] | None:
        http = self.clients[node.name]
        if self.joined.get(node.name) != node.capacity and not self._join(node):
            return None
        r = http.post(f"/v1/agents/{node.name}/heartbeat")
        if r.status_code == 404:  # not declared (yet), or a service restarted on an empty log
            self.joined.pop(node.name, None)
            return None
        r.raise_for_status()
        answer = r.json()
        if not answer.get("up", True):
            self._say(f"node {node.name} was declared down (fenced): joining again")
            # declared down while we were away: its runs are fenced (their work is no
            # longer taken) and the jobs placed elsewhere; join again
            self.joined.pop(node.name, None)
            self._join(node)
            return None
        return dict(answer)

    def _say(self, line: str) -> None:
        if self.log is not None:
            self.log(line)

    def _join(self, node: Node) -> bool:
        body = {"name": node.name, "capacity": list(node.capacity), "agent": True}
        r = self.clients[node.name].post("/v1/machines", json=body)
        if r.status_code >= 400:
            if r.status_code != 404:  # 404: an admin has not declared it yet
                self.errors.append(f"join {node.name}: {r.status_code} {r.text[:200]}")
                self._say(self.errors[-1])
            return False
        self._say(f"node {node.name} joined")
        self.joined[node.name] = node.capacity
        return True

    def _report(self, rep: JobReport) -> None:
        a = self.want.get(rep.job)
        if a is None or a.incarnation != rep.incarnation or rep.state == "failed":
            return  # only the run of the job's current incarnation speaks for it
        key = (rep.job, rep.incarnation, rep.run)
        if rep.work <= self.sent.get(key, -1.0):
            return
        holder = _ps0(a)
        http = self.clients.get(holder)
        if http is None:
            return
        body = {
            "job": rep.job,
            "incarnation": rep.incarnation,
            "work": rep.work,
            "loss": rep.loss,
            "resumed": rep.resumed,
        }
        r = http.post(f"/v1/agents/{holder}/progress", json=body)
        if r.status_code == 409:
            self.refused += 1
            self._say(f"progress of job {rep.job} refused: {r.json().get('detail', '')}")
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
        for http in self.clients.values():
            http.close()
