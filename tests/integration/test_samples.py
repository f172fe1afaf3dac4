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

from jobsync import runtime
from jobsync.evaluation.kinds import by_kind_name
from tests.conftest import SHARED, shared_path
from tests.support.lambdas import invoke

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
def kube_crds():
    shared_path(CRDS)  # skips without ../shared
    return kubeflow_crds()


@pytest.fixture
def kube_env():
    return {"JOBSYNC_ALLOWED_KINDS": KUBEFLOW_KINDS}


@pytest.mark.parametrize("sample", sample_files())
def test_sample_is_accepted_by_strict_validation_against_the_real_crd(kube_api, lambda_context, monkeypatch, sample):
    manifest = yaml.safe_load(shared_path(SAMPLES, sample).read_text())
    # A deployment in the sample's own namespace (some samples name "kubeflow").
    namespace = manifest["metadata"].get("namespace", "ml-training")
    kube_api.create_namespace(namespace)
    monkeypatch.setenv("JOBSYNC_NAMESPACE", namespace)
    runtime.reset()
    event = {"execution": f"arn:aws:states:us-east-1:123456789012:execution:sm:{sample[:-5]}", "job": manifest}
    out = invoke("submit", event, lambda_context)
    (spec,) = [k for k in by_kind_name(manifest["kind"]) if k.api_version == manifest["apiVersion"]]
    (created,) = kube_api.objects(spec.group, spec.version, spec.plural)
    assert created["metadata"]["name"] == out["job"]["name"]
    assert created["spec"] == manifest["spec"]  # nothing pruned: every field is in the schema
    assert out["phase"] == "PENDING"
