"""Kubeflow Trainer v2: TrainJob."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from jobsync.evaluation.conditions import Conditions, count, evaluator, from_condition, status_of, text
from jobsync.evaluation.phase import Evaluation, Phase
from jobsync.evaluation.progress import progress

TYPES = frozenset({"Created", "Complete", "Failed", "Suspended"})


@evaluator
def trainer_v2(obj: Mapping[str, Any]) -> Evaluation:
    """TrainJob (``trainer.kubeflow.org/v1alpha1``).

    Complete or Failed end the job, then Suspended; otherwise it is RUNNING
    while ``status.jobsStatus`` counts an active child Job, else PENDING.
    A ``jobsStatus`` that is not a list, or entries that are not objects,
    count as no active jobs. ``progress`` carries ``trainerStatus`` (progress,
    estimated remaining seconds, metrics: Trainer's TrainJobStatus feature)
    and the child Job counts, whatever the phase.
    """
    status = status_of(obj)
    return replace(_verdict(status), progress=progress(status, "jobsStatus", "trainerStatus"))


def _verdict(status: Mapping[str, Any]) -> Evaluation:
    conditions = Conditions.read(status)
    if verdict := conditions.ended_or_suspended("Complete"):
        return verdict

    jobs = status.get("jobsStatus")
    jobs = [j for j in jobs if isinstance(j, Mapping)] if isinstance(jobs, list) else []
    active = [j for j in jobs if count(j.get("active")) > 0]
    if active:
        names = ", ".join(sorted(text(j.get("name")) or "?" for j in active))
        return Evaluation(Phase.RUNNING, "JobsActive", f"active child jobs: {names}")
    if unknown := conditions.unrecognised(TYPES):
        return unknown
    if "Created" in conditions.true:
        return from_condition(Phase.PENDING, conditions.true["Created"])
    return Evaluation(Phase.PENDING, "NoActiveJobs", "no child job is active yet")
