"""SageMaker Operators for Kubernetes and the ACK SageMaker controller: one status string through a table."""

from __future__ import annotations

import pytest

from jobsync import Phase, evaluate
from tests.payloads import load_payload

# The statuses each kind's controller writes, with the phase docs/phases.md gives them.
JOB_STATUSES = {
    "InProgress": Phase.RUNNING,
    "Stopping": Phase.RUNNING,
    "Completed": Phase.SUCCEEDED,
    "Failed": Phase.FAILED,
    "Error": Phase.FAILED,
    "Stopped": Phase.STOPPED,
    "SynchronizingK8sJobWithSageMaker": Phase.PENDING,
    "Reconciling": Phase.PENDING,
}

# (real payload, status field, statuses beyond JOB_STATUSES the operator writes for that kind)
OPERATOR_JOBS = [
    ("sagemaker/trainingjob_inprogress.yaml", "trainingJobStatus", {"ReconcilingTrainingJob": Phase.PENDING}),
    (
        "sagemaker/hyperparametertuningjob_completed.yaml",
        "hyperParameterTuningJobStatus",
        {"ReconcilingTuningJob": Phase.PENDING},
    ),
    ("sagemaker/batchtransformjob_completed.yaml", "transformJobStatus", {}),
    ("sagemaker/processingjob_inprogress.yaml", "processingJobStatus", {"ReconcilingProcessingJob": Phase.PENDING}),
]

ENDPOINT_STATUSES = {
    "SynchronizingK8sJobWithSageMaker": Phase.PENDING,
    "ReconcilingEndpoint": Phase.PENDING,
    "Creating": Phase.RUNNING,
    "Updating": Phase.RUNNING,
    "SystemUpdating": Phase.RUNNING,
    "RollingBack": Phase.RUNNING,
    "InService": Phase.SUCCEEDED,
    "Failed": Phase.FAILED,
    "OutOfService": Phase.FAILED,
    "Deleting": Phase.STOPPED,
}

AUTOSCALING_STATUSES = {"Reconciling": Phase.PENDING, "Created": Phase.SUCCEEDED, "Error": Phase.FAILED}

ACK_JOBS = [
    ("ack/trainingjob_inprogress.yaml", "trainingJobStatus"),
    ("ack/processingjob_completed.yaml", "processingJobStatus"),
    ("ack/transformjob_inprogress.yaml", "transformJobStatus"),
    ("ack/hyperparametertuningjob_stopped.yaml", "hyperParameterTuningJobStatus"),
]


def _cases(payload, field, table):
    return [pytest.param(payload, field, value, phase, id=f"{payload}:{value}") for value, phase in table.items()]


@pytest.mark.parametrize(
    ("payload", "field", "value", "phase"),
    [case for payload, field, extra in OPERATOR_JOBS for case in _cases(payload, field, {**JOB_STATUSES, **extra})]
    + _cases("sagemaker/hostingdeployment_creating.yaml", "endpointStatus", ENDPOINT_STATUSES)
    + _cases("sagemaker/hostingautoscalingpolicy_created.yaml", "hostingAutoscalingPolicyStatus", AUTOSCALING_STATUSES)
    + [case for payload, field in ACK_JOBS for case in _cases(payload, field, JOB_STATUSES)],
)
def test_status_table(payload, field, value, phase):
    obj = load_payload(payload)
    obj["status"][field] = value

    evaluation = evaluate(obj)

    assert evaluation.phase is phase
    assert evaluation.reason == value


@pytest.mark.parametrize(
    ("payload", "field"),
    [(p, f) for p, f, _ in OPERATOR_JOBS]
    + [("sagemaker/hostingdeployment_creating.yaml", "endpointStatus")]
    + [("sagemaker/hostingautoscalingpolicy_created.yaml", "hostingAutoscalingPolicyStatus")]
    + ACK_JOBS,
)
def test_unknown_status_string_is_unknown_and_quoted(payload, field):
    obj = load_payload(payload)
    obj["status"][field] = "Foo"

    evaluation = evaluate(obj)

    assert evaluation.phase is Phase.UNKNOWN
    assert evaluation.reason == f"UnrecognisedStatus: {field}='Foo'"


@pytest.mark.parametrize("value", [3, ["InProgress"], {"status": "InProgress"}, True])
def test_non_string_status_is_unknown(value):
    obj = load_payload("sagemaker/trainingjob_inprogress.yaml")
    obj["status"]["trainingJobStatus"] = value

    evaluation = evaluate(obj)

    assert evaluation.phase is Phase.UNKNOWN
    assert evaluation.reason.startswith("MalformedStatus: trainingJobStatus")


@pytest.mark.parametrize("value", [None, ""])
def test_absent_status_string_is_pending(value):
    obj = load_payload("sagemaker/trainingjob_inprogress.yaml")
    obj["status"]["trainingJobStatus"] = value

    assert evaluate(obj).phase is Phase.PENDING


def test_training_message_carries_secondary_status():
    evaluation = evaluate(load_payload("sagemaker/trainingjob_inprogress.yaml"))

    assert evaluation.message == "secondaryStatus: Downloading"


def test_reconciling_message_carries_additional():
    evaluation = evaluate(load_payload("sagemaker/trainingjob_reconciling.yaml"))

    assert evaluation.phase is Phase.PENDING
    assert (
        evaluation.message
        == "additional: Unable to describe SageMaker training job: ThrottlingException: Rate exceeded"
    )


def test_hosting_failure_carries_failure_reason():
    obj = load_payload("sagemaker/hostingdeployment_creating.yaml")
    obj["status"].update(endpointStatus="Failed", failureReason="Request to service failed.")

    evaluation = evaluate(obj)

    assert evaluation.phase is Phase.FAILED
    assert evaluation.message == "failureReason: Request to service failed."


def test_autoscaling_policy_deleted_is_stopped():
    obj = load_payload("sagemaker/hostingautoscalingpolicy_created.yaml")
    obj["status"]["hostingAutoscalingPolicyStatus"] = "Deleted"

    assert evaluate(obj).phase is Phase.STOPPED


# --- ACK ---------------------------------------------------------------------------------------------


def test_ack_terminal_fails_a_job_that_never_started():
    evaluation = evaluate(load_payload("ack/trainingjob_terminal.yaml"))

    assert evaluation.phase is Phase.FAILED
    assert evaluation.reason == "ACK.Terminal"
    assert evaluation.message.startswith("Resource already exists This resource already exists but is not managed")


def test_ack_terminal_fails_an_in_progress_job():
    obj = load_payload("ack/trainingjob_inprogress.yaml")
    obj["status"]["conditions"] += load_payload("ack/trainingjob_terminal.yaml")["status"]["conditions"]

    assert evaluate(obj).phase is Phase.FAILED


def test_ack_terminal_does_not_undo_a_completed_job():
    obj = load_payload("ack/trainingjob_completed.yaml")
    obj["status"]["conditions"] += load_payload("ack/trainingjob_terminal.yaml")["status"]["conditions"]

    assert evaluate(obj).phase is Phase.SUCCEEDED


def test_ack_terminal_false_is_ignored():
    obj = load_payload("ack/trainingjob_inprogress.yaml")
    obj["status"]["conditions"].append({"type": "ACK.Terminal", "status": "False"})

    assert evaluate(obj).phase is Phase.RUNNING


def test_ack_recoverable_explains_a_job_not_started_yet():
    obj = load_payload("ack/trainingjob_terminal.yaml")
    obj["status"]["conditions"] = [
        {"type": "ACK.Recoverable", "status": "True", "message": "AccessDeniedException: not authorized"}
    ]

    evaluation = evaluate(obj)

    assert (evaluation.phase, evaluation.reason) == (Phase.PENDING, "ACK.Recoverable")
    assert evaluation.message == "AccessDeniedException: not authorized"


def test_ack_message_carries_secondary_status_and_failure_reason():
    obj = load_payload("ack/trainingjob_inprogress.yaml")
    obj["status"].update(trainingJobStatus="Failed", secondaryStatus="Failed", failureReason="AlgorithmError: oops")

    evaluation = evaluate(obj)

    assert evaluation.phase is Phase.FAILED
    assert evaluation.message == "secondaryStatus: Failed; failureReason: AlgorithmError: oops"


def test_ack_malformed_conditions_do_not_hide_the_status_string():
    obj = load_payload("ack/trainingjob_completed.yaml")
    obj["status"]["conditions"] = "ACK.Terminal"

    assert evaluate(obj).phase is Phase.SUCCEEDED
