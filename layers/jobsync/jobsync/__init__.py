"""jobsync: run Kubernetes training jobs synchronously from AWS Step Functions."""

from jobsync.evaluate import evaluate
from jobsync.model import Evaluation, EvaluationError, Phase

__all__ = ["Evaluation", "EvaluationError", "Phase", "evaluate"]
