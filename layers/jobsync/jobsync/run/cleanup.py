"""The cleanup step: delete the job when the execution's ``cleanup`` mode asks for it and the job is ours."""

from __future__ import annotations

from typing import Any

from jobsync.bodies import meta
from jobsync.core.ours import allowed_spec, not_ours
from jobsync.core.outcome import Phase
from jobsync.errors import InvalidInput, JobConflict
from jobsync.evaluation.kinds import KindSpec
from jobsync.run.inputs import CleanupRequest
from jobsync.run.loop import Cluster
from jobsync.settings import Settings


def should_delete(mode: str, phase: str | None) -> bool:
    if mode == "always":
        return True
    if mode == "never":
        return False
    return phase not in (Phase.SUCCEEDED, Phase.ERROR)  # onFailure: a job's failure; a jobsync error says nothing of it


def cleanup(request: CleanupRequest, cluster: Cluster, settings: Settings) -> dict[str, Any]:
    """Delete the job when the request's ``cleanup`` mode asks for it and the job is ours; gone is success.

    Ours: the object Submit created, by its uid (the loop state carries it),
    and labelled with the request's execution. Nothing in the request is
    trusted: the object is read first and both checked, then deleted with its
    uid as a precondition. Anything else is left alone, so this Lambda cannot
    delete other people's jobs, whoever invokes it; without a uid it deletes
    nothing (a name and a label are not enough).
    """
    job = request.job
    spec = allowed_spec(job, settings)
    if not should_delete(request.cleanup, request.phase):
        return {"job": job.model_dump(), "deleted": False, "reason": f"cleanup is {request.cleanup}"}
    if not job.uid:
        raise InvalidInput("job.uid: required: cleanup deletes only the object Submit created, by its uid")
    deleted, reason = delete_if_ours(cluster, spec, job.namespace, job.name, request.execution, job.uid)
    return {"job": job.model_dump(), "deleted": deleted, "reason": reason}


def is_ours(obj: dict[str, Any], execution: str) -> bool:
    return not_ours(obj, execution) is None


def not_submitted(uid: str) -> str:
    return f"left alone: not the object Submit created (uid {uid})"


def delete_if_ours(
    cluster: Cluster, spec: KindSpec, namespace: str, name: str, execution: str, uid: str
) -> tuple[bool, str]:
    """(deleted, why): one GET to check the labels and ``uid``, then a DELETE with that uid as precondition.

    Gone is success. ``uid`` is the one Submit returned: an object of that name
    and label but another uid (a copy applied under the same name) is left alone.
    """
    existing = cluster.get(spec, namespace, name)
    if existing is None:
        # Gone: perhaps by this execution's own DELETE whose answer was lost. Asking again with the uid
        # precondition touches nothing (there is nothing, or another object refuses it), and the client
        # remembers the DELETEs it lost.
        try:
            return (True, "deleted") if cluster.delete(spec, namespace, name, uid) else (False, "already gone")
        except JobConflict:
            return False, not_submitted(uid)
    why = not_ours(existing, execution)
    if why is not None:
        return False, f"{why}: left alone"
    if meta(existing).uid != uid:
        return False, not_submitted(uid)
    try:
        deleted = cluster.delete(spec, namespace, name, uid)
    except JobConflict:
        return False, not_submitted(uid)
    return deleted, "deleted" if deleted else "already gone"
