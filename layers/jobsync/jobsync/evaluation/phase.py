"""The phase contract (docs/phases.md) and the evaluation every part of jobsync speaks."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class Phase(StrEnum):
    """Where a job is, in one word: what the evaluator answers."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    STOPPED = "STOPPED"
    UNKNOWN = "UNKNOWN"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_PHASES


TERMINAL_PHASES = frozenset({Phase.SUCCEEDED, Phase.FAILED, Phase.STOPPED})


class LoopPhase(StrEnum):
    """Where one execution's loop is: the evaluator's phases, and what only the loop can see.

    NOT_FOUND: the job is gone. TIMED_OUT: its deadline passed. ERROR: a step
    failed for good (set by the state machine's Catch, never by a Lambda).
    """

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    STOPPED = "STOPPED"
    UNKNOWN = "UNKNOWN"
    NOT_FOUND = "NOT_FOUND"
    TIMED_OUT = "TIMED_OUT"
    ERROR = "ERROR"

    @property
    def terminal(self) -> bool:
        """The loop ends in this phase (the state machine's IsDone reads the state's ``terminal``)."""
        return self in LOOP_ENDING

    @classmethod
    def of(cls, phase: Phase) -> LoopPhase:
        return cls(str(phase))


LOOP_ENDING = frozenset(
    {
        LoopPhase.SUCCEEDED,
        LoopPhase.FAILED,
        LoopPhase.STOPPED,
        LoopPhase.NOT_FOUND,
        LoopPhase.TIMED_OUT,
        LoopPhase.ERROR,
    }
)


@dataclass(frozen=True)
class JobCounts:
    """One child Job group of a TrainJob (``status.jobsStatus``) or JobSet (``replicatedJobsStatus``)."""

    name: str
    active: int = 0
    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    suspended: int = 0


@dataclass(frozen=True)
class Progress:
    """How far a running job has come, as its controller reports it (Trainer v2's ``trainerStatus``).

    Every field is optional: a runtime reports what it knows. ``metrics`` keeps
    the reported order (values are strings, as Trainer writes them); at most
    ``MAX_PROGRESS_ENTRIES`` metrics and job groups are kept, the rest counted.
    """

    percentage: int | None = None
    remaining_seconds: int | None = None
    metrics: tuple[tuple[str, str], ...] = ()
    updated: str | None = None
    jobs: tuple[JobCounts, ...] = ()
    omitted_metrics: int = 0
    omitted_jobs: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, in Trainer's own field names; fields it does not know are left out."""
        out: dict[str, Any] = {}
        if self.percentage is not None:
            out["progressPercentage"] = self.percentage
        if self.remaining_seconds is not None:
            out["estimatedRemainingSeconds"] = self.remaining_seconds
        if self.metrics:
            out["metrics"] = dict(self.metrics)
        if self.omitted_metrics:
            out["metricsOmitted"] = self.omitted_metrics
        if self.updated is not None:
            out["lastUpdatedTime"] = self.updated
        if self.jobs:
            out["jobs"] = [asdict(job) for job in self.jobs]
        if self.omitted_jobs:
            out["jobsOmitted"] = self.omitted_jobs
        return out


#: A status may list up to 256 metrics (Trainer's CRD) or 100 jobs: the verdict carries the first ones only.
MAX_PROGRESS_ENTRIES = 20


@dataclass(frozen=True)
class Evaluation:
    """The verdict on one job's status.

    ``since`` is the RFC 3339 timestamp of the deciding condition or status
    change, when the object says it. ``progress`` is what the controller
    reports of a run's advance (TrainJob, JobSet), None when it reports
    nothing; it never changes the phase.
    """

    phase: Phase
    reason: str
    message: str = ""
    since: str | None = None
    kind: str = ""
    progress: Progress | None = None

    @property
    def terminal(self) -> bool:
        return self.phase.terminal

    def to_dict(self) -> dict[str, Any]:
        """The JSON form; ``progress`` appears only when there is one, so other kinds' output is unchanged."""
        out: dict[str, Any] = {
            "phase": str(self.phase),
            "reason": self.reason,
            "message": self.message,
            "since": self.since,
            "kind": self.kind,
            "terminal": self.terminal,
        }
        if self.progress is not None and (progress := self.progress.to_dict()):
            out["progress"] = progress
        return out
