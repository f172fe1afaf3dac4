"""Kubeflow Spark operator's SparkApplication (``sparkoperator.k8s.io/v1beta2``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobsync.evaluation.conditions import evaluator, status_of, text, timestamp_text
from jobsync.evaluation.phase import Evaluation, Phase

#: ``status.applicationState.state`` (spark-operator v2.5) -> phase.
STATES: dict[str, Phase] = {
    "": Phase.PENDING,  # new: not submitted yet
    "SUBMITTED": Phase.PENDING,  # spark-submit ran; the driver pod starts
    "PENDING_RERUN": Phase.PENDING,  # waiting to be submitted again (a retry, or a spec change)
    "RESUMING": Phase.PENDING,  # being submitted again after a suspension
    "SUBMISSION_FAILED": Phase.PENDING,  # spark-submit failed; retried, else FAILED (onSubmissionFailureRetries)
    "RUNNING": Phase.RUNNING,
    "SUCCEEDING": Phase.RUNNING,  # the driver succeeded; COMPLETED next, or a rerun (restartPolicy Always)
    "FAILING": Phase.RUNNING,  # the driver failed; a retry (PENDING_RERUN) or FAILED next
    "INVALIDATING": Phase.RUNNING,  # the spec changed while running: stopped, then submitted again
    "COMPLETED": Phase.SUCCEEDED,
    "FAILED": Phase.FAILED,
    "SUSPENDING": Phase.SUSPENDED,
    "SUSPENDED": Phase.SUSPENDED,
    "UNKNOWN": Phase.UNKNOWN,  # the driver pod's state cannot be read (its node is lost)
}


@evaluator
def spark_application(obj: Mapping[str, Any]) -> Evaluation:
    """SparkApplication, by ``status.applicationState.state``; ``errorMessage`` is the message.

    The operator's in-between states say where a retry stands: SUBMISSION_FAILED
    is PENDING (spark-submit is retried while ``onSubmissionFailureRetries``
    allow, then the state becomes FAILED), FAILING and SUCCEEDING are RUNNING
    (the driver ended, the operator decides on a rerun). ``since`` is
    ``terminationTime`` once the application ended.
    """
    status = status_of(obj)
    app_state = status.get("applicationState")
    if app_state is None:
        app_state = {}
    if not isinstance(app_state, Mapping):
        return Evaluation(Phase.UNKNOWN, f"MalformedStatus: applicationState is a {type(app_state).__name__}")
    state = app_state.get("state")
    if state is None:
        state = ""
    if not isinstance(state, str):
        return Evaluation(Phase.UNKNOWN, f"MalformedStatus: applicationState.state is a {type(state).__name__}")
    message = text(app_state.get("errorMessage"))
    phase = STATES.get(state)
    if phase is None:
        return Evaluation(Phase.UNKNOWN, f"UnrecognisedStatus: applicationState.state={state!r}", message)
    since = timestamp_text(status.get("terminationTime")) if phase.terminal else None
    if phase is Phase.UNKNOWN:
        return Evaluation(phase, "UNKNOWN", message or "the operator cannot tell the driver's state", since)
    return Evaluation(phase, state or "New", message, since)
