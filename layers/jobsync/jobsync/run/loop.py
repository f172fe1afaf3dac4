"""What the submit, status and cleanup steps share: the cluster they talk to, the kinds they
may touch, and the next wait of a loop state.

Each step (``jobsync.run.submit``, ``.poll``, ``.cleanup``) takes a parsed
request, the cluster (``KubeJobs`` or anything with its methods) and the
settings, and returns the next loop state. The handlers only parse, call one
of them, and shape the output.
"""

from __future__ import annotations

import hashlib
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
    def list_events(self, namespace: str, pod: str) -> list[dict[str, Any]]: ...
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


# Jitter: at most this share of the wait is added (see ``jitter``).
JITTER_FRACTION = 0.1


def with_next_wait(
    state: LoopState, now: float, settings: Settings, watched: float = 0.0, jitter: bool = True
) -> LoopState:
    """``state`` with ``waitSeconds`` from the policy (or, in watch mode, the poll budget alone).

    The policy's wait then gets its jitter (``jitter``), a separate step, so
    jobs submitted together do not poll in lockstep; ``jitter=False`` gives
    the policy's wait alone.
    """
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
        if jitter:
            wait = jittered(wait, state.job, state.polls, poll_state.deadline - now, settings.wait_bounds.max_seconds)
    return state.model_copy(update={"waitSeconds": wait})


def jittered(wait: int, job: JobRef, polls: int, left: float, longest: int) -> int:
    """``wait`` plus up to ``JITTER_FRACTION`` of it; never past the deadline (``left`` s away) nor
    ``longest`` (MaxWaitSeconds), unless the policy's wait already is; never below 1 s.

    The share comes from a hash of the job (its uid, else its name) and the
    poll number: jobs submitted together spread apart, and a run is
    reproducible (the same job at the same poll always gets the same wait).
    The policy's guarantees hold: the wait only grows, so it stays above
    the policy's floors, and it is cut back to the deadline.
    """
    digest = hashlib.sha256(f"{job.uid or job.name}/{polls}".encode()).digest()
    share = int.from_bytes(digest[:8], "big") / 2**64
    longer = min(wait + math.floor(share * JITTER_FRACTION * wait), max(wait, longest))
    return max(1, min(longer, max(wait, math.floor(left))))


def epoch(timestamp: str) -> float:
    value = clock.parse(timestamp)
    if value is None:
        raise InvalidInput(f"not an RFC 3339 timestamp: {timestamp!r}")
    return value
