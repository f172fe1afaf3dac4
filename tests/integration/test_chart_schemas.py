"""The chart's objects, for every kind and mode, against the API schemas of the Kubernetes releases the docs
support (tools/kubeschema.py: the OpenAPI v3 documents of k8s.io/kubernetes at each release, strict).

Needs helm (make chart) and Go with the module proxy or a warm module cache: skipped without them. The
e2e tier's real API server validates the same renderings by server-side dry-run (e2e/tests/test_chart.py).
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.support.chart import CALLBACK, render
from tools import kubeschema

RELEASES = ("v1.30.14", "v1.34.4", "v1.37.2")


@pytest.fixture(scope="module")
def releases() -> tuple[str, ...]:
    if shutil.which("go") is None:
        pytest.skip("the API schemas come from the k8s.io/kubernetes module: needs Go")
    try:
        for release in RELEASES:
            kubeschema.module_dir(release)
    except subprocess.CalledProcessError as err:
        pytest.skip(f"k8s.io/kubernetes could not be downloaded: {err.stderr.strip()[:200]}")
    return RELEASES


@pytest.mark.parametrize("mode", ["poll", "watch", "callback"])
@pytest.mark.parametrize("kinds", ["PyTorchJob", "PyTorchJob,TFJob,TrainJob,batch/v1/Job,TrainingJob"])
def test_every_object_the_chart_renders_is_valid_in_every_supported_release(releases, kinds, mode):
    values = {"allowedKinds": kinds, "completionMode": mode}
    if mode == "callback":
        values = {
            **CALLBACK,
            **values,
            "notifier": {**CALLBACK["notifier"], "nodeSelector": {"kubernetes.io/arch": "arm64"}},
        }
    docs = render(values)
    assert docs
    assert [problem for doc in docs for release in releases for problem in kubeschema.validate(doc, release)] == []


def test_the_validator_refuses_what_the_api_server_would(releases):
    """So that the check above can fail."""
    (deployment,) = [d for d in render(CALLBACK) if d["kind"] == "Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["imagePullPolicyy"] = "Always"
    container["ports"][0]["containerPort"] = "8080"
    del container["name"]
    problems = kubeschema.validate(deployment, releases[0])
    assert problems == [
        f"Deployment jobsync-notifier (Kubernetes {releases[0]}): spec.template.spec.containers[0].ports[0]"
        ".containerPort: str where integer is expected",
        f"Deployment jobsync-notifier (Kubernetes {releases[0]}): spec.template.spec.containers[0].imagePullPolicyy: "
        "unknown field",
        f"Deployment jobsync-notifier (Kubernetes {releases[0]}): spec.template.spec.containers[0].name: required",
    ]
    role = {"apiVersion": "rbac.authorization.k8s.io/v1beta1", "kind": "Role", "metadata": {"name": "old"}}
    assert kubeschema.validate(role, releases[-1]) == [
        f"Role old: rbac.authorization.k8s.io/v1beta1 Role is not served by Kubernetes {releases[-1]}"
    ]
