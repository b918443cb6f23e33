"""Gavel's measured speed: steps per second from its throughput table, not Eq. (1).

The table (Gavel OSDI'20, ``simulation_throughputs.json``) is loaded by
:mod:`dmlsched.workloads.gavel_table` and passed in — this module does no I/O.
It gives, per job type ("ResNet-50 (batch size 64)") and scale factor (GPUs),
the steps per second of the job alone on one GPU type; a step is one worker's
step of its per-worker batch b, so a job trains b × throughput samples per
second (see the loader's docstring for why).

:class:`GavelSpeed` implements :class:`dmlsched.model.cluster.SpeedModel`.  A
job running on W workers (with at least one PS, as Eq. (1)) gets the
throughput of its type at scale factor W; Gavel only ever runs a job on
exactly its scale factor, so for other W we take the largest measured scale
factor ≤ W (the surplus workers idle) — decision, documented.  Where the job's
workers sit does not matter: Gavel's simulator reads the worker type's table
whatever the servers (see the loader).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import ClusterJob

__all__ = ["GavelSpeed"]


class GavelSpeed:
    """Engine speed model from Gavel's table (see the module docstring).

    * ``table``: (job type, scale factor) → steps per second alone;
    * ``kinds``: job id → (job type, per-worker batch b);
    * ``slot_seconds``: converts per-second rates into per-slot ones.
    """

    def __init__(
        self,
        table: Mapping[tuple[str, int], float],
        kinds: Mapping[int, tuple[str, int]],
        slot_seconds: float,
    ) -> None:
        if not slot_seconds > 0:
            raise InvalidInput("slot_seconds", slot_seconds, "> 0")
        self.slot_seconds = float(slot_seconds)
        self.kinds = dict(kinds)
        self.scales: dict[str, list[tuple[int, float]]] = {}
        for (jt, scale), thr in table.items():
            self.scales.setdefault(jt, []).append((int(scale), float(thr)))
        for v in self.scales.values():
            v.sort()
        missing = sorted({jt for jt, _ in self.kinds.values() if jt not in self.scales})
        if missing:
            raise InvalidInput("job type", missing[0], "a job type of Gavel's table")

    def steps_per_second(self, job_type: str, workers: int) -> float:
        """Throughput at the largest measured scale factor ≤ ``workers`` (0 below the least)."""
        best = 0.0
        for scale, thr in self.scales[job_type]:
            if scale <= workers:
                best = thr
        return best

    def rate(
        self,
        job: ClusterJob,
        machines: Sequence[int],
        workers: Sequence[int],
        ps: Sequence[int],
    ) -> float:
        """Samples per slot; 0 without workers or (as Eq. (1)) without a PS."""
        w = sum(workers)
        if w <= 0 or sum(ps) <= 0:
            return 0.0
        kind = self.kinds.get(job.id)
        if kind is None:
            raise InvalidInput("job", job.id, "a job with a Gavel job type")
        job_type, batch = kind
        return self.steps_per_second(job_type, w) * batch * self.slot_seconds
