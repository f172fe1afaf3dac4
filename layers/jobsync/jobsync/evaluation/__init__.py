"""The evaluator: one normalized phase from any job status jobsync knows (docs/phases.md).

``phase`` (the contract), ``kinds`` (the registry), ``evaluate`` (the entry
point), and one module per kind family: ``kubeflow``, ``trainer``, ``batch``,
``jobset``, ``ray``, ``spark``, ``volcano``, ``sagemaker``, ``ack``,
``azure_ml``, over the readers in ``conditions`` (and ``progress``, what a
running job reports of its advance).
"""

from jobsync.errors import EvaluationError
from jobsync.evaluation.evaluator import evaluate, evaluate_event
from jobsync.evaluation.phase import Evaluation, Phase

__all__ = ["Evaluation", "EvaluationError", "Phase", "evaluate", "evaluate_event"]
