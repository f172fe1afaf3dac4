"""The submit step: create the job (or adopt the one this execution already created)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from kubernetes.client.exceptions import ApiException

from jobsync import clock
from jobsync.aws.hints import HintStore
from jobsync.bodies import meta
from jobsync.core.ours import not_ours
from jobsync.core.state import JobRef, LoopState
from jobsync.core.step import begin
from jobsync.errors import InvalidInput, JobConflict
from jobsync.evaluation.kinds import KindSpec
from jobsync.run import manifests
from jobsync.run.inputs import SubmitRequest
from jobsync.run.loop import Cluster
from jobsync.settings import Settings

TemplateFetcher = Callable[[str], str]
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Planned:
    """The object Submit would create and what it was made from: every check passed, nothing touched the cluster."""

    obj: dict[str, Any]  # named, labelled, in the deployment's namespace
    spec: KindSpec
    manifest: dict[str, Any]  # as the input gave it, or as its template rendered it
    timeout: int
    template: str | None  # the template's URI, for a jobTemplate input


def plan(request: SubmitRequest, settings: Settings, fetch_template: TemplateFetcher) -> Planned:
    """Every check and every step of Submit short of creating the job (``jobsync submit --dry-run`` shows it).

    Raises InvalidInput naming what is wrong.
    """
    namespace = request.namespace or settings.namespace
    if namespace != settings.namespace:
        raise InvalidInput(
            f"namespace: {namespace!r} is not allowed; this deployment runs jobs in {settings.namespace!r}"
        )
    timeout = request.timeoutSeconds or settings.default_timeout_seconds
    if timeout > settings.max_timeout_seconds:
        raise InvalidInput(f"timeoutSeconds: {timeout} is over the maximum of {settings.max_timeout_seconds}")
    queue_timeout = request.queueTimeoutSeconds
    if queue_timeout is not None and queue_timeout > settings.max_timeout_seconds:
        raise InvalidInput(
            f"queueTimeoutSeconds: {queue_timeout} is over the maximum of {settings.max_timeout_seconds}"
        )
    if queue_timeout is not None and request.deadlineFrom == "submission" and queue_timeout >= timeout:
        raise InvalidInput(
            f"queueTimeoutSeconds: {queue_timeout} is not less than timeoutSeconds {timeout}, which counts from "
            'submission and so holds the wait in the queue already; give deadlineFrom: "admission" to count '
            "timeoutSeconds from the admission"
        )
    expected = request.expectedDurationSeconds
    if expected is not None and expected > settings.max_timeout_seconds:
        raise InvalidInput(f"expectedDurationSeconds: {expected} is over the maximum of {settings.max_timeout_seconds}")
    template = None
    if request.job is not None:
        manifest = request.job
    else:
        template = _checked_template_uri(request.jobTemplate or "", settings)
        manifest = manifests.load_template(fetch_template(template), request.parameters, "jobTemplate", settings)
    obj = manifests.prepare(manifest, request.execution, namespace, settings)
    spec = manifests.check_kind(obj, settings)
    return Planned(obj, spec, manifest, timeout, template)


def submit(
    request: SubmitRequest,
    cluster: Cluster,
    settings: Settings,
    fetch_template: TemplateFetcher,
    hints: HintStore | None = None,
) -> LoopState:
    """Create the job (or adopt the one this execution already created) and return the first loop state.

    Without ``expectedDurationSeconds``, the family's learned median (``hints``) is the hint.
    """
    planned = plan(request, settings, fetch_template)
    spec, obj, timeout = planned.spec, planned.obj, planned.timeout
    # Submitted when asked for, not when the answer and the hint came back: the job's creation, and its queue's
    # Workload, must not predate its submission (a queue's wait is counted from them), and its deadline runs from here.
    asked = clock.now()
    try:
        created = cluster.create(spec, obj)
    except ApiException as exc:  # 409: ours from a retried submit, or someone else's
        created = _adopt(cluster, spec, obj, request.execution, exc)

    family = request.jobFamily or _family(planned.manifest)
    hint = request.expectedDurationSeconds
    hint_source: Literal["input", "learned"] | None = "input" if hint else None
    if hint is None and hints is not None and family:
        learned = _learned_hint(hints, family)
        if learned is not None:
            hint, hint_source = min(learned, timeout), "learned"

    first = begin(
        job=_ref(created, spec),
        execution=request.execution,
        cleanup=request.cleanup,
        created=created,
        timeout=timeout,
        now=asked,
        settings=settings,
        hint=hint,
        family=family,
        hint_source=hint_source,
        queue_timeout=request.queueTimeoutSeconds,  # checked by plan()
        deadline_from=request.deadlineFrom,
    )
    return first.state


def _learned_hint(hints: HintStore, family: str) -> int | None:
    """The family's learned hint, or None when it cannot be read: the job exists by now, and a hint is worth
    less than the execution that waits for it. Bounded in time by the store's client (``aws.BEST_EFFORT``)."""
    try:
        return hints.hint(family)
    except Exception as exc:  # a throttled, unreachable or missing table: poll without a hint
        logger.warning("learned hint not read", extra={"family": family, "error": type(exc).__name__})
        return None


def _family(manifest: Any) -> str | None:
    """The manifest's own name: the family its recurring runs share."""
    metadata = manifest.get("metadata") if isinstance(manifest, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) and name else None


def _adopt(cluster: Cluster, spec: KindSpec, obj: dict[str, Any], execution: str, exc: ApiException) -> dict[str, Any]:
    wanted = meta(obj)
    existing = cluster.get(spec, wanted.namespace, wanted.name)
    if existing is None:  # deleted between our create and get: a retry will create it
        raise exc
    if not_ours(existing, execution) is not None:
        raise JobConflict(
            f"{spec.kind} {wanted.namespace}/{wanted.name} already exists and was not created by this execution"
        )
    return existing


def _checked_template_uri(uri: str, settings: Settings) -> str:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    if settings.template_bucket and bucket != settings.template_bucket:
        raise InvalidInput(
            f"jobTemplate: bucket {bucket!r} is not allowed (templates live in {settings.template_bucket!r})"
        )
    if settings.template_prefix and not key.startswith(settings.template_prefix):
        raise InvalidInput(f"jobTemplate: key must start with {settings.template_prefix!r}")
    return uri


def _ref(obj: dict[str, Any], spec: KindSpec) -> JobRef:
    seen = meta(obj)
    return JobRef(
        apiVersion=spec.api_version or "",
        kind=spec.kind,
        namespace=seen.namespace,
        name=seen.name,
        uid=seen.uid or None,
    )
