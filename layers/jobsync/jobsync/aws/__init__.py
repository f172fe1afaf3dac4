"""jobsync's AWS adapters, and boto3: imported on first use, traced when tracing is on, bounded in time.

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

Every client is made by :func:`client` or :func:`resource`, with a short connect
timeout and a bounded number of attempts. botocore's defaults (60 s to connect,
60 s to read) equal the Lambdas' own timeout: in a VPC without a route to a
service, one call would outlast the invocation, and the state machine's retries
would run it out seven times over. Bounded, a missing route fails the call in
seconds, with botocore's error naming the endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class Bounds:
    """How long one AWS call may take: per attempt, connect and read seconds; attempts in all (retries + 1)."""

    connect_seconds: float
    read_seconds: float
    attempts: int

    def worst_case_seconds(self) -> float:
        """The longest a call can take: every attempt timing out, plus the standard mode's longest backoffs.

        botocore's standard mode waits at most ``min(20, 2**i)`` seconds before retry ``i`` (throttling; less
        otherwise), raised by up to 5 s when AWS asks for it (``x-amz-retry-after``).
        """
        backoff = sum(min(20.0, 2.0**n) + 5 for n in range(self.attempts - 1))
        return self.attempts * (self.connect_seconds + self.read_seconds) + backoff

    def config(self) -> Any:
        from botocore.config import Config

        return Config(
            connect_timeout=self.connect_seconds,
            read_timeout=self.read_seconds,
            retries={"mode": "standard", "total_max_attempts": self.attempts},
        )


#: A call a step needs (DescribeCluster, a template, a task token, an execution's history).
CALL = Bounds(connect_seconds=2, read_seconds=6, attempts=3)
#: A call a step can do without (the learned-hint lookup): one short attempt.
BEST_EFFORT = Bounds(connect_seconds=1, read_seconds=2, attempts=1)


def boto3() -> ModuleType:
    """The boto3 module; on the first call it is imported and, with tracing on, botocore is patched."""
    import importlib

    from jobsync import tracing

    module = importlib.import_module("boto3")
    tracing.patch_botocore()
    return module


def client(service: str, bounds: Bounds = CALL, session: Any = None, **kwargs: Any) -> Any:
    """A boto3 client for ``service`` held to ``bounds`` (from ``session`` when given)."""
    maker = session if session is not None else boto3()
    return maker.client(service, config=bounds.config(), **kwargs)


def resource(service: str, bounds: Bounds = CALL, **kwargs: Any) -> Any:
    """A boto3 resource for ``service`` held to ``bounds``."""
    return boto3().resource(service, config=bounds.config(), **kwargs)
