"""SageMaker Operators for Kubernetes: one status string per kind, read through a table."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jobsync.evaluation.conditions import evaluator, status_of, status_string
from jobsync.evaluation.phase import Evaluation, Phase

# Written by every job controller of the SageMaker Operators for Kubernetes on
# first touch (controllers/common.go, InitializingJobStatus).
_SYNCHRONIZING = "SynchronizingK8sJobWithSageMaker"

# The SageMaker job statuses (DescribeTrainingJob & co.) plus the operator's own.
JOB_PHASES: dict[str, Phase] = {
    "InProgress": Phase.RUNNING,
    "Stopping": Phase.RUNNING,
    "Completed": Phase.SUCCEEDED,
    "Failed": Phase.FAILED,
    # The operator could not reconcile and will not retry (ProcessingJob: controllers.ErrorStatus).
    "Error": Phase.FAILED,
    "Stopped": Phase.STOPPED,
    # Newer SageMaker APIs report these while a job record is removed; it will never finish.
    "Deleting": Phase.STOPPED,
    "DeleteFailed": Phase.FAILED,
    _SYNCHRONIZING: Phase.PENDING,
    "Reconciling": Phase.PENDING,
}


def _with_pending(table: Mapping[str, Phase], *statuses: str) -> dict[str, Phase]:
    return {**table, **dict.fromkeys(statuses, Phase.PENDING)}


# The kind-specific "reconciling" statuses the operator writes while it retries
# after an API error (amazon-sagemaker-operator-for-k8s, controllers/*/*_controller.go).
_TRAINING_PHASES = _with_pending(JOB_PHASES, "ReconcilingTrainingJob")
_TUNING_PHASES = _with_pending(JOB_PHASES, "ReconcilingTuningJob")
_PROCESSING_PHASES = _with_pending(JOB_PHASES, "ReconcilingProcessingJob")
_TRANSFORM_PHASES = dict(JOB_PHASES)  # the transform controller writes Failed on API errors instead

_ENDPOINT_PHASES: dict[str, Phase] = {
    _SYNCHRONIZING: Phase.PENDING,
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

# controllers/hostingautoscalingpolicy: Reconciling, Created, Error, and Deleted
# once the policy is removed (a deliberate end, like a stopped job).
_AUTOSCALING_PHASES: dict[str, Phase] = {
    "Reconciling": Phase.PENDING,
    "Created": Phase.SUCCEEDED,
    "Error": Phase.FAILED,
    "Deleted": Phase.STOPPED,
}


def _sagemaker(field: str, table: Mapping[str, Phase], details: tuple[str, ...] = ()) -> Callable[..., Evaluation]:
    """An evaluator for one kind of the SageMaker Operators for Kubernetes."""

    @evaluator
    def evaluate(obj: Mapping[str, Any]) -> Evaluation:
        return status_string(status_of(obj), field, table, (*details, "additional"), ("lastCheckTime",))

    evaluate.__doc__ = f"SageMaker Operators for Kubernetes: ``status.{field}``."
    return evaluate


sagemaker_training_job = _sagemaker("trainingJobStatus", _TRAINING_PHASES, ("secondaryStatus",))
sagemaker_tuning_job = _sagemaker("hyperParameterTuningJobStatus", _TUNING_PHASES)
sagemaker_transform_job = _sagemaker("transformJobStatus", _TRANSFORM_PHASES)
sagemaker_processing_job = _sagemaker("processingJobStatus", _PROCESSING_PHASES)
sagemaker_autoscaling_policy = _sagemaker("hostingAutoscalingPolicyStatus", _AUTOSCALING_PHASES)


@evaluator
def sagemaker_hosting_deployment(obj: Mapping[str, Any]) -> Evaluation:
    """SageMaker Operators for Kubernetes HostingDeployment: ``status.endpointStatus``."""
    return status_string(
        status_of(obj),
        "endpointStatus",
        _ENDPOINT_PHASES,
        ("failureReason", "additional"),
        ("lastModifiedTime", "lastCheckTime"),
    )
