"""ACK SageMaker controller: TrainingJob, ProcessingJob, TransformJob, HyperParameterTuningJob."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from jobsync.evaluation.conditions import Conditions, evaluator, status_of, status_string, text, timestamp_text
from jobsync.evaluation.phase import Evaluation, Phase
from jobsync.evaluation.sagemaker import JOB_PHASES

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

    @evaluator
    def evaluate(obj: Mapping[str, Any]) -> Evaluation:
        status = status_of(obj)
        conditions = Conditions.read(status, strict=False)  # the status string can still decide
        evaluation = status_string(status, field, JOB_PHASES, (*details, "failureReason"), _ACK_TIMES)
        if evaluation.since is None and (synced := conditions.latest_of_type("ACK.ResourceSynced")):
            evaluation = replace(evaluation, since=timestamp_text(synced.get("lastTransitionTime")))
        if not evaluation.terminal and (terminal := conditions.true.get("ACK.Terminal")):
            said = " ".join(t for t in (text(terminal.get("message")), text(terminal.get("reason"))) if t)
            return Evaluation(Phase.FAILED, "ACK.Terminal", said, timestamp_text(terminal.get("lastTransitionTime")))
        if evaluation.phase is Phase.PENDING and (recoverable := conditions.true.get("ACK.Recoverable")):
            said = text(recoverable.get("message")) or text(recoverable.get("reason"))
            return replace(evaluation, reason="ACK.Recoverable", message=said)
        return evaluation

    evaluate.__doc__ = f"ACK SageMaker controller: ``status.{field}`` and the ACK.Terminal condition."
    return evaluate


ack_training_job = _ack("trainingJobStatus", ("secondaryStatus",))
ack_processing_job = _ack("processingJobStatus")
ack_transform_job = _ack("transformJobStatus")
ack_tuning_job = _ack("hyperParameterTuningJobStatus")
