"""Azure ML: the status string of azure-ai-ml's ``Job``, not a Kubernetes object."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from jobsync.evaluation.conditions import status_string, text
from jobsync.evaluation.phase import Evaluation, Phase

# azure-ai-ml ``Job.status`` (the values azure.ai.ml.constants.JobStatus lists).
_AZURE_ML_PHASES: dict[str, Phase] = {
    "NotStarted": Phase.PENDING,
    "Starting": Phase.PENDING,
    "Provisioning": Phase.PENDING,
    "Preparing": Phase.PENDING,
    "Queued": Phase.PENDING,
    "Running": Phase.RUNNING,
    "Finalizing": Phase.RUNNING,
    "CancelRequested": Phase.RUNNING,
    "NotResponding": Phase.RUNNING,
    "Completed": Phase.SUCCEEDED,
    "Failed": Phase.FAILED,
    "Canceled": Phase.STOPPED,
    "Paused": Phase.SUSPENDED,
}


def azure_ml_job(obj: Mapping[str, Any]) -> Evaluation:
    """An Azure ML job given as ``{"kind": "AzureMLJob", "name": ..., "status": ...}``.

    ``status`` is the string azure-ai-ml's ``Job.status`` returns; None (the
    job is not submitted yet) is PENDING.
    """
    name = text(obj.get("name"))
    evaluation = status_string(obj, "status", _AZURE_ML_PHASES, (), ())
    if name and not evaluation.message:
        evaluation = replace(evaluation, message=f"Azure ML job {name}")
    return evaluation
