"""``dmlsched k8s apply|watch``: keep a Kubernetes cluster in step with the service's decisions.

One pass (:func:`sync`) reads the service's ``GET /v1/state``, lists the
objects of one kind (Volcano Jobs or TFJobs) that carry the label
``dmlsched.io/job`` in the namespace, and makes them say the decision —
through the official ``kubernetes`` client's ``CustomObjectsApi``:

=============================================  ====================================
the service says                               the cluster gets
=============================================  ====================================
placed, no object                              **create** the manifest (:mod:`.k8s`)
placed, object of the same incarnation          nothing (or **scale** back to the
                                               placement's counts if they drifted)
placed, object of an older incarnation          **delete** it (foreground: its PSs get
 (moved, resized, resumed)                     SIGTERM and checkpoint); a later pass
                                               creates the new incarnation once it is
                                               gone
admitted or pending but not placed (preempted)  **scale** every replica count to 0
completed, rejected, cancelled, unknown         **delete**
=============================================  ====================================

An object being deleted (``deletionTimestamp`` set) is left alone.  Every
action is idempotent: a create that meets ``409 AlreadyExists`` or a delete
that meets ``404 NotFound`` has nothing left to do, so passes can repeat and
two watchers cannot make a job run twice.  A scale is a JSON merge patch of
replica counts and ``minAvailable`` only — the one update Volcano's admission
webhook allows on a Job (``validateJobUpdate``); a placement change is a new
incarnation, which no running process could join anyway (a PS waits for a
fixed number of workers), so it restarts from the checkpoint.

``watch`` repeats a pass every ``interval`` seconds until Ctrl-C.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from dmlsched.errors import InvalidInput
from dmlsched.service.k8s import INCARNATION, JOB_LABEL, KINDS, ExportOptions, manifest

__all__ = ["API", "Action", "apply_actions", "plan", "sync", "watch"]

# kind → (group, version, plural)
API = {
    "volcano": ("batch.volcano.sh", "v1alpha1", "jobs"),
    "tfjob": ("kubeflow.org", "v1", "tfjobs"),
}
_GONE = ("completed", "rejected", "cancelled")
_MERGE = "application/merge-patch+json"


@dataclass(frozen=True)
class Action:
    """One change to the cluster: ``verb`` (create, scale, delete) on a named object."""

    verb: str
    kind: str
    name: str
    job: int
    why: str
    body: dict[str, Any] | None = None

    def line(self) -> str:
        return f"{self.verb} {self.kind}/{self.name} (job {self.job}: {self.why})"


def _replicas(kind: str, doc: dict[str, Any]) -> dict[str, int]:
    spec = doc.get("spec") or {}
    if kind == "volcano":
        return {t["name"]: int(t.get("replicas", 0)) for t in spec.get("tasks") or []}
    specs = spec.get("tfReplicaSpecs") or {}
    return {r: int(s.get("replicas", 0)) for r, s in specs.items()}


def _scale_body(kind: str, have: dict[str, Any], counts: dict[str, int]) -> dict[str, Any]:
    """A merge patch setting replica counts (absent: 0) and minAvailable to their sum."""
    total = sum(counts.values())
    if kind == "volcano":
        # merge patches replace lists whole: send the tasks as they are, counts changed
        tasks = copy.deepcopy(have["spec"]["tasks"])
        for t in tasks:
            t["replicas"] = counts.get(t["name"], 0)
        return {"spec": {"minAvailable": total, "tasks": tasks}}
    specs = {r: {"replicas": counts.get(r, 0)} for r in have["spec"]["tfReplicaSpecs"]}
    return {
        "spec": {
            "tfReplicaSpecs": specs,
            "runPolicy": {"schedulingPolicy": {"minAvailable": total}},
        }
    }


def _job_of(obj: dict[str, Any]) -> int | None:
    value = ((obj.get("metadata") or {}).get("labels") or {}).get(JOB_LABEL, "")
    return int(value) if str(value).isdigit() else None


def _key(doc: dict[str, Any]) -> tuple[str, str]:
    ann = (doc.get("metadata") or {}).get("annotations") or {}
    return ann.get(INCARNATION, ""), ann.get("dmlsched.io/placement", "")


def plan(
    state: dict[str, Any], observed: Iterable[dict[str, Any]], kind: str, opts: ExportOptions
) -> list[Action]:
    """What to do so that the cluster says ``state`` (module docstring); pure."""
    if kind not in KINDS:
        raise InvalidInput("kind", kind, " | ".join(KINDS))
    if not isinstance(state, dict) or not isinstance(state.get("jobs"), list):
        raise InvalidInput("state", type(state).__name__, "a GET /v1/state snapshot")
    jobs = {int(j["id"]): j for j in state["jobs"] if isinstance(j, dict) and "id" in j}
    have: dict[int, dict[str, Any]] = {}
    for seen in observed:
        j = _job_of(seen)
        if j is not None:
            have[j] = seen
    actions: list[Action] = []
    for j in sorted(set(jobs) | set(have)):
        job, obj = jobs.get(j), have.get(j)
        name = obj["metadata"]["name"] if obj else f"dmlsched-job-{j}"
        if obj is not None and obj["metadata"].get("deletionTimestamp"):
            continue  # on its way out: the next pass sees whether it is gone
        if job is None or job.get("state") in _GONE:
            if obj is not None:
                why = job["state"] if job else "unknown to the service"
                actions.append(Action("delete", kind, name, j, why))
            continue
        if not job.get("placement"):
            if obj is not None and any(_replicas(kind, obj).values()):
                body = _scale_body(kind, obj, {})
                actions.append(Action("scale", kind, name, j, "not placed: to 0", body))
            continue
        want = manifest(kind, job, opts)
        if obj is None:
            actions.append(Action("create", kind, want["metadata"]["name"], j, "placed", want))
        elif _key(obj) != _key(want):
            inc = _key(want)[0]
            actions.append(Action("delete", kind, name, j, f"new incarnation {inc}"))
        elif _replicas(kind, obj) != _replicas(kind, want):
            body = _scale_body(kind, obj, _replicas(kind, want))
            actions.append(Action("scale", kind, name, j, "counts drifted", body))
    return actions


def _status(e: Exception) -> int | None:
    return getattr(e, "status", None)


def apply_actions(api: Any, actions: Iterable[Action], namespace: str) -> list[Action]:
    """Carry ``actions`` out through a ``CustomObjectsApi``; returns those that changed state."""
    from kubernetes.client.exceptions import ApiException

    done = []
    for a in actions:
        group, version, plural = API[a.kind]
        try:
            if a.verb == "create":
                api.create_namespaced_custom_object(group, version, namespace, plural, a.body)
            elif a.verb == "scale":
                api.patch_namespaced_custom_object(
                    group, version, namespace, plural, a.name, a.body, _content_type=_MERGE
                )
            elif a.verb == "delete":
                api.delete_namespaced_custom_object(
                    group, version, namespace, plural, a.name, propagation_policy="Foreground"
                )
            else:
                raise InvalidInput("action", a.verb, "create | scale | delete")
        except ApiException as e:
            if (a.verb, _status(e)) in (("create", 409), ("delete", 404), ("scale", 404)):
                continue  # someone else (or an earlier pass) got there first
            raise
        done.append(a)
    return done


def list_objects(api: Any, kind: str, namespace: str) -> list[dict[str, Any]]:
    group, version, plural = API[kind]
    got = api.list_namespaced_custom_object(
        group, version, namespace, plural, label_selector=JOB_LABEL
    )
    return list(got.get("items") or [])


def sync(
    api: Any, state: dict[str, Any], kind: str, opts: ExportOptions
) -> tuple[list[Action], list[Action]]:
    """One pass: (planned, carried out)."""
    actions = plan(state, list_objects(api, kind, opts.namespace), kind, opts)
    return actions, apply_actions(api, actions, opts.namespace)


def watch(
    api: Any,
    fetch_state: Callable[[], dict[str, Any]],
    kind: str,
    opts: ExportOptions,
    *,
    interval: float,
    report: Callable[[Action], None],
    passes: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Passes every ``interval`` seconds (``passes`` of them, or until interrupted)."""
    n = 0
    while passes is None or n < passes:
        _, done = sync(api, fetch_state(), kind, opts)
        for a in done:
            report(a)
        n += 1
        if passes is None or n < passes:
            sleep(interval)
    return n
