"""What a Lambda container builds once and reuses while warm: settings, the
cluster connection, the AWS clients and the adapters over them (``jobsync.aws``).
Handlers call these instead of building their own, so a warm invocation costs
one API request, not a new connection.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from jobsync import aws
from jobsync.cluster.connection import get_api_client
from jobsync.cluster.jobs import KubeJobs
from jobsync.errors import InvalidInput
from jobsync.settings import Settings

if TYPE_CHECKING:
    from jobsync.aws.hints import HintStore


@cache
def settings() -> Settings:
    return Settings.from_env()


def cluster() -> KubeJobs:
    # get_api_client caches one client per cluster and renews its token.
    return KubeJobs(get_api_client())


@cache
def _s3() -> Any:
    return aws.client("s3")  # the submit Lambda with a jobTemplate, and RunJobs' jobs function


def s3() -> Any:
    """The S3 client of this container."""
    return _s3()


def runs_bucket() -> str:
    """RunJobs' bucket (its jobs, its Map Run's results, its outcomes); InvalidInput when the stack has none."""
    name = settings().runs_bucket
    if not name:
        raise InvalidInput("this deployment has no runs bucket (JOBSYNC_RUNS_BUCKET): RunJobs needs one")
    return name


def fetch_template(uri: str) -> str:
    """The text of ``s3://bucket/key``; a missing or unreadable object is the caller's error."""
    from jobsync.aws import s3

    return s3.fetch_template(_s3(), uri)


@cache
def table() -> Any:
    """The stack's DynamoDB table (task tokens, learned hints); InvalidInput when the stack has none."""
    name = settings().table_name
    if not name:
        raise InvalidInput("this deployment has no table (JOBSYNC_TABLE_NAME): callback mode needs one")
    return aws.resource("dynamodb").Table(name)


@cache
def _hints_table() -> Any:
    """The same table for learned hints, held to one short attempt: a hint is never worth a slow submit."""
    return aws.resource("dynamodb", aws.BEST_EFFORT).Table(settings().table_name)


def hints() -> HintStore | None:
    """Learned hints, when the deployment has a table (every stack does; a bare local run may not)."""
    if not settings().table_name:
        return None
    from jobsync.aws.hints import HintStore  # a RUNNING poll never needs it (nor its statistics)

    return HintStore(_hints_table())


@cache
def stepfunctions() -> Any:
    return aws.client("stepfunctions")  # cleanup (for an execution event) and callback mode need it


def describe_execution(arn: str) -> dict[str, Any] | None:
    """Step Functions' own account of an execution (DescribeExecution); None when it knows no such execution."""
    from jobsync.aws import executions

    return executions.describe_execution(stepfunctions(), arn)


def cleanup_state_ran(arn: str) -> bool:
    """Whether the execution went through its own Cleanup state (the last events of its history say so)."""
    from jobsync.aws import executions

    return executions.cleanup_state_ran(stepfunctions(), arn)


def stopped_with(arn: str) -> str | None:
    """The error a StopExecution recorded for the execution (its ExecutionAborted event's), or None."""
    from jobsync.aws import executions

    return executions.stopped_with(stepfunctions(), arn)


def record_cleanup(result: dict[str, Any]) -> None:
    """Keep a cleanup's outcome for whoever stopped the execution (``jobsync.aws.cleanups``), when there is a table."""
    if not settings().table_name:
        return
    from jobsync import clock
    from jobsync.aws.cleanups import CleanupRecords

    CleanupRecords(table()).put(result, clock.now())


def reset() -> None:
    """Forget what was cached (tests change the environment between runs)."""
    settings.cache_clear()
    _s3.cache_clear()
    table.cache_clear()
    _hints_table.cache_clear()
    stepfunctions.cache_clear()
