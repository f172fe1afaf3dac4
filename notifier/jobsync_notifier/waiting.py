"""Which executions wait for their job's event: the keys of the stack's task-token store, nothing else.

The notifier asks only when it first sees a job that has already ended (a start,
a LIST after a broken watch, the change of an ended job it no longer tracks):
an event then matters only to an execution that still waits. It reads the items'
keys (``pk``: ``token#<execution ARN>``) and never a token: its IAM policy
allows reading the ``pk`` attribute alone (docs/notifier.md).

Why the answer is safe to act on: an execution's Await stores its token *before*
it looks at the job (jobsync.run.callback.arm). So when the notifier has seen a
job ended and then finds no token, the execution either no longer waits, or its
Await will look after that moment and see the end itself. A failed read is no
answer: the caller publishes, as without a table.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger

from jobsync.aws.tokens import TOKEN_PREFIX

logger = Logger(service="jobsync-notifier")


class WaitingExecutions:
    """The task-token store of the stack (``JOBSYNC_TABLE_NAME``), read for its keys."""

    def __init__(self, table_name: str, client: Any = None) -> None:
        if client is None:
            from jobsync import aws

            client = aws.client("dynamodb")
        self._table = table_name
        self._client = client

    def all(self) -> set[str] | None:
        """The ARNs of every execution that waits now; None when the store cannot be read."""
        request: dict[str, Any] = {
            "TableName": self._table,
            "Select": "SPECIFIC_ATTRIBUTES",
            "ProjectionExpression": "pk",
            "FilterExpression": "begins_with(pk, :token)",
            "ExpressionAttributeValues": {":token": {"S": TOKEN_PREFIX}},
            "ConsistentRead": True,
        }
        found: set[str] = set()
        try:
            while True:
                page = self._client.scan(**request)
                found.update(item["pk"]["S"].removeprefix(TOKEN_PREFIX) for item in page.get("Items", []))
                if "LastEvaluatedKey" not in page:
                    return found
                request["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        except Exception as exc:  # botocore's errors: no answer, so the caller publishes what it saw
            logger.warning("cannot read which executions wait", extra={"error": type(exc).__name__})
            return None

    def waits(self, execution: str) -> bool | None:
        """Whether ``execution`` waits now; None when the store cannot be read."""
        try:
            item = self._client.get_item(
                TableName=self._table,
                Key={"pk": {"S": f"{TOKEN_PREFIX}{execution}"}},
                ProjectionExpression="pk",
                ConsistentRead=True,
            ).get("Item")
        except Exception as exc:  # botocore's errors: no answer, so the caller publishes what it saw
            logger.warning("cannot read whether an execution waits", extra={"error": type(exc).__name__})
            return None
        return item is not None
