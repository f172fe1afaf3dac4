"""An object's 404 is told apart from a 404 for the resource type or the path."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.exceptions import ApiException

from jobsync.cluster.errors import is_object_not_found


def answer(message: str, details: dict | None = None) -> ApiException:
    exc = ApiException(status=404, reason="Not Found")
    body = {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404, "message": message}
    exc.body = json.dumps({**body, **({"details": details} if details is not None else {})})
    return exc


@pytest.mark.parametrize(
    ("exc", "object_gone"),
    [
        (answer('pytorchjobs.kubeflow.org "job-1" not found', {"name": "job-1", "kind": "pytorchjobs"}), True),
        (answer('pytorchjobs.kubeflow.org "job-1" not found'), True),  # no details: the message says it
        (answer('namespaces "ml-training" not found', {"name": "ml-training", "kind": "namespaces"}), True),
        (answer("the server could not find the requested resource", {}), False),  # a CRD being re-established
        (answer("the server could not find the requested resource"), False),
        (answer("404 page not found"), False),
        (answer('pytorchjobs.kubeflow.org "other" not found', {"name": "other", "kind": "pytorchjobs"}), False),
        (answer('pods "job-1" not found', {"name": "job-1", "kind": "pods"}), False),
    ],
)
def test_only_a_404_that_names_the_job_or_its_namespace_is_a_disappearance(exc, object_gone):
    assert is_object_not_found(exc, "pytorchjobs", "ml-training", "job-1") is object_gone


def test_a_404_without_a_json_body_is_not_the_objects():
    exc = ApiException(status=404, reason="Not Found")
    exc.body = "<html>not found</html>"
    assert is_object_not_found(exc, "pytorchjobs", "ml-training", "job-1") is False
