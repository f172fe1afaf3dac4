"""JobSet (``jobset.x-k8s.io/v1alpha2``): a group of batch Jobs run as one."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from jobsync.evaluation.conditions import Conditions, evaluator, from_condition, status_of, text
from jobsync.evaluation.phase import Evaluation, Phase
from jobsync.evaluation.progress import job_counts, progress

TYPES = frozenset(
    {"Completed", "Failed", "Suspended", "RestartingJobSet", "StartupPolicyInProgress", "StartupPolicyCompleted"}
)
_TERMINAL_STATES = {"Completed": Phase.SUCCEEDED, "Failed": Phase.FAILED}


@evaluator
def jobset(obj: Mapping[str, Any]) -> Evaluation:
    """JobSet, as the JobSet controller (v0.12) writes its status.

    ``Completed`` (``AllJobsCompleted``) or ``Failed`` (``FailedJobs``,
    ``ReachedMaxRestarts``, ``FailJobSetFailurePolicyAction``, ...) end it, the
    later one when both are True; ``status.terminalState`` says the same and
    decides when the conditions are gone. Then ``Suspended``. A True
    ``RestartingJobSet`` (its failure policy recreates the Jobs) is RUNNING,
    named a restart. Otherwise RUNNING once ``replicatedJobsStatus`` counts a
    child Job ready (all its pods ready or done) or succeeded; a Job that is only
    active has pods still pending (not scheduled, pulling), so PENDING, where
    jobsync looks at the pods for a start that cannot happen. The startup
    policy's conditions only say the Jobs start in order. ``progress`` carries
    the child Job counts.
    """
    status = status_of(obj)
    return replace(_verdict(status), progress=progress(status, "replicatedJobsStatus"))


def _verdict(status: Mapping[str, Any]) -> Evaluation:
    conditions = Conditions.read(status)
    if verdict := conditions.ended_or_suspended("Completed"):
        return verdict
    terminal = text(status.get("terminalState"))
    if terminal in _TERMINAL_STATES:
        return Evaluation(_TERMINAL_STATES[terminal], terminal, f"terminalState is {terminal}")
    if restarting := conditions.true.get("RestartingJobSet"):
        evaluation = from_condition(Phase.RUNNING, restarting)
        return replace(evaluation, reason=f"Restarting: {evaluation.reason}")
    jobs, _ = job_counts(status.get("replicatedJobsStatus"))
    if started := sorted(job.name for job in jobs if job.ready > 0 or job.succeeded > 0):
        said = f"replicated jobs with ready or finished jobs: {', '.join(started)}"
        return Evaluation(Phase.RUNNING, "JobsReady", said)
    if unknown := conditions.unrecognised(TYPES):
        return unknown
    if in_order := conditions.true.get("StartupPolicyInProgress"):
        return from_condition(Phase.PENDING, in_order)
    if starting := sorted(job.name for job in jobs if job.active > 0):
        said = f"replicated jobs whose pods are not ready yet: {', '.join(starting)}"
        return Evaluation(Phase.PENDING, "JobsStarting", said)
    return Evaluation(Phase.PENDING, "NoActiveJobs", "no child job is active yet")
