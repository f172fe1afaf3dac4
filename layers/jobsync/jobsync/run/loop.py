"""What the submit, status and cleanup steps share: the cluster they talk to, the kinds they
may touch, and the next wait of a loop state.

Each step (``jobsync.run.submit``, ``.poll``, ``.cleanup``) takes a parsed
request, the cluster (``KubeJobs`` or anything with its methods) and the
settings, and returns the next loop state. The handlers only parse, call one
of them, and shape the output.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any, Protocol

from jobsync import clock
from jobsync.errors import InvalidInput, NotOurJob
from jobsync.evaluation.kinds import KindSpec
from jobsync.evaluation.phase import Phase
from jobsync.run import manifests
from jobsync.run.inputs import JobRef, LoopState
from jobsync.run.policy import PollState, budget_floor, next_wait
from jobsync.settings import Settings


class Cluster(Protocol):
    def create(self, spec: KindSpec, obj: dict[str, Any]) -> dict[str, Any]: ...
    def get(self, spec: KindSpec, namespace: str, name: str) -> dict[str, Any] | None: ...
    def delete(self, spec: KindSpec, namespace: str, name: str, uid: str | None = None) -> bool: ...
    def list_pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]: ...
    def read_log(self, namespace: str, pod: str, container: str, limit_bytes: int) -> str: ...
    def watch(
        self, spec: KindSpec, namespace: str, name: str, resource_version: str, seconds: int
    ) -> Generator[tuple[str, dict[str, Any]], None, None]: ...


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


def not_ours(obj: dict[str, Any], execution: str, uid: str | None = None) -> str | None:
    """Why ``obj`` is not the job ``execution`` created (None when it is): its label, and ``uid`` if given."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    if labels.get(manifests.EXECUTION_LABEL) != manifests.execution_label(execution):
        return "not created by this execution"
    if uid is not None and meta.get("uid") != uid:
        return "the name now belongs to another object"
    return None


def ensure_ours(obj: dict[str, Any], job: JobRef, execution: str) -> None:
    """Raise NotOurJob unless ``obj`` is the job ``execution`` created (the object ``job.uid``, when known)."""
    why = not_ours(obj, execution, job.uid)
    if why is not None:
        raise NotOurJob(f"{job.kind} {job.namespace}/{job.name} is {why}: left alone")


def with_next_wait(state: LoopState, now: float, settings: Settings, watched: float = 0.0) -> LoopState:
    """``state`` with ``waitSeconds`` from the policy (or, in watch mode, the poll budget alone)."""
    if state.terminal:
        return state.model_copy(update={"waitSeconds": 0})
    poll_state = PollState(
        phase=Phase(state.phase) if state.phase in Phase.__members__ else Phase.UNKNOWN,
        now=now,
        submitted_at=epoch(state.submittedAt),
        phase_since=epoch(state.phaseSince),
        deadline=epoch(state.deadline),
        polls=state.polls,
        expected_duration=state.expectedDurationSeconds,
    )
    if settings.watch_seconds:
        # The watch did the waiting; the Wait state only keeps the poll budget.
        floor = budget_floor(poll_state, settings.wait_bounds, settings.watch_seconds) - watched
        wait = max(0, math.ceil(min(floor, poll_state.deadline - now)))
    elif settings.completion_mode == "callback" and poll_state.phase in (Phase.RUNNING, Phase.SUSPENDED):
        # The event ends the wait; this is only how long a dead notifier can delay the verdict.
        left = poll_state.deadline - now
        wait = max(1, math.floor(min(settings.safety_poll_seconds, left)))
    else:
        # A starting job is still polled at the policy's pace: stuck pods show only to a poll.
        wait = next_wait(poll_state, settings.wait_bounds)
    return state.model_copy(update={"waitSeconds": wait})


def epoch(timestamp: str) -> float:
    value = clock.parse(timestamp)
    if value is None:
        raise InvalidInput(f"not an RFC 3339 timestamp: {timestamp!r}")
    return value
