"""`dmlsched k8s export`: golden files and the resources' required structure."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
import yaml
from fastapi.testclient import TestClient

from dmlsched.cli import main as cli
from dmlsched.service.app import Service, create_app
from dmlsched.service.k8s import export_state
from tests.service.helpers import add_machines, job_request, make_core, submit

DATA = Path(__file__).parent / "data" / "k8s"
SCHEMAS = json.loads((DATA / "schemas.json").read_text())

# one job co-located on one machine, one spread over three (one with an awkward name)
STATE = {
    "jobs": [
        {
            "id": 0,
            "state": "running",
            "placement": {"node-a": {"workers": 2, "ps": 1}},
            "request": job_request(),
        },
        {
            "id": 1,
            "state": "running",
            "placement": {
                "node-a": {"workers": 1, "ps": 0},
                "GPU_node.2": {"workers": 2, "ps": 1},
                "node-c": {"workers": 0, "ps": 1},
            },
            "request": job_request(worker_demand=[0.5, 4, 16, 10], ps_demand=[0, 2, 8, 0]),
        },
        {"id": 2, "state": "pending", "placement": None, "request": job_request()},
    ]
}


def _validate(doc: dict, kind: str) -> None:
    schema = {"definitions": SCHEMAS["definitions"], **SCHEMAS[kind]}
    jsonschema.validate(doc, schema)


def test_manifests_match_the_golden_files(tmp_path: Path) -> None:
    paths = export_state(STATE, tmp_path, image="example/trainer:1")
    assert [p.name for p in paths] == [
        "tfjob-0.yaml",
        "volcano-0.yaml",
        "tfjob-1.yaml",
        "volcano-1.yaml",
    ]
    for p in paths:
        golden = DATA / "golden" / p.name
        if os.environ.get("UPDATE_GOLDEN"):
            golden.parent.mkdir(exist_ok=True)
            golden.write_text(p.read_text())
        assert p.read_text() == golden.read_text(), p.name


def test_manifests_have_each_resources_required_structure(tmp_path: Path) -> None:
    for p in export_state(STATE, tmp_path, image="example/trainer:1"):
        doc = yaml.safe_load(p.read_text())
        _validate(doc, "tfjob" if p.name.startswith("tfjob") else "volcano")


def test_the_schema_check_catches_broken_manifests(tmp_path: Path) -> None:
    (p,) = [x for x in export_state(STATE, tmp_path, image="i") if x.name == "tfjob-0.yaml"]
    doc = yaml.safe_load(p.read_text())
    doc["spec"]["tfReplicaSpecs"]["Parameter"] = doc["spec"]["tfReplicaSpecs"].pop("PS")
    with pytest.raises(jsonschema.ValidationError):
        _validate(doc, "tfjob")


def test_replicas_and_affinities_say_the_allocation(tmp_path: Path) -> None:
    export_state(STATE, tmp_path, image="i")
    tf = yaml.safe_load((tmp_path / "tfjob-1.yaml").read_text())
    specs = tf["spec"]["tfReplicaSpecs"]
    assert specs["Worker"]["replicas"] == 3 and specs["PS"]["replicas"] == 2
    node = specs["PS"]["template"]["spec"]["affinity"]["nodeAffinity"]
    term = node["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"][0]["values"] == ["GPU_node.2", "node-c"]
    assert tf["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] == 5
    vc = yaml.safe_load((tmp_path / "volcano-1.yaml").read_text())
    tasks = {t["name"]: t["replicas"] for t in vc["spec"]["tasks"]}
    assert tasks == {"ps-gpu-node-2": 1, "worker-gpu-node-2": 2, "worker-node-a": 1, "ps-node-c": 1}
    ann = vc["metadata"]["annotations"]
    assert ann["volcano.sh/task-topology-affinity"] == "ps-gpu-node-2,worker-gpu-node-2"
    assert ann["volcano.sh/task-topology-task-order"].startswith("ps-")
    # co-located job: a single required node, the whole job on it
    tf0 = yaml.safe_load((tmp_path / "tfjob-0.yaml").read_text())
    w = tf0["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["affinity"]["nodeAffinity"]
    assert "preferredDuringSchedulingIgnoredDuringExecution" not in w


def test_export_from_a_live_services_state_through_the_cli(tmp_path: Path) -> None:
    core = make_core(tmp_path / "s.db", "fifo")
    add_machines(core, 3)
    submit(core, 3, epochs=50)
    core.tick()
    with TestClient(create_app(Service(core))) as c:
        state = c.get("/v1/state").json()
    (tmp_path / "state.json").write_text(json.dumps(state))
    out = tmp_path / "k8s"
    assert cli(["k8s", "export", "--state", str(tmp_path / "state.json"), "--out", str(out)]) == 0
    files = sorted(p.name for p in out.iterdir())
    placed = [j for j in state["jobs"] if j["placement"]]
    assert len(files) == 2 * len(placed) > 0
    for job in placed:
        tf = yaml.safe_load((out / f"tfjob-{job['id']}.yaml").read_text())
        _validate(tf, "tfjob")
        w = sum(p["workers"] for p in job["placement"].values())
        assert tf["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == w
        _validate(yaml.safe_load((out / f"volcano-{job['id']}.yaml").read_text()), "volcano")
    assert cli(["k8s", "export", "--out", str(out)]) == 2  # neither --server nor --state
