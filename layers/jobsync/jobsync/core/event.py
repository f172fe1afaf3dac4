"""The notifier's "Job Phase Changed" event: one model for the publisher, Resume, the stack's rule and the tests.

The notifier builds the event's ``detail`` here (``PhaseChangedDetail.of``)
and puts it on the stack's bus; the stack's rule (template.yaml's
``JobEnded``, and the local run's) matches ``RESUME_PATTERN``; Resume parses
the whole EventBridge event with ``PhaseChanged`` (the envelope as
Powertools' ``EventBridgeModel`` has it, with this detail).

What Resume does with it: the event is a claim, made by whoever could put it on
the bus. Resume checks that it names an execution that waits, for its own job,
and that the job has ended (one GET: ``jobsync.core.verdict.ended``); then it
wakes the execution, whose next look gives the verdict as every look does, with
the pods, the diagnostics, the log tail and the result, none of which the event
carries. The event's own phase, reason and times are for people and their
rules (docs/notifier.md); the run never copies them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from jobsync import clock
from jobsync.bodies import meta
from jobsync.core.ours import EXECUTION_ANNOTATION
from jobsync.core.outcome import Phase
from jobsync.evaluation import evaluate
from jobsync.evaluation.kinds import KindSpec
from jobsync.evaluation.times import job_times

SOURCE = "jobsync"
DETAIL_TYPE = "Job Phase Changed"
# The events that end a wait: template.yaml's JobEnded rule matches exactly this (a test holds it to it).
RESUME_PATTERN: dict[str, Any] = {"source": [SOURCE], "detail-type": [DETAIL_TYPE], "detail": {"terminal": [True]}}


# Built on first use: of the Lambdas only Resume parses an event (and Await, which imports this, none).
_MODEL = ConfigDict(extra="ignore", defer_build=True)


class EventJob(BaseModel):
    """The job an event is about, as its metadata names it."""

    model_config = _MODEL

    apiVersion: str | None = None
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None


class PhaseChangedDetail(BaseModel):
    """One job seen in a new phase: one the evaluator gives, or NOT_FOUND for a job deleted before it ended."""

    model_config = _MODEL

    job: EventJob = Field(default_factory=EventJob)
    executionArn: str | None = None
    phase: Phase
    terminal: bool
    reason: str = ""
    message: str = ""
    since: str | None = None
    createdAt: str | None = None
    startedAt: str | None = None
    finishedAt: str | None = None
    # What the job's controller reports of its advance (a TrainJob's progressPercentage, estimatedRemainingSeconds,
    # metrics; child Job counts: ``Evaluation.progress``), None when it reports nothing.
    progress: dict[str, Any] | None = None

    @classmethod
    def of(cls, obj: Mapping[str, Any], spec: KindSpec) -> PhaseChangedDetail:
        """The event for ``obj`` as it is now: its evaluation and the times its status gives."""
        evaluation = evaluate(obj)
        times = job_times(obj, evaluation)
        return cls(
            job=_job(obj, spec),
            executionArn=execution_arn(obj),
            phase=evaluation.phase,
            terminal=evaluation.terminal,
            reason=evaluation.reason,
            message=evaluation.message,
            since=evaluation.since,
            createdAt=times.created,
            startedAt=times.started,
            finishedAt=times.finished,
            progress=(evaluation.progress.to_dict() or None) if evaluation.progress is not None else None,
        )

    @classmethod
    def deleted(cls, obj: Mapping[str, Any], spec: KindSpec, last: Phase) -> PhaseChangedDetail:
        """The event for a job that vanished while ``last`` (a phase that had not ended)."""
        message = f"the job was deleted while {last}"
        return cls(
            job=_job(obj, spec),
            executionArn=execution_arn(obj),
            phase=Phase.NOT_FOUND,
            terminal=Phase.NOT_FOUND.terminal,
            reason="JobDeleted",
            message=message,
        )

    def payload(self) -> dict[str, Any]:
        """The ``Detail`` as it goes on the bus (every field, absent ones as null)."""
        return self.model_dump(mode="json")


class PhaseChanged(BaseModel):
    """The EventBridge event as a rule's target receives it (only what Resume reads is checked)."""

    model_config = _MODEL | ConfigDict(populate_by_name=True)

    source: Literal["jobsync"]
    detail_type: Literal["Job Phase Changed"] = Field(alias="detail-type")
    detail: PhaseChangedDetail

    @property
    def execution(self) -> str | None:
        return self.detail.executionArn

    @property
    def finished_at(self) -> float | None:
        return clock.parse(self.detail.finishedAt)


def execution_arn(obj: Mapping[str, Any]) -> str | None:
    """The execution that created ``obj`` (its annotation), if it says."""
    value = meta(obj).annotations.get(EXECUTION_ANNOTATION)
    return value if isinstance(value, str) else None


def _job(obj: Mapping[str, Any], spec: KindSpec) -> EventJob:
    seen = meta(obj)
    return EventJob(
        apiVersion=spec.api_version,
        kind=spec.kind,
        namespace=seen.namespace or None,
        name=seen.name or None,
        uid=seen.uid or None,
    )
