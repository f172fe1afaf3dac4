"""Callback mode's task tokens: the store (DynamoDB) and the one call that resumes a waiting execution.

Await's ``TokenStore.put`` is the one authority for a new token. Every other
write is conditional on the token the writer read, so a writer that read an
older token (the wait timed out and re-armed meanwhile) can never write it back
over the new one: the job's end event would then find a used token, and the
execution would learn of the end only at its safety poll.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from jobsync import strict_json
from jobsync.core.state import LoopState, seconds

logger = logging.getLogger(__name__)

# What SendTaskSuccess answers for a token that can no longer be used.
USED_TOKEN_ERRORS = frozenset({"TaskTimedOut", "InvalidToken", "TaskDoesNotExist"})
# A token item's key: this, then the execution's ARN (the notifier reads the keys alone: which executions wait).
TOKEN_PREFIX = "token#"
# Tokens outlive the deadline by a day, then DynamoDB's TTL removes them.
TOKEN_TTL_AFTER_DEADLINE = 86_400


class TaskTokens(Protocol):
    """The Step Functions calls this needs (a boto3 ``stepfunctions`` client has them)."""

    def send_task_success(self, *, taskToken: str, output: str) -> Any: ...


@dataclass(frozen=True)
class Waiting:
    token: str
    state: LoopState

    @property
    def execution(self) -> str:
        return self.state.execution


class TokenStore:
    """Task tokens by execution, in the stack's DynamoDB table (``pk`` ``token#<execution ARN>``)."""

    def __init__(self, table: Any) -> None:
        self._table = table

    @staticmethod
    def _key(execution: str) -> dict[str, str]:
        return {"pk": f"{TOKEN_PREFIX}{execution}"}

    def _item(self, state: LoopState, token: str) -> dict[str, Any]:
        expires = int(seconds(state.deadline)) + TOKEN_TTL_AFTER_DEADLINE
        return {**self._key(state.execution or ""), "token": token, "state": state.model_dump_json(), "ttl": expires}

    def put(self, state: LoopState, token: str) -> None:
        """Store a new wait's token: it replaces whatever an earlier wait of the execution left."""
        self._table.put_item(Item=self._item(state, token))

    def get(self, execution: str) -> Waiting | None:
        item = self._table.get_item(Key=self._key(execution), ConsistentRead=True).get("Item")
        if not item:
            return None
        return Waiting(str(item["token"]), LoopState.model_validate_json(str(item["state"])))

    def waiting(self) -> list[Waiting]:
        """Every execution that waits now (a Scan of the token items, strongly consistent): the sweeper's work list.

        The table holds only tokens and learned hints, and a token lives while its execution waits (plus a
        day's TTL past the deadline), so this is as large as the executions that wait, not as the history.
        """
        from boto3.dynamodb.conditions import Attr

        found: list[Waiting] = []
        request: dict[str, Any] = {"FilterExpression": Attr("pk").begins_with(TOKEN_PREFIX), "ConsistentRead": True}
        while True:
            page = self._table.scan(**request)
            found.extend(
                Waiting(str(i["token"]), LoopState.model_validate_json(str(i["state"]))) for i in page["Items"]
            )
            if "LastEvaluatedKey" not in page:
                return found
            request["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def update(self, state: LoopState, token: str) -> bool:
        """Keep the latest loop state (stuck-since, phase-since, polls) while ``token`` is still the stored one.

        False, changing nothing, when the wait re-armed meanwhile (a newer token is stored) or the token
        was used and forgotten: the newer item is the one that counts.
        """
        if self._if_still(token, self._table.put_item, Item=self._item(state, token)):
            return True
        logger.info("the wait re-armed meanwhile: its newer token stays", extra={"execution": state.execution})
        return False

    def delete(self, execution: str, token: str) -> None:
        """Forget the token, unless a newer one (the wait re-armed) replaced it meanwhile."""
        self._if_still(token, self._table.delete_item, Key=self._key(execution))

    @staticmethod
    def _if_still(token: str, write: Callable[..., Any], **request: Any) -> bool:
        """``write(**request)`` only while the stored token is ``token``; False when it no longer is (or none is)."""
        from botocore.exceptions import ClientError

        try:
            write(
                **request,
                ConditionExpression="#t = :token",
                ExpressionAttributeNames={"#t": "token"},
                ExpressionAttributeValues={":token": token},
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            return False
        return True


def deliver(tokens: TaskTokens, token: str, state: LoopState) -> bool:
    """SendTaskSuccess with the loop state; False when the token was already used (harmless)."""
    from botocore.exceptions import ClientError

    try:
        tokens.send_task_success(taskToken=token, output=strict_json.dumps(state.payload()))
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in USED_TOKEN_ERRORS:
            return False
        raise
    return True
