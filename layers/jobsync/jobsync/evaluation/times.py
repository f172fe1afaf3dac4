"""A job's own times, read from its status: when it was created, started and finished.

The loop notices a change at its next look; these are when the change
happened, as the job's controller recorded it. Each family keeps them in
different fields, so the first one present wins:

- started: for Kubeflow v1 (``kubeflow.org``: PyTorchJob, TFJob, ...) the
  ``lastTransitionTime`` of the ``Running`` condition: the operator's
  ``status.startTime`` is when it *acknowledged* the job, pods still pending,
  so it would count the pending time as run time. The condition counts while
  True, and also once False beside the True ``Succeeded``/``Failed`` that
  ended the run (the operator flips it, keeping its time). Other families:
  ``status.startTime`` (batch/v1), the ACK job's ``*StartTime``; else the
  ``lastTransitionTime`` of a True ``Running`` condition;
- finished (only once the job has ended): ``status.completionTime``, the ACK
  job's ``*EndTime``; else the deciding condition's time (``Evaluation.since``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobsync.bodies import conditions, meta
from jobsync.evaluation.conditions import timestamp_text
from jobsync.evaluation.phase import Evaluation

_STARTED = ("startTime", "trainingStartTime", "processingStartTime", "transformStartTime")
_FINISHED = (
    "completionTime",
    "trainingEndTime",
    "processingEndTime",
    "transformEndTime",
    "hyperParameterTuningEndTime",
)

_KUBEFLOW_GROUPS = frozenset({"kubeflow.org"})


@dataclass(frozen=True)
class JobTimes:
    created: str | None = None
    started: str | None = None
    finished: str | None = None


def job_times(obj: Mapping[str, Any], evaluation: Evaluation) -> JobTimes:
    """The times ``obj`` says of itself (RFC 3339 strings, None when it does not say)."""
    status = obj.get("status")
    created = timestamp_text(meta(obj).creation_timestamp)
    if not isinstance(status, Mapping):
        return JobTimes(created)
    if _is_kubeflow(obj):
        started = _running_since(status, ended=evaluation.terminal)
    else:
        started = _first(status, _STARTED) or _running_since(status)
    finished = (_first(status, _FINISHED) or evaluation.since) if evaluation.terminal else None
    return JobTimes(created, started, finished)


def _first(status: Mapping[str, Any], fields: tuple[str, ...]) -> str | None:
    return next((t for name in fields if (t := timestamp_text(status.get(name)))), None)


def _is_kubeflow(obj: Mapping[str, Any]) -> bool:
    api_version = obj.get("apiVersion")
    return isinstance(api_version, str) and api_version.split("/", 1)[0] in _KUBEFLOW_GROUPS


def _running_since(status: Mapping[str, Any], ended: bool = False) -> str | None:
    """The earliest Running condition's time: a True one; once ``ended``, a False one too."""
    counted = ("True", True, "False", False) if ended else ("True", True)
    times = sorted(
        t
        for c in conditions(status)
        if c.type == "Running" and c.status in counted
        if (t := timestamp_text(c.last_transition_time))
    )
    return times[0] if times else None
