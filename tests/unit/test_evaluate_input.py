"""evaluate() and unwrap_event(): what input is accepted, what is refused and how, and deletion."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from jobsync import Phase, evaluate
from jobsync.errors import EvaluationError
from jobsync.evaluation.evaluator import evaluate_event, not_found, unwrap_event
from tests.payloads import load_payload

# --- what evaluate() refuses -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ([], "expected a JSON object, got list"),
        ("PyTorchJob", "expected a JSON object, got str"),
        (None, "expected a JSON object, got nothing"),
        (42, "expected a JSON object, got int"),
        ({}, "field 'kind' must be a non-empty string, got nothing"),
        ({"apiVersion": "kubeflow.org/v1", "kind": ""}, "field 'kind' must be a non-empty string"),
        (
            {"apiVersion": "kubeflow.org/v1", "kind": ["PyTorchJob"]},
            "field 'kind' must be a non-empty string, got list",
        ),
        ({"kind": "PyTorchJob"}, "field 'apiVersion' must be a non-empty string, got nothing"),
        ({"apiVersion": 1, "kind": "PyTorchJob"}, "field 'apiVersion' must be a non-empty string, got int"),
        (
            {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": "x"},
            "field 'metadata' must be an object",
        ),
        ({"apiVersion": "kubeflow.org/v1", "kind": "Pod"}, "unsupported kind: apiVersion 'kubeflow.org/v1' kind 'Pod'"),
        ({"apiVersion": "v1", "kind": "AzureMLJob"}, "has no 'apiVersion'"),
    ],
)
def test_bad_input_raises_evaluation_error_naming_the_problem(obj, message):
    with pytest.raises(EvaluationError) as raised:
        evaluate(obj)

    assert message in str(raised.value)


def test_evaluation_error_is_a_value_error():
    # Callers that only know ValueError still catch it.
    with pytest.raises(ValueError, match="JSON object"):
        evaluate([])


def test_a_huge_bad_value_gives_a_short_message():
    with pytest.raises(EvaluationError) as raised:
        evaluate({"kind": [[[[[[[[list(range(10_000))]]]]]]]]})

    assert len(str(raised.value)) < 200


# --- deletion ----------------------------------------------------------------------------------------


def test_a_running_job_being_deleted_is_stopped():
    obj = load_payload("sagemaker/trainingjob_inprogress.yaml")
    obj["metadata"]["deletionTimestamp"] = "2019-11-20T23:50:00Z"

    evaluation = evaluate(obj)

    assert evaluation.phase is Phase.STOPPED
    assert evaluation.terminal
    assert evaluation.reason == "Deleting"
    assert evaluation.message == "the object is being deleted; it was RUNNING: InProgress"
    assert evaluation.since == "2019-11-20T23:50:00Z"
    assert evaluation.kind == "TrainingJob"


@pytest.mark.parametrize(
    "name",
    [
        "kubeflow_v1/pytorchjob_created.yaml",
        "kubeflow_v1/pytorchjob_created_suspended.yaml",
        "batch/job_no_status.yaml",
    ],
)
def test_any_unfinished_job_being_deleted_is_stopped(name):
    obj = load_payload(name)
    obj["metadata"]["deletionTimestamp"] = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)  # as YAML loads it

    evaluation = evaluate(obj)

    assert evaluation.phase is Phase.STOPPED
    assert evaluation.since == "2024-01-02T03:04:05Z"


@pytest.mark.parametrize("name", ["kubeflow_v1/tfjob_succeeded.yaml", "batch/job_failed.yaml"])
def test_a_finished_job_being_deleted_keeps_its_verdict(name):
    obj = load_payload(name)
    before = evaluate(obj)
    obj["metadata"]["deletionTimestamp"] = "2030-01-01T00:00:00Z"

    assert evaluate(obj) == before


@pytest.mark.parametrize("value", [None, "", 0, [], {}])
def test_an_empty_deletion_timestamp_is_no_deletion(value):
    obj = load_payload("kubeflow_v1/pytorchjob_running.yaml")
    obj["metadata"]["deletionTimestamp"] = value

    assert evaluate(obj).phase is Phase.RUNNING


# --- unwrap_event ------------------------------------------------------------------------------------


def test_the_object_itself_passes_through():
    obj = load_payload("kubeflow_v1/pytorchjob_running.yaml")

    assert unwrap_event(obj) == obj


def test_object_wrapper():
    obj = load_payload("kubeflow_v1/pytorchjob_running.yaml")

    assert unwrap_event({"object": obj}) == obj


def test_eks_call_get_of_one_object():
    obj = load_payload("kubeflow_v1/pytorchjob_running.yaml")

    assert unwrap_event({"ResponseBody": obj, "StatusCode": 200, "StatusText": "OK"}) == obj


def test_eks_call_list_of_one():
    obj = load_payload("kubeflow_v1/pytorchjob_running.yaml")
    event = {"ResponseBody": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJobList", "items": [obj]}}

    assert unwrap_event(event) == obj


def test_eks_call_list_of_a_builtin_kind_gives_items_their_kind():
    job = load_payload("batch/job_complete.yaml")
    del job["apiVersion"], job["kind"]
    event = {"ResponseBody": {"apiVersion": "batch/v1", "kind": "JobList", "items": [job]}}

    obj = unwrap_event(event)

    assert (obj["apiVersion"], obj["kind"]) == ("batch/v1", "Job")
    assert evaluate(obj).phase is Phase.SUCCEEDED


def test_eks_call_empty_list_is_not_found():
    event = {"ResponseBody": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJobList", "items": []}}

    assert unwrap_event(event) is None
    assert evaluate_event(event) == not_found("PyTorchJob")
    assert evaluate_event(event)["phase"] == "NOT_FOUND"
    assert evaluate_event(event)["terminal"] is True


def test_eks_call_list_of_several_is_an_error_naming_the_count():
    obj = load_payload("kubeflow_v1/pytorchjob_running.yaml")
    event = {"ResponseBody": {"kind": "PyTorchJobList", "items": [obj, obj, obj]}}

    with pytest.raises(EvaluationError, match=r"ResponseBody\.items' holds 3 objects"):
        unwrap_event(event)


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"ResponseBody": "not found"}, "field 'ResponseBody' must be an object, got str"),
        ({"ResponseBody": None}, "field 'ResponseBody' must be an object, got nothing"),
        ({"ResponseBody": {"kind": "PyTorchJobList", "items": {}}}, "field 'ResponseBody.items' must be a list"),
        ({"object": {"ResponseBody": []}}, "field 'ResponseBody' must be an object, got list"),
    ],
)
def test_malformed_wrappers_are_errors(event, message):
    with pytest.raises(EvaluationError) as raised:
        unwrap_event(event)

    assert message in str(raised.value)


def test_a_kind_named_items_is_not_a_list():
    # An object that has a kind is the object, whatever its other fields are called.
    obj = {"apiVersion": "batch/v1", "kind": "Job", "items": [], "status": {"active": 1}}

    assert unwrap_event({"ResponseBody": obj}) == obj


def test_evaluate_event_returns_the_evaluation_dict():
    obj = load_payload("kubeflow_v1/pytorchjob_succeeded_hyperpod.yaml")

    assert evaluate_event({"ResponseBody": obj}) == evaluate(obj).to_dict()


@pytest.mark.parametrize(
    "event",
    [None, {"object": None}, {"ResponseBody": {"kind": "JobList", "items": [None]}}, {"object": {"ResponseBody": {}}}],
)
def test_no_object_at_all_is_bad_input_not_a_missing_job(event):
    # None from unwrap_event means "the list was empty"; nothing else may look like it.
    if event == {"object": {"ResponseBody": {}}}:
        assert unwrap_event(event) == {}  # an empty object, for evaluate() to refuse
        with pytest.raises(EvaluationError, match="kind"):
            evaluate_event(event)
        return
    with pytest.raises(EvaluationError, match="got nothing"):
        unwrap_event(event)
    with pytest.raises(EvaluationError, match="got nothing"):
        evaluate_event(event)
