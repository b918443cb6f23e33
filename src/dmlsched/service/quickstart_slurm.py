"""Quick start on Slurm: a real cluster (one slurmd per netns), the service running jobs on it.

``make quickstart EXECUTOR=slurm`` (or ``python -m
dmlsched.service.quickstart_slurm``) starts a 3-node Slurm cluster of the testbed's machine
size (:class:`~dmlsched.service.slurm_cluster.SlurmCluster`), ``dmlsched
serve --executor slurm`` on it (PD-ORS, measured progress), submits a few
jobs, waits until they complete with real training, prints ``sacct``'s
account of every step — on which node, how many tasks — next to the decision
that named it, and stops everything.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dmlsched.model.cluster import SLOT_SECONDS as MODEL_SLOT_SECONDS
from dmlsched.service import quickstart
from dmlsched.service.quickstart import MACHINE, QuickStart, job_body
from dmlsched.service.slurm_cluster import SlurmCluster

__all__ = [
    "EPOCHS",
    "MODEL_SAMPLES_PER_S",
    "SLOT_SECONDS",
    "RunSteps",
    "SlurmQuickStart",
    "run_steps",
]

SLOT_SECONDS = 30.0
EPOCHS = 20  # 28,740 samples: 2 slots of 30 s for one worker by the speed model
INTERNAL_GBPS = 1.0  # between processes on one node (loopback): far from the bottleneck
# Two vCPUs a process: at most two of a job's processes on a node and six in all, so the
# host's two shared cores start a run's processes in seconds, not a whole slot
PROCESS = [0.0, 2.0, 1.0, 1.0]
# The speed model's samples per second per worker (tau = its inverse, in slots).  Measured
# (docs/slurm.md): one sync worker and PS train ~1,900 samples/s on an idle core of this
# host, several times less under load, and a Slurm run takes ~5 s to start.  The service
# credits measured work up to MEASURED_SLACK (4) x the model's rate, so the model sits at
# a quarter of the idle rate: an idle machine is never refused, a loaded one lags its plan
# and PD-ORS plans the rest again at the next epoch.
MODEL_SAMPLES_PER_S = 500.0


@dataclass(frozen=True)
class RunSteps:
    """One run of a job: the placement its decision named, and what sacct saw run."""

    job: int
    run: int
    incarnation: int
    slurm_job: int
    decided: tuple[tuple[str, str, int], ...]  # (role, node, count), sorted
    steps: tuple[tuple[str, str, int, str], ...]  # (role, node, tasks, sacct state), sorted

    @property
    def matches(self) -> bool:
        return tuple((r, n, c) for r, n, c, _ in self.steps) == self.decided


def run_steps(cluster: SlurmCluster, workdir: Path) -> list[RunSteps]:
    """Every run the slurm executor made under ``workdir``, with ``sacct``'s steps."""
    runs = sorted(
        (json.loads(p.read_text()) for p in workdir.glob("job-*/inc-*/run.json")),
        key=lambda r: (r["job"], r["run"]),
    )
    if not runs:
        return []
    rows = cluster.client().accounting([r["slurm_job"] for r in runs])
    out = []
    for r in runs:
        decided: Counter[tuple[str, str]] = Counter()
        for node, workers, ps in r["placement"]:
            decided["ps", node] += ps
            decided["worker", node] += workers
        steps = sorted(
            (x.name, x.nodes, x.ntasks or 0, x.state)
            for x in rows
            if x.job_id == r["slurm_job"] and x.step not in (None, "batch")
        )
        out.append(
            RunSteps(
                job=r["job"],
                run=r["run"],
                incarnation=r["incarnation"],
                slurm_job=r["slurm_job"],
                decided=tuple(sorted((k[0], k[1], n) for k, n in decided.items() if n)),
                steps=tuple(steps),
            )
        )
    return out


class SlurmQuickStart(QuickStart):
    """The service on a Slurm cluster in ``workdir``; stopped (cluster too) by ``stop``."""

    SLOT_SECONDS = SLOT_SECONDS
    EPOCHS = EPOCHS

    def __init__(
        self,
        workdir: Path,
        *,
        machines: int = 3,
        slurmd_timeout: int = 6,
        window: int = 8,
        slot_seconds: float = SLOT_SECONDS,
        **kw: Any,
    ) -> None:
        kw.setdefault("scheduler", "pd-ors")
        kw.setdefault("params", ())
        kw.setdefault("agent_timeout", 15.0)
        super().__init__(workdir, machines=machines, slot_seconds=slot_seconds, **kw)
        self.slot_seconds = slot_seconds
        # PD-ORS plans a job once, at its arrival, by the speed model; a real run that
        # falls behind its plan (process start-up is not in the model) is planned
        # again when the epoch ends: every `window` slots
        self.service.cmd += ["--window", str(window)]
        self.cluster = SlurmCluster(
            workdir / "slurm", machines, capacity=MACHINE, slurmd_timeout=slurmd_timeout
        )

    def job(self, i: int, epochs: int = EPOCHS) -> dict[str, Any]:
        """A digits job whose speed model (tau, slots per sample) suits this cluster's slots.

        PD-ORS's speed model knows no start-up cost and may give a job a new placement
        every slot (a new Slurm run: Python and PyTorch start again): slots of 30 s,
        jobs of a few slots and at most six processes on the host's two cores keep a
        run's start-up small against the work it does.
        """
        tau = 1.0 / (MODEL_SAMPLES_PER_S * self.slot_seconds)
        # the model's transfer times are in its slots of SLOT_SECONDS (an hour): links in
        # the model's Gbps that move what this cluster's links move in one of its slots —
        # the nodes' capped links between machines, loopback within one
        scale = self.slot_seconds / MODEL_SLOT_SECONDS
        body = {
            **job_body(i, epochs),
            "tau": tau,
            "deadline": 30,
            "b_ext": self.cluster.ext_mbit / 1000 * scale if self.cluster.ext_mbit else 1.0,
            "b_int": INTERNAL_GBPS * scale,
        }
        return {**body, "worker_demand": PROCESS, "ps_demand": PROCESS}

    def executor_args(self) -> list[str]:
        """The cluster started; ``dmlsched serve``'s options to run the jobs on it."""
        return ["--executor", "slurm", "--slurm-dir", self.cluster.start().folder]

    def steps(self) -> list[RunSteps]:
        return run_steps(self.cluster, self.work)

    def report(self) -> None:
        """sacct's account of every Slurm step next to the decision that named it."""
        print("sacct: every step of every run, and the placement its decision named")
        print(
            f"{'job':>4} {'run':>4} {'inc':>5} {'slurm':>6}  {'step':<7} {'node':<5} tasks  state"
        )
        for r in self.steps():
            for role, node, tasks, state in r.steps:
                print(
                    f"{r.job:>4} {r.run:>4} {r.incarnation:>5} {r.slurm_job:>6}  {role:<7} "
                    f"{node:<5} {tasks:>5}  {state}"
                )
            print(
                f"{'':>4} decided: {', '.join(f'{n} {x}x{c}' for x, n, c in r.decided)}"
                f"  {'= sacct' if r.matches else '!= sacct'}"
            )

    def stop(self) -> None:
        try:
            self.service.stop(timeout=90.0)  # the executor stops (checkpoints) every run
        finally:
            self.cluster.stop()


def main(argv: list[str] | None = None) -> int:
    """``make quickstart EXECUTOR=slurm``: the quick start's main on a Slurm cluster."""
    return quickstart.main(argv, SlurmQuickStart, __doc__)


if __name__ == "__main__":
    sys.exit(main())
