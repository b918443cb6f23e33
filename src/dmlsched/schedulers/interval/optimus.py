"""Optimus (Peng et al., EuroSys 2018) as SMD Sec. V uses it (baseline (2)).

Optimus's allocator starts every job with one worker and one PS and then
greedily adds the task (a worker or a PS) with the largest marginal gain.
The SMD paper compares "the utility gain by adding one more worker and one
more PS and choose[s] the one with larger utility gain", with *our* speed
function (Eq. (4)/(5)) in place of Optimus's online-fitted one.

Decisions: per job (user limits make jobs independent once admitted) the
loop adds whichever of +1 worker / +1 PS is feasible under Eq. (3) and has
the larger utility gain; a tie in utility — the sigmoid is flat far from
its deadline, where both gains round to 0 — is broken by the larger
reduction of completion time (Optimus's own criterion).  It stops when
neither addition fits (the limits bind) or neither reduces the completion
time (Optimus never adds a task with non-positive gain).  Admission, option
``admission`` (the paper leaves it open, :mod:`dmlsched.schedulers._shared.
interval`): ``"first-fit"`` (default, submission order) or ``"knapsack"``
(SMD's MKP (16) over Optimus's utilities).
"""

from __future__ import annotations

from typing import ClassVar

from dmlsched.model.interval import IntervalJob
from dmlsched.model.speed.smd import completion_time, job_etas
from dmlsched.schedulers._shared.interval import AdmittingBaseline, fits
from dmlsched.schedulers.protocols import register

__all__ = ["Optimus", "optimus_allocation"]


def optimus_allocation(job: IntervalJob) -> tuple[int, int]:
    eta = job_etas(job)
    w, p = 1, 1
    t = float(completion_time(job, w, p, eta))
    u = job.utility(t)
    while True:
        best = None
        for dw, dp in ((1, 0), (0, 1)):
            if not fits(job, w + dw, p + dp):
                continue
            t2 = float(completion_time(job, w + dw, p + dp, eta))
            key = (job.utility(t2) - u, t - t2)
            if best is None or key > best[0]:
                best = (key, dw, dp, t2)
        if best is None or (best[0][1] <= 0 and best[0][0] <= 0):
            return w, p
        _, dw, dp, t = best
        w, p = w + dw, p + dp
        u = job.utility(t)


@register
class Optimus(AdmittingBaseline):
    name: ClassVar[str] = "optimus"

    def allocation(self, job: IntervalJob) -> tuple[int, int]:
        return optimus_allocation(job)
