"""What the submit, status and cleanup Lambdas do, minus the Lambda.

Each function takes a parsed request, the cluster (``KubeJobs`` or anything
with its methods) and the settings, and returns the next loop state. The
handlers only parse, call one of these, and shape the output.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Generator
from typing import Any, Protocol

from kubernetes.client.exceptions import ApiException

from jobsync import clock, diagnostics, manifests
from jobsync.errors import InvalidInput, JobConflict
from jobsync.evaluate import NOT_FOUND, evaluate
from jobsync.inputs import CleanupRequest, JobRef, LoopState, SubmitRequest
from jobsync.kinds import KindSpec
from jobsync.model import Evaluation, Phase
from jobsync.policy import PollState, budget_floor, next_wait
from jobsync.settings import Settings

TIMED_OUT = "TIMED_OUT"
LOOP_ENDING = frozenset({Phase.SUCCEEDED, Phase.FAILED, Phase.STOPPED, NOT_FOUND, TIMED_OUT})


class Cluster(Protocol):
    def create(self, spec: KindSpec, obj: dict[str, Any]) -> dict[str, Any]: ...
    def get(self, spec: KindSpec, namespace: str, name: str) -> dict[str, Any] | None: ...
    def delete(self, spec: KindSpec, namespace: str, name: str, uid: str | None = None) -> bool: ...
    def list_pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]: ...
    def read_log(self, namespace: str, pod: str, container: str, limit_bytes: int) -> str: ...
    def watch(
        self, spec: KindSpec, namespace: str, name: str, resource_version: str, seconds: int
    ) -> Generator[tuple[str, dict[str, Any]], None, None]: ...


TemplateFetcher = Callable[[str], str]


# --- submit -----------------------------------------------------------------


def submit(request: SubmitRequest, cluster: Cluster, settings: Settings, fetch_template: TemplateFetcher) -> LoopState:
    """Create the job (or adopt the one this execution already created) and return the first loop state."""
    namespace = request.namespace or settings.namespace
    if namespace != settings.namespace:
        raise InvalidInput(
            f"namespace: {namespace!r} is not allowed; this deployment runs jobs in {settings.namespace!r}"
        )
    timeout = request.timeoutSeconds or settings.default_timeout_seconds
    if timeout > settings.max_timeout_seconds:
        raise InvalidInput(f"timeoutSeconds: {timeout} is over the maximum of {settings.max_timeout_seconds}")
    if request.job is not None:
        manifest, source = request.job, "job"
    else:
        source = "jobTemplate"
        text = fetch_template(_checked_template_uri(request.jobTemplate or "", settings))
        manifest = manifests.load_manifest(manifests.render_template(text, request.parameters), source)
    obj = manifests.prepare(manifest, request.execution, namespace, settings)
    spec = manifests.check_kind(obj, settings)

    try:
        created = cluster.create(spec, obj)
    except ApiException as exc:  # 409: ours from a retried submit, or someone else's
        created = _adopt(cluster, spec, obj, request.execution, exc)

    now = clock.now()
    verdict = evaluate(created)
    state = LoopState(
        job=_ref(created, spec),
        execution=request.execution,
        cleanup=request.cleanup,
        submittedAt=clock.isoformat(now),
        deadline=clock.isoformat(now + timeout),
        expectedDurationSeconds=request.expectedDurationSeconds,
        phase=str(verdict.phase),
        reason=verdict.reason,
        message=verdict.message,
        terminal=verdict.terminal,
        phaseSince=clock.isoformat(now),
    )
    return _with_next_wait(state, now, settings)


def _adopt(cluster: Cluster, spec: KindSpec, obj: dict[str, Any], execution: str, exc: ApiException) -> dict[str, Any]:
    meta = obj["metadata"]
    existing = cluster.get(spec, meta["namespace"], meta["name"])
    if existing is None:  # deleted between our create and get: a retry will create it
        raise exc
    labels = (existing.get("metadata") or {}).get("labels") or {}
    if labels.get(manifests.EXECUTION_LABEL) != manifests.execution_label(execution):
        raise JobConflict(
            f"{spec.kind} {meta['namespace']}/{meta['name']} already exists and was not created by this execution"
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
    meta = obj.get("metadata") or {}
    return JobRef(
        apiVersion=spec.api_version or "",
        kind=spec.kind,
        namespace=meta["namespace"],
        name=meta["name"],
        uid=meta.get("uid"),
    )


# --- status -----------------------------------------------------------------


def poll(state: LoopState, cluster: Cluster, settings: Settings) -> LoopState:
    """One GET of the job, its verdict, why it is stuck or failed, and the next wait.

    In watch mode (``settings.watch_seconds``) the GET is followed by a watch
    on the job that returns as soon as its phase changes; the Wait state then
    has (almost) nothing left to wait.
    """
    spec = allowed_spec(state.job, settings)
    update: dict[str, Any] = {"polls": state.polls + 1, "diagnostics": [], "logTail": None}

    obj = cluster.get(spec, state.job.namespace, state.job.name)
    watched = 0.0
    if obj is not None and settings.watch_seconds:
        obj, watched = _watch_for_change(cluster, spec, state, obj, settings)
    now = clock.now()
    since_submit = now - _epoch(state.submittedAt)
    if obj is None and since_submit < settings.not_found_grace_seconds:
        phase, reason, message = str(Phase.PENDING), "NotVisibleYet", "the API does not show the job yet"
    elif obj is None:
        # Deleted by hand, or by a TTL after it ended between two polls.
        phase, reason = NOT_FOUND, "JobDeleted"
        message = f"the job no longer exists (last seen {state.phase}); deleted by hand or by ttlSecondsAfterFinished"
    else:
        verdict = _explain(evaluate(obj), obj, spec, state, now, since_submit, update, cluster, settings)
        phase, reason, message = str(verdict.phase), verdict.reason, verdict.message

    if phase not in LOOP_ENDING and now >= _epoch(state.deadline):
        reason, message = "DeadlineExceeded", f"the job was still {phase} at its deadline {state.deadline}"
        phase = TIMED_OUT
    terminal = phase in LOOP_ENDING
    update.update(
        phase=phase,
        reason=reason,
        message=message,
        terminal=terminal,
        phaseSince=clock.isoformat(now) if phase != state.phase else state.phaseSince,
    )
    if phase == Phase.RUNNING and not state.startedAt:
        update["startedAt"] = clock.isoformat(now)
    if terminal:
        update["finishedAt"] = clock.isoformat(now)
    return _with_next_wait(state.model_copy(update=update), now, settings, watched)


def _watch_for_change(
    cluster: Cluster, spec: KindSpec, state: LoopState, obj: dict[str, Any], settings: Settings
) -> tuple[dict[str, Any] | None, float]:
    """(the job as last seen, or None if it was deleted; seconds spent) after watching for a phase change.

    A pending job is watched no longer than the pending wait, so the pod
    diagnostics keep their pace; nothing is watched past the deadline.
    """
    started = clock.now()
    before = evaluate(obj).phase
    if before.terminal:
        return obj, 0.0
    hold = float(settings.watch_seconds)
    if before in (Phase.PENDING, Phase.UNKNOWN):
        hold = min(hold, settings.wait_bounds.pending_max_seconds)
    hold = min(hold, _epoch(state.deadline) - started)
    if hold < 1:
        return obj, 0.0
    meta = obj.get("metadata") or {}
    current: dict[str, Any] | None = obj
    events = cluster.watch(spec, state.job.namespace, state.job.name, str(meta.get("resourceVersion", "")), int(hold))
    with contextlib.closing(events):  # stop watching as soon as we know
        for event_type, changed in events:
            if event_type == "DELETED":
                current = None
                break
            current = changed
            if evaluate(changed).phase != before:
                break
    return current, clock.now() - started


def _explain(
    verdict: Evaluation,
    obj: dict[str, Any],
    spec: KindSpec,
    state: LoopState,
    now: float,
    since_submit: float,
    update: dict[str, Any],
    cluster: Cluster,
    settings: Settings,
) -> Evaluation:
    """Why a job is stuck or failed (into ``update``); a start that can never succeed ends as FAILED."""
    if verdict.phase == Phase.PENDING and not obj.get("status") and since_submit > settings.operator_timeout_seconds:
        return Evaluation(
            Phase.FAILED,
            "OperatorNotReconciling",
            f"no status after {int(since_submit)}s: is the {spec.kind} operator installed and running?",
            kind=spec.kind,
        )
    selector = spec.pod_selector(state.job.name)
    if selector is None:
        return verdict
    if verdict.phase == Phase.PENDING and since_submit > settings.diagnose_after_seconds:
        findings = diagnostics.pod_findings(cluster.list_pods(state.job.namespace, selector))
        update["diagnostics"] = findings
        stuck = diagnostics.stuck_reason(findings)
        if stuck is None:
            update["stuckSince"] = None
            return verdict
        stuck_since = _epoch(state.stuckSince) if state.stuckSince else now
        update["stuckSince"] = clock.isoformat(stuck_since)
        if now - stuck_since >= settings.stuck_grace_seconds:
            return Evaluation(
                Phase.FAILED,
                str(stuck["reason"]),
                f"pod {stuck['pod']} stuck for {int(now - stuck_since)}s: {stuck['message']}",
                kind=spec.kind,
            )
        return Evaluation(verdict.phase, str(stuck["reason"]), str(stuck["message"]), verdict.since, spec.kind)
    if verdict.phase == Phase.FAILED:
        pods = cluster.list_pods(state.job.namespace, selector)
        update["diagnostics"] = diagnostics.pod_findings(pods)
        failed = diagnostics.failed_container(pods)
        if failed:
            log = cluster.read_log(state.job.namespace, failed[0], failed[1], settings.log_tail_bytes)
            update["logTail"] = diagnostics.tail(log, settings.log_tail_bytes) or None
    return verdict


def _with_next_wait(state: LoopState, now: float, settings: Settings, watched: float = 0.0) -> LoopState:
    if state.terminal:
        return state.model_copy(update={"waitSeconds": 0})
    poll_state = PollState(
        phase=Phase(state.phase) if state.phase in Phase.__members__ else Phase.UNKNOWN,
        now=now,
        submitted_at=_epoch(state.submittedAt),
        phase_since=_epoch(state.phaseSince),
        deadline=_epoch(state.deadline),
        polls=state.polls,
        expected_duration=state.expectedDurationSeconds,
    )
    if settings.watch_seconds:
        # The watch did the waiting; the Wait state only keeps the poll budget.
        floor = budget_floor(poll_state, settings.wait_bounds, settings.watch_seconds) - watched
        wait = max(0, math.ceil(min(floor, poll_state.deadline - now)))
    else:
        wait = next_wait(poll_state, settings.wait_bounds)
    return state.model_copy(update={"waitSeconds": wait})


def _epoch(timestamp: str) -> float:
    value = clock.parse(timestamp)
    if value is None:
        raise InvalidInput(f"not an RFC 3339 timestamp: {timestamp!r}")
    return value


# --- cleanup ----------------------------------------------------------------


def should_delete(mode: str, phase: str | None) -> bool:
    if mode == "always":
        return True
    if mode == "never":
        return False
    return phase != Phase.SUCCEEDED  # onFailure: anything but success, errors included


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
