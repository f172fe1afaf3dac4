"""How long a stuck start may wait: capacity on its way, a pod no node can ever take, an image that can never be pulled.

A pod the scheduler cannot place is the normal state of a GPU job on a
cluster that scales (Karpenter, the Cluster Autoscaler): the pod's events say
whether more capacity is coming. Each kind of stuck has its own grace:

========================  =================================  ====================================
reason                    when                               grace (setting)
========================  =================================  ====================================
``WaitingForCapacity``    an autoscaler scales up for the    ``capacity_grace_seconds`` (6 h)
                          pod (``TriggeredScaleUp``,
                          Karpenter ``Nominated``), or says
                          the group/NodePool that fits is
                          at its limit or backing off; or no
                          autoscaler spoke and the scheduler
                          names a resource shortage
                          (``Insufficient ...``)
``NeverSchedulable``      the autoscaler says no group or    ``unschedulable_grace_seconds`` (10 m)
                          NodePool can ever fit the pod
                          (affinity/selector, taints,
                          requests beyond any node type)
``Unschedulable``         no autoscaler spoke and the        ``unschedulable_grace_seconds``
                          scheduler names no shortage (only
                          selectors, taints, affinity)
image errors              the image does not exist, or the   ``image_error_grace_seconds`` (120 s)
                          registry refuses it
                          (``InvalidImageName``, "not
                          found", "manifest unknown",
                          "unauthorized", "pull access
                          denied")
other stuck reasons       any other image pull error,        ``stuck_grace_seconds`` (15 m)
                          ``CreateContainerConfigError``
========================  =================================  ====================================

The latest autoscaler event of the pod decides (an older "no" is overridden
by a later scale-up, and the other way round). The functions here are pure:
events and pods as the API returns them, plain dicts.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from jobsync import clock
from jobsync.bodies import meta
from jobsync.core.diagnostics import MAX_MESSAGE, UNSCHEDULABLE
from jobsync.core.state import LoopState, seconds
from jobsync.settings import Settings, StartSettings

WAITING_FOR_CAPACITY = "WaitingForCapacity"
NEVER_SCHEDULABLE = "NeverSchedulable"
IMAGE_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName"})

# The Cluster Autoscaler's pod events (cluster-autoscaler/core/scaleup, processors/status).
TRIGGERED_SCALE_UP = "TriggeredScaleUp"  # "pod triggered scale-up: [{eks-gpu-ng 1->2 (max: 4)}]"
NOT_TRIGGER_SCALE_UP = "NotTriggerScaleUp"  # "pod didn't trigger scale-up: 2 node(s) didn't match ..."
FAILED_SCALE_UP = "FailedScaleUp"  # "Node scale up in zones ... associated with this pod failed: ..."
# Karpenter's: "Pod should schedule on: nodeclaim/default-abc12"; "Failed to schedule pod, incompatible with ..."
NOMINATED = "Nominated"
FAILED_SCHEDULING = "FailedScheduling"
KARPENTER_FAILURE_PREFIXES = ("failed to schedule pod", "could not schedule pod")

# What makes a "didn't trigger scale-up" or a Karpenter failure temporary: the group or NodePool
# that fits is at its size or resource limit, or backing off after a failed scale-up (an EC2
# capacity error). Capacity frees up, or the backoff ends; anything else is about the pod itself.
TEMPORARY_REFUSALS = (
    "max node group size reached",
    "backoff",
    "limit reached",  # "max cluster cpu limit reached"
    "not ready for scale-up",
    "exceed limits",  # Karpenter: "all available instance types exceed limits for nodepool"
    "insufficient capacity",
    "instance types were unavailable",
)
# The scheduler's words for "the nodes are full" (rather than "no node may take this pod").
SHORTAGES = ("insufficient ", "too many pods")

# Image pull errors that no retry heals.
PERMANENT_IMAGE_ERRORS = ("not found", "manifest unknown", "unauthorized", "pull access denied")
# The kubelet's back-off message before Kubernetes 1.30 names no cause: ``Back-off pulling image "x"``.
_BARE_BACKOFF = re.compile(r'^\s*back-off pulling image\s*("[^"]*")?\s*$', re.IGNORECASE)


class Grace(StrEnum):
    """Which grace bounds a stuck pod."""

    CAPACITY = "capacity"
    UNSCHEDULABLE = "unschedulable"
    IMAGE_ERROR = "image-error"
    STUCK = "stuck"


GRACE_SETTINGS = {
    Grace.CAPACITY: "capacity_grace_seconds",
    Grace.UNSCHEDULABLE: "unschedulable_grace_seconds",
    Grace.IMAGE_ERROR: "image_error_grace_seconds",
    Grace.STUCK: "stuck_grace_seconds",
}


def grace_seconds(grace: Grace, settings: Settings | StartSettings) -> int:
    return int(getattr(settings, GRACE_SETTINGS[grace]))


@dataclass(frozen=True)
class Stuck:
    """A stuck pod's reason, what to say of it, and the grace that bounds it."""

    pod: str
    reason: str
    message: str
    grace: Grace


def _short(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _middle_out(text: str) -> str:
    """At most MAX_MESSAGE characters, keeping both ends: a pull error says what at the start, why at the end."""
    if len(text) <= MAX_MESSAGE:
        return text
    head = MAX_MESSAGE // 3
    return text[:head] + "…" + text[len(text) - (MAX_MESSAGE - head - 1) :]


# --------------------------------------------------------------------------- events


def event_time(event: Mapping[str, Any]) -> float:
    """When an event last happened: the series' last sighting, lastTimestamp, eventTime, or its creation."""
    series = event.get("series") or {}
    meta = event.get("metadata") or {}
    for value in (
        series.get("lastObservedTime"),
        event.get("lastTimestamp"),
        event.get("eventTime"),
        event.get("firstTimestamp"),
        meta.get("creationTimestamp"),
    ):
        ts = clock.parse(value) if isinstance(value, str) else None
        if ts is not None:
            return ts
    return 0.0


def pod_events(events: Iterable[Mapping[str, Any]], pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The events of this very pod (an earlier pod of the same name has another uid), oldest first."""
    uid = meta(pod).uid
    own = [e for e in events if not uid or (e.get("involvedObject") or {}).get("uid") in (None, "", uid)]
    return sorted(own, key=event_time)  # stable: the API's order breaks ties


def _is_karpenter_failure(event: Mapping[str, Any]) -> bool:
    message = str(event.get("message") or "").lower()
    return event.get("reason") == FAILED_SCHEDULING and message.startswith(KARPENTER_FAILURE_PREFIXES)


def _is_autoscaler_event(event: Mapping[str, Any]) -> bool:
    reason = event.get("reason")
    if reason in (TRIGGERED_SCALE_UP, NOT_TRIGGER_SCALE_UP, FAILED_SCALE_UP):
        return True
    if reason == NOMINATED:
        return "should schedule on" in str(event.get("message") or "").lower()
    return _is_karpenter_failure(event)


def _refusal_is_temporary(message: str) -> bool:
    """Whether a "didn't trigger scale-up" / Karpenter failure names a group or NodePool that fits but is full."""
    text = message.lower()
    if text.startswith("pod didn't trigger scale-up"):
        reasons = text.partition(":")[2]
        parts = [p.strip() for p in reasons.split(",") if p.strip()]
    else:  # Karpenter: one "incompatible with nodepool ..." or "... exceed limits ..." per NodePool, ';' apart
        parts = [p.strip() for p in text.split(";") if p.strip()]
    return any(marker in part for part in parts for marker in TEMPORARY_REFUSALS)


def autoscaler_verdict(events: Iterable[Mapping[str, Any]]) -> tuple[Grace, str] | None:
    """What the latest autoscaler event says: (CAPACITY, its message) when capacity is coming or
    may free up, (UNSCHEDULABLE, its message) when no group or NodePool can ever fit the pod;
    None when no autoscaler spoke of the pod. ``events`` oldest first (``pod_events``)."""
    latest = None
    for event in events:
        if _is_autoscaler_event(event):
            latest = event
    if latest is None:
        return None
    reason, message = str(latest.get("reason")), str(latest.get("message") or "").strip()
    said = f"{reason}: {message}" if message else reason
    if reason in (TRIGGERED_SCALE_UP, NOMINATED, FAILED_SCALE_UP):
        return Grace.CAPACITY, said
    return (Grace.CAPACITY if _refusal_is_temporary(message) else Grace.UNSCHEDULABLE), said


def unschedulable(pod: str, scheduler_message: str, events: Iterable[Mapping[str, Any]]) -> Stuck:
    """A pod the scheduler cannot place: waiting for capacity, or never schedulable (see the module's table)."""
    verdict = autoscaler_verdict(events)
    if verdict is None:
        if any(word in scheduler_message.lower() for word in SHORTAGES):
            message = f"no autoscaler event; waiting for resources to free up: {scheduler_message}"
            return Stuck(pod, WAITING_FOR_CAPACITY, _short(message), Grace.CAPACITY)
        return Stuck(pod, UNSCHEDULABLE, scheduler_message, Grace.UNSCHEDULABLE)
    grace, said = verdict
    if grace == Grace.CAPACITY:
        return Stuck(pod, WAITING_FOR_CAPACITY, _short(f"{said} (scheduler: {scheduler_message})"), grace)
    message = f"no node group or NodePool can fit the pod: {said} (scheduler: {scheduler_message})"
    return Stuck(pod, NEVER_SCHEDULABLE, _short(message), grace)


# --------------------------------------------------------------------------- images


def image_error_is_permanent(reason: str, message: str) -> bool:
    """An image pull error that no retry heals: an invalid name, an image or tag that does not exist, a refusal."""
    if reason == "InvalidImageName":
        return True
    text = message.lower()
    return reason in IMAGE_REASONS and any(marker in text for marker in PERMANENT_IMAGE_ERRORS)


def names_no_cause(message: str) -> bool:
    """A back-off message that does not say why the pull failed (kubelets before 1.30): only events can."""
    return not message.strip() or _BARE_BACKOFF.match(message) is not None


def pull_failure(events: Iterable[Mapping[str, Any]]) -> str | None:
    """The latest kubelet "Failed" event of a pull that can never succeed, if any."""
    found = None
    for event in events:
        message = str(event.get("message") or "")
        if event.get("reason") == "Failed" and image_error_is_permanent("ErrImagePull", message):
            found = message
    return found


def image_error(finding: Mapping[str, Any], events: Iterable[Mapping[str, Any]] = (), message: str = "") -> Stuck:
    """An image pull error: IMAGE_ERROR when it can never heal (the container's message or the pod's events say so).

    ``message``: the container's whole waiting message, when the finding's is cut short.
    """
    pod, reason = str(finding["pod"]), str(finding["reason"])
    message = message or str(finding.get("message") or "")
    if image_error_is_permanent(reason, message):
        return Stuck(pod, reason, _middle_out(message), Grace.IMAGE_ERROR)
    failure = pull_failure(events)
    if failure is not None:
        return Stuck(pod, reason, _middle_out(f"{reason}: {failure}"), Grace.IMAGE_ERROR)
    return Stuck(pod, reason, _middle_out(message), Grace.STUCK)


def waiting_message(pod: Mapping[str, Any], container: str | None) -> str:
    """The whole waiting message of a container of ``pod`` ('' when there is none)."""
    status = pod.get("status") or {}
    for cs in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]:
        if container is None or cs.get("name") == container:
            message = ((cs.get("state") or {}).get("waiting") or {}).get("message")
            if message:
                return str(message)
    return ""


def timer_class(reason: str) -> str:
    """What a stuck reason's timer counts: it starts again when the class changes (capacity that was
    coming is no excuse once no node can ever fit the pod), not when the kubelet flips between
    ErrImagePull and ImagePullBackOff."""
    if reason == WAITING_FOR_CAPACITY:
        return "capacity"
    if reason in (UNSCHEDULABLE, NEVER_SCHEDULABLE):
        return "unschedulable"
    if reason in IMAGE_REASONS:
        return "image"
    return "other"


# --------------------------------------------------------------------------- the verdict


@dataclass(frozen=True)
class Judgement:
    """A stuck pod, since when (epoch seconds), and whether its grace is over.

    ``events_from``: for a pull error whose message names no cause, when its
    events are first read (``judge``); they may say it can never heal, and
    end it then.
    """

    stuck: Stuck
    since: float
    grace_seconds: int
    events_from: float | None = None

    def expired(self, now: float) -> bool:
        return now - self.since >= self.grace_seconds

    def ends_at(self) -> float:
        """The first moment a look could fail the pod: its grace's end, or its events' first reading if sooner."""
        end = self.since + self.grace_seconds
        return end if self.events_from is None else min(end, self.events_from)


class EventSource(Protocol):
    """Where a stuck pod's events come from (a cluster: ``jobsync.run.loop.Cluster``)."""

    def list_events(self, namespace: str, pod: str) -> list[dict[str, Any]]: ...


# Judging a stuck pod may need its events: it yields the pod's name, and is sent the events.
Judging = Generator[str, list[dict[str, Any]], Judgement]


def judge(
    finding: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    state: LoopState,
    now: float,
    source: EventSource,
    settings: Settings,
) -> Judgement:
    """``judging``, its events read from ``source`` when it asks for them."""
    steps = judging(finding, list(pods), state, now, settings)
    try:
        pod = next(steps)
        while True:
            pod = steps.send(source.list_events(state.job.namespace, pod))
    except StopIteration as done:
        judged: Judgement = done.value
        return judged


def judging(
    finding: Mapping[str, Any],
    pods: Iterable[Mapping[str, Any]],
    state: LoopState,
    now: float,
    settings: Settings,
) -> Judging:
    """The stuck pod of ``finding`` judged: its reason, message, grace; its events (asked for by the pod's name,
    yielded) only where they decide.

    The pod's events are read when it is Unschedulable (only they say whether
    capacity is coming), and for an image error whose message names no cause
    once the pod has pulled for the image error grace (only then could they
    shorten the wait; until then ``events_from`` says when). The timer is the
    state's ``stuckSince``, started again when the timer class changes
    (``timer_class``); a pull error that can never heal counts from the pod's
    start, when the kubelet began pulling.
    """
    name, reason = str(finding["pod"]), str(finding["reason"])
    events_from: float | None = None
    pod = next((p for p in pods if meta(p).name == name), {})
    previous = seconds(state.stuckSince) if state.stuckSince else None
    started = clock.parse(str((pod.get("status") or {}).get("startTime") or ""))
    # Since when the kubelet pulls: the pod's start, never before the submission (a skewed clock).
    pulling_since = min(now, max(started, seconds(state.submittedAt))) if started is not None else now

    def since_for(stuck_reason: str) -> float:
        same = previous is not None and timer_class(state.reason) == timer_class(stuck_reason)
        return previous if same and previous is not None else now

    if reason == UNSCHEDULABLE:
        events = pod_events((yield name), pod)
        stuck = unschedulable(name, str(finding.get("message") or ""), events)
    elif reason in IMAGE_REASONS:
        whole = waiting_message(pod, finding.get("container"))
        stuck = image_error(finding, message=whole)
        pulling = min(since_for(reason), pulling_since)
        undecided = stuck.grace == Grace.STUCK and names_no_cause(whole or stuck.message)
        if undecided and now - pulling >= settings.image_error_grace_seconds:
            events = pod_events((yield name), pod)
            stuck = image_error(finding, events, message=whole)
        elif undecided:
            events_from = pulling + settings.image_error_grace_seconds
    else:
        stuck = Stuck(name, reason, str(finding.get("message") or ""), Grace.STUCK)
    since = since_for(stuck.reason)
    if stuck.grace == Grace.IMAGE_ERROR:
        since = min(since, pulling_since)
    return Judgement(stuck, since, grace_seconds(stuck.grace, settings), events_from)
