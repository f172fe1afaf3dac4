"""KubeRay's RayJob (``ray.io/v1``): a Ray job submitted to a RayCluster the RayJob creates.

A RayJob has no conditions. ``status.jobDeploymentStatus`` says where KubeRay
is (cluster, submission, retries); ``status.jobStatus`` is the Ray job's own
status from the Ray dashboard; ``status.reason`` and ``message`` say why a
deployment failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobsync.evaluation.conditions import evaluator, status_of, text, timestamp_text
from jobsync.evaluation.phase import Evaluation, Phase

#: ``jobDeploymentStatus`` values that settle the phase whatever the Ray job's status (KubeRay v1.7).
_DEPLOYMENT: dict[str, Phase] = {
    "": Phase.PENDING,  # New: KubeRay has not initialised it yet
    "Initializing": Phase.PENDING,  # the RayCluster is being created
    "Waiting": Phase.PENDING,  # InteractiveMode: waiting for the user to submit the job
    "Retrying": Phase.RUNNING,  # a failed attempt is retried with a new RayCluster (backoffLimit)
    "Suspending": Phase.SUSPENDED,
    "Suspended": Phase.SUSPENDED,
    "Failed": Phase.FAILED,
    "ValidationFailed": Phase.FAILED,
}
#: The Ray job's own status once KubeRay calls the deployment ``Complete``.
_COMPLETE: dict[str, Phase] = {"SUCCEEDED": Phase.SUCCEEDED, "FAILED": Phase.FAILED, "STOPPED": Phase.STOPPED}
#: The Ray job's status while the deployment is ``Running``; a terminal one is RUNNING until KubeRay completes it.
_RUNNING: dict[str, Phase] = {
    "": Phase.PENDING,
    "PENDING": Phase.PENDING,
    "RUNNING": Phase.RUNNING,
    "SUCCEEDED": Phase.RUNNING,
    "FAILED": Phase.RUNNING,
    "STOPPED": Phase.RUNNING,
}


@evaluator
def ray_job(obj: Mapping[str, Any]) -> Evaluation:
    """RayJob, as KubeRay (v1.7) writes its status.

    - ``Complete``: the Ray job's status decides: SUCCEEDED, FAILED (older
      KubeRay said Complete for a failed Ray job), STOPPED (``ray job stop``);
      any other is UNKNOWN.
    - ``Failed`` and ``ValidationFailed`` are FAILED with ``status.reason``
      (``AppFailed``, ``SubmissionFailed``, ``DeadlineExceeded``, ...). KubeRay
      writes ``Retrying`` instead while ``backoffLimit`` allows another try.
    - ``Running``: RUNNING while the Ray job runs, PENDING while it waits to
      start (Ray's PENDING: its runtime environment, its resources); a Ray
      status that ended is RUNNING until KubeRay completes the deployment.
    - ``Initializing``, ``Waiting``, none: PENDING; ``Suspending``,
      ``Suspended``: SUSPENDED; ``Retrying``: RUNNING, named a restart.

    ``since`` is ``status.endTime`` for an ended deployment, else the Ray job's
    own start (``rayJobInfo.startTime``) while it runs.
    """
    status = status_of(obj)
    deployment = status.get("jobDeploymentStatus")
    job_status = status.get("jobStatus")
    for field, value in (("jobDeploymentStatus", deployment), ("jobStatus", job_status)):
        if value is not None and not isinstance(value, str):
            return Evaluation(Phase.UNKNOWN, f"MalformedStatus: {field} is a {type(value).__name__}")
    deployment, job_status = deployment or "", job_status or ""
    message = text(status.get("message"))
    ended = timestamp_text(status.get("endTime"))
    info = status.get("rayJobInfo")
    started = timestamp_text(info.get("startTime")) if isinstance(info, Mapping) else None

    if deployment == "Complete":
        phase = _COMPLETE.get(job_status)
        if phase is None:
            return Evaluation(Phase.UNKNOWN, f"UnrecognisedStatus: Complete with jobStatus {job_status!r}", message)
        return Evaluation(phase, f"RayJob{job_status.title()}", message or f"the Ray job is {job_status}", ended)
    if deployment == "Running":
        phase = _RUNNING.get(job_status)
        if phase is None:
            return Evaluation(Phase.UNKNOWN, f"UnrecognisedStatus: jobStatus={job_status!r}", message)
        if job_status in _COMPLETE:
            said = f"the Ray job is {job_status}; KubeRay has not completed the RayJob yet"
            return Evaluation(phase, f"Finishing: {job_status}", "; ".join(m for m in (said, message) if m), started)
        reason = f"RayJob{job_status.title()}" if job_status else "Submitting"
        return Evaluation(phase, reason, message, started if phase is Phase.RUNNING else None)
    phase = _DEPLOYMENT.get(deployment)
    if phase is None:
        return Evaluation(Phase.UNKNOWN, f"UnrecognisedStatus: jobDeploymentStatus={deployment!r}", message)
    if phase is Phase.FAILED:
        return Evaluation(phase, text(status.get("reason")) or deployment, message, ended)
    if deployment == "Retrying":
        return Evaluation(phase, "Restarting: Retrying", message or "a failed attempt is retried", started)
    return Evaluation(phase, deployment or "New", message)
