"""The loop state, typed: what Submit returns and every look at the job takes and returns.

Its JSON is the execution's payload (Status's input and output, the Await's
input, the task token store's item, the outputs and Causes), so it stays as
people read it: timestamps as RFC 3339 text, the phase as its word. In Python
the phase is a ``Phase`` and every time an aware ``datetime`` (``Instant``),
parsed once where the state comes in, so no step parses a timestamp again.
A time is written back as it was read (``rfc3339``); jobsync's own are UTC, to
the second, with a ``Z``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer

from jobsync import clock
from jobsync.core.outcome import Phase

CleanupMode = Literal["onFailure", "always", "never"]
# Where the run's deadline counts from: the job's submission, or its admission by a queue (Kueue).
DeadlineFrom = Literal["submission", "admission"]
DNS1123_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
EXECUTION_ARN = r"^arn:aws[a-z-]*:states:[a-z0-9-]+:\d{12}:execution:[^:]+:[^:]+$"
# A hint past any deadline a deployment allows is a mistake (and 10**400 overflows the wait
# policy's float arithmetic): refused here by name; submit also holds it to max_timeout_seconds.
MAX_EXPECTED_DURATION_SECONDS = 365 * 86400
TimesFrom = Literal["job", "polls"]


def _has_offset(value: str) -> bool:
    return value.endswith(("Z", "z")) or bool(re.search(r"[+-]\d{2}:?\d{2}$", value))


def _instant(value: Any) -> datetime:
    """An RFC 3339 timestamp with a zone as an aware datetime; a ValueError that quotes anything else."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value
    # Checked here so a bad timestamp is named, and refused before any request to the cluster.
    if not isinstance(value, str) or clock.parse(value) is None or not _has_offset(value):
        raise ValueError(f"not an RFC 3339 timestamp with a time zone: {value!r}")
    return datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))


def rfc3339(moment: datetime) -> str:
    """``moment`` as RFC 3339: to the second and its fraction, if any; ``Z`` for UTC, else its offset."""
    fraction = f".{moment.microsecond:06d}".rstrip("0") if moment.microsecond else ""
    offset = moment.utcoffset()
    zone = "Z" if not offset else moment.isoformat()[-6:]
    return moment.isoformat(timespec="seconds")[:19] + fraction + zone


Instant = Annotated[datetime, BeforeValidator(_instant), PlainSerializer(rfc3339, return_type=str)]
# The phase as its word, in every dump (a plain str: the payload is JSON as it is).
PhaseWord = Annotated[Phase, PlainSerializer(lambda phase: phase.value, return_type=str)]


def instant(seconds: float) -> datetime:
    """Epoch seconds as jobsync writes a time: UTC, cut to the second (``clock.isoformat``)."""
    return datetime.fromtimestamp(seconds, tz=UTC).replace(microsecond=0)


def seconds(moment: datetime) -> float:
    """An instant as epoch seconds, the unit every rule computes in."""
    return moment.timestamp()


def text_instant(value: str | None) -> datetime | None:
    """A time from a job's status (RFC 3339 text) as an instant; None when absent, unreadable or zoneless."""
    try:
        return _instant(value) if value else None
    except ValueError:
        return None


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class JobRef(_Strict):
    """A compact reference to the submitted job: enough to find it, nothing secret."""

    apiVersion: str
    kind: str
    namespace: str = Field(pattern=DNS1123_LABEL)
    name: str = Field(pattern=DNS1123_LABEL)
    uid: str | None = None


class Eviction(_Strict):
    """One line of a Kueue Workload's ``schedulingStats.evictions``: why it was evicted, how many times."""

    reason: str
    underlyingCause: str = ""
    count: int = Field(ge=0)


# A Workload keeps at most 256 eviction lines (Kueue's CRD); the state carries the first ones.
MAX_EVICTION_LINES = 8


class QueueRecord(_Strict):
    """What the looks learned of the queue a Kueue-managed job waits in (``jobsync.core.queue``).

    ``clusterQueue`` is None until a look learns it (the Workload's admission,
    or its LocalQueue); ``admittedAt`` is the job's first admission seen, the
    start of a deadline that counts from admission; ``evictions`` are Kueue's
    own counts, by reason.
    """

    localQueue: str
    clusterQueue: str | None = None
    workload: str | None = None
    admittedAt: Instant | None = None
    evictions: list[Eviction] = Field(default_factory=list, max_length=MAX_EVICTION_LINES)


class LoopState(BaseModel):
    """The state of one run (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    job: JobRef
    execution: str = Field(pattern=EXECUTION_ARN)  # a look reads only the job this execution created
    cleanup: CleanupMode = "onFailure"
    submittedAt: Instant
    deadline: Instant
    # The run's budget apart from the queue's (Submit's input): ``timeoutSeconds`` from ``deadlineFrom``.
    # ``queueDeadline``: the latest a queued job may be admitted; None once the job has left its queue (then
    # a deadline that counts from admission is settled) or when no queue budget applies.
    deadlineFrom: DeadlineFrom = "submission"
    timeoutSeconds: int | None = Field(default=None, gt=0)
    queueDeadline: Instant | None = None
    # The queue's whole budget: a job evicted and requeued waits again within what is left of it.
    queueTimeoutSeconds: int | None = Field(default=None, gt=0)
    expectedDurationSeconds: int | None = Field(default=None, le=MAX_EXPECTED_DURATION_SECONDS)
    jobFamily: str | None = None
    # Where expectedDurationSeconds came from: the input, or the family's learned median.
    hintSource: Literal["input", "learned"] | None = None
    phase: PhaseWord
    reason: str = ""
    message: str = ""
    terminal: bool = False
    phaseSince: Instant
    # The job's own times from its status, or the looks' when it says nothing (``timesFrom`` tells
    # which, per time); ``noticedAt`` is the look that saw the end (jobsync.core.step).
    startedAt: Instant | None = None
    finishedAt: Instant | None = None
    noticedAt: Instant | None = None
    timesFrom: dict[Literal["startedAt", "finishedAt"], TimesFrom] = Field(default_factory=dict)
    # A Kueue-managed job: its queue, and the seconds it waited for admission (evicted and requeued: all of them).
    queue: QueueRecord | None = None
    queuedSeconds: int | None = Field(default=None, ge=0)
    # What the job's controller reports of its advance (a TrainJob's progress and ETA, child Job counts), as
    # the evaluator reads it (``Evaluation.progress``); None when it reports nothing.
    progress: dict[str, Any] | None = None
    stuckSince: Instant | None = None
    # Callback mode with the sweeper: when a look could next decide a starting job (a stuck pod's grace, a missing
    # operator); the sweeper looks at it on its first run from then (jobsync.core.wait.sweep_due).
    sweepAt: Instant | None = None
    polls: int = Field(default=0, ge=0)
    waitSeconds: int = Field(default=0, ge=0)
    diagnostics: list[dict[str, Any]] = Field(default_factory=list)
    logTail: str | None = None
    # A job that ended as SUCCEEDED or FAILED: its leading replica's termination message, parsed and
    # bounded, or what a SageMaker job's status carries (jobsync.core.result); None when there is none.
    result: Any = None

    def payload(self) -> dict[str, Any]:
        """The state as the execution carries it, absent fields left out.

        Times and the phase as text; every other value as it is, so that a number no JSON can
        hold reaches ``jobsync.strict_json`` and is refused there by its path (a JSON-mode dump
        would quietly write it as null).
        """
        return self.model_dump(exclude_none=True)

    def look_deadline(self, now: float) -> float:
        """The next moment a look must not wait past: the deadline, or the queue's while it is ahead."""
        deadline = seconds(self.deadline)
        if self.queueDeadline is not None and now < seconds(self.queueDeadline) < deadline:
            return seconds(self.queueDeadline)
        return deadline
