"""Volcano's Job (``batch.volcano.sh/v1alpha1``): a gang of tasks the Volcano scheduler places together."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobsync.evaluation.conditions import count, evaluator, status_of, text, timestamp_text
from jobsync.evaluation.phase import Evaluation, Phase

#: ``status.state.phase`` (Volcano v1.15) -> phase.
PHASES: dict[str, Phase] = {
    "": Phase.PENDING,  # the controller has not set a phase yet
    "Pending": Phase.PENDING,  # waiting in its queue for the scheduler to place the gang (minAvailable pods)
    "Running": Phase.RUNNING,
    "Restarting": Phase.RUNNING,  # a lifecycle policy restarts it: pods released, then created again
    "Completing": Phase.RUNNING,  # the required tasks completed; pods are cleaned up
    "Terminating": Phase.RUNNING,  # being terminated; pods are released (then Terminated)
    "Aborting": Phase.SUSPENDED,  # being aborted (vcctl job suspend, or a policy's AbortJob); pods released
    "Aborted": Phase.SUSPENDED,  # stays so until a ResumeJob command (vcctl job resume)
    "Completed": Phase.SUCCEEDED,
    "Terminated": Phase.FAILED,  # ended unexpectedly (a policy's TerminateJob on an event)
    "Failed": Phase.FAILED,  # restarted past maxRetry, or fewer tasks succeeded than minSuccess
}


@evaluator
def volcano_job(obj: Mapping[str, Any]) -> Evaluation:
    """Volcano Job, by ``status.state.phase``; its ``reason`` and ``message`` when set.

    An aborted job is SUSPENDED, not ended: Volcano keeps it until someone
    resumes it (``vcctl job suspend`` aborts, ``resume`` restarts), and the
    reason says Aborted every poll; but one aborted after pods failed (a
    lifecycle policy's AbortJob on PodFailed) is FAILED. ``since`` is the state's
    ``lastTransitionTime``. A PodGroup's ``Unschedulable`` condition (the gang
    does not fit) shows on the pods the scheduler could not place, which
    jobsync reads while the job is PENDING.
    """
    status = status_of(obj)
    state = status.get("state")
    if state is None:
        state = {}
    if not isinstance(state, Mapping):
        return Evaluation(Phase.UNKNOWN, f"MalformedStatus: state is a {type(state).__name__}")
    value = state.get("phase")
    if value is None:
        value = ""
    if not isinstance(value, str):
        return Evaluation(Phase.UNKNOWN, f"MalformedStatus: state.phase is a {type(value).__name__}")
    since = timestamp_text(state.get("lastTransitionTime"))
    message = text(state.get("message"))
    phase = PHASES.get(value)
    if phase is None:
        return Evaluation(Phase.UNKNOWN, f"UnrecognisedStatus: state.phase={value!r}", message, since)
    reason = value or "NoPhase"
    if said := text(state.get("reason")):
        reason = f"{value}: {said}" if value else said
    failed = count(status.get("failed"))
    if value == "Aborted" and failed:
        # An abort that follows failed pods is a lifecycle policy's answer to them (PodFailed -> AbortJob).
        said = f"aborted after {failed} pod(s) failed; it runs again only if someone resumes it"
        return Evaluation(Phase.FAILED, reason, message or said, since)
    if not message and phase is Phase.FAILED:
        succeeded, retries = count(status.get("succeeded")), count(status.get("retryCount"))
        message = f"{failed} pod(s) failed, {succeeded} succeeded, after {retries} retries"
    return Evaluation(phase, reason, message, since)
