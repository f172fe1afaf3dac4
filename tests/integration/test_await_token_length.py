"""Await takes any task token SendTaskSuccess takes (1-2,048 characters) and refuses a longer one by name.

The real Await handler, in the local run's environment: the token goes into the
stack's table (moto's DynamoDB) through the real ``TokenStore``, after the
job of a running execution is looked at over HTTP.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import boto3
import pytest

from harness.local import TABLE, LocalJobsync
from jobsync.errors import InvalidInput
from tests.support.lambdas import QUIET, invoke, load_event

CALLBACK = {**QUIET, "JOBSYNC_COMPLETION_MODE": "callback"}
# What the service's task tokens are made of (base64 of an encrypted blob); the length is the point here.
ALPHABET = "AAAAKgAAAAIAAAAAAAAAAQ+/=abcdefghijklmnopqrstuvwxyz0123456789"


def token(length: int) -> str:
    return (ALPHABET * (length // len(ALPHABET) + 1))[:length]


def stored(execution: str) -> dict[str, Any] | None:
    key = {"pk": {"S": f"token#{execution}"}}
    return boto3.client("dynamodb").get_item(TableName=TABLE, Key=key, ConsistentRead=True).get("Item")


@pytest.fixture(scope="module")
def waiting():
    """A running execution's Await input, as the state machine passed it, and the local run around it."""
    with LocalJobsync("success", {"pending_s": 60, "run_s": 3600}, env=CALLBACK, notifier=False) as local:
        assert local.sfn
        events: list[dict[str, Any]] = []
        done = threading.Event()

        def held(event, context):
            """The execution's own Await: kept from storing its token until the tests are done."""
            events.append(event)
            done.wait(120)
            return {"phase": "PENDING", "terminal": False}

        local.sfn.handlers["jobsync-await"] = held
        arn = local.start(load_event("run-job-input.json"), name="long-token")
        deadline = time.monotonic() + 60
        while not events:
            assert time.monotonic() < deadline, "no Await"
            time.sleep(0.01)
        try:
            yield events[0]["state"], arn
        finally:
            done.set()


@pytest.mark.parametrize("length", [1, 1024, 1025, 2048])
def test_a_task_token_up_to_2048_characters_is_stored(waiting, length):
    state, arn = waiting
    long = token(length)
    result = invoke("await", {"state": state, "taskToken": long})
    assert result == {"phase": result["phase"], "reason": result["reason"], "terminal": False}
    item = stored(arn)
    assert item and item["token"]["S"] == long


def test_a_task_token_over_2048_characters_is_refused_naming_the_field_and_nothing_is_stored(waiting):
    state, arn = waiting
    before = stored(arn)
    with pytest.raises(InvalidInput) as refused:
        invoke("await", {"state": state, "taskToken": token(2049)})
    assert str(refused.value) == "invalid input: taskToken: String should have at most 2048 characters"
    assert stored(arn) == before
