"""Helpers the e2e tests share: the sample PyTorchJob, waiting, conditions."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from e2e.controlplane import JOB_NAMESPACE, RUN_DURATION_ANNOTATION

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "e2e" / "testdata" / "pytorch_simple.yaml"
GROUP, VERSION, PLURAL = "kubeflow.org", "v1", "pytorchjobs"


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0, interval: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last}")


def pytorchjob(name: str, pod_annotations: dict[str, str] | None = None, restart_policy: str = "OnFailure") -> dict:
    """The v1.9.0 pytorch_simple sample, in ml-training, with small resources and kwok outcome annotations."""
    job = yaml.safe_load(SAMPLE.read_text())
    job["metadata"] = {"name": name, "namespace": JOB_NAMESPACE}
    for spec in job["spec"]["pytorchReplicaSpecs"].values():
        spec["restartPolicy"] = restart_policy
        template = spec["template"]
        template.setdefault("metadata", {})["annotations"] = {RUN_DURATION_ANNOTATION: "1s", **(pod_annotations or {})}
        for container in template["spec"]["containers"]:
            container["resources"] = {"requests": {"cpu": "100m", "memory": "128Mi"}}
    return job


def condition(obj: dict, kind: str) -> dict | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond["type"] == kind and cond["status"] == "True":
            return cond
    return None


def run_pytorchjob(api: client.ApiClient, body: dict, until: str) -> dict:
    custom = client.CustomObjectsApi(api)
    name = body["metadata"]["name"]
    custom.create_namespaced_custom_object(GROUP, VERSION, JOB_NAMESPACE, PLURAL, body)

    def finished() -> dict | None:
        job = custom.get_namespaced_custom_object(GROUP, VERSION, JOB_NAMESPACE, PLURAL, name)
        return job if condition(job, "Succeeded") or condition(job, "Failed") else None

    job = wait_for(f"PyTorchJob {name} to finish", finished, timeout=90)
    assert condition(job, until), job["status"]
    return job
