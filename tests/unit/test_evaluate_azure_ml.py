"""Azure ML jobs: the ``status`` string of azure-ai-ml's ``Job``."""

from __future__ import annotations

import pytest

from jobsync import Phase, evaluate
from jobsync.errors import EvaluationError
from tests.payloads import load_payload

# Every value the azure-ai-ml Job.status reference lists (azure.ai.ml JobStatus), plus Paused.
STATUSES = {
    "NotStarted": Phase.PENDING,
    "Starting": Phase.PENDING,
    "Provisioning": Phase.PENDING,
    "Preparing": Phase.PENDING,
    "Queued": Phase.PENDING,
    "Running": Phase.RUNNING,
    "Finalizing": Phase.RUNNING,
    "CancelRequested": Phase.RUNNING,
    "NotResponding": Phase.RUNNING,
    "Completed": Phase.SUCCEEDED,
    "Failed": Phase.FAILED,
    "Canceled": Phase.STOPPED,
    "Paused": Phase.SUSPENDED,
}


@pytest.mark.parametrize(("status", "phase"), STATUSES.items())
def test_status_table(status, phase):
    obj = load_payload("azure_ml/job_running.json")
    obj["status"] = status

    evaluation = evaluate(obj)

    assert (evaluation.phase, evaluation.reason, evaluation.kind) == (phase, status, "AzureMLJob")
    assert evaluation.message == "Azure ML job sweet_basket_5h6y3w7q2c"


def test_not_submitted_yet_is_pending():
    obj = load_payload("azure_ml/job_running.json")
    obj["status"] = None

    assert evaluate(obj).phase is Phase.PENDING


@pytest.mark.parametrize("status", ["Unknown", "running", "Scheduled"])
def test_unknown_status_is_unknown(status):
    obj = load_payload("azure_ml/job_running.json")
    obj["status"] = status

    evaluation = evaluate(obj)

    assert evaluation.phase is Phase.UNKNOWN
    assert evaluation.reason == f"UnrecognisedStatus: status={status!r}"


def test_status_object_is_unknown():
    obj = load_payload("azure_ml/job_running.json")
    obj["status"] = {"conditions": []}

    assert evaluate(obj).phase is Phase.UNKNOWN


def test_an_api_version_is_refused():
    obj = load_payload("azure_ml/job_running.json")
    obj["apiVersion"] = "v1"

    with pytest.raises(EvaluationError, match="apiVersion"):
        evaluate(obj)
