"""What a Lambda container builds once and reuses while warm: settings, the
cluster connection, the S3 client. Handlers call these instead of building
their own, so a warm invocation costs one API request, not a new connection.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from jobsync import aws
from jobsync.cluster.connection import get_api_client
from jobsync.cluster.jobs import KubeJobs
from jobsync.errors import ClusterConfigError, InvalidInput
from jobsync.settings import Settings

if TYPE_CHECKING:
    from jobsync.run.hints import HintStore


@cache
def settings() -> Settings:
    return Settings.from_env()


def cluster() -> KubeJobs:
    # get_api_client caches one client per cluster and renews its token.
    return KubeJobs(get_api_client())


@cache
def _s3() -> Any:
    return aws.client("s3")  # only the submit Lambda with a jobTemplate needs it


def fetch_template(uri: str) -> str:
    """The text of ``s3://bucket/key``; a missing or unreadable object is the caller's error."""
    from botocore.exceptions import ClientError

    bucket, _, key = uri.removeprefix("s3://").partition("/")
    try:
        body = _s3().get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in {"NoSuchKey", "NoSuchBucket", "404"}:
            raise InvalidInput(f"jobTemplate: {uri} does not exist") from None
        if code in {"AccessDenied", "403"}:
            raise InvalidInput(
                f"jobTemplate: access to {uri} is denied (templates must sit under the allowed prefix)"
            ) from None
        raise
    try:
        text: str = body.decode("utf-8")  # bytes from an untyped client
    except UnicodeDecodeError:
        raise InvalidInput(f"jobTemplate: {uri} is not UTF-8 text") from None
    return text


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
    from jobsync.run.hints import HintStore  # a RUNNING poll never needs it (nor its statistics)

    return HintStore(_hints_table())


@cache
def stepfunctions() -> Any:
    return aws.client("stepfunctions")  # cleanup (for an execution event) and callback mode need it


def describe_execution(arn: str) -> dict[str, Any] | None:
    """Step Functions' own account of an execution (DescribeExecution); None when it knows no such execution."""
    from botocore.exceptions import ClientError

    try:
        description: dict[str, Any] = stepfunctions().describe_execution(executionArn=arn)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in {"ExecutionDoesNotExist", "InvalidArn"}:
            return None
        if code in {"AccessDeniedException", "AccessDenied"}:
            raise ClusterConfigError(
                f"states:DescribeExecution on {arn} is denied: the cleanup role must be allowed it "
                "on this state machine's executions (template.yaml)"
            ) from None
        raise
    return description


def cleanup_state_ran(arn: str) -> bool:
    """Whether the execution went through its own Cleanup state (the last events of its history say so)."""
    from botocore.exceptions import ClientError

    try:
        page = stepfunctions().get_execution_history(executionArn=arn, reverseOrder=True, maxResults=50)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in {"AccessDeniedException", "AccessDenied"}:
            raise ClusterConfigError(
                f"states:GetExecutionHistory on {arn} is denied: the cleanup role must be allowed it "
                "on this state machine's executions (template.yaml)"
            ) from None
        raise
    return any(
        (event.get("stateEnteredEventDetails") or {}).get("name") == "Cleanup" for event in page.get("events", [])
    )


def reset() -> None:
    """Forget what was cached (tests change the environment between runs)."""
    settings.cache_clear()
    _s3.cache_clear()
    table.cache_clear()
    _hints_table.cache_clear()
    stepfunctions.cache_clear()
