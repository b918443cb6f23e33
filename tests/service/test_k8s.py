"""`dmlsched k8s export`: golden files, the real CRD schemas and the operators' admission rules."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
import yaml
from fastapi.testclient import TestClient

from dmlsched.cli import main as cli
from dmlsched.errors import InvalidInput
from dmlsched.service.app import Service, create_app
from dmlsched.service.k8s import ExportOptions, export_state, manifest
from tests.service.helpers import add_machines, job_request, make_core, submit
from tests.service.k8s_checks import Refused, check_manifest, check_volcano_update

DATA = Path(__file__).parent / "data" / "k8s"
OPTS = ExportOptions(image="example/trainer:1")

# one job co-located on one machine, one spread over three (one with an awkward name)
STATE = {
    "jobs": [
        {
            "id": 0,
            "state": "running",
            "work": 4000.0,
            "incarnation": 3,
            "placement": {"node-a": {"workers": 2, "ps": 1}},
            "request": job_request(),
        },
        {
            "id": 1,
            "state": "running",
            "work": 8000.0,
            "incarnation": 5,
            "placement": {
                "node-a": {"workers": 1, "ps": 0},
                "GPU_node.2": {"workers": 2, "ps": 1},
                "node-c": {"workers": 0, "ps": 1},
            },
            "request": job_request(worker_demand=[0.5, 4, 16, 10], ps_demand=[0, 2, 8, 0]),
        },
        {"id": 2, "state": "pending", "placement": None, "work": 1.0, "request": job_request()},
    ]
}


def test_manifests_match_the_golden_files(tmp_path: Path) -> None:
    paths = export_state(STATE, tmp_path, OPTS)
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


def test_every_manifest_passes_the_vendored_crds_and_the_admission_rules(tmp_path: Path) -> None:
    paths = export_state(STATE, tmp_path, OPTS)
    for p in paths:
        check_manifest(yaml.safe_load(p.read_text()))


@pytest.mark.parametrize(
    ("kind", "break_it", "error"),
    [
        ("tfjob", lambda d: d["spec"].update(tfReplicaSpec={}), jsonschema.ValidationError),
        (
            "tfjob",
            lambda d: d["spec"]["tfReplicaSpecs"].update(
                Parameter=d["spec"]["tfReplicaSpecs"].pop("PS")
            ),
            Refused,
        ),
        (
            "tfjob",
            lambda d: d["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0].update(
                name="trainer"
            ),
            Refused,
        ),
        (
            "tfjob",
            lambda d: d["spec"]["runPolicy"]["schedulingPolicy"].update(minAvailable="5"),
            None,
        ),
        ("volcano", lambda d: d["spec"].update(minAvailable=99), Refused),
        ("volcano", lambda d: d["spec"].update(plugins={"svc": [], "dns": []}), Refused),
        ("volcano", lambda d: d["spec"]["tasks"][0].update(replicas="2"), None),
        ("volcano", lambda d: d["metadata"].update(name="Job_1"), Refused),
    ],
)
def test_the_checks_catch_broken_manifests(kind, break_it, error) -> None:  # type: ignore[no-untyped-def]
    doc = manifest(kind, STATE["jobs"][1], OPTS)
    check_manifest(doc)
    break_it(doc)
    with pytest.raises(error or jsonschema.ValidationError):
        check_manifest(doc)


def test_volcano_allows_updates_of_replicas_only() -> None:
    doc = manifest("volcano", STATE["jobs"][1], OPTS)
    scaled = json.loads(json.dumps(doc))
    scaled["spec"]["minAvailable"] = 0
    for t in scaled["spec"]["tasks"]:
        t["replicas"] = 0
    check_volcano_update(doc, scaled)
    moved = json.loads(json.dumps(doc))
    moved["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["args"][1] = "worker"
    with pytest.raises(Refused, match="may not change"):
        check_volcano_update(doc, moved)


def test_replicas_affinities_and_peers_say_the_allocation(tmp_path: Path) -> None:
    export_state(STATE, tmp_path, OPTS)
    tf = yaml.safe_load((tmp_path / "tfjob-1.yaml").read_text())
    specs = tf["spec"]["tfReplicaSpecs"]
    assert specs["Worker"]["replicas"] == 3 and specs["PS"]["replicas"] == 2
    node = specs["PS"]["template"]["spec"]["affinity"]["nodeAffinity"]
    term = node["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"][0]["values"] == ["GPU_node.2", "node-c"]
    policy = tf["spec"]["runPolicy"]["schedulingPolicy"]
    assert policy == {"minAvailable": 5, "queue": "default"}
    vc = yaml.safe_load((tmp_path / "volcano-1.yaml").read_text())
    assert vc["spec"]["plugins"] == {"svc": [], "env": []}
    tasks = {t["name"]: t["replicas"] for t in vc["spec"]["tasks"]}
    assert tasks == {"ps-gpu-node-2": 1, "worker-gpu-node-2": 2, "worker-node-a": 1, "ps-node-c": 1}
    args = {t["name"]: t["template"]["spec"]["containers"][0]["args"] for t in vc["spec"]["tasks"]}
    # PSs numbered over the placement in machine order; the svc plugin's pod names
    base = {k: v[v.index("--index-base") + 1] for k, v in args.items()}
    assert base == {"ps-gpu-node-2": "0", "ps-node-c": "1", "worker-gpu-node-2": "0"} | {
        "worker-node-a": "2"
    }
    addrs = args["ps-node-c"][args["ps-node-c"].index("--ps-addrs") + 1].split(",")
    assert addrs == [
        "dmlsched-job-1-ps-gpu-node-2-0.dmlsched-job-1:2222",
        "dmlsched-job-1-ps-node-c-0.dmlsched-job-1:2222",
    ]
    ann = vc["metadata"]["annotations"]
    assert ann["volcano.sh/task-topology-affinity"] == "ps-gpu-node-2,worker-gpu-node-2"
    assert ann["volcano.sh/task-topology-task-order"].startswith("ps-")
    assert ann["dmlsched.io/incarnation"] == "5"
    # co-located job: a single required node, the whole job on it
    tf0 = yaml.safe_load((tmp_path / "tfjob-0.yaml").read_text())
    w = tf0["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["affinity"]["nodeAffinity"]
    assert "preferredDuringSchedulingIgnoredDuringExecution" not in w


def test_long_machine_names_keep_pod_names_within_63_characters() -> None:
    job = dict(STATE["jobs"][0], id=123456, placement={"n" * 80: {"workers": 12, "ps": 3}})
    job["placement"]["N" * 80 + "!"] = {"workers": 1, "ps": 1}
    doc = manifest("volcano", job, OPTS)
    check_manifest(doc)
    assert len({t["name"] for t in doc["spec"]["tasks"]}) == 4


def test_bad_options_and_snapshots_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="namespace"):
        ExportOptions(namespace="Prod")
    with pytest.raises(InvalidInput, match="claim"):
        ExportOptions(claim="a_b")
    with pytest.raises(InvalidInput, match=r"state\.jobs\[0\]\.work"):
        export_state({"jobs": [{"id": 0, "placement": {"a": {}}, "request": {}}]}, tmp_path, OPTS)


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
        check_manifest(tf)
        w = sum(p["workers"] for p in job["placement"].values())
        assert tf["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == w
        check_manifest(yaml.safe_load((out / f"volcano-{job['id']}.yaml").read_text()))
    assert cli(["k8s", "export", "--out", str(out)]) == 2  # neither --server nor --state
