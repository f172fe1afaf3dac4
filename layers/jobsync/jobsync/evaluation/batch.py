"""Kubernetes ``batch/v1`` Job."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from jobsync.evaluation.conditions import Conditions, count, evaluator, from_condition, status_of, timestamp_text
from jobsync.evaluation.phase import Evaluation, Phase

TYPES = frozenset({"Complete", "Failed", "Suspended", "SuccessCriteriaMet", "FailureTarget"})


@evaluator
def batch_job(obj: Mapping[str, Any]) -> Evaluation:
    """``batch/v1`` Job.

    Complete or Failed end the job, then Suspended. SuccessCriteriaMet and
    FailureTarget come first, while the Job's pods are still terminating:
    the verdict is known but the job has not ended, so RUNNING. Otherwise
    RUNNING while ``status.active`` > 0, else PENDING.
    """
    status = status_of(obj)
    conditions = Conditions.read(status)
    if verdict := conditions.ended_or_suspended("Complete"):
        return verdict
    if ending := conditions.pick(("FailureTarget", "SuccessCriteriaMet")):
        kind, condition = ending
        evaluation = from_condition(Phase.RUNNING, condition)
        return replace(evaluation, reason=f"{kind}: {evaluation.reason} (pods terminating)")
    active = count(status.get("active"))
    if active > 0:
        return Evaluation(Phase.RUNNING, "Active", f"{active} active pod(s)", timestamp_text(status.get("startTime")))
    if unknown := conditions.unrecognised(TYPES):
        return unknown
    return Evaluation(Phase.PENDING, "NoActivePods", "no pod is active yet")
