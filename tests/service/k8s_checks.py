"""What a Kubernetes API server with the two operators installed would refuse, checked offline.

Three layers, each from the real source (``tests/service/data/k8s/crds/SOURCE.md``):

1. **The CRDs' OpenAPI v3 schemas**, vendored verbatim: TFJob from the Kubeflow
   training operator v1.9.0, Volcano Job from Volcano v1.9.0.  The API server
   validates a custom object against its CRD's structural schema and, with
   strict field validation (``kubectl apply --validate=strict``, the default
   since Kubernetes 1.27 for ``kubectl``), refuses unknown fields — so every
   object schema with ``properties`` is closed here unless the CRD says
   ``x-kubernetes-preserve-unknown-fields``; ``format: int32`` bounds integers.
2. **ObjectMeta** as the API server checks it: a DNS-1123 subdomain name
   (≤ 253), qualified label keys, label values ≤ 63.
3. **The operators' admission webhooks**: the training operator's
   ``pkg/webhooks/tensorflow/tfjob_webhook.go`` (name a DNS-1035 label, known
   replica types, a container named ``tensorflow`` with an image, ≤ 1 Chief or
   Master) and Volcano's ``pkg/webhooks/admission/jobs/validate/admit_job.go``
   (``validateJobCreate``: tasks present, DNS-1123 task names, unique, pod
   names ``<job>-<task>-<i>`` qualified names, ``0 ≤ minAvailable ≤`` total
   replicas, known plugins; ``validateJobUpdate``: only ``minAvailable`` and
   ``tasks[*].replicas`` may change).
"""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml

CRDS = Path(__file__).parent / "data" / "k8s" / "crds"
FILES = {"tfjob": "kubeflow.org_tfjobs.yaml", "volcano": "batch.volcano.sh_jobs.yaml"}
_INT32 = (-(2**31), 2**31 - 1)
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUB = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
TF_REPLICA_TYPES = {"PS", "Worker", "Chief", "Master", "Evaluator"}
VOLCANO_PLUGINS = {"svc", "env", "ssh", "mpi", "pytorch", "tensorflow"}  # v1.9.0's registry


class Refused(Exception):
    """What the API server or a webhook would answer with 422 / a denial."""


def _close(schema: Any) -> Any:
    if isinstance(schema, dict):
        out = {k: _close(v) for k, v in schema.items() if not k.startswith("x-kubernetes-")}
        if schema.get("format") == "int32":
            out["minimum"], out["maximum"] = _INT32
        if (
            schema.get("type") == "object"
            and "properties" in schema
            and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_close(v) for v in schema]
    return schema


@functools.cache
def crd_schema(kind: str, version: str) -> dict[str, Any]:
    """The vendored CRD's schema for ``version``, closed to unknown fields."""
    doc = yaml.safe_load((CRDS / FILES[kind]).read_text())
    for v in doc["spec"]["versions"]:
        if v["name"] == version:
            return _close(copy.deepcopy(v["schema"]["openAPIV3Schema"]))
    raise KeyError(f"{FILES[kind]} has no version {version}")


def _label_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS1123_SUB.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED.match(name))


def check_metadata(meta: dict[str, Any]) -> None:
    name = meta.get("name", "")
    if len(name) > 253 or not _DNS1123_SUB.match(name):
        raise Refused(f"metadata.name {name!r}: not a DNS-1123 subdomain")
    for key, value in (meta.get("labels") or {}).items():
        if not _label_key(key) or len(value) > 63 or (value and not _QUALIFIED.match(value)):
            raise Refused(f"metadata.labels {key}={value!r}: not a label")
    for key in meta.get("annotations") or {}:
        if not _label_key(key):
            raise Refused(f"metadata.annotations {key!r}: not a qualified key")


def _tf_webhook(doc: dict[str, Any]) -> None:
    name = doc["metadata"]["name"]
    if len(name) > 63 or not _DNS1035_LABEL.match(name):
        raise Refused(f"TFJob name {name!r}: not a DNS-1035 label")
    specs = doc["spec"].get("tfReplicaSpecs")
    if not specs:
        raise Refused("spec.tfReplicaSpecs: must be required")
    chief = 0
    for rtype, spec in specs.items():
        if rtype not in TF_REPLICA_TYPES:
            raise Refused(f"spec.tfReplicaSpecs[{rtype}]: unknown replica type")
        chief += rtype in ("Chief", "Master")
        containers = spec["template"]["spec"].get("containers") or []
        if not containers:
            raise Refused(f"spec.tfReplicaSpecs[{rtype}].template.spec.containers: required")
        if any(not c.get("image") for c in containers):
            raise Refused(f"spec.tfReplicaSpecs[{rtype}]: a container without an image")
        if not any(c.get("name") == "tensorflow" for c in containers):
            raise Refused(f"spec.tfReplicaSpecs[{rtype}]: no container named tensorflow")
    if chief > 1:
        raise Refused("spec.tfReplicaSpecs: more than 1 Chief or Master")


def _volcano_webhook(doc: dict[str, Any]) -> None:
    spec, name = doc["spec"], doc["metadata"]["name"]
    if len(name) > 63 or not _QUALIFIED.match(name):
        raise Refused(f"Job name {name!r}: not a qualified name")
    tasks = spec.get("tasks") or []
    if not tasks:
        raise Refused("No task specified in job spec")
    if spec.get("minAvailable", 0) < 0:
        raise Refused("job 'minAvailable' must be >= 0.")
    seen: set[str] = set()
    for i, task in enumerate(tasks):
        if not _DNS1123_LABEL.match(task["name"]) or len(task["name"]) > 63:
            raise Refused(f"task name {task['name']!r}: not a DNS-1123 label")
        if task["name"] in seen:
            raise Refused(f"duplicated task name {task['name']}")
        seen.add(task["name"])
        if task.get("replicas", 0) < 0:
            raise Refused(f"'replicas' < 0 in task: {task['name']}")
        # the webhook checks MakePodName(job, task, i) for the task's *position* i;
        # every pod name must pass, so check the largest index too
        for index in {i, max(0, task.get("replicas", 0) - 1)}:
            pod = f"{name}-{task['name']}-{index}"
            if len(pod) > 63 or not _QUALIFIED.match(pod):
                raise Refused(f"create pod with name {pod} validate failed")
    if sum(t.get("replicas", 0) for t in tasks) < spec.get("minAvailable", 0):
        raise Refused("job 'minAvailable' should not be greater than total replicas in tasks")
    for plugin in spec.get("plugins") or {}:
        if plugin not in VOLCANO_PLUGINS:
            raise Refused(f"unable to find job plugin: {plugin}")


def check_manifest(doc: dict[str, Any]) -> None:
    """Raise :class:`Refused` (or a jsonschema error) where a cluster would refuse ``doc``."""
    kind = {"TFJob": "tfjob", "Job": "volcano"}[doc["kind"]]
    version = doc["apiVersion"].split("/")[1]
    jsonschema.validate(doc, crd_schema(kind, version))
    check_metadata(doc["metadata"])
    (_tf_webhook if kind == "tfjob" else _volcano_webhook)(doc)


def check_volcano_update(old: dict[str, Any], new: dict[str, Any]) -> None:
    """Volcano's ``validateJobUpdate``: only minAvailable and task replicas may change."""
    check_manifest(new)
    a, b = copy.deepcopy(old["spec"]), copy.deepcopy(new["spec"])
    if len(a["tasks"]) != len(b["tasks"]):
        raise Refused("job updates may not add or remove tasks")
    b["minAvailable"] = a.get("minAvailable")
    for ta, tb in zip(a["tasks"], b["tasks"], strict=True):
        tb["replicas"] = ta.get("replicas")
    if a != b:
        raise Refused("job updates may not change fields other than minAvailable, replicas")
