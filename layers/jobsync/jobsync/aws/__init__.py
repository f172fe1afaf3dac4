"""jobsync's AWS adapters, and boto3, imported when a call first needs it and traced when tracing is on.

The adapters, one module each: ``tokens`` (callback mode's task tokens in
DynamoDB, and SendTaskSuccess), ``hints`` (learned durations in DynamoDB),
``executions`` (DescribeExecution and the execution history), ``s3`` (job
templates). EKS tokens and cluster endpoints are the cluster's
(``jobsync.cluster``); what a Lambda container builds once is ``jobsync.runtime``.

Importing boto3 (and botocore under it) is most of a handler's cold import, and
a status poll against a ``url``, ``kubeconfig`` or in-cluster API never calls
AWS. What does: EKS mode's DescribeCluster and token (``jobsync.cluster``), the
submit Lambda's S3 template fetch, DynamoDB in callback mode and for learned
hints, Step Functions in cleanup and callback mode (``jobsync.runtime``). Each
gets boto3 from :func:`boto3`, which patches botocore for X-Ray first
(``jobsync.tracing``), so those calls are traced as ``patch_all()`` traced them.
"""

from __future__ import annotations

from types import ModuleType


def boto3() -> ModuleType:
    """The boto3 module; on the first call it is imported and, with tracing on, botocore is patched."""
    import importlib

    from jobsync import tracing

    module = importlib.import_module("boto3")
    tracing.patch_botocore()
    return module
