"""charts/jobsync on the real control plane: every rendering is valid for the real API server, the real helm
installs it, the notifier's Deployment becomes available and rolls on an upgrade, and an uninstall leaves
nothing behind.

The rest of the e2e tier runs its stories against what the chart installed (``runs.install_chart``).
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e import helm
from e2e.controlplane import JOB_NAMESPACE, ControlPlane
from e2e.tests.jobs import wait_for
from e2e.tests.runs import chart_values, install_chart, installed

CI_VALUES = sorted((helm.CHART / "ci").glob("*-values.yaml"))
MATRIX = [
    (kinds, mode)
    for kinds in ("PyTorchJob", "PyTorchJob,TFJob,MPIJob,XGBoostJob,PaddleJob,JAXJob", "TrainJob,Job", "TrainingJob")
    for mode in ("poll", "watch", "callback")
]
PART_OF = "app.kubernetes.io/part-of=jobsync"


def api_path(doc: dict[str, Any], namespace: str) -> str:
    group, _, version = doc["apiVersion"].rpartition("/")
    plural = {"Role": "roles", "RoleBinding": "rolebindings", "ServiceAccount": "serviceaccounts"}.get(
        doc["kind"], "deployments"
    )
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    return f"{base}/namespaces/{namespace}/{plural}/{doc['metadata']['name']}"


def dry_run(cp: ControlPlane, doc: dict[str, Any]) -> tuple[int, Any]:
    """Server-side apply, validated as a create would be (Strict: an unknown field is an error), stored nowhere."""
    query = urllib.parse.urlencode(
        {"dryRun": "All", "fieldValidation": "Strict", "fieldManager": "helm", "force": "true"}
    )
    resp = cp.request(
        "PATCH", f"{api_path(doc, JOB_NAMESPACE)}?{query}", doc, content_type="application/apply-patch+yaml"
    )
    return resp.status, resp.body


@pytest.mark.parametrize("values_file", CI_VALUES, ids=lambda p: p.name)
def test_each_ci_rendering_is_valid_for_the_real_api_server(control_plane: ControlPlane, values_file: Path) -> None:
    docs = helm.template(yaml.safe_load(values_file.read_text()), JOB_NAMESPACE)
    assert docs
    for doc in docs:
        status, body = dry_run(control_plane, doc)
        assert status in (200, 201), (doc["kind"], doc["metadata"]["name"], body)


def test_the_dry_run_refuses_what_the_api_server_would_refuse(control_plane: ControlPlane) -> None:
    """So that the checks above can fail: an unknown field, and a Role rule without verbs."""
    docs = {d["kind"]: d for d in helm.template(chart_values("PyTorchJob", "callback"), JOB_NAMESPACE)}
    deployment = docs["Deployment"]
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    status, body = dry_run(control_plane, deployment)
    assert status >= 400 and "imagePullPolicyy: field not declared in schema" in body["message"], body
    role = docs["Role"]
    role["rules"][0]["verbs"] = []
    status, body = dry_run(control_plane, role)
    assert status == 422 and "verbs" in body["message"], body


@pytest.mark.parametrize(("kinds", "mode"), MATRIX)
def test_every_kind_and_mode_renders_objects_the_real_api_server_accepts(
    control_plane: ControlPlane, kinds: str, mode: str
) -> None:
    for doc in helm.template(chart_values(kinds, mode), JOB_NAMESPACE):
        status, body = dry_run(control_plane, doc)
        assert status in (200, 201), (doc["kind"], doc["metadata"]["name"], body)


def test_the_notifier_becomes_available_and_an_upgrade_rolls_it(control_plane: ControlPlane) -> None:
    admin = control_plane.write_kubeconfig("admin")
    helm.install(admin, chart_values("PyTorchJob", "callback"), JOB_NAMESPACE, wait=True)
    first = installed(control_plane, "deployments", "jobsync-notifier")
    assert first["status"].get("availableReplicas") == 1
    assert env_of(first)["JOBSYNC_ALLOWED_KINDS"] == "kubeflow.org/v1/PyTorchJob"
    first_pods = notifier_pods(control_plane)
    assert len(first_pods) == 1

    # A new AllowedKinds (or image) changes the pod template: the Deployment replaces its pod (Recreate).
    helm.install(admin, chart_values("PyTorchJob,TFJob", "callback"), JOB_NAMESPACE, wait=True)
    second = installed(control_plane, "deployments", "jobsync-notifier")
    assert env_of(second)["JOBSYNC_ALLOWED_KINDS"] == "kubeflow.org/v1/PyTorchJob,kubeflow.org/v1/TFJob"
    assert second["metadata"]["generation"] > first["metadata"]["generation"]
    wait_for(
        "the notifier's pod replaced",
        lambda: notifier_pods(control_plane) not in ([], first_pods),
        60,
    )
    role = installed(control_plane, "roles", "jobsync-notifier")
    assert {r["apiGroups"][0]: r["resources"] for r in role["rules"]} == {"kubeflow.org": ["pytorchjobs", "tfjobs"]}
    install_chart(control_plane)  # poll mode again: the notifier's objects are removed
    assert listed(control_plane, "deployments") == []


def test_an_uninstall_leaves_nothing_of_the_chart(control_plane: ControlPlane) -> None:
    admin = control_plane.write_kubeconfig("admin")
    helm.install(admin, chart_values("PyTorchJob", "callback"), JOB_NAMESPACE)
    assert listed(control_plane, "roles") == ["jobsync", "jobsync-notifier"]
    helm.uninstall(admin, JOB_NAMESPACE)
    for plural in ("roles", "rolebindings", "serviceaccounts", "deployments"):
        assert listed(control_plane, plural) == [], plural
    install_chart(control_plane)  # as the other tests expect to find it


def env_of(deployment: dict[str, Any]) -> dict[str, str]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return {item["name"]: item["value"] for item in container["env"]}


def notifier_pods(cp: ControlPlane) -> list[str]:
    selector = urllib.parse.quote("app.kubernetes.io/component=notifier")
    body = cp.request("GET", f"/api/v1/namespaces/{JOB_NAMESPACE}/pods?labelSelector={selector}").body
    return [p["metadata"]["uid"] for p in body["items"] if not p["metadata"].get("deletionTimestamp")]


def listed(cp: ControlPlane, plural: str) -> list[str]:
    group = "/apis/apps/v1" if plural == "deployments" else "/api/v1" if plural == "serviceaccounts" else None
    base = group or "/apis/rbac.authorization.k8s.io/v1"
    selector = urllib.parse.quote(PART_OF)
    body = cp.request("GET", f"{base}/namespaces/{JOB_NAMESPACE}/{plural}?labelSelector={selector}").body
    return sorted(item["metadata"]["name"] for item in body["items"])
