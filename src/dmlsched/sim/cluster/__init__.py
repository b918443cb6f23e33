"""The ``cluster``-setting engine: PD-ORS's time-slotted model as one state object.

Per slot t, whatever drives it (:func:`simulate_cluster`, the testbed's
executor loop, the service's slot loop):

1. reveal the jobs with arrival a_i = t (online: never earlier) and show the
   scheduler a read-only :class:`~dmlsched.model.views.ClusterView` built
   from copies the engine never computes from (:mod:`dmlsched.sim.boundary`);
2. accept its :class:`~dmlsched.model.cluster.ClusterDecision` only if the
   referee does (:mod:`.referee`: exact types, exact integers, a job named
   once; pending-only admit/reject, nothing for rejected, finished or
   unarrived jobs, Eq. (2), (4), (5), (7) and, for async jobs, (3.2), (3.4),
   (3.5)) — by faster paths that give its exact answer (:mod:`.fast`,
   :mod:`.usage`);
3. credit each allocated job with the engine's own speed model
   (:func:`dmlsched.model.speed.pdors.job_rate` on the actual counts and
   locality, Fact 1 — or ``workload.speed.rate`` when the workload carries a
   measured speed model, same signature), or with work measured on real
   machines, checked against what its placement can do
   (:func:`dmlsched.sim.drive.within_bound`); a job
   completes in the slot its work reaches E·K (sync) or E·K·M (async).

Modules: :mod:`.referee` (the paper's constraints, the reference),
:mod:`.fast` (faster reads of the same), :mod:`.usage` (machine usage),
:mod:`.work` (the speed model's credit over held slots), :mod:`.state`
(:class:`ClusterState`), :mod:`.metrics`, :mod:`.simulate` (the
event-driven driver).

Metrics: ``total_utility`` (Σ u_i(t̃_i − a_i) over completed jobs, Eq. (6)),
``median_training_time``, ``mean_training_time`` (unfinished or rejected
jobs count T − a_i, PD-ORS Fig. 9), ``completed_jobs``, ``admitted_jobs``,
``rejected_jobs``, ``mean_jct`` (completed jobs only, in slots from the
start of the arrival slot to the moment the work ran out, progress being
linear within a slot; NaN when none completed), ``mean_jct_s`` (the same in
seconds: × ``workload.slot_seconds``), ``mean_progress`` (fraction of its
work each admitted job got through by T, 1 for completed ones, averaged; 0
when none was admitted), ``mean_workers`` (workers per job per slot it ran,
averaged over those job-slots; 0 when nothing ran), ``mean_utilization``
(over resources) and ``mean_utilization_<resource>`` (per-slot used ÷
capacity summed over machines, averaged over slots).
"""

from dmlsched.sim.cluster.referee import (
    Counts,
    Ruling,
    check_admissions,
    check_capacity,
    check_placement,
    judge,
    read_decision,
    read_placement,
    read_table,
    read_until,
)
from dmlsched.sim.cluster.simulate import simulate_cluster
from dmlsched.sim.cluster.state import Accepted, ClusterState, Credited, Placed
from dmlsched.sim.cluster.usage import integral_usage

__all__ = [
    "Accepted",
    "ClusterState",
    "Counts",
    "Credited",
    "Placed",
    "Ruling",
    "check_admissions",
    "check_capacity",
    "check_placement",
    "integral_usage",
    "judge",
    "read_decision",
    "read_placement",
    "read_table",
    "read_until",
    "simulate_cluster",
]
