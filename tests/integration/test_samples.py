"""The real example manifests of the Kubeflow projects go through submit unchanged.

Each sample from ../shared/samples is submitted by the submit handler to the
local API with the matching real CRD (../shared/crds) registered and
fieldValidation=Strict: what jobsync adds (name, namespace, labels,
annotations) must keep every sample valid against the real schema. Skipped
when ../shared is not beside the project.
"""

from __future__ import annotations

import functools

import pytest
import yaml

from harness.kubeapi import KubeAPI
from harness.local import load_handler
from jobsync import cluster, runtime
from jobsync.evaluation.kinds import by_kind_name
from tests.conftest import SHARED, shared_path

SAMPLES = "samples/kubeflow-training-operator-v1.9.0"
CRDS = "crds/kubeflow-training-operator-v1.9.0"
KUBEFLOW_KINDS = "PyTorchJob,TFJob,MPIJob,XGBoostJob,PaddleJob,JAXJob"


def sample_files():
    folder = SHARED / SAMPLES
    return sorted(p.name for p in folder.glob("*.yaml")) if folder.exists() else ["(no ../shared)"]


@functools.cache
def kubeflow_crds() -> list[dict]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [yaml.load(crd.read_text(), Loader=loader) for crd in sorted((SHARED / CRDS).glob("*.yaml"))]


@pytest.fixture
def api(monkeypatch):
    shared_path(CRDS)  # skips without ../shared
    with KubeAPI() as server:
        for crd in kubeflow_crds():
            server.register_crd(crd)
        server.create_namespace("ml-training")
        monkeypatch.setenv("JOBSYNC_CLUSTER_MODE", "url")
        monkeypatch.setenv("JOBSYNC_KUBE_URL", server.url)
        monkeypatch.setenv("JOBSYNC_ALLOWED_KINDS", KUBEFLOW_KINDS)
        runtime.reset()
        cluster.reset_cache()
        yield server
        cluster.reset_cache()
        runtime.reset()


@pytest.mark.parametrize("sample", sample_files())
def test_sample_is_accepted_by_strict_validation_against_the_real_crd(api, lambda_context, monkeypatch, sample):
    manifest = yaml.safe_load(shared_path(SAMPLES, sample).read_text())
    # A deployment in the sample's own namespace (some samples name "kubeflow").
    namespace = manifest["metadata"].get("namespace", "ml-training")
    api.create_namespace(namespace)
    monkeypatch.setenv("JOBSYNC_NAMESPACE", namespace)
    runtime.reset()
    event = {"execution": f"arn:aws:states:us-east-1:123456789012:execution:sm:{sample[:-5]}", "job": manifest}
    out = load_handler("submit").lambda_handler(event, lambda_context)
    (spec,) = [k for k in by_kind_name(manifest["kind"]) if k.api_version == manifest["apiVersion"]]
    (created,) = api.objects(spec.group, spec.version, spec.plural)
    assert created["metadata"]["name"] == out["job"]["name"]
    assert created["spec"] == manifest["spec"]  # nothing pruned: every field is in the schema
    assert out["phase"] == "PENDING"
