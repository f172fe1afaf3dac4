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
  ``lastTransitionTime`` of a True ``Running`` condition. A RayJob's
  ``status.startTime`` is when KubeRay began creating its cluster: the Ray
  job's own start is ``rayJobInfo.startTime``. A Volcano Job keeps each phase
  it entered in ``conditions`` (``status`` is the phase): the first
  ``Running``. JobSet and SparkApplication record no start (the poll that
  saw it running stands in);
- finished (only once the job has ended): ``status.completionTime``, the ACK
  job's ``*EndTime``, the RayJob's ``endTime``, the SparkApplication's
  ``terminationTime``; else the deciding condition's time (``Evaluation.since``).
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
    "endTime",
    "terminationTime",
    "trainingEndTime",
    "processingEndTime",
    "transformEndTime",
    "hyperParameterTuningEndTime",
)

_KUBEFLOW_GROUPS = frozenset({"kubeflow.org"})
# Their status has no start of the run itself (a SparkApplication's lastSubmissionAttemptTime is its submission).
_NO_START = frozenset({"jobset.x-k8s.io", "sparkoperator.k8s.io"})


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
    group = _group(obj)
    if group in _KUBEFLOW_GROUPS:
        started = _running_since(status, ended=evaluation.terminal)
    elif group == "ray.io":
        info = status.get("rayJobInfo")
        started = timestamp_text(info.get("startTime")) if isinstance(info, Mapping) else None
    elif group == "batch.volcano.sh":
        started = _entered(status, "Running")
    elif group in _NO_START:
        started = None
    else:
        started = _first(status, _STARTED) or _running_since(status)
    finished = (_first(status, _FINISHED) or evaluation.since) if evaluation.terminal else None
    return JobTimes(created, started, finished)


def _first(status: Mapping[str, Any], fields: tuple[str, ...]) -> str | None:
    return next((t for name in fields if (t := timestamp_text(status.get(name)))), None)


def _group(obj: Mapping[str, Any]) -> str:
    api_version = obj.get("apiVersion")
    return api_version.split("/", 1)[0] if isinstance(api_version, str) and "/" in api_version else ""


def _entered(status: Mapping[str, Any], phase: str) -> str | None:
    """When a Volcano Job first entered ``phase``: its ``conditions`` list each phase with its time."""
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        return None
    times = sorted(
        t
        for c in conditions
        if isinstance(c, Mapping) and c.get("status") == phase
        if (t := timestamp_text(c.get("lastTransitionTime")))
    )
    return times[0] if times else None


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
