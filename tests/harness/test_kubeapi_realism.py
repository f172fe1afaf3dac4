"""The emulator's create path answers as kube-apiserver does for metadata clients must not or cannot set.

- ``deletionTimestamp`` and ``deletionGracePeriodSeconds`` in a create body are
  cleared (rest.BeforeCreate): a new object is never "being deleted";
- a ``resourceVersion`` in a create body is never kept: the server sets its
  own, and refuses a numeric one with 500 "resourceVersion should not be set
  on objects to be created" (what etcd3's store answers);
- label keys must be qualified names and values at most 63 characters of
  the label alphabet: anything else is 422 Invalid naming metadata.labels.
"""

from __future__ import annotations

import copy
import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from harness.kubeapi import KubeAPI
from harness.local import pytorchjob_crd

GROUP, VERSION, PLURAL, NS = "kubeflow.org", "v1", "pytorchjobs", "ml-training"


def job(name: str = "train", **meta) -> dict:
    container = {"name": "pytorch", "image": "pytorch/pytorch:2.3.0"}
    replica = {"replicas": 1, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [container]}}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, **meta},
        "spec": {"pytorchReplicaSpecs": {"Master": replica, "Worker": copy.deepcopy(replica)}},
    }


@pytest.fixture(scope="module")
def api():
    with KubeAPI() as server:
        server.register_crd(pytorchjob_crd())
        server.create_namespace(NS)
        yield server


@pytest.fixture(scope="module")
def custom(api):
    cfg = client.Configuration()
    cfg.host = api.url
    return client.CustomObjectsApi(client.ApiClient(cfg))


def create(custom, body: dict) -> dict:
    return custom.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, body)


def test_a_create_body_cannot_make_an_object_that_is_being_deleted(api, custom):
    created = create(custom, job("doomed", deletionTimestamp="2026-11-29T10:00:00Z", deletionGracePeriodSeconds=30))
    for stored in (created, api.get((GROUP, VERSION, PLURAL, NS, "doomed"))):
        assert "deletionTimestamp" not in stored["metadata"]
        assert "deletionGracePeriodSeconds" not in stored["metadata"]


def test_a_numeric_resource_version_in_a_create_body_is_refused(api, custom):
    before = api.resource_version
    with pytest.raises(ApiException) as caught:
        create(custom, job("stale", resourceVersion="12345"))
    assert caught.value.status == 500
    assert "resourceVersion should not be set on objects to be created" in json.loads(caught.value.body)["message"]
    assert api.get((GROUP, VERSION, PLURAL, NS, "stale")) is None and api.resource_version == before


def test_the_server_sets_its_own_resource_version(api, custom):
    created = create(custom, job("fresh"))
    assert created["metadata"]["resourceVersion"] == str(api.resource_version)


@pytest.mark.parametrize(
    ("labels", "fragment"),
    [
        ({"team": "v" * 64}, "must be no more than 63 characters"),
        ({"team": "-vision"}, "a valid label must be an empty string or consist of alphanumeric characters"),
        ({"bad key!": "x"}, "name part must consist of alphanumeric characters"),
        ({"k" * 64: "x"}, "name part must be no more than 63 characters"),
        ({"Example.COM/team": "x"}, "prefix part a lowercase RFC 1123 subdomain"),
        ({"a/b/c": "x"}, "a qualified name must consist of alphanumeric characters"),
    ],
)
def test_invalid_labels_are_refused_as_a_real_server_refuses_them(api, custom, labels, fragment):
    with pytest.raises(ApiException) as caught:
        create(custom, job("labelled", labels=labels))
    assert caught.value.status == 422
    status = json.loads(caught.value.body)
    assert status["reason"] == "Invalid" and fragment in status["message"], status["message"]
    assert status["details"]["causes"][0]["field"] == "metadata.labels"
    assert api.get((GROUP, VERSION, PLURAL, NS, "labelled")) is None


def test_valid_labels_are_kept(api, custom):
    labels = {"app.kubernetes.io/managed-by": "jobsync", "jobsync.io/execution": "a" * 32, "empty": "", "x": "A.b_c-1"}
    created = create(custom, job("kept", labels=labels))
    assert created["metadata"]["labels"] == labels
