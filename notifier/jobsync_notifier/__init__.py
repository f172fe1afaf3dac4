"""jobsync-notifier: publishes the phase changes of jobsync's jobs as EventBridge events.

It runs in the cluster (``notifier/manifests/``), lists and watches the jobs
labelled ``app.kubernetes.io/managed-by: jobsync`` of every allowed kind in
the deployment's namespace, judges each with the same evaluator as the
Lambdas, and puts a ``Job Phase Changed`` event on the stack's bus whenever a
job's phase changes. The state machine's callback mode resumes on those
events; anyone else can route them too (docs/notifier.md).

Layers: ``watch`` (a LIST in pages, watch, relist on 410, resync on start;
only the jobs that have not ended kept), ``waiting`` (which executions wait,
from the stack's token store), ``publish`` (PutEvents in batches),
``health`` (liveness and readiness), ``settings``, and ``__main__`` wiring
them.
"""
