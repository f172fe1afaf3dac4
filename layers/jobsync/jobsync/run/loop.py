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
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from typing import Any, Protocol

from jobsync import clock
from jobsync.core import wait as policy
from jobsync.core.stuck import Grace, grace_seconds
from jobsync.core.wait import LOOK_EVENTS, PollState, WaitBounds, within_budget
from jobsync.errors import InvalidInput, NotOurJob
from jobsync.evaluation.kinds import KindSpec
from jobsync.evaluation.phase import Phase
from jobsync.run import manifests
from jobsync.run.inputs import JobRef, LoopState
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
# The phases in which the job itself runs: callback mode then waits the safety interval.
RUNS = (Phase.RUNNING, Phase.SUSPENDED)


@dataclass(frozen=True)
class Starting:
    """What a look at a starting job saw that no event announces (``callback_wait`` times the next look by it).

    ``visible``: the API showed the job (one it never shows ends NOT_FOUND after
    ``not_found_grace_seconds``); ``reconciled``: it has a status (one that never
    gets one ends OperatorNotReconciling after ``operator_timeout_seconds``);
    ``stuck_until``: when the stuck pod the look found could first be failed
    (``jobsync.core.stuck.Judgement.ends_at``), None when it found none.
    """

    visible: bool = True
    reconciled: bool = True
    stuck_until: float | None = None


def with_next_wait(
    state: LoopState,
    now: float,
    settings: Settings,
    watched: float = 0.0,
    jitter: bool = True,
    starting: Starting | None = None,
) -> LoopState:
    """``state`` with ``waitSeconds`` from ``next_look_wait`` (0 once the loop ended).

    ``jitter=False`` gives the mode's wait without its jitter.
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
    wait = next_look_wait(poll_state, settings, state.job, watched, starting, jitter)
    return state.model_copy(update={"waitSeconds": wait})


def mode_of(settings: Settings) -> str:
    """How the steps wait: watch whenever a watch is set (WatchSeconds), else callback or poll."""
    if settings.watch_seconds:
        return "watch"
    return "callback" if settings.completion_mode == "callback" else "poll"


def look_bounds(settings: Settings) -> WaitBounds:
    """The wait bounds with the history events one look costs in the deployment's mode."""
    return replace(settings.wait_bounds, look_events=LOOK_EVENTS[mode_of(settings)])


def next_look_wait(
    state: PollState,
    settings: Settings,
    job: JobRef,
    watched: float = 0.0,
    starting: Starting | None = None,
    jitter: bool = True,
) -> int:
    """Seconds until the next look, in every completion mode: the mode's own wait, then the guards all share.

    The mode's wait:

    * poll: the policy's (``jobsync.core.wait``), with the job's jitter
      (``jittered``), so jobs submitted together do not poll in lockstep;
    * watch: none: the watch (``watched`` s) did the waiting;
    * callback: ``callback_wait``, with what the look saw of a starting job
      (``starting``); only a pending job's pace gets the jitter.

    Then ``policy.within_budget``: the history budget's floor, with the looks a
    mode's history allows (``look_bounds``) and the mode's longest wait as its
    spacing (RunningMaxWaitSeconds; WatchSeconds; SafetyPollSeconds once the
    job runs), over the safety interval if need be (a healthy job's execution
    must not end at 25,000 events); then the deadline.
    """
    bounds = look_bounds(settings)
    mode = mode_of(settings)
    left = state.deadline - state.now
    if mode == "watch":
        return within_budget(0, state, bounds, settings.watch_seconds, spent=watched)
    if mode == "callback":
        longest = min(bounds.max_seconds, settings.safety_poll_seconds)

        def spread(wait: int) -> int:
            return jittered(wait, job, state.polls, left, longest)

        wanted = callback_wait(state, settings, starting, spread if jitter else None)
        spacing = settings.safety_poll_seconds if state.phase in RUNS else min(longest, bounds.running_max_seconds)
        return within_budget(wanted, state, bounds, spacing)
    wait = policy.next_wait(state, bounds)
    if jitter:
        wait = jittered(wait, job, state.polls, left, bounds.max_seconds)
    return within_budget(wait, state, bounds, bounds.running_max_seconds)


def callback_wait(
    state: PollState,
    settings: Settings,
    starting: Starting | None = None,
    spread: Callable[[int], int] | None = None,
) -> int:
    """Callback mode's own wait: how long the next Await waits for the notifier's event before one poll.

    Once the job runs (RUNNING, SUSPENDED), only a dead notifier can leave its
    end unannounced: ``safety_poll_seconds``, never past the deadline.

    While it starts (PENDING, UNKNOWN), the notifier still announces whatever
    the job reports itself: its end, its deletion. A look has value only where
    no event comes: a stuck pod whose grace ends, an operator that never writes
    a status, a job the API never shows. So the wait runs to the first moment
    one of those could be decided (``starting`` is what this look saw):

    * the first look that reads the pods, 1 s past ``diagnose_after_seconds``
      after submission (no look reads them before: until then nothing else counts);
    * the stuck pod's ``stuck_until`` + 1 s (its grace's end, or when its events may end it);
    * ``operator_timeout_seconds`` + 1 s after submission, while the job has no status;
    * ``not_found_grace_seconds`` after submission, while the API does not show it;
    * else the cadence: ``max(shortest grace, the policy's PENDING wait)`` from
      now, with the job's jitter (``spread``; none in the moments above, where a
      later look only delays the verdict), stretched to such a moment that
      comes less than ``min_seconds`` after it (the look after it would wait
      ``min_seconds``, and pass the moment);

    never below ``min_seconds``, never past the deadline nor ``safety_poll_seconds``.
    ``next_look_wait`` then holds it to the history budget, as every mode's wait.

    The cadence is how late a pod that gets stuck after this look is first
    seen; poll mode sees it within one PENDING wait (30-60 s, plus its
    jitter), but also fails it up to one PENDING wait after its grace ends,
    where this rule fails it within a second. A pod timed from the first look
    that sees it stuck (Unschedulable, NeverSchedulable, WaitingForCapacity, a
    pull error that may heal, CreateContainerConfigError) is then failed at
    the latest 120 s + 12 s of jitter + its grace + 1 s after it got stuck,
    with the defaults, against 66 s + grace + 66 s: no later, to the second.
    A pull that can never succeed is timed from the pod's start: a pod that
    starts after this look cannot fail before this look +
    ``image_error_grace_seconds``, the shortest grace; only a pull error of a
    pod that started longer ago than that (a later container's image) is seen
    up to one cadence after it appears (poll mode: one PENDING wait). A long
    grace does not stretch the cadence: a pod waiting 6 h for capacity can
    turn NeverSchedulable, or fail its pull once placed, and both count from
    the look that sees them. After 40 minutes of PENDING the policy's wait
    (``QUEUED_GROWTH``) is the longer and keeps poll mode's pace. The job's
    own changes need no look: its end comes as an event, and its start only
    makes the next wait the safety interval.
    """
    left = state.deadline - state.now
    if state.phase in RUNS:
        return max(1, math.floor(min(settings.safety_poll_seconds, left)))
    seen = starting or Starting()
    bounds = settings.wait_bounds
    pods_read = state.submitted_at + settings.diagnose_after_seconds + 1
    moments = [pods_read] if state.now < pods_read else []
    if not seen.reconciled:
        moments.append(state.submitted_at + settings.operator_timeout_seconds + 1)
    if not seen.visible:
        moments.append(state.submitted_at + settings.not_found_grace_seconds)
    if seen.stuck_until is not None:
        moments.append(seen.stuck_until + 1)
    due = min((t for t in moments if t > state.now), default=math.inf)  # a moment past is no reason to look
    if state.now >= pods_read:
        shortest = min(grace_seconds(grace, settings) for grace in Grace)
        cadence = math.ceil(max(shortest, policy.policy_wait(state, bounds)))
        paced = state.now + (spread(cadence) if spread else cadence)
        if paced < due and due - paced >= bounds.min_seconds:
            due = paced
    wait = max(due - state.now, bounds.min_seconds)
    whole = max(1, math.ceil(min(wait, settings.safety_poll_seconds, left)))
    # ceil(left) can pass the deadline when left carries float noise (as in next_wait).
    return min(whole, math.floor(left)) if left >= 1 else whole


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
