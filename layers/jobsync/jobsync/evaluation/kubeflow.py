"""Kubeflow training-operator v1: PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobsync.evaluation.conditions import Conditions, evaluator, from_condition, status_of
from jobsync.evaluation.phase import Evaluation, Phase

TYPES = frozenset({"Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended"})


@evaluator
def kubeflow_v1(obj: Mapping[str, Any]) -> Evaluation:
    """PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob (``kubeflow.org/v1``).

    The operator keeps old conditions with status False (Running after the
    job ends, Suspended after a resume), so only True ones are read:
    Succeeded or Failed (the later one when both, Failed on a tie) end the
    job; then Suspended; then Running or Restarting (the later one; a
    restart is named in the reason); Created alone or no conditions is
    PENDING.
    """
    conditions = Conditions.read(status_of(obj))
    if verdict := conditions.ended_or_suspended("Succeeded"):
        return verdict
    if active := conditions.pick(("Restarting", "Running")):
        kind, condition = active
        evaluation = from_condition(Phase.RUNNING, condition)
        if kind == "Restarting" and "restart" not in evaluation.reason.lower():
            evaluation = Evaluation(
                Phase.RUNNING, f"Restarting: {evaluation.reason}", evaluation.message, evaluation.since
            )
        return evaluation
    if unknown := conditions.unrecognised(TYPES):
        return unknown
    if "Created" in conditions.true:
        return from_condition(Phase.PENDING, conditions.true["Created"])
    return Evaluation(Phase.PENDING, "NoActiveCondition", "no condition is True yet")
