"""jobsync: run Kubernetes training jobs synchronously from AWS Step Functions.

The library's layers, each a subpackage:

- ``jobsync.evaluation``: the phase contract and the evaluator (pure, no I/O);
- ``jobsync.cluster``: reaching the Kubernetes API (EKS tokens, the client,
  the job calls, HTTP answers as jobsync's errors);
- ``jobsync.run``: one execution's steps (inputs, manifests, the wait
  policy, pod diagnostics, submit / poll / cleanup, execution events).

Beside them: ``settings`` (a deployment's configuration), ``runtime`` (what a
Lambda container builds once), ``errors`` and ``clock``; and ``wait``, which
waits for a job on a cluster as a run does, without AWS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobsync.errors import EvaluationError
from jobsync.evaluation import Evaluation, Phase, evaluate

if TYPE_CHECKING:
    from jobsync.run.wait import WaitResult

__all__ = ["Evaluation", "EvaluationError", "Phase", "evaluate", "wait"]


def wait(name: str, namespace: str = "default", kind: str = "PyTorchJob", **options: Any) -> WaitResult:
    """Wait for a job on a cluster, without AWS: the verdict, waits and result a run gives (``jobsync.run.wait``).

    ``jobsync.wait("mnist", "ml-training", kubeconfig="~/.kube/config")``; options: ``api_version``,
    ``kubeconfig``, ``context``, ``timeout_seconds``, ``watch``, ``on_look``. Imported on first call:
    ``import jobsync`` stays the evaluator alone.
    """
    from jobsync.run import wait as waiting

    return waiting.wait(name, namespace, kind, **options)
