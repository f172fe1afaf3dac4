"""The bad input catalogue (tests/data/bad_inputs.yaml), each entry through its real handler.

Every entry must fail with a clear error (the errorType Step Functions sees)
whose message names the field, and must create nothing: the handlers run
against a local Kubernetes API (JOBSYNC_CLUSTER_MODE=url) and moto's S3, and
no request may reach the API at all.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from moto import mock_aws

from tests.support.kube import NAMESPACE, PYTORCHJOBS, local_kube_api
from tests.support.lambdas import EVENTS, QUIET, invoke, load_event

CATALOGUE = Path(__file__).resolve().parents[1] / "data" / "bad_inputs.yaml"
ENTRIES = yaml.safe_load(CATALOGUE.read_text())
BUCKET, PREFIX = "jobsync-templates-123456789012", "jobsync/templates/"
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:bad-input"

MNIST = (EVENTS / "templates" / "pytorch-mnist.yaml").read_text()
TEMPLATES = {
    "pytorch-mnist.yaml": MNIST,
    "list.yaml": "- apiVersion: kubeflow.org/v1\n- kind: PyTorchJob\n",
    "broken.yaml": "apiVersion: kubeflow.org/v1\nkind: [PyTorchJob\n",
    "two-docs.yaml": MNIST + "\n---\n" + MNIST,
    "batch-job.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec:\n  replicas: ${WORKERS}\n"
    "  template: {spec: {containers: [{name: c, image: '${IMAGE}', args: ['${EPOCHS}']}]}}\n",
    "privileged.yaml": MNIST.replace("      template:\n        spec:\n", "      template:\n        spec:\n"
                                     "          hostNetwork: true\n", 1),
}  # fmt: skip


def bases() -> dict[str, Any]:
    return {
        "submit": {**load_event("run-job-input.json"), "execution": EXECUTION},
        "template": load_event("submit-template.json"),
        "status": load_event("status-running.json"),
        "cleanup": load_event("cleanup-failed.json"),
        "aborted": load_event("cleanup-execution-aborted.json"),
    }


def _value(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$repeat"}:
        text, times = value["$repeat"]
        return text * times
    return value


def _walk(doc: Any, pointer: str) -> tuple[Any, str | int]:
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.lstrip("/").split("/")]
    for part in parts[:-1]:
        doc = doc[int(part)] if isinstance(doc, list) else doc.setdefault(part, {})
    last = parts[-1]
    return doc, int(last) if isinstance(doc, list) else last


def build_event(entry: dict[str, Any]) -> Any:
    if "event" in entry:
        return copy.deepcopy(entry["event"])
    event = copy.deepcopy(bases()[entry["base"]])
    for pointer, value in (entry.get("set") or {}).items():
        parent, key = _walk(event, pointer)
        parent[key] = _value(value)
    for pointer in entry.get("unset") or []:
        parent, key = _walk(event, pointer)
        del parent[key]
    return event


@pytest.fixture(scope="module")
def api():
    env = {
        "JOBSYNC_NAMESPACE": NAMESPACE,
        "JOBSYNC_ALLOWED_KINDS": "PyTorchJob",
        "JOBSYNC_TEMPLATE_BUCKET": BUCKET,
        "JOBSYNC_TEMPLATE_PREFIX": PREFIX,
        **QUIET,
    }
    with mock_aws(), local_kube_api(env=env) as server:
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        for name, text in TEMPLATES.items():
            s3.put_object(Bucket=BUCKET, Key=PREFIX + name, Body=text.encode())
        yield server


def test_the_catalogue_is_well_formed_and_large_enough():
    ids = [e["id"] for e in ENTRIES]
    assert len(ids) == len(set(ids)) >= 30
    for entry in ENTRIES:
        assert entry["target"] in {"submit", "status", "cleanup", "evaluate"}, entry["id"]
        assert ("event" in entry) != ("base" in entry), entry["id"]
        assert entry["field"], entry["id"]


def test_every_base_event_is_valid_so_each_entry_fails_for_its_own_reason(api):
    # The template base, unpatched, submits a job: the catalogue's failures come from the patches.
    out = invoke("submit", bases()["template"])
    assert out["phase"] == "PENDING"
    api.delete((*PYTORCHJOBS, "ml-training", out["job"]["name"]))


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_bad_input_is_refused_by_name_and_creates_nothing(entry, api):
    event = build_event(entry)
    api.clear_requests()
    with pytest.raises(Exception) as caught:  # the type is checked by name, as Step Functions sees it
        invoke(entry["target"], event)
    error = caught.value
    assert type(error).__name__ == entry.get("error", "InvalidInput"), f"{type(error).__name__}: {error}"
    message = str(error)
    for fragment in [entry["field"], *entry.get("message", [])]:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert api.requests == [], "a rejected input must not reach the Kubernetes API"
    assert api.objects(*PYTORCHJOBS) == []
    json.dumps(event)  # every event is one Step Functions or EventBridge could send
