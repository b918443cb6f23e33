"""`dmlsched k8s apply|watch` against an API server's answers, through the real `kubernetes` client.

The official client runs unchanged — its URL building, serialization, headers
and response parsing — down to urllib3's pool, which is replaced by
:class:`FakeApiServer`: it keeps the custom objects it was given and answers
in the API server's wire format (``data/k8s/api``: Status objects, lists,
server-set metadata; foreground deletion keeps an object, with its
``deletionTimestamp``, until its pods are gone).  Every object it is asked to
store passes the vendored CRDs and the operators' admission rules
(``k8s_checks``), a Volcano update only if Volcano's webhook would allow it.
"""

from __future__ import annotations

import copy
import io
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import urllib3
from kubernetes import client

from dmlsched.cli import main as cli
from dmlsched.service.k8s import ExportOptions
from dmlsched.service.k8s_sync import API, plan, sync, watch
from tests.service.helpers import job_request
from tests.service.k8s_checks import check_manifest, check_volcano_update

API_DATA = Path(__file__).parent / "data" / "k8s" / "api"
OPTS = ExportOptions(image="example/trainer:1", namespace="ml")
_PATH = re.compile(r"^/apis/([^/]+)/([^/]+)/namespaces/([^/]+)/([^/]+)(?:/([^/]+))?$")


def _template(file: str, **fill: str) -> Any:
    text = (API_DATA / file).read_text()
    for k, v in fill.items():
        text = text.replace("{" + k + "}", v)
    return json.loads(text)


def _merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _merge(out.get(k), v)
    return out


class FakeApiServer:
    """A urllib3 pool answering as an API server with the two CRDs installed (module doc)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}  # (plural, ns, name)
        self.requests: list[dict[str, Any]] = []
        self.rv = 100
        self.deleting_passes = 1  # lists an object survives after a foreground delete

    # urllib3.PoolManager's interface, as kubernetes.client.rest calls it
    def request(self, method: str, url: str, body: Any = None, headers: Any = None, **_: Any):
        u = urlparse(url)
        m = _PATH.match(u.path)
        assert m, url
        group, version, ns, plural, name = m.groups()
        doc = json.loads(body) if body else None
        self.requests.append(
            {
                "method": method,
                "plural": plural,
                "name": name,
                "query": parse_qs(u.query),
                "content_type": (headers or {}).get("Content-Type"),
                "body": doc,
            }
        )
        status, out = self._answer(method, group, version, ns, plural, name, doc, parse_qs(u.query))
        return urllib3.HTTPResponse(
            body=io.BytesIO(json.dumps(out).encode()),
            status=status,
            headers={"Content-Type": "application/json"},
            preload_content=False,
        )

    def clear(self) -> None:
        pass

    def _meta(self, api_version: str) -> dict[str, Any]:
        self.rv += 1
        return _template(
            "server-metadata.json",
            uid=f"00000000-0000-4000-8000-{self.rv:012d}",
            rv=str(self.rv),
            apiVersion=api_version,
        )

    def _missing(self, group: str, plural: str, name: str) -> tuple[int, Any]:
        return 404, _template("status-404.json", group=group, plural=plural, name=name)

    def _answer(self, method, group, version, ns, plural, name, doc, query):  # type: ignore[no-untyped-def]
        key = (plural, ns, name or "")
        if method == "GET" and name is None:
            items = []
            for (p, n, _), obj in sorted(self.objects.items()):
                if p != plural or n != ns:
                    continue
                if obj["metadata"].get("deletionTimestamp"):
                    obj["metadata"]["_passes"] = obj["metadata"].get("_passes", 0) + 1
                    if obj["metadata"]["_passes"] > self.deleting_passes:
                        continue  # its pods are gone: so is it (see below)
                selector = query.get("labelSelector", [""])[0]
                if selector and selector not in obj["metadata"].get("labels", {}):
                    continue
                items.append({k: v for k, v in obj.items()})
            for k in [k for k, o in self.objects.items() if o["metadata"].get("_passes", 0) > 1]:
                del self.objects[k]
            kind = "Job" if plural == "jobs" else "TFJob"
            out = _template(
                "list.json", apiVersion=f"{group}/{version}", kind=kind, rv=str(self.rv)
            )
            out["items"] = [self._public(o) for o in items]
            return 200, out
        if method == "POST":
            key = (plural, ns, doc["metadata"]["name"])
            if key in self.objects:
                return 409, _template(
                    "status-409.json", group=group, plural=plural, name=doc["metadata"]["name"]
                )
            check_manifest(doc)
            obj = copy.deepcopy(doc)
            obj["metadata"].update(self._meta(doc["apiVersion"]))
            self.objects[key] = obj
            return 201, self._public(obj)
        if key not in self.objects:
            return self._missing(group, plural, name)
        obj = self.objects[key]
        if method == "PATCH":
            new = _merge(obj, doc)
            if plural == "jobs":
                check_volcano_update(self._public(obj), self._public(new))
            else:
                check_manifest(self._public(new))
            new["metadata"]["resourceVersion"] = str(self.rv + 1)
            new["metadata"]["generation"] = obj["metadata"]["generation"] + 1
            self.rv += 1
            self.objects[key] = new
            return 200, self._public(new)
        if method == "DELETE":
            assert doc is None or isinstance(doc, dict)
            obj["metadata"]["deletionTimestamp"] = "2026-01-05T10:05:00Z"
            obj["metadata"]["finalizers"] = ["foregroundDeletion"]
            return 200, self._public(obj)
        raise AssertionError(f"unexpected {method} {key}")

    @staticmethod
    def _public(obj: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        out["metadata"].pop("_passes", None)
        return out


def _api(server: FakeApiServer) -> client.CustomObjectsApi:
    cfg = client.Configuration(host="https://k8s.test:6443")
    api_client = client.ApiClient(cfg)
    api_client.rest_client.pool_manager = server  # type: ignore[assignment]  # the fake pool
    return client.CustomObjectsApi(api_client)


def _job(i: int, placement: dict | None, inc: int | None, state: str = "running") -> dict:
    return {
        "id": i,
        "state": state,
        "work": 400.0,
        "incarnation": inc,
        "placement": placement,
        "request": job_request(),
    }


A = {"node-a": {"workers": 2, "ps": 1}}
B = {"node-a": {"workers": 1, "ps": 1}, "node-b": {"workers": 1, "ps": 0}}


@pytest.mark.parametrize("kind", ["volcano", "tfjob"])
def test_apply_then_watch_creates_scales_and_deletes_the_right_objects(kind: str) -> None:
    server = FakeApiServer()
    api = _api(server)
    group, version, plural = API[kind]
    s1 = {"jobs": [_job(0, A, 1), _job(1, B, 1), _job(2, None, None, "pending")]}
    _, done = sync(api, s1, kind, OPTS)
    assert [(a.verb, a.name) for a in done] == [
        ("create", "dmlsched-job-0"),
        ("create", "dmlsched-job-1"),
    ]
    posts = [r for r in server.requests if r["method"] == "POST"]
    assert {r["plural"] for r in posts} == {plural}
    # the list asked only for our objects
    lists = [r for r in server.requests if r["method"] == "GET"]
    assert lists[0]["query"]["labelSelector"] == ["dmlsched.io/job"]
    # idempotent: the same decision again changes nothing
    assert sync(api, s1, kind, OPTS)[1] == []
    # job 0 preempted (scaled to zero), job 1 moved (new incarnation), job 3 new
    s2 = {
        "jobs": [
            _job(0, None, None, "admitted"),
            _job(1, A, 4),
            _job(2, None, None, "pending"),
            _job(3, B, 4),
        ]
    }
    _, done = sync(api, s2, kind, OPTS)
    assert [(a.verb, a.job) for a in done] == [("scale", 0), ("delete", 1), ("create", 3)]
    patch = [r for r in server.requests if r["method"] == "PATCH"][-1]
    assert patch["content_type"] == "application/merge-patch+json"
    obj0 = server.objects[(plural, "ml", "dmlsched-job-0")]
    if kind == "volcano":
        assert obj0["spec"]["minAvailable"] == 0
        assert {t["replicas"] for t in obj0["spec"]["tasks"]} == {0}
    else:
        assert {s["replicas"] for s in obj0["spec"]["tfReplicaSpecs"].values()} == {0}
    delete = [r for r in server.requests if r["method"] == "DELETE"][-1]
    assert delete["query"]["propagationPolicy"] == ["Foreground"]
    # the moved job's old incarnation is still terminating: nothing to do for it yet
    _, done = sync(api, s2, kind, OPTS)
    assert done == []
    # once it is gone, its new incarnation is created; job 3 completes and goes
    s3 = {"jobs": [*s2["jobs"][:3], _job(3, None, None, "completed")]}
    _, done = watch_once(api, s3, kind)
    assert [(a.verb, a.job) for a in done] == [("create", 1), ("delete", 3)]
    obj1 = server.objects[(plural, "ml", "dmlsched-job-1")]
    assert obj1["metadata"]["annotations"]["dmlsched.io/incarnation"] == "4"
    # an object the service does not know (its log was reset, say) goes too
    server.objects[(plural, "ml", "dmlsched-job-9")] = copy.deepcopy(obj1)
    server.objects[(plural, "ml", "dmlsched-job-9")]["metadata"].update(
        name="dmlsched-job-9", labels={"dmlsched.io/job": "9"}
    )
    _, done = watch_once(api, s3, kind)
    assert [(a.verb, a.job) for a in done] == [("delete", 9)]
    assert group in {"batch.volcano.sh", "kubeflow.org"} and version in {"v1alpha1", "v1"}


def watch_once(api: client.CustomObjectsApi, state: dict, kind: str):  # type: ignore[no-untyped-def]
    # two passes: the first lets a terminating object finish, the second acts on the rest
    out: list = []
    watch(
        api,
        lambda: state,
        kind,
        OPTS,
        interval=0.0,
        report=out.append,
        passes=2,
        sleep=lambda s: None,
    )
    return None, out


def test_two_watchers_never_make_a_job_twice() -> None:
    server = FakeApiServer()
    api = _api(server)
    state = {"jobs": [_job(0, A, 1)]}
    stale = plan(state, [], "volcano", OPTS)  # a second watcher planned before the first acted
    assert sync(api, state, "volcano", OPTS)[1]
    from dmlsched.service.k8s_sync import apply_actions

    assert apply_actions(api, stale, "ml") == []  # 409 AlreadyExists: nothing to do
    assert len(server.objects) == 1
    assert [r["method"] for r in server.requests].count("POST") == 2


def test_the_api_servers_other_errors_are_not_swallowed() -> None:
    from kubernetes.client.exceptions import ApiException

    server = FakeApiServer()
    api = _api(server)
    bad = plan({"jobs": [_job(0, A, 1)]}, [], "volcano", OPTS)
    object.__setattr__(bad[0], "verb", "scale")  # a scale of an object that is not there
    from dmlsched.service.k8s_sync import apply_actions

    assert apply_actions(api, bad, "ml") == []  # 404 on scale: gone, nothing to scale
    server.request = lambda *a, **k: urllib3.HTTPResponse(  # type: ignore[method-assign]
        body=io.BytesIO(b'{"kind":"Status","code":500}'), status=500, preload_content=False
    )
    with pytest.raises(ApiException):
        sync(api, {"jobs": []}, "volcano", OPTS)


def test_apply_says_what_is_wrong_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # no service at the address: exit 2 with one line naming --server
    code = cli(["k8s", "apply", "--server", "http://127.0.0.1:9", "--kubeconfig", "/nonexistent"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "server" in err[0]
    assert cli(["k8s", "watch", "--server", "http://x", "--interval", "0"]) == 2
    with pytest.raises(Exception, match="kind"):
        plan({"jobs": []}, [], "deployment", OPTS)
