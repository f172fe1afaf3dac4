"""The cleanup step: delete the job when the execution's ``cleanup`` mode asks for it and the job is ours."""

from __future__ import annotations

from typing import Any

from jobsync.errors import JobConflict
from jobsync.evaluation.kinds import KindSpec
from jobsync.evaluation.phase import Phase
from jobsync.run import manifests
from jobsync.run.inputs import CleanupRequest
from jobsync.run.loop import Cluster, allowed_spec
from jobsync.settings import Settings


def should_delete(mode: str, phase: str | None) -> bool:
    if mode == "always":
        return True
    if mode == "never":
        return False
    return phase not in (Phase.SUCCEEDED, "ERROR")  # onFailure: a job's failure; a jobsync error says nothing of it


def cleanup(request: CleanupRequest, cluster: Cluster, settings: Settings) -> dict[str, Any]:
    """Delete the job when the request's ``cleanup`` mode asks for it and the job is ours; gone is success.

    Ours: the very object the loop created (its ``uid``, a DELETE
    precondition); for a request without a uid, a job labelled with the
    request's execution or, naming no execution, managed by jobsync. Anything
    else is left alone, so this Lambda cannot delete other people's jobs.
    """
    job = request.job
    spec = allowed_spec(job, settings)
    if not should_delete(request.cleanup, request.phase):
        return {"job": job.model_dump(), "deleted": False, "reason": f"cleanup is {request.cleanup}"}
    deleted, reason = delete_if_ours(cluster, spec, job.namespace, job.name, request.execution, job.uid)
    return {"job": job.model_dump(), "deleted": deleted, "reason": reason}


def is_ours(obj: dict[str, Any], execution: str | None) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if execution is not None:
        return labels.get(manifests.EXECUTION_LABEL) == manifests.execution_label(execution)
    return labels.get(manifests.MANAGED_BY) == "jobsync"


def delete_if_ours(
    cluster: Cluster, spec: KindSpec, namespace: str, name: str, execution: str | None, uid: str | None = None
) -> tuple[bool, str]:
    """(deleted, why). Without ``uid``: one GET to check the labels, then a DELETE of that uid. Gone is success."""
    if uid is None:
        existing = cluster.get(spec, namespace, name)
        if existing is None:
            return False, "already gone"
        if not is_ours(existing, execution):
            who = "this execution" if execution is not None else "jobsync"
            return False, f"not created by {who}: left alone"
        uid = (existing.get("metadata") or {}).get("uid")
    try:
        deleted = cluster.delete(spec, namespace, name, uid)
    except JobConflict:
        return False, "the name now belongs to another object: left alone"
    return deleted, "deleted" if deleted else "already gone"
