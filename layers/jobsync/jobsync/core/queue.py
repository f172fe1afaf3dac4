"""Kueue: whether a job waits in a queue, and what its Workload says of it. The queue's part of the verdict.

Under Kueue every job is created suspended (``spec.suspend``, or
``runPolicy.suspend`` for the Kubeflow v1 kinds) and waits for a Workload,
which Kueue creates and owns to the job (its controller reference), to be
admitted; the job alone cannot tell that wait from a person's suspension. So
``look`` reads the Workload, through the look's reads (``Read("workload")``),
and only when it can change the verdict: while the job is suspended, once
after it leaves the queue (its admission time), and at its end (its evictions
and time queued). A healthy running job costs no read here.

What the Workload says, its conditions read together (kueue#14811: Admitted,
QuotaReserved and Evicted can all be True at once), first match wins:

========================================  ===========  ======================================
the Workload                              phase        reason
========================================  ===========  ======================================
the job's own status ended it             (the job's)  (the job's)
deactivated by Kueue (``DeactivatedDueTo  FAILED       its cause: ``RequeuingLimitExceeded``,
...`` or ``DeactivationTarget``)                       ``MaximumExecutionTimeExceeded``,
                                                       ``AdmissionCheckRejected``
deactivated by a person (``spec.active:   SUSPENDED    ``WorkloadDeactivated``
false``)
not admitted and never can be             FAILED       ``ExceedsMaxQuota``, ``Misconfigured``
``Evicted`` True (preempted, ...)         PENDING      ``Evicted``: requeued, waiting again
``Admitted`` True, the job suspended      PENDING      ``Admitted``; past ``stuck_grace_seconds``
                                                       FAILED ``AdmittedButSuspended``
``Admitted`` True, the job resumed        (the job's)  (the job's)
quota reserved, checks not all Ready      PENDING      ``UnsatisfiedAdmissionChecks``
otherwise                                 PENDING      ``QuotaReserved``'s reason: ``WaitingForQuota``,
                                                       ``NoMatchingFlavor``,
                                                       ``WaitingForPreemptedWorkloads``, ... else ``Queued``
========================================  ===========  ======================================

Kueue v0.19 as released (the ``UnadmittedWorkloadsObservability`` gate off)
writes ``Pending`` for every wait and ``Inadmissible`` for a missing queue:
the message then tells them apart, and this module reads both (``_REFUSED``,
``_LEGACY``); the tests hold it to what Kueue v0.19.2 writes either way
(tests/payloads/kueue/).

A job labelled for a queue that has no Workload ``operator_timeout_seconds``
after submission is FAILED (``NoWorkload``: Kueue is not running, or does not
manage the kind). A deployment that does not say Kueue is used
(``kueue_enabled``) reads nothing: a labelled suspended job is queued
(PENDING), without the why.
"""

from __future__ import annotations

import hashlib
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from jobsync import clock
from jobsync.bodies import Condition, conditions, meta
from jobsync.core.diagnostics import MAX_MESSAGE
from jobsync.core.outcome import Phase
from jobsync.core.reads import Read, WorkloadRead
from jobsync.core.state import MAX_EVICTION_LINES, Eviction, LoopState, QueueRecord, instant, seconds
from jobsync.evaluation.kinds import KindSpec, not_evaluated
from jobsync.evaluation.phase import Evaluation
from jobsync.settings import Settings

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
WORKLOAD = KindSpec("kueue.x-k8s.io/v1beta2", "Workload", "workloads", not_evaluated)
LOCAL_QUEUE = KindSpec("kueue.x-k8s.io/v1beta2", "LocalQueue", "localqueues", not_evaluated)

# Kueue's jobframework names a job's Workload "<kind>-<name>" (cut to fit) + "-" + 5 hex of a sha1 of the
# job's kind, group, name and uid: 253 characters at most, 63 with its ShortWorkloadNames gate.
_HASH_LENGTH = 5
_NAME_LENGTHS = (253, 63)

# QuotaReserved False reasons (and, by their messages, v0.19's ``Pending``/``Inadmissible`` as released)
# of a request that can never be admitted as it is.
_REFUSED = {"ExceedsMaxQuota": "ExceedsMaxQuota", "Misconfigured": "Misconfigured"}
_LEGACY: tuple[tuple[str, str, str], ...] = (  # (reason, a piece of the message, jobsync's reason)
    ("Pending", "maximum capacity", "ExceedsMaxQuota"),
    ("Inadmissible", "doesn't exist", "Misconfigured"),
    ("Inadmissible", "terminating or missing", "Misconfigured"),
    ("Pending", "pending the preemption", "WaitingForPreemptedWorkloads"),
    ("Pending", "insufficient unused quota", "WaitingForQuota"),
    ("Pending", "unavailable in clusterqueue", "NoMatchingFlavor"),
    ("Inadmissible", "", "QueueStopped"),
    ("Waiting", "", "WaitingForPodsReady"),
)
# Why a Workload waits, in Kueue's words (QuotaReserved False), kept as the verdict's reason.
_WAITING = frozenset(
    {
        "WaitingForQuota",
        "NoMatchingFlavor",
        "TopologyPlacementFailed",
        "WaitingForPreemptedWorkloads",
        "PendingEvaluation",
        "WaitingForPodsReady",
        "AdmissionGated",
    }
)
_STOPPED = "QueueStopped"  # the LocalQueue or ClusterQueue is stopped or inactive (Kueue's ``Suspended``)
_CHECKS = "UnsatisfiedAdmissionChecks"  # ``UnsatisfiedChecks`` as released
_DEACTIVATED_BY_KUEUE = "DeactivatedDueTo"
_CAUSES = {"AdmissionCheck": "AdmissionCheckRejected"}


@dataclass(frozen=True)
class QueueSeen:
    """What the queue says of a job at one look.

    ``phase`` None: the job's own verdict stands (not queued, or admitted and
    resumed). ``record`` and ``queued_seconds`` go into the loop state;
    ``waiting``: the job waits for admission (its queue budget runs);
    ``unqueued``: the look saw it out of any queue (admitted, or managed by
    none); ``admitted_at``: its first admission (epoch seconds);
    ``resumed_at``: its latest admission, when the look read it admitted;
    ``ran_seconds``: the time it was admitted before its evictions (Kueue's
    ``accumulatedPastExecutionTimeSeconds``);
    ``stuck_until``: when an admitted job still suspended becomes a stuck start.
    """

    phase: Phase | None = None
    reason: str = ""
    message: str = ""
    record: QueueRecord | None = None
    queued_seconds: int | None = None
    waiting: bool = False
    unqueued: bool = False
    admitted_at: float | None = None
    resumed_at: float | None = None
    ran_seconds: int = 0
    stuck_until: float | None = None


@dataclass(frozen=True)
class Workload:
    """A Kueue Workload, as far as the verdict reads it (v1beta2 and v1beta1 spell one field differently)."""

    name: str = ""
    active: bool = True
    local_queue: str = ""
    cluster_queue: str = ""
    created: float | None = None
    found: Mapping[str, Condition] = field(default_factory=dict)
    accumulated: int = 0
    evictions: tuple[Eviction, ...] = ()
    checks: tuple[str, ...] = ()

    @classmethod
    def read(cls, obj: Mapping[str, Any]) -> Workload:
        spec, status = _mapping(obj.get("spec")), _mapping(obj.get("status"))
        accumulated = status.get(
            "accumulatedPastExecutionTimeSeconds", status.get("accumulatedPastExexcutionTimeSeconds")
        )
        return cls(
            name=meta(obj).name,
            active=spec.get("active") is not False,
            local_queue=str(spec.get("queueName") or ""),
            cluster_queue=str(_mapping(status.get("admission")).get("clusterQueue") or ""),
            created=clock.parse(meta(obj).creation_timestamp),
            found={c.type: c for c in conditions(status)},
            accumulated=accumulated if isinstance(accumulated, int) and accumulated > 0 else 0,
            evictions=_evictions(_mapping(status.get("schedulingStats")).get("evictions")),
            checks=tuple(
                f"{c.get('name')}: {c.get('state')}" + (f" ({c['message']})" if c.get("message") else "")
                for c in _list(status.get("admissionChecks"))
            ),
        )

    def true(self, kind: str) -> Condition | None:
        found = self.found.get(kind)
        return found if found is not None and found.true else None

    def false(self, kind: str) -> Condition | None:
        found = self.found.get(kind)
        return found if found is not None and not found.true else None

    def since(self, kind: str) -> float | None:
        found = self.true(kind)
        return clock.parse(found.last_transition_time) if found is not None else None


def local_queue(obj: Mapping[str, Any]) -> str | None:
    """The LocalQueue the job is labelled for, if any."""
    value = meta(obj).labels.get(QUEUE_LABEL)
    return value if isinstance(value, str) and value else None


def workload_names(spec: KindSpec, name: str, uid: str) -> tuple[str, ...]:
    """The names Kueue gives the job's Workload: its default, then with ShortWorkloadNames (if different)."""
    digest = hashlib.sha1(f"{spec.kind}\n{spec.group}\n{name}\n{uid}".encode(), usedforsecurity=False)
    prefix = f"{spec.kind.lower()}-{name}"
    names = [f"{prefix[: length - 1 - _HASH_LENGTH]}-{digest.hexdigest()[:_HASH_LENGTH]}" for length in _NAME_LENGTHS]
    return tuple(dict.fromkeys(names))


def look(
    state: LoopState,
    obj: Mapping[str, Any],
    spec: KindSpec,
    evaluation: Evaluation,
    now: float,
    settings: Settings,
) -> Generator[Read, Any, QueueSeen]:
    """What the job's queue says of it at ``now``; yields the Workload's read (and once its LocalQueue's)."""
    labelled = local_queue(obj)
    held = spec.suspended(obj)
    suspended = held or evaluation.phase == Phase.SUSPENDED
    record = state.queue
    if labelled is None and record is None and not held:
        return QueueSeen(unqueued=not suspended)
    if not settings.kueue_enabled:
        if labelled is None or not suspended or evaluation.terminal:
            return QueueSeen(unqueued=not suspended)
        why = "its Workload is not read: this deployment does not say Kueue is used (KueueEnabled)"
        return QueueSeen(Phase.PENDING, "Queued", f"queued in LocalQueue {labelled}; {why}", waiting=True)
    admitted_before = record is not None and record.admittedAt is not None
    # Running, its admission known (or no Workload found for it before): nothing to read until its end, but once
    # after a readmission (the last look saw it evicted): its run's budget resumes from then.
    readmitted = state.reason == "Evicted"
    if (
        not suspended
        and record is not None
        and (admitted_before or not record.workload)
        and not evaluation.terminal
        and not readmitted
    ):
        return QueueSeen(record=record, unqueued=True, admitted_at=_admitted_at(record))
    uid = meta(obj).uid
    names = (record.workload,) if record is not None and record.workload else workload_names(spec, meta(obj).name, uid)
    read: WorkloadRead = yield Read("workload", uid=uid, names=names)
    if read.workload is None:
        return _without_workload(state, labelled, suspended, evaluation, now, settings, read.error)
    workload = Workload.read(read.workload)
    queue = labelled or workload.local_queue
    cluster_queue = workload.cluster_queue or (record.clusterQueue if record is not None else None)
    if not cluster_queue and record is None:  # once: the LocalQueue names it (a queued Workload does not)
        found = yield Read("localqueue", names=(queue,), tolerant=True)
        cluster_queue = str(_mapping(_mapping(found).get("spec")).get("clusterQueue") or "") or None
    first_admission = _admitted_at(record) if admitted_before and record is not None else workload.since("Admitted")
    record = QueueRecord.model_validate(
        {
            "localQueue": queue,
            "clusterQueue": cluster_queue,
            "workload": workload.name,
            "admittedAt": instant(first_admission) if first_admission is not None else None,
            "evictions": [e.model_dump() for e in workload.evictions] or (record.evictions if record else []),
        }
    )
    seen = decide(workload, record, suspended, evaluation, now, settings)
    return replace(
        seen,
        record=record,
        queued_seconds=queued_seconds(workload, now),
        admitted_at=first_admission,
        resumed_at=workload.since("Admitted"),
        ran_seconds=workload.accumulated,
    )


def decide(
    workload: Workload,
    record: QueueRecord,
    suspended: bool,
    evaluation: Evaluation,
    now: float,
    settings: Settings,
) -> QueueSeen:
    """The queue's verdict from the job's Workload (the table in the module docstring)."""
    where = _where(record)
    queued = _duration(queued_seconds(workload, now))
    if evaluation.terminal or workload.true("Finished"):
        return QueueSeen(unqueued=True)
    cause = _deactivated_by_kueue(workload)
    if cause is not None:
        said = _said(workload.true("Evicted") or workload.true("DeactivationTarget"))
        return QueueSeen(Phase.FAILED, cause, f"{said} ({where})")
    if not workload.active:
        message = (
            f"its Workload {workload.name} is deactivated (spec.active: false); Kueue admits the job again "
            f"once someone activates it ({where})"
        )
        return QueueSeen(Phase.SUSPENDED, "WorkloadDeactivated", message)
    admitted, reserved = workload.true("Admitted"), workload.true("QuotaReserved")
    quota = workload.false("QuotaReserved")
    why = _waiting_reason(quota)
    if quota is not None and not admitted and suspended and why in _REFUSED:
        message = f"{_said(quota)}: the job can never be admitted as it is ({where})"
        return QueueSeen(Phase.FAILED, why, message)
    evicted = workload.true("Evicted")
    if evicted is not None:
        count = sum(e.count for e in record.evictions) or 1
        message = (
            f"evicted ({evicted.reason}: {_said(evicted)}), {count} eviction(s) so far; requeued, "
            f"waiting {queued} in all ({where})" + (f": {why}: {_said(quota)}" if quota is not None else "")
        )
        return QueueSeen(Phase.PENDING, "Evicted", message, waiting=True)
    if admitted is not None:
        if not suspended:
            return QueueSeen(unqueued=True)
        since = workload.since("Admitted") or now
        grace = settings.stuck_grace_seconds
        if now - since >= grace:
            message = (
                f"admitted {int(now - since)}s ago and still suspended ({grace}s allowed): Kueue could not resume "
                f"the job (a webhook or policy refusing the change?), or its operator does not ({where})"
            )
            return QueueSeen(Phase.FAILED, "AdmittedButSuspended", message)
        message = f"admitted after {queued} in the queue; waiting for the job to resume ({where})"
        return QueueSeen(Phase.PENDING, "Admitted", message, stuck_until=since + grace)
    if reserved is not None:
        checks = "; ".join(workload.checks) or _said(workload.false("Admitted"))
        message = f"quota reserved, {queued} in the queue; waiting for its admission checks: {checks} ({where})"
        return QueueSeen(Phase.PENDING, _CHECKS, message, waiting=True)
    said = f": {quota.reason}: {_said(quota)}" if quota is not None else ": not considered by Kueue yet"
    return QueueSeen(Phase.PENDING, why, f"queued for {queued} ({where}){said}", waiting=True)


def queued_seconds(workload: Workload, now: float) -> int | None:
    """The seconds the Workload waited for admission: since its creation, less the time it was admitted
    before (``accumulatedPastExecutionTimeSeconds``), to its (last) admission or to now."""
    if workload.created is None:
        return None
    until = workload.since("Admitted") or now
    return max(0, int(until - workload.created) - workload.accumulated)


def _without_workload(
    state: LoopState,
    labelled: str | None,
    suspended: bool,
    evaluation: Evaluation,
    now: float,
    settings: Settings,
    error: str | None,
) -> QueueSeen:
    """No Workload (or none could be read): labelled and suspended, the job is queued still; else its own (a
    labelled job that runs with no Workload is remembered, so that its Workload is not looked for again)."""
    if labelled is not None and not suspended and state.queue is None:
        return QueueSeen(record=QueueRecord(localQueue=labelled), unqueued=True)
    if labelled is None or not suspended or evaluation.terminal:
        return QueueSeen(record=state.queue, unqueued=not suspended)
    waited = now - seconds(state.submittedAt)
    if error is not None:
        why = f"its Workload could not be read: {error}"
    elif waited > settings.operator_timeout_seconds:
        message = (
            f"labelled for LocalQueue {labelled} but no Workload after {int(waited)}s: is Kueue running, and does it "
            f"manage {state.job.kind}?"
        )
        return QueueSeen(Phase.FAILED, "NoWorkload", message)
    else:
        why = "Kueue has not made its Workload yet"
    return QueueSeen(Phase.PENDING, "Queued", f"queued in LocalQueue {labelled}; {why}", waiting=True)


def _deactivated_by_kueue(workload: Workload) -> str | None:
    """The cause when Kueue itself deactivated the Workload (a limit it ran into), else None."""
    target = workload.true("DeactivationTarget")
    if target is not None:
        return _CAUSES.get(target.reason, target.reason or "Deactivated")
    evicted = workload.true("Evicted")
    if evicted is not None and evicted.reason.startswith(_DEACTIVATED_BY_KUEUE):
        cause = evicted.reason.removeprefix(_DEACTIVATED_BY_KUEUE)
        return _CAUSES.get(cause, cause or "Deactivated")
    return None


def _waiting_reason(quota: Condition | None) -> str:
    """Why a Workload waits, named as Kueue names it with its finer reasons on, whatever its gate."""
    if quota is None:
        return "Queued"
    if quota.reason in _REFUSED or quota.reason in _WAITING:
        return quota.reason
    if quota.reason == "Suspended":
        return _STOPPED
    text = quota.message.lower()
    for reason, piece, ours in _LEGACY:
        if quota.reason == reason and piece in text:
            return ours
    return "Queued"


def _where(record: QueueRecord) -> str:
    cluster = f", ClusterQueue {record.clusterQueue}" if record.clusterQueue else ""
    return f"LocalQueue {record.localQueue}{cluster}"


def _said(found: Condition | None) -> str:
    text = " ".join((found.message if found is not None else "").split()) or "(no message)"
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _duration(value: int | None) -> str:
    if value is None:
        return "an unknown time"
    hours, rest = divmod(value, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _admitted_at(record: QueueRecord) -> float | None:
    return seconds(record.admittedAt) if record.admittedAt is not None else None


def _evictions(entries: Any) -> tuple[Eviction, ...]:
    found = []
    for entry in _list(entries)[:MAX_EVICTION_LINES]:
        count = entry.get("count")
        if isinstance(entry.get("reason"), str) and isinstance(count, int) and count >= 0:
            found.append(
                Eviction(reason=entry["reason"], underlyingCause=str(entry.get("underlyingCause") or ""), count=count)
            )
    return tuple(found)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []
