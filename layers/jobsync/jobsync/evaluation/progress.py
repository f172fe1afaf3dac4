"""What a running job reports of its advance: Trainer v2's ``trainerStatus`` and the child Job counts.

Readers that never raise: a field of the wrong type is left out, never
guessed. A percentage outside 0..100 or a negative estimate (the CRD forbids
both) is left out too; a metric needs a non-empty string name and value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from jobsync.evaluation.conditions import count, text, timestamp_text
from jobsync.evaluation.phase import MAX_PROGRESS_ENTRIES, JobCounts, Progress


def _whole(value: Any, low: int, high: int | None = None) -> int | None:
    """A whole number within bounds, else None (a bool, a float with a fraction, NaN are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        return None
    number = int(value)
    if number < low or (high is not None and number > high):
        return None
    return number


def job_counts(entries: Any) -> tuple[tuple[JobCounts, ...], int]:
    """``jobsStatus`` / ``replicatedJobsStatus`` as counts, and how many entries were past the bound."""
    if not isinstance(entries, list):
        return (), 0
    groups = [
        JobCounts(
            text(entry.get("name")) or "?",
            count(entry.get("active")),
            count(entry.get("ready")),
            count(entry.get("succeeded")),
            count(entry.get("failed")),
            count(entry.get("suspended")),
        )
        for entry in entries
        if isinstance(entry, Mapping)
    ]
    return tuple(groups[:MAX_PROGRESS_ENTRIES]), max(0, len(groups) - MAX_PROGRESS_ENTRIES)


def _metrics(entries: Any) -> tuple[tuple[tuple[str, str], ...], int]:
    if not isinstance(entries, list):
        return (), 0
    pairs = [
        (name, value)
        for entry in entries
        if isinstance(entry, Mapping) and (name := text(entry.get("name"))) and (value := text(entry.get("value")))
    ]
    return tuple(pairs[:MAX_PROGRESS_ENTRIES]), max(0, len(pairs) - MAX_PROGRESS_ENTRIES)


def progress(status: Mapping[str, Any], jobs_field: str, trainer_field: str | None = None) -> Progress | None:
    """The progress ``status`` reports, or None when it reports none.

    ``jobs_field`` names the child Job counts (``jobsStatus``,
    ``replicatedJobsStatus``); ``trainer_field`` the runtime's own report
    (``trainerStatus``: ``progressPercentage``, ``estimatedRemainingSeconds``,
    ``metrics``, ``lastUpdatedTime``).
    """
    jobs, omitted_jobs = job_counts(status.get(jobs_field))
    trainer = status.get(trainer_field) if trainer_field else None
    if not isinstance(trainer, Mapping):
        trainer = {}
    metrics, omitted_metrics = _metrics(trainer.get("metrics"))
    found = Progress(
        percentage=_whole(trainer.get("progressPercentage"), 0, 100),
        remaining_seconds=_whole(trainer.get("estimatedRemainingSeconds"), 0),
        metrics=metrics,
        updated=timestamp_text(trainer.get("lastUpdatedTime")),
        jobs=jobs,
        omitted_metrics=omitted_metrics,
        omitted_jobs=omitted_jobs,
    )
    return found if found.to_dict() else None
