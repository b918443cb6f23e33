"""Why each job is not running, every slot: the scheduler's reasons, checked, else the engine's.

After each decision, every pending or active job the decision placed nowhere
and every job it rejected gets a reason (:class:`~dmlsched.model.reasons.Reason`)
— the scheduler's own (its optional ``explain``,
:class:`~dmlsched.schedulers.protocols.Explains`) or, where it gives none,
the engine's:

* the decision was refused (``invalid-decision``: the slot runs nothing), or
  no machine is up (``no-machine-up``);
* a rejection without a reason (``rejected``);
* a job placed nowhere without a reason: ``insufficient …`` if even one
  worker of it fits nowhere in what this slot's placements leave (the
  engine's own capacity arithmetic), else ``unexplained``.

A scheduler's reason is not trusted: it must be a ``Reason`` with a known code
and a one-line text of at most :data:`MAX_TEXT` characters, else the engine's
stands.  Only reasons that *changed* are logged (the tick record's
``reasons``: job → ``{code, text, by}``, or ``None``), so a queue that does not
move costs nothing in the log.  A what-if copy of the core
(:mod:`dmlsched.service.whatif`) sets ``explain_only`` to the jobs it was asked
about: the others' reasons are never read there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from dmlsched.model.cluster import RESOURCES
from dmlsched.model.reasons import CODES, Reason
from dmlsched.model.views import ClusterView
from dmlsched.schedulers._shared.placement import bundle
from dmlsched.schedulers._shared.reasons import shortfall
from dmlsched.schedulers.protocols import Explains

if TYPE_CHECKING:
    from dmlsched.service.core import Core

__all__ = ["MAX_TEXT", "explain_slot", "reason_body"]

MAX_TEXT = 300  # characters of a reason's text


def reason_body(reason: Reason, by: str) -> dict[str, str]:
    """A reason as the log and the API carry it: code, text and who gave it."""
    return {"code": reason.code, "text": reason.text, "by": by}


def _trusted(r: object) -> bool:
    return (
        isinstance(r, Reason)
        and type(r.code) is str
        and r.code in CODES
        and type(r.text) is str
        and 0 < len(r.text) <= MAX_TEXT
        and "\n" not in r.text
    )


class _Bodies:
    """One body per distinct reason (a queue of thousands shares a few): built and
    checked once per slot, and compared by identity first."""

    def __init__(self, by: str) -> None:
        self.by = by
        self.seen: dict[tuple[str, str], dict[str, str]] = {}

    def __call__(self, r: Reason) -> dict[str, str]:
        key = (r.code, r.text)
        body = self.seen.get(key)
        if body is None:
            body = self.seen[key] = reason_body(r, self.by)
        return body


def explain_slot(
    core: Core, view: ClusterView | None, out: dict[str, Any]
) -> dict[str, dict[str, str] | None]:
    """The reasons of this slot's decision ``out`` (``admit``, ``reject``, ``alloc``,
    ``error``) that differ from each job's current one, by job id (module docstring)."""
    placed = {int(k) for k in out["alloc"]}
    todo = [j for j in (*core.pending, *core.active) if j not in placed]
    only = getattr(core, "explain_only", None)  # a what-if copy: the jobs asked about
    if only is not None:
        todo = [j for j in todo if j in only]
    if not todo:
        return {}
    name = core.config.scheduler
    engine = _Bodies("engine")
    new: dict[int, dict[str, str]] = {}
    if out.get("error"):
        body = engine(
            Reason("invalid-decision", f"the slot runs nothing: {out['error']}"[:MAX_TEXT])
        )
        new = dict.fromkeys(todo, body)
    elif view is None:
        text = "every machine is down" if core.machines else "no machine is declared yet"
        new = dict.fromkeys(todo, engine(Reason("no-machine-up", text)))
    else:
        given: Mapping[int, object] = {}
        if isinstance(core.scheduler, Explains):
            try:
                given = core.scheduler.explain(view, tuple(todo))
            except Exception:  # a scheduler's bug leaves its jobs to the engine's reasons
                given = {}
        theirs = _Bodies(name)
        rejected = set(out["reject"])
        free: np.ndarray | None = None
        checked: dict[int, bool] = {}  # id(reason) -> trusted
        for j in todo:
            r = given.get(j)
            if r is not None:
                ok = checked.get(id(r))
                if ok is None:
                    ok = checked[id(r)] = _trusted(r)
                if ok:
                    new[j] = theirs(r)  # type: ignore[arg-type]  # _trusted: a Reason
                    continue
            if j in rejected:
                new[j] = engine(Reason("rejected", f"rejected by {name}, which gives no reason"))
                continue
            if free is None:
                free = _free(core, out)
            job = core.jobs[j].job
            why = shortfall(job, *bundle(job, 1), free)
            if why.text.startswith("fragmented"):
                why = Reason("unexplained", f"{name} placed it nowhere and gives no reason")
            new[j] = engine(why)
    jobs = core.jobs
    out_: dict[str, dict[str, str] | None] = {}
    for j, body in new.items():
        now = jobs[j].reason
        if now is not body and now != body:
            out_[str(j)] = body
    return out_


def _free(core: Core, out: dict[str, Any]) -> np.ndarray:
    """Each machine's capacity this epoch less this slot's placements."""
    assert core.epoch_cluster is not None
    free = np.array(core.epoch_cluster, dtype=float).reshape(-1, len(RESOURCES))
    for key, (machines, workers, ps) in out["alloc"].items():
        job = core.jobs[int(key)].job
        for m, w, s in zip(machines, workers, ps, strict=True):
            free[m] -= w * np.asarray(job.worker_demand) + s * np.asarray(job.ps_demand)
    return free
