"""The live allocation as Kubernetes manifests that run: TFJob (kubeflow.org/v1) and Volcano Job.

Input: one job of the service's ``GET /v1/state`` snapshot (id, placement by
machine name, request, total work, incarnation); one manifest per kind for
a job that holds a placement.  Machine names are Kubernetes node names
(``kubernetes.io/hostname``).  Every container runs the trainer image
(``deploy/Dockerfile``), whose entrypoint is
:mod:`dmlsched.testbed.trainer`: the testbed's own PS and worker processes,
told by their arguments which job, incarnation and peers they belong to.

* **Volcano Job** (``batch.volcano.sh/v1alpha1``): exact.  One task per
  (role, machine) — ``ps-<machine>`` with s_h replicas, ``worker-<machine>``
  with w_h — each with a required node affinity to its machine.  Gang
  admission is the Job's PodGroup (``minAvailable`` = every process; Volcano's
  job controller creates it).  Plugins: ``svc`` (a headless Service, so pod
  ``<job>-<task>-<i>`` resolves as ``<job>-<task>-<i>.<job>``) and ``env``
  (``VK_TASK_INDEX``: the pod's index within its task).  PSs are numbered
  over the placement in machine order, so a PS task's pods are PSs
  ``B … B + s_h − 1`` (``--index-base B``) and every process gets the full
  PS address list (``--ps-addrs``).  The ``task-topology`` plugin's
  annotations group each machine's PS and worker tasks and start PSs first.
* **TFJob** (Kubeflow training operator ``v1.9.0``): ``PS`` and ``Worker``
  replica specs with S and W replicas; the operator sets ``TF_CONFIG`` (PS
  addresses and each pod's index, read by ``--ps-addrs tf-config``) and port
  ``tfjob-port`` (2222).  A TFJob has one pod template per replica type, so it
  cannot pin the k-th worker to a machine: each type gets a *required* node
  affinity to the machines the decision uses for it, *preferred* weights
  proportional to its count per machine, and workers a preferred pod
  affinity to the job's PSs (co-location, PD-ORS Fact 1); a job on one
  machine is exact.  Gang admission: ``runPolicy.schedulingPolicy``
  (``minAvailable`` = W + S, ``queue``) takes effect only when the operator
  runs with ``--gang-scheduler-name=volcano`` (it then creates a PodGroup
  and sets the pods' scheduler) — see ``docs/kubernetes.md``.

Checkpoints: every pod mounts the PersistentVolumeClaim ``claim`` (shared,
``ReadWriteMany``) at ``/ckpt``; the job's folder is ``/ckpt/job-<id>``, its
incarnation ``N`` writes ``inc-N/`` and resumes from the newest complete
checkpoint of an earlier one (``--resume auto``).  A PS checkpoints on
SIGTERM, so pods get ``terminationGracePeriodSeconds`` to do it.

Resources per replica are the job's α^r (worker) and β^r (PS): GPUs as
``nvidia.com/gpu`` (rounded up: the device plugin counts whole GPUs), vCPUs
as ``cpu``, GB as ``memory``/``ephemeral-storage`` in Gi.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import RESOURCES

__all__ = [
    "INCARNATION",
    "JOB_LABEL",
    "KINDS",
    "ExportOptions",
    "export_state",
    "manifest",
    "object_name",
    "tfjob",
    "volcano_job",
]

HOST = "kubernetes.io/hostname"
JOB_LABEL = "dmlsched.io/job"
INCARNATION = "dmlsched.io/incarnation"
KINDS = ("volcano", "tfjob")
PORT = 2222  # the TFJob operator's default tfjob-port
CKPT = "/ckpt"
_GRACE_S = 60  # a PS finishes its step and writes its shard on SIGTERM
_LABEL_MAX = 24  # pod host names <job>-worker-<label>-<i> stay within 63 characters


@dataclass(frozen=True)
class ExportOptions:
    """Where and how the manifests run (defaults: ``dmlsched k8s export``'s)."""

    image: str = "dmlsched/trainer:0.1.0"
    namespace: str = "default"
    claim: str = "dmlsched-checkpoints"
    queue: str = "default"

    def __post_init__(self) -> None:
        for field, value in (("namespace", self.namespace), ("claim", self.claim)):
            if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", value) or len(value) > 63:
                raise InvalidInput(field, value, "a DNS-1123 label")
        if not self.image or any(c.isspace() for c in self.image):
            raise InvalidInput("image", self.image, "a container image reference")


def object_name(job_id: int) -> str:
    return f"dmlsched-job-{job_id}"


def _dns(name: str) -> str:
    """A DNS-1123 label from a machine name (lowercase, [a-z0-9-], ≤ 24 chars)."""
    s = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    return (s or "m")[:_LABEL_MAX].rstrip("-")


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


def _incarnation(job: dict[str, Any]) -> int:
    inc = job.get("incarnation")
    return int(inc) if inc is not None else 0


def _trainer_args(job: dict[str, Any], role: str, n_ps: int, n_w: int) -> list[str]:
    """The trainer's command line shared by both kinds (:mod:`dmlsched.testbed.trainer`)."""
    req = job["request"]
    return [
        "--role",
        role,
        "--job",
        str(job["id"]),
        "--inc",
        str(_incarnation(job)),
        "--job-dir",
        f"{CKPT}/job-{job['id']}",
        "--ps",
        str(n_ps),
        "--workers",
        str(n_w),
        "--port",
        str(PORT),
        "--target",
        f"{float(job['work']):g}",
        "--mode",
        str(req.get("mode", "sync")),
        "--batch",
        str(int(req.get("batch", 1))),
        "--seed",
        str(1000 + int(job["id"])),  # the service's agents' seed for a job
    ]


def _pod_spec(container: dict[str, Any], affinity: dict[str, Any], opts: ExportOptions) -> dict:
    return {
        "restartPolicy": "OnFailure",
        "terminationGracePeriodSeconds": _GRACE_S,
        "affinity": affinity,
        "containers": [container],
        "volumes": [{"name": "ckpt", "persistentVolumeClaim": {"claimName": opts.claim}}],
    }


def _container(opts: ExportOptions, demand: list[float], args: list[str]) -> dict[str, Any]:
    return {
        "name": "tensorflow",  # the container name the TFJob operator requires
        "image": opts.image,
        "args": args,
        "ports": [{"name": "tfjob-port", "containerPort": PORT}],
        "resources": _resources(demand),
        "volumeMounts": [{"name": "ckpt", "mountPath": CKPT}],
    }


def _metadata(job: dict[str, Any], opts: ExportOptions, extra: dict[str, str]) -> dict[str, Any]:
    return {
        "name": object_name(int(job["id"])),
        "namespace": opts.namespace,
        "labels": {JOB_LABEL: str(job["id"])},
        "annotations": {
            INCARNATION: str(_incarnation(job)),
            "dmlsched.io/placement": json.dumps(job["placement"], sort_keys=True),
            **extra,
        },
    }


def _split(job: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    placement: dict[str, dict[str, int]] = job["placement"]
    workers = {m: int(p["workers"]) for m, p in placement.items() if p["workers"]}
    ps = {m: int(p["ps"]) for m, p in placement.items() if p["ps"]}
    if not workers or not ps:
        raise InvalidInput(
            f"jobs[{job['id']}].placement", placement, "at least one worker and one PS"
        )
    return workers, ps


def tfjob(job: dict[str, Any], opts: ExportOptions) -> dict[str, Any]:
    """One job's TFJob manifest (see the module docstring)."""
    workers, ps = _split(job)
    request = job["request"]
    name = object_name(int(job["id"]))
    n_ps, n_w = sum(ps.values()), sum(workers.values())
    specs: dict[str, Any] = {}
    for role, counts, demand in (
        ("PS", ps, request["ps_demand"]),
        ("Worker", workers, request["worker_demand"]),
    ):
        affinity: dict[str, Any] = {"nodeAffinity": _node_affinity(counts)}
        if role == "Worker":
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
        args = [*_trainer_args(job, role.lower(), n_ps, n_w), "--ps-addrs", "tf-config"]
        specs[role] = {
            "replicas": sum(counts.values()),
            "restartPolicy": "OnFailure",
            "template": {
                "metadata": {"labels": {JOB_LABEL: str(job["id"])}},
                "spec": _pod_spec(_container(opts, demand, args), affinity, opts),
            },
        }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": _metadata(job, opts, {}),
        "spec": {
            "runPolicy": {
                "cleanPodPolicy": "Running",
                "schedulingPolicy": {"minAvailable": n_ps + n_w, "queue": opts.queue},
            },
            "tfReplicaSpecs": specs,
        },
    }


def volcano_job(job: dict[str, Any], opts: ExportOptions) -> dict[str, Any]:
    """One job's Volcano Job manifest: exact per-machine tasks (see the module docstring)."""
    workers, ps = _split(job)
    request = job["request"]
    name = object_name(int(job["id"]))
    n_ps, n_w = sum(ps.values()), sum(workers.values())
    labels: dict[str, str] = {}
    for machine in sorted(job["placement"]):
        label = _dns(machine)
        while label in labels.values():  # two names, one DNS label: keep them apart
            label = f"{label[: _LABEL_MAX - 3]}-{len(labels)}"
        labels[machine] = label
    # PS k on the k-th PS slot in machine order: its pod's stable DNS name
    ps_addrs = [
        f"{name}-ps-{labels[m]}-{i}.{name}:{PORT}" for m in sorted(ps) for i in range(ps[m])
    ]
    tasks: list[dict[str, Any]] = []
    groups = []
    base = {"ps": 0, "worker": 0}
    for machine in sorted(job["placement"]):
        here = []
        for role, counts, demand in (
            ("ps", ps, request["ps_demand"]),
            ("worker", workers, request["worker_demand"]),
        ):
            n = counts.get(machine, 0)
            if not n:
                continue
            task = f"{role}-{labels[machine]}"
            here.append(task)
            args = [
                *_trainer_args(job, role, n_ps, n_w),
                "--index-base",
                str(base[role]),
                "--ps-addrs",
                ",".join(ps_addrs),
            ]
            base[role] += n
            affinity = {"nodeAffinity": _node_affinity({machine: n})}
            tasks.append(
                {
                    "name": task,
                    "replicas": n,
                    "template": {
                        "metadata": {"labels": {JOB_LABEL: str(job["id"])}},
                        "spec": _pod_spec(_container(opts, demand, args), affinity, opts),
                    },
                }
            )
        if len(here) > 1:
            groups.append(",".join(here))
    order = [t["name"] for t in tasks if t["name"].startswith("ps-")] + [
        t["name"] for t in tasks if t["name"].startswith("worker-")
    ]
    topology = {"volcano.sh/task-topology-task-order": ",".join(order)}
    if groups:
        topology["volcano.sh/task-topology-affinity"] = ";".join(groups)
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": _metadata(job, opts, topology),
        "spec": {
            "schedulerName": "volcano",
            "minAvailable": n_ps + n_w,
            "queue": opts.queue,
            "plugins": {"svc": [], "env": []},
            "tasks": tasks,
        },
    }


def manifest(kind: str, job: dict[str, Any], opts: ExportOptions) -> dict[str, Any]:
    if kind not in KINDS:
        raise InvalidInput("kind", kind, " | ".join(KINDS))
    return (volcano_job if kind == "volcano" else tfjob)(job, opts)


def _checked(job: Any, k: int) -> dict[str, Any]:
    if not isinstance(job, dict):
        raise InvalidInput(f"state.jobs[{k}]", job, "a job object")
    for key in ("id", "request", "work"):
        if job.get(key) is None:
            raise InvalidInput(f"state.jobs[{k}].{key}", None, "present (a service snapshot)")
    return job


def export_state(state: dict[str, Any], out: Path, opts: ExportOptions) -> list[Path]:
    """Write ``tfjob-<id>.yaml`` and ``volcano-<id>.yaml`` for every placed job."""
    if not isinstance(state, dict) or not isinstance(state.get("jobs"), list):
        raise InvalidInput("state", type(state).__name__, "a GET /v1/state snapshot")
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, raw in enumerate(state["jobs"]):
        if not isinstance(raw, dict) or not raw.get("placement"):
            continue
        job = _checked(raw, k)
        for kind in ("tfjob", "volcano"):
            doc = manifest(kind, job, opts)
            path = out / f"{kind}-{job['id']}.yaml"
            path.write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
            paths.append(path)
    return paths
