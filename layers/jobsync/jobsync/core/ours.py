"""Which jobs are ours: the labels Submit writes, the kinds and namespace a deployment may touch.

Every step checks a request against the deployment before it asks the cluster
anything (``allowed_spec``), and an object against the execution before it
reads more of it or deletes it (``not_ours``): the Lambdas can be invoked by
anyone allowed to, and a job that is not ours is never touched.

A job a person names to wait for (``jobsync wait``, ``jobsync.wait``) is
*adopted*: not created by an execution, only read, never changed. It is the
one object of the uid first seen under that name; an object that takes the
name later is another job.
"""

from __future__ import annotations

import hashlib
from typing import Any

from jobsync.bodies import meta
from jobsync.core.state import JobRef
from jobsync.errors import InvalidInput, NotOurJob
from jobsync.evaluation.kinds import KindSpec
from jobsync.settings import Settings

MANAGED_BY = "app.kubernetes.io/managed-by"
EXECUTION_LABEL = "jobsync.io/execution"
EXECUTION_ANNOTATION = "jobsync.io/execution-arn"


def execution_label(execution_arn: str) -> str:
    """A label value that identifies one execution (label values allow 63 safe characters)."""
    return hashlib.sha256(execution_arn.encode()).hexdigest()[:32]


def job_labels(execution_arn: str) -> dict[str, str]:
    return {MANAGED_BY: "jobsync", EXECUTION_LABEL: execution_label(execution_arn)}


def allowed_spec(job: JobRef, settings: Settings) -> KindSpec:
    """The kind of a job this deployment may touch: in its namespace, of an allowed kind (as submit enforces)."""
    if job.namespace != settings.namespace:
        raise InvalidInput(
            f"job.namespace: {job.namespace!r} is not allowed; this deployment runs jobs in {settings.namespace!r}"
        )
    spec = settings.allowed(job.apiVersion, job.kind)
    if spec is None:
        allowed = ", ".join(f"{s.api_version}/{s.kind}" for s in settings.allowed_kinds)
        raise InvalidInput(f"job.kind: {job.apiVersion}/{job.kind} is not allowed here (allowed: {allowed})")
    return spec


def not_ours(obj: Any, execution: str, uid: str | None = None) -> str | None:
    """Why ``obj`` is not the job ``execution`` created (None when it is): its label, and ``uid`` if given."""
    seen = meta(obj)
    if seen.labels.get(EXECUTION_LABEL) != execution_label(execution):
        return "not created by this execution"
    if uid is not None and seen.uid != uid:
        return "the name now belongs to another object"
    return None


def ensure_ours(obj: Any, job: JobRef, execution: str, adopted: bool = False) -> None:
    """Raise NotOurJob unless ``obj`` is the job ``execution`` created (the object ``job.uid``, when known).

    ``adopted``: the job was named, not created (see the module docstring): the object ``job.uid`` alone.
    """
    if adopted:
        why = None if job.uid and meta(obj).uid == job.uid else "the name now belongs to another object"
    else:
        why = not_ours(obj, execution, job.uid)
    if why is not None:
        raise NotOurJob(f"{job.kind} {job.namespace}/{job.name} is {why}: left alone")
