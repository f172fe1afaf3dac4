"""jobsync: run Kubernetes training jobs synchronously from AWS Step Functions.

The library's layers, each a subpackage:

- ``jobsync.evaluation``: the phase contract and the evaluator (pure, no I/O);
- ``jobsync.cluster``: reaching the Kubernetes API (EKS tokens, the client,
  the job calls, HTTP answers as jobsync's errors);
- ``jobsync.run``: one execution's steps (inputs, manifests, the wait
  policy, pod diagnostics, submit / poll / cleanup, execution events).

Beside them: ``settings`` (a deployment's configuration), ``runtime`` (what a
Lambda container builds once), ``errors``, ``clock`` and ``cli``.
"""

from jobsync.errors import EvaluationError
from jobsync.evaluation import Evaluation, Phase, evaluate

__all__ = ["Evaluation", "EvaluationError", "Phase", "evaluate"]
