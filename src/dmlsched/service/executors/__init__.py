"""Executors: what makes the service's decisions so (:mod:`.base` holds the contract).

* ``local`` — the service's own agents, one per machine (the embedded default);
* ``slurm`` — every run a heterogeneous Slurm job, every (role, node) a job step
  (:mod:`.slurm`).
"""

from dmlsched.service.executors.base import Assignment, Executor, JobReport, Node, Slice

__all__ = ["Assignment", "Executor", "JobReport", "Node", "Slice"]
