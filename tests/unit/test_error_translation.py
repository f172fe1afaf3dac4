"""One translation from HTTP answers and transport failures to jobsync's errors, and the state
machine's retry decision for each: status by status, failure by failure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from jobsync import errors
from jobsync.cluster.errors import from_api_exception, unauthorized, unreachable

ROOT = Path(__file__).resolve().parents[2]


def answer(status: int, message: str = "said the server") -> ApiException:
    exc = ApiException(status=status, reason="Reason")
    exc.body = json.dumps({"kind": "Status", "status": "Failure", "message": message, "code": status})
    return exc


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, errors.InvalidInput),
        (401, errors.ClusterAuthError),
        (403, errors.ClusterAccessDenied),
        (404, errors.ClusterRequestFailed),
        (405, errors.ClusterRequestFailed),
        (409, errors.ClusterRequestFailed),
        (410, errors.ClusterRequestFailed),
        (422, errors.InvalidInput),
        (429, errors.TransientClusterError),
        (500, errors.TransientClusterError),
        (502, errors.TransientClusterError),
        (503, errors.TransientClusterError),
        (504, errors.TransientClusterError),
    ],
)
def test_each_http_status_becomes_the_error_that_says_what_to_do(status, error):
    translated = from_api_exception(answer(status))
    assert type(translated) is error
    assert str(status) in str(translated) and "said the server" in str(translated)


def test_an_admission_webhooks_refusal_is_the_jobs_fault_not_rbacs():
    # What kube-apiserver v1.34.4 answered when Trainer v2.3.0's validating webhook refused a TrainJob (e2e).
    message = (
        'admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request: '
        'spec.runtimePatches.manager: Invalid value: "e2e": must be a domain-prefixed path (such as "acme.io/foo")'
    )
    translated = from_api_exception(answer(403, message))

    assert type(translated) is errors.InvalidInput
    assert "RBAC" not in str(translated) and message in str(translated)
    rbac = 'trainjobs.trainer.kubeflow.org is forbidden: User "jobsync-lambda" cannot create resource "trainjobs"'
    assert type(from_api_exception(answer(403, rbac))) is errors.ClusterAccessDenied


@pytest.mark.parametrize(
    "failure",
    [
        urllib3.exceptions.ReadTimeoutError(None, "/apis", "read timed out"),
        urllib3.exceptions.NewConnectionError(None, "connection refused"),
        urllib3.exceptions.ProtocolError("connection aborted"),
        urllib3.exceptions.SSLError("certificate verify failed"),
        urllib3.exceptions.MaxRetryError(None, "/apis", reason=ConnectionRefusedError()),
        ConnectionResetError(),
    ],
)
def test_every_transport_failure_is_transient_and_names_no_host(failure):
    translated = unreachable(failure, "training")
    assert type(translated) is errors.TransientClusterError
    assert str(translated).startswith("cluster 'training': Kubernetes API unreachable (")
    assert "/apis" not in str(translated)


def test_a_401_after_fresh_credentials_points_at_the_access_entry():
    assert "access entry" in str(unauthorized("training", after_refresh=True))
    assert "access entry" not in str(unauthorized("training", after_refresh=False))


def retried_by(state: dict) -> set[str]:
    return {name for rule in state.get("Retry", []) for name in rule["ErrorEquals"]}


@pytest.mark.parametrize(
    "error",
    [
        errors.InvalidInput,
        errors.TransientClusterError,
        errors.ClusterAccessDenied,
        errors.JobConflict,
        errors.ClusterAuthError,
        errors.ClusterRequestFailed,
        errors.ClusterConfigError,
        errors.NotOurJob,
    ],
)
def test_the_state_machine_retries_exactly_the_errors_marked_retried(error):
    states = json.loads((ROOT / "statemachine" / "run_job.asl.json").read_text())["States"]
    for name in ("Submit", "Status", "Cleanup"):
        assert (error.__name__ in retried_by(states[name])) is error.retried, (name, error.__name__)
