"""Step Functions' own account of an execution: DescribeExecution, and its history read oldest first.

Cleanup after an execution event trusts neither the event nor its own
guesses: what ended, how, and which job Submit answered with come from here
(``jobsync.run.execution_events``). A denied call names the permission the
role lacks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from jobsync.errors import ClusterConfigError

# History events a page: the Submit state's events come first, retries and all (about 45 at most).
HISTORY_PAGE = 100
CLEANUP_STATE = "Cleanup"  # statemachine/run_job.asl.json
_DENIED = {"AccessDeniedException", "AccessDenied"}
# The execution's history events, oldest first, read page by page only as far as they are consumed.
History = Callable[[str], Iterable[dict[str, Any]]]


def _denied(action: str, arn: str) -> ClusterConfigError:
    return ClusterConfigError(
        f"states:{action} on {arn} is denied: the cleanup role must be allowed it "
        "on this state machine's executions (template.yaml)"
    )


def _code(exc: Any) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def describe_execution(client: Any, arn: str) -> dict[str, Any] | None:
    """DescribeExecution of ``arn`` through ``client`` (boto3's Step Functions client); None when no such one."""
    from botocore.exceptions import ClientError

    try:
        description: dict[str, Any] = client.describe_execution(executionArn=arn)
    except ClientError as exc:
        if _code(exc) in {"ExecutionDoesNotExist", "InvalidArn"}:
            return None
        if _code(exc) in _DENIED:
            raise _denied("DescribeExecution", arn) from None
        raise
    return description


def cleanup_state_ran(client: Any, arn: str) -> bool:
    """Whether the execution went through its own Cleanup state (the last events of its history say so)."""
    from botocore.exceptions import ClientError

    try:
        page = client.get_execution_history(executionArn=arn, reverseOrder=True, maxResults=50)
    except ClientError as exc:
        if _code(exc) in _DENIED:
            raise _denied("GetExecutionHistory", arn) from None
        raise
    return any(
        (event.get("stateEnteredEventDetails") or {}).get("name") == CLEANUP_STATE for event in page.get("events", [])
    )


def stopped_with(client: Any, arn: str) -> str | None:
    """The error a StopExecution gave the execution (its ExecutionAborted event's), or None when it was not stopped."""
    from botocore.exceptions import ClientError

    try:
        page = client.get_execution_history(executionArn=arn, reverseOrder=True, maxResults=1)
    except ClientError as exc:
        if _code(exc) in _DENIED:
            raise _denied("GetExecutionHistory", arn) from None
        raise
    for event in page.get("events", []):
        if event.get("type") == "ExecutionAborted":
            return str((event.get("executionAbortedEventDetails") or {}).get("error") or "") or None
    return None


def history_reader(client: Any) -> History:
    """GetExecutionHistory through ``client``, oldest first, page by page."""

    def events(arn: str) -> Iterator[dict[str, Any]]:
        from botocore.exceptions import ClientError

        kwargs: dict[str, Any] = {"executionArn": arn, "maxResults": HISTORY_PAGE, "reverseOrder": False}
        while True:
            try:
                page = client.get_execution_history(**kwargs)
            except ClientError as exc:
                if _code(exc) in _DENIED:
                    raise _denied("GetExecutionHistory", arn) from None
                raise
            yield from page.get("events", [])
            if not page.get("nextToken"):
                return
            kwargs["nextToken"] = page["nextToken"]

    return events
