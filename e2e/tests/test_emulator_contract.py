"""The fast tier's Kubernetes API emulator (harness.kubeapi) answers as the real kube-apiserver does.

The same requests, the ones jobsync and its notifier make, go to both: the e2e tier's real server and
an emulator started here with the same PyTorchJob CRD and namespace. Each answer is reduced to what
jobsync reads of it (the status code, the kind, a Status's reason, an object's identity fields, a
list's kind and version, the watch's event types) and the two must be equal: where they differ the
real server is right, and the emulator is what to fix. Nothing here is typed by hand as expected.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from e2e.controlplane import JOB_NAMESPACE, ControlPlane
from e2e.tests.runs import custom_path
from harness.kubeapi import KubeAPI
from tests.support.kube import load_crd

Answer = tuple[int, Any]
Request = Callable[[str, str, Any], Answer]
LABEL = "jobsync.io/contract"


def job(name: str, **spec_extra: Any) -> dict[str, Any]:
    container = {"name": "pytorch", "image": "docker.io/library/busybox:1.36", "command": ["true"]}
    master = {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {"containers": [container]}}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": JOB_NAMESPACE, "labels": {LABEL: "yes"}},
        "spec": {"runPolicy": {"suspend": True}, "pytorchReplicaSpecs": {"Master": master}, **spec_extra},
    }


def seen(code: int, body: Any) -> dict[str, Any]:
    """What jobsync reads of an answer: never the values that differ by server (uids, versions, times)."""
    out: dict[str, Any] = {"code": code}
    if not isinstance(body, dict):
        return out
    out["kind"] = body.get("kind")
    if body.get("kind") == "Status":
        out["reason"] = body.get("reason")
        details = body.get("details") or {}
        out["details"] = {k: details.get(k) for k in ("name", "kind") if k in details}
    meta = body.get("metadata") or {}
    if body.get("kind", "").endswith("List"):
        out["resourceVersion"] = bool(meta.get("resourceVersion"))
        out["items"] = sorted((i.get("metadata") or {}).get("name", "") for i in body.get("items") or [])
    elif meta:
        out["identity"] = {k: bool(meta.get(k)) for k in ("uid", "resourceVersion", "creationTimestamp")}
        out["name"] = meta.get("name")
        out["labels"] = meta.get("labels")
    return out


def story(request: Request, suffix: str) -> list[tuple[str, dict[str, Any]]]:
    """The requests, in order, and what each answer says; ``suffix`` keeps the two servers' names apart."""
    name = f"contract-{suffix}"
    jobs = custom_path("pytorchjobs")
    strict = "?fieldValidation=Strict"
    steps: list[tuple[str, dict[str, Any]]] = []

    def step(what: str, method: str, path: str, body: Any = None) -> Any:
        code, answer = request(method, path, body)
        steps.append((what, seen(code, answer)))
        return answer

    created = step("create", "POST", jobs + strict, job(name))
    step("create again", "POST", jobs + strict, job(name))
    step("create with an unknown field", "POST", jobs + strict, job(f"{name}-typo", replicaSpec={}))
    step("get", "GET", custom_path("pytorchjobs", name))
    step("get a missing job", "GET", custom_path("pytorchjobs", f"{name}-missing"))
    step("get from a resource type that is not served", "GET", custom_path("nosuchjobs", name))
    step("list by label", "GET", jobs + "?" + urllib.parse.urlencode({"labelSelector": f"{LABEL}=yes"}))
    step(
        "list pods by label",
        "GET",
        f"/api/v1/namespaces/{JOB_NAMESPACE}/pods?labelSelector=training.kubeflow.org%2Fjob-name%3D{name}",
    )
    events = urllib.parse.urlencode({"fieldSelector": f"involvedObject.name={name}-master-0"})
    step("list a pod's events", "GET", f"/api/v1/namespaces/{JOB_NAMESPACE}/events?{events}")
    step("a missing pod's log", "GET", f"/api/v1/namespaces/{JOB_NAMESPACE}/pods/{name}-missing/log?limitBytes=4096")
    wrong_uid = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "not-its-uid"}}
    step("delete with another uid as precondition", "DELETE", custom_path("pytorchjobs", name), wrong_uid)
    uid = (created.get("metadata") or {}).get("uid")
    right_uid = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid}}
    step("delete with its uid as precondition", "DELETE", custom_path("pytorchjobs", name), right_uid)
    step("delete a missing job", "DELETE", custom_path("pytorchjobs", f"{name}-missing"), right_uid)
    return steps


def normalise(steps: list[tuple[str, dict[str, Any]]], suffix: str) -> list[tuple[str, dict[str, Any]]]:
    return [(what, json.loads(json.dumps(answer).replace(suffix, "X"))) for what, answer in steps]


@pytest.fixture
def emulator() -> Iterator[KubeAPI]:
    api = KubeAPI().start()
    api.strict_resources = True  # only what a CRD serves, as a real server (the fast tier's default is lenient)
    api.register_crd(load_crd())
    api.create_namespace(JOB_NAMESPACE)
    try:
        yield api
    finally:
        api.stop()


def http(base: str) -> Request:
    def request(method: str, path: str, body: Any) -> Answer:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(base + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, _json(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, _json(err.read())

    return request


def _json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data.decode(errors="replace")


def test_the_emulator_answers_jobsyncs_requests_as_the_real_server(
    control_plane: ControlPlane, emulator: KubeAPI
) -> None:
    def real(method: str, path: str, body: Any) -> Answer:
        resp = control_plane.request(method, path, body)
        return resp.status, resp.body

    real_steps = normalise(story(real, "real"), "real")
    emulated_steps = normalise(story(http(emulator.url), "emul"), "emul")
    for (what, truth), (_, emulated) in zip(real_steps, emulated_steps, strict=True):
        assert emulated == truth, f"{what}: the emulator answers {emulated}, the real server {truth}"


def test_a_watch_from_a_lists_version_sends_the_same_events(control_plane: ControlPlane, emulator: KubeAPI) -> None:
    """List, then watch from the list's version (the notifier's way): a change made after the list is sent."""

    def events(request: Request, watch: Callable[[str], list[str]], suffix: str) -> list[str]:
        listed = request("GET", custom_path("pytorchjobs") + f"?labelSelector={LABEL}%3Dwatch-{suffix}", None)[1]
        version = listed["metadata"]["resourceVersion"]
        created = job(f"watched-{suffix}")
        created["metadata"]["labels"] = {LABEL: f"watch-{suffix}"}
        request("POST", custom_path("pytorchjobs"), created)
        request("DELETE", custom_path("pytorchjobs", f"watched-{suffix}"), None)
        query = urllib.parse.urlencode(
            {
                "watch": "true",
                "resourceVersion": version,
                "labelSelector": f"{LABEL}=watch-{suffix}",
                "timeoutSeconds": "2",
            }
        )
        return watch(custom_path("pytorchjobs") + "?" + query)

    def real_watch(path: str) -> list[str]:
        body = control_plane.request("GET", path, timeout=15).body
        return _types(body)

    def emulated_watch(path: str) -> list[str]:
        with urllib.request.urlopen(emulator.url + path, timeout=15) as resp:
            return _types(resp.read().decode())

    def real(method: str, path: str, body: Any) -> Answer:
        resp = control_plane.request(method, path, body)
        return resp.status, resp.body

    truth = events(real, real_watch, "real")
    assert truth == ["ADDED", "DELETED"]
    assert events(http(emulator.url), emulated_watch, "emul") == truth


def _types(body: Any) -> list[str]:
    """The watch's event types; MODIFIED left out: the real training-operator writes the job's status in
    between, and the emulator runs no operator."""
    text = body if isinstance(body, str) else json.dumps(body) if isinstance(body, dict) else body.decode()
    types = [json.loads(line)["type"] for line in text.splitlines() if line.strip()]
    return [t for t in types if t != "MODIFIED"]
