"""The evaluation every part of jobsync speaks: a ``Phase`` (``jobsync.core.outcome``) and why."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from jobsync.core.outcome import Phase

__all__ = ["Evaluation", "Phase"]


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
    """The verdict on one job's status: one of the evaluated phases (``Phase.evaluated``) and why.

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
