"""The live allocation as Kubernetes manifests: TFJob (kubeflow.org/v1) and Volcano Job.

Input: the service's ``GET /v1/state`` snapshot; one pair of manifests per job that
holds a placement this slot.  Machine names are Kubernetes node names
(``kubernetes.io/hostname``).

* **TFJob** (Kubeflow training operator, ``kubeflow.org/v1``): ``PS`` and
  ``Worker`` replica specs with S and W replicas.  A TFJob has one pod template
  per replica type, so it cannot pin the k-th worker to a machine: each type
  gets a *required* node affinity to the machines the decision uses for it,
  *preferred* weights proportional to its count per machine, and workers a
  preferred pod affinity to the job's PSs (co-location, PD-ORS Fact 1).  When
  the whole job sits on one machine the required affinity alone is exact.
  Gang admission via ``runPolicy.schedulingPolicy.minAvailable = W + S``.
* **Volcano Job** (``batch.volcano.sh/v1alpha1``): exact.  One task per
  (role, machine) — ``ps-<machine>`` with s_h replicas, ``worker-<machine>``
  with w_h — each with a required node affinity to its machine, and the
  task-topology plugin's annotations: ``volcano.sh/task-topology-affinity``
  groups each machine's PS and worker tasks, ``…-task-order`` places PSs
  first.

Resources per replica are the job's α^r (worker) and β^r (PS): GPUs as
``nvidia.com/gpu`` (rounded up: the device plugin counts whole GPUs), vCPUs
as ``cpu``, GB as ``memory``/``ephemeral-storage`` in Gi.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import yaml

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import RESOURCES

__all__ = ["export_state", "tfjob", "volcano_job"]

HOST = "kubernetes.io/hostname"
LABEL = "dmlsched.io/job"


def _dns(name: str) -> str:
    """A DNS-1123 label from a machine name (lowercase, [a-z0-9-], ≤ 40 chars)."""
    s = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    return (s or "m")[:40].rstrip("-")


def _resources(demand: list[float]) -> dict[str, dict[str, Any]]:
    d = dict(zip(RESOURCES, demand, strict=True))
    req: dict[str, Any] = {}
    if d["cpu"] > 0:
        req["cpu"] = f"{d['cpu']:g}"
    if d["mem"] > 0:
        req["memory"] = f"{d['mem']:g}Gi"
    if d["storage"] > 0:
        req["ephemeral-storage"] = f"{d['storage']:g}Gi"
    out: dict[str, dict[str, Any]] = {"requests": req}
    if d["gpu"] > 0:  # extended resources: requests must equal limits
        out["limits"] = {"nvidia.com/gpu": math.ceil(d["gpu"] - 1e-9)}
        out["requests"] = {**req, "nvidia.com/gpu": math.ceil(d["gpu"] - 1e-9)}
    return out


def _node_affinity(counts: dict[str, int]) -> dict[str, Any]:
    nodes = sorted(counts)
    aff: dict[str, Any] = {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": HOST, "operator": "In", "values": nodes}]}
            ]
        }
    }
    if len(nodes) > 1:
        total = sum(counts.values())
        aff["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {
                "weight": max(1, round(100 * counts[n] / total)),
                "preference": {
                    "matchExpressions": [{"key": HOST, "operator": "In", "values": [n]}]
                },
            }
            for n in nodes
        ]
    return aff


def _name(job: dict[str, Any]) -> str:
    return f"dmlsched-job-{job['id']}"


def _container(image: str, demand: list[float], job: dict[str, Any], role: str) -> dict[str, Any]:
    return {
        "name": "tensorflow",  # the container name the TFJob operator expects
        "image": image,
        "args": ["--role", role, "--job", str(job["id"])],
        "resources": _resources(demand),
    }


def tfjob(job: dict[str, Any], request: dict[str, Any], namespace: str, image: str) -> dict:
    """One job's TFJob manifest (see the module docstring)."""
    placement: dict[str, dict[str, int]] = job["placement"]
    workers = {m: p["workers"] for m, p in placement.items() if p["workers"]}
    ps = {m: p["ps"] for m, p in placement.items() if p["ps"]}
    name = _name(job)
    labels = {LABEL: str(job["id"])}
    specs: dict[str, Any] = {}
    for role, counts, demand in (
        ("PS", ps, request["ps_demand"]),
        ("Worker", workers, request["worker_demand"]),
    ):
        if not counts:
            continue
        affinity: dict[str, Any] = {"nodeAffinity": _node_affinity(counts)}
        if role == "Worker" and ps:
            affinity["podAffinity"] = {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "topologyKey": HOST,
                            "labelSelector": {
                                "matchLabels": {
                                    "training.kubeflow.org/job-name": name,
                                    "training.kubeflow.org/replica-type": "ps",
                                }
                            },
                        },
                    }
                ]
            }
        specs[role] = {
            "replicas": sum(counts.values()),
            "restartPolicy": "OnFailure",
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "affinity": affinity,
                    "containers": [_container(image, demand, job, role.lower())],
                },
            },
        }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels),
            "annotations": {"dmlsched.io/placement": json.dumps(placement, sort_keys=True)},
        },
        "spec": {
            "runPolicy": {
                "cleanPodPolicy": "Running",
                "schedulingPolicy": {"minAvailable": sum(workers.values()) + sum(ps.values())},
            },
            "tfReplicaSpecs": specs,
        },
    }


def volcano_job(job: dict[str, Any], request: dict[str, Any], namespace: str, image: str) -> dict:
    """One job's Volcano Job manifest: exact per-machine tasks + task-topology annotations."""
    placement: dict[str, dict[str, int]] = job["placement"]
    tasks: list[dict[str, Any]] = []
    groups = []
    seen: dict[str, str] = {}
    for machine in sorted(placement):
        label = _dns(machine)
        if label in seen:  # two machine names that map to one DNS label: keep them apart
            label = f"{label}-{len(seen)}"
        seen[label] = machine
        p = placement[machine]
        here = []
        for role, n, demand in (
            ("ps", p["ps"], request["ps_demand"]),
            ("worker", p["workers"], request["worker_demand"]),
        ):
            if not n:
                continue
            task = f"{role}-{label}"
            here.append(task)
            tasks.append(
                {
                    "name": task,
                    "replicas": n,
                    "template": {
                        "metadata": {"labels": {LABEL: str(job["id"])}},
                        "spec": {
                            "restartPolicy": "OnFailure",
                            "affinity": {"nodeAffinity": _node_affinity({machine: n})},
                            "containers": [_container(image, demand, job, role)],
                        },
                    },
                }
            )
        if len(here) > 1:
            groups.append(",".join(here))
    total = sum(t["replicas"] for t in tasks)
    order = [t["name"] for t in tasks if t["name"].startswith("ps-")] + [
        t["name"] for t in tasks if t["name"].startswith("worker-")
    ]
    annotations = {"volcano.sh/task-topology-task-order": ",".join(order)}
    if groups:
        annotations["volcano.sh/task-topology-affinity"] = ";".join(groups)
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": _name(job),
            "namespace": namespace,
            "labels": {LABEL: str(job["id"])},
            "annotations": annotations,
        },
        "spec": {
            "schedulerName": "volcano",
            "minAvailable": total,
            "queue": "default",
            "tasks": tasks,
        },
    }


def export_state(
    state: dict[str, Any], out: Path, *, namespace: str = "default", image: str
) -> list[Path]:
    """Write ``tfjob-<id>.yaml`` and ``volcano-<id>.yaml`` for every placed job."""
    if not isinstance(state, dict) or not isinstance(state.get("jobs"), list):
        raise InvalidInput("state", type(state).__name__, "a GET /v1/state snapshot")
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", namespace):
        raise InvalidInput("namespace", namespace, "a DNS-1123 label")
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for job in state["jobs"]:
        if not job.get("placement"):
            continue
        request = job.get("request")
        if request is None:
            raise InvalidInput("state.jobs.request", None, "the job's request (service >= this)")
        for kind, build in (("tfjob", tfjob), ("volcano", volcano_job)):
            doc = build(job, request, namespace, image)
            path = out / f"{kind}-{job['id']}.yaml"
            path.write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
            paths.append(path)
    return paths
