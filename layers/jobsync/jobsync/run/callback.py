"""Callback mode: the execution waits on a task token, and the notifier's event resumes it.

``arm`` runs in the Await task (``lambda:invoke.waitForTaskToken``): it
stores the token with the loop state, keyed by execution, and *then* looks at
the job once, so a job that ended before the token was stored resumes at
once; otherwise the execution waits, with no transitions, until ``resume``
or the task's timeout (the loop state's ``waitSeconds``,
``jobsync.run.loop.callback_wait``: while the job starts, until a stuck pod,
a missing operator or a job the API never shows could be decided, which
only a poll sees; the safety interval once it runs).

``resume`` runs on a terminal "Job Phase Changed" event: it looks the token
up, takes one ordinary poll (the verdict, pod diagnostics and log tail exactly
as in poll mode), and hands a loop state that ended to ``SendTaskSuccess``.
An event for an execution that waits for nothing, for a job that is not the
one the execution created, or whose token was already used (the task timed
out and the safety poll took over) changes nothing.

Only Await stores a new token. Resume's write-back of the loop state, after
its poll, holds only while the token it read is still the stored one: the wait
may time out and re-arm while Resume polls, and the new token must stay for
the job's end event to find (``TokenStore``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from jobsync import clock, strict_json
from jobsync.run.inputs import LoopState
from jobsync.run.loop import Cluster, epoch
from jobsync.run.poll import poll
from jobsync.settings import Settings

logger = logging.getLogger(__name__)

# What SendTaskSuccess answers for a token that can no longer be used.
USED_TOKEN_ERRORS = frozenset({"TaskTimedOut", "InvalidToken", "TaskDoesNotExist"})
# Tokens outlive the deadline by a day, then DynamoDB's TTL removes them.
TOKEN_TTL_AFTER_DEADLINE = 86_400


class TaskTokens(Protocol):
    """The Step Functions calls this needs (a boto3 ``stepfunctions`` client has them)."""

    def send_task_success(self, *, taskToken: str, output: str) -> Any: ...


@dataclass(frozen=True)
class Waiting:
    token: str
    state: LoopState


class TokenStore:
    """Task tokens by execution, in the stack's DynamoDB table (``pk`` ``token#<execution ARN>``).

    Await's ``put`` is the one authority for a new token. Every other write is
    conditional on the token the writer read, so a Resume that polled while the
    wait timed out and re-armed can never write the old token back over the new
    one (the job's end event would then find a used token, and the execution
    would learn of the end only at its safety poll).
    """

    def __init__(self, table: Any) -> None:
        self._table = table

    @staticmethod
    def _key(execution: str) -> dict[str, str]:
        return {"pk": f"token#{execution}"}

    def _item(self, state: LoopState, token: str) -> dict[str, Any]:
        expires = int(epoch(state.deadline)) + TOKEN_TTL_AFTER_DEADLINE
        return {**self._key(state.execution or ""), "token": token, "state": state.model_dump_json(), "ttl": expires}

    def put(self, state: LoopState, token: str) -> None:
        """Store a new wait's token: it replaces whatever an earlier wait of the execution left."""
        self._table.put_item(Item=self._item(state, token))

    def get(self, execution: str) -> Waiting | None:
        item = self._table.get_item(Key=self._key(execution), ConsistentRead=True).get("Item")
        if not item:
            return None
        return Waiting(str(item["token"]), LoopState.model_validate_json(str(item["state"])))

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
        tokens.send_task_success(taskToken=token, output=strict_json.dumps(state.model_dump(exclude_none=True)))
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in USED_TOKEN_ERRORS:
            return False
        raise
    return True


def arm(
    state: LoopState, token: str, cluster: Cluster, settings: Settings, store: TokenStore, tokens: TaskTokens
) -> LoopState:
    """Store the token, then look once; a job that already ended resumes the execution now."""
    store.put(state, token)
    new = poll(state, cluster, settings)
    if new.terminal:
        deliver(tokens, token, new)
        store.delete(state.execution or "", token)
    else:
        store.update(new, token)
    return new


@dataclass(frozen=True)
class Resumed:
    """What one event did: ``resumed`` the execution, or why not."""

    resumed: bool
    why: str
    state: LoopState | None = None


def resume(
    detail: dict[str, Any], cluster: Cluster, settings: Settings, store: TokenStore, tokens: TaskTokens
) -> Resumed:
    execution = detail.get("executionArn")
    if not isinstance(execution, str) or not execution:
        return Resumed(False, "the event names no execution")
    waiting = store.get(execution)
    if waiting is None:
        return Resumed(False, "no execution waits for this job (already resumed, or polled to its end)")
    job = detail.get("job")
    job = job if isinstance(job, dict) else {}
    if waiting.state.job.uid and job.get("uid") != waiting.state.job.uid:
        return Resumed(False, "the event is about another job than the one this execution created")
    new = poll(waiting.state, cluster, settings)
    if not new.terminal:
        why = f"the job is {new.phase} when looked at: the event was stale"
        if not store.update(new, waiting.token):
            why += "; the wait re-armed meanwhile and keeps its new token"
        return Resumed(False, why, new)
    delivered = deliver(tokens, waiting.token, new)
    store.delete(execution, waiting.token)
    if not delivered:
        return Resumed(False, "the token was already used (the safety poll took over)", new)
    return Resumed(True, f"resumed at {clock.isoformat(clock.now())}", new)
