"""One evaluator per kind family: read a job's ``status`` and name its phase.

Every evaluator takes the whole object (a mapping, already checked by
``jobsync.evaluate``) and returns an ``Evaluation`` without ``kind``, which
the caller fills in. None of them raises on malformed status data:

- no ``status`` at all means the operator has not looked at the job yet:
  PENDING;
- a ``status`` that is not an object, a ``conditions`` that is not a list, or
  a status string that is not a string cannot be read: UNKNOWN, with a reason
  that says what was seen;
- condition entries that are not objects, or whose ``type`` is not a string,
  are ignored (one bad entry must not hide the good ones beside it).

A condition counts only when its ``status`` is ``"True"`` (YAML 1.1 turns an
unquoted ``True`` into a boolean, which is accepted too). Order, duplicates
and unknown condition types never change a verdict; where two conditions
compete, the later ``lastTransitionTime`` wins, then a fixed order by type.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any

from jobsync import clock
from jobsync.model import Evaluation, Phase

Condition = Mapping[str, Any]


# --- small readers that never raise ---------------------------------------------------------------


def _text(value: Any) -> str:
    """``value`` when it is a string, else ""; status fields are not trusted to be strings."""
    return value if isinstance(value, str) else ""


def timestamp_text(value: Any) -> str | None:
    """An RFC 3339 string from a status field, or None.

    YAML 1.1 parses an unquoted ``2019-01-11T00:51:48Z`` (as older kubectl
    printed it) into a datetime, so those are turned back into text.
    """
    if isinstance(value, str):
        return value or None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, date):
        return value.isoformat()
    return None


def _epoch(condition: Condition) -> float:
    """The condition's lastTransitionTime for ordering; unknown times sort first."""
    seconds = clock.parse(timestamp_text(condition.get("lastTransitionTime")))
    return -math.inf if seconds is None else seconds


def _status_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | Evaluation:
    """``status`` as a mapping, or the verdict when there is none or it is unreadable."""
    status = obj.get("status")
    if status is None:
        return Evaluation(Phase.PENDING, "NoStatus", "the controller has not reported a status yet")
    if not isinstance(status, Mapping):
        return Evaluation(Phase.UNKNOWN, f"MalformedStatus: status is a {type(status).__name__}")
    return status


def _conditions(status: Mapping[str, Any]) -> list[Condition] | Evaluation:
    """The well-formed entries of ``status.conditions``, or UNKNOWN when it is not a list."""
    raw = status.get("conditions")
    if raw is None:
        return []
    if not isinstance(raw, list):
        return Evaluation(Phase.UNKNOWN, f"MalformedConditions: conditions is a {type(raw).__name__}")
    return [c for c in raw if isinstance(c, Mapping) and isinstance(c.get("type"), str)]


def _is_true(condition: Condition) -> bool:
    status = condition.get("status")
    return status == "True" or status is True


def _latest(conditions: Iterable[Condition]) -> Condition | None:
    """The most recent condition; ties broken by content so order never matters."""
    return max(
        conditions,
        key=lambda c: (
            _epoch(c),
            _text(c.get("reason")),
            _text(c.get("message")),
            timestamp_text(c.get("lastTransitionTime")) or "",
        ),
        default=None,
    )


def _true_by_type(conditions: Iterable[Condition]) -> dict[str, Condition]:
    """The latest condition with status True for each type."""
    grouped: dict[str, list[Condition]] = {}
    for condition in conditions:
        if _is_true(condition):
            grouped.setdefault(condition["type"], []).append(condition)
    return {kind: c for kind, group in grouped.items() if (c := _latest(group)) is not None}


def _pick(true: Mapping[str, Condition], types: Iterable[str]) -> tuple[str, Condition] | None:
    """Among ``types`` present in ``true``, the one that changed last; earlier in ``types`` wins ties."""
    candidates = [(t, true[t]) for t in types if t in true]
    if not candidates:
        return None
    order = {t: i for i, (t, _) in enumerate(candidates)}
    return max(candidates, key=lambda tc: (_epoch(tc[1]), -order[tc[0]]))


def _from_condition(phase: Phase, condition: Condition, default_reason: str = "") -> Evaluation:
    """A verdict that quotes the deciding condition."""
    return Evaluation(
        phase,
        _text(condition.get("reason")) or default_reason or condition["type"],
        _text(condition.get("message")),
        timestamp_text(condition.get("lastTransitionTime")),
    )


def _read_conditions(
    obj: Mapping[str, Any],
) -> tuple[Mapping[str, Any], list[Condition], dict[str, Condition]] | Evaluation:
    """(status, its well-formed conditions, the True ones by type), or the verdict when unreadable."""
    status = _status_of(obj)
    if isinstance(status, Evaluation):
        return status
    conditions = _conditions(status)
    if isinstance(conditions, Evaluation):
        return conditions
    return status, conditions, _true_by_type(conditions)


def _ended_or_suspended(true: Mapping[str, Condition], success: str) -> Evaluation | None:
    """Every condition family agrees: ``Failed`` or ``success`` end the job (the later wins), then Suspended."""
    if ended := _pick(true, ("Failed", success)):
        kind, condition = ended
        return _from_condition(Phase.FAILED if kind == "Failed" else Phase.SUCCEEDED, condition)
    if "Suspended" in true:
        return _from_condition(Phase.SUSPENDED, true["Suspended"])
    return None


def _unrecognised(conditions: list[Condition], known: frozenset[str]) -> Evaluation | None:
    """UNKNOWN when there are conditions but none of a type this family knows."""
    if not conditions or any(c["type"] in known for c in conditions):
        return None
    seen = sorted({c["type"] for c in conditions})
    return Evaluation(Phase.UNKNOWN, f"UnrecognisedConditions: types {seen}")


def _count(value: Any) -> int:
    """A replica/job counter; anything that is not a plain number counts as 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return 0
    return int(value) if math.isfinite(value) else 0


# --- Kubeflow training-operator v1 -----------------------------------------------------------------

_KUBEFLOW_V1_TYPES = frozenset({"Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended"})


def kubeflow_v1(obj: Mapping[str, Any]) -> Evaluation:
    """PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob (``kubeflow.org/v1``).

    The operator keeps old conditions with status False (Running after the
    job ends, Suspended after a resume), so only True ones are read:
    Succeeded or Failed (the later one when both, Failed on a tie) end the
    job; then Suspended; then Running or Restarting (the later one; a
    restart is named in the reason); Created alone or no conditions is
    PENDING.
    """
    read = _read_conditions(obj)
    if isinstance(read, Evaluation):
        return read
    _, conditions, true = read
    if verdict := _ended_or_suspended(true, "Succeeded"):
        return verdict
    if active := _pick(true, ("Restarting", "Running")):
        kind, condition = active
        evaluation = _from_condition(Phase.RUNNING, condition)
        if kind == "Restarting" and "restart" not in evaluation.reason.lower():
            evaluation = Evaluation(
                Phase.RUNNING, f"Restarting: {evaluation.reason}", evaluation.message, evaluation.since
            )
        return evaluation
    if unknown := _unrecognised(conditions, _KUBEFLOW_V1_TYPES):
        return unknown
    if "Created" in true:
        return _from_condition(Phase.PENDING, true["Created"])
    return Evaluation(Phase.PENDING, "NoActiveCondition", "no condition is True yet")


# --- Kubeflow Trainer v2 -------------------------------------------------------------------------

_TRAINER_V2_TYPES = frozenset({"Created", "Complete", "Failed", "Suspended"})


def trainer_v2(obj: Mapping[str, Any]) -> Evaluation:
    """TrainJob (``trainer.kubeflow.org/v1alpha1``).

    Complete or Failed end the job, then Suspended; otherwise it is RUNNING
    while ``status.jobsStatus`` counts an active child Job, else PENDING.
    A ``jobsStatus`` that is not a list, or entries that are not objects,
    count as no active jobs.
    """
    read = _read_conditions(obj)
    if isinstance(read, Evaluation):
        return read
    status, conditions, true = read
    if verdict := _ended_or_suspended(true, "Complete"):
        return verdict

    jobs = status.get("jobsStatus")
    jobs = [j for j in jobs if isinstance(j, Mapping)] if isinstance(jobs, list) else []
    active = [j for j in jobs if _count(j.get("active")) > 0]
    if active:
        names = ", ".join(sorted(_text(j.get("name")) or "?" for j in active))
        return Evaluation(Phase.RUNNING, "JobsActive", f"active child jobs: {names}")
    if unknown := _unrecognised(conditions, _TRAINER_V2_TYPES):
        return unknown
    if "Created" in true:
        return _from_condition(Phase.PENDING, true["Created"])
    return Evaluation(Phase.PENDING, "NoActiveJobs", "no child job is active yet")


# --- batch/v1 Job --------------------------------------------------------------------------------

_BATCH_TYPES = frozenset({"Complete", "Failed", "Suspended", "SuccessCriteriaMet", "FailureTarget"})


def batch_job(obj: Mapping[str, Any]) -> Evaluation:
    """``batch/v1`` Job.

    Complete or Failed end the job, then Suspended. SuccessCriteriaMet and
    FailureTarget come first, while the Job's pods are still terminating:
    the verdict is known but the job has not ended, so RUNNING. Otherwise
    RUNNING while ``status.active`` > 0, else PENDING.
    """
    read = _read_conditions(obj)
    if isinstance(read, Evaluation):
        return read
    status, conditions, true = read
    if verdict := _ended_or_suspended(true, "Complete"):
        return verdict
    if ending := _pick(true, ("FailureTarget", "SuccessCriteriaMet")):
        kind, condition = ending
        evaluation = _from_condition(Phase.RUNNING, condition)
        return replace(evaluation, reason=f"{kind}: {evaluation.reason} (pods terminating)")
    active = _count(status.get("active"))
    if active > 0:
        return Evaluation(Phase.RUNNING, "Active", f"{active} active pod(s)", timestamp_text(status.get("startTime")))
    if unknown := _unrecognised(conditions, _BATCH_TYPES):
        return unknown
    return Evaluation(Phase.PENDING, "NoActivePods", "no pod is active yet")


# --- SageMaker: one status string, read through a table -------------------------------------------

# Written by every job controller of the SageMaker Operators for Kubernetes on
# first touch (controllers/common.go, InitializingJobStatus).
_SYNCHRONIZING = "SynchronizingK8sJobWithSageMaker"

# The SageMaker job statuses (DescribeTrainingJob & co.) plus the operator's own.
_JOB_PHASES: dict[str, Phase] = {
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
_TRAINING_PHASES = _with_pending(_JOB_PHASES, "ReconcilingTrainingJob")
_TUNING_PHASES = _with_pending(_JOB_PHASES, "ReconcilingTuningJob")
_PROCESSING_PHASES = _with_pending(_JOB_PHASES, "ReconcilingProcessingJob")
_TRANSFORM_PHASES = dict(_JOB_PHASES)  # the transform controller writes Failed on API errors instead

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


def _status_string(
    status: Mapping[str, Any],
    field: str,
    table: Mapping[str, Phase],
    details: Iterable[str],
    times: Iterable[str],
) -> Evaluation:
    """The phase of ``status[field]`` through ``table``.

    ``details`` name fields whose text goes into the message (the operator's
    ``additional``, the secondary status, the failure reason); ``times``
    name the timestamp fields to report as ``since``, first present wins.
    """
    value = status.get(field)
    since = next((t for name in times if (t := timestamp_text(status.get(name)))), None)
    message = "; ".join(f"{name}: {text}" for name in details if (text := _text(status.get(name))))
    if value is None or value == "":
        return Evaluation(Phase.PENDING, "NoStatus", message or f"{field} is not set yet", since)
    if not isinstance(value, str):
        return Evaluation(Phase.UNKNOWN, f"MalformedStatus: {field} is a {type(value).__name__}", message, since)
    phase = table.get(value)
    if phase is None:
        return Evaluation(Phase.UNKNOWN, f"UnrecognisedStatus: {field}={value!r}", message, since)
    return Evaluation(phase, value, message, since)


def _sagemaker(field: str, table: Mapping[str, Phase], details: tuple[str, ...] = ()) -> Callable[..., Evaluation]:
    """An evaluator for one kind of the SageMaker Operators for Kubernetes."""

    def evaluate(obj: Mapping[str, Any]) -> Evaluation:
        status = _status_of(obj)
        if isinstance(status, Evaluation):
            return status
        return _status_string(status, field, table, (*details, "additional"), ("lastCheckTime",))

    evaluate.__doc__ = f"SageMaker Operators for Kubernetes: ``status.{field}``."
    return evaluate


sagemaker_training_job = _sagemaker("trainingJobStatus", _TRAINING_PHASES, ("secondaryStatus",))
sagemaker_tuning_job = _sagemaker("hyperParameterTuningJobStatus", _TUNING_PHASES)
sagemaker_transform_job = _sagemaker("transformJobStatus", _TRANSFORM_PHASES)
sagemaker_processing_job = _sagemaker("processingJobStatus", _PROCESSING_PHASES)
sagemaker_autoscaling_policy = _sagemaker("hostingAutoscalingPolicyStatus", _AUTOSCALING_PHASES)


def sagemaker_hosting_deployment(obj: Mapping[str, Any]) -> Evaluation:
    """SageMaker Operators for Kubernetes HostingDeployment: ``status.endpointStatus``."""
    status = _status_of(obj)
    if isinstance(status, Evaluation):
        return status
    return _status_string(
        status,
        "endpointStatus",
        _ENDPOINT_PHASES,
        ("failureReason", "additional"),
        ("lastModifiedTime", "lastCheckTime"),
    )


# --- ACK SageMaker controller --------------------------------------------------------------------

_ACK_TIMES = (
    "trainingEndTime",
    "processingEndTime",
    "transformEndTime",
    "hyperParameterTuningEndTime",
    "lastModifiedTime",
)


def _ack(field: str, details: tuple[str, ...] = ()) -> Callable[..., Evaluation]:
    """An evaluator for one job kind of the ACK SageMaker controller.

    The job's status string decides as for the SageMaker operator, except
    that an ``ACK.Terminal`` condition with status True makes a job that has
    not ended FAILED: the controller has given up on it (for example, the
    SageMaker job name is already taken). A job that did end in SageMaker
    keeps that verdict. ``since`` is taken from the job's own timestamps,
    else from the ``ACK.ResourceSynced`` condition.
    """

    def evaluate(obj: Mapping[str, Any]) -> Evaluation:
        status = _status_of(obj)
        if isinstance(status, Evaluation):
            return status
        conditions = _conditions(status)
        if isinstance(conditions, Evaluation):
            conditions = []  # the status string can still decide
        true = _true_by_type(conditions)
        evaluation = _status_string(status, field, _JOB_PHASES, (*details, "failureReason"), _ACK_TIMES)
        if evaluation.since is None and (synced := _latest(c for c in conditions if c["type"] == "ACK.ResourceSynced")):
            evaluation = replace(evaluation, since=timestamp_text(synced.get("lastTransitionTime")))
        if not evaluation.terminal and (terminal := true.get("ACK.Terminal")):
            text = " ".join(t for t in (_text(terminal.get("message")), _text(terminal.get("reason"))) if t)
            return Evaluation(Phase.FAILED, "ACK.Terminal", text, timestamp_text(terminal.get("lastTransitionTime")))
        if evaluation.phase is Phase.PENDING and (recoverable := true.get("ACK.Recoverable")):
            text = _text(recoverable.get("message")) or _text(recoverable.get("reason"))
            return replace(evaluation, reason="ACK.Recoverable", message=text)
        return evaluation

    evaluate.__doc__ = f"ACK SageMaker controller: ``status.{field}`` and the ACK.Terminal condition."
    return evaluate


ack_training_job = _ack("trainingJobStatus", ("secondaryStatus",))
ack_processing_job = _ack("processingJobStatus")
ack_transform_job = _ack("transformJobStatus")
ack_tuning_job = _ack("hyperParameterTuningJobStatus")


# --- Azure ML ------------------------------------------------------------------------------------

# azure-ai-ml ``Job.status`` (../shared/seeds/003_*.txt lists the values).
_AZURE_ML_PHASES: dict[str, Phase] = {
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


def azure_ml_job(obj: Mapping[str, Any]) -> Evaluation:
    """An Azure ML job given as ``{"kind": "AzureMLJob", "name": ..., "status": ...}``.

    ``status`` is the string azure-ai-ml's ``Job.status`` returns; None (the
    job is not submitted yet) is PENDING.
    """
    name = _text(obj.get("name"))
    evaluation = _status_string(obj, "status", _AZURE_ML_PHASES, (), ())
    if name and not evaluation.message:
        evaluation = replace(evaluation, message=f"Azure ML job {name}")
    return evaluation
