"""A task token after its task timed out: refused with TaskTimedOut, as the service answers, even while the
execution runs on (callback mode's wait re-arms with a new token after each timeout)."""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from harness.sfn import LocalStepFunctions
from tests.integration.test_sfn_callbacks import WAIT_FOR_TOKEN


def wait_for(condition, what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def re_arming_token_tasks() -> dict[str, Any]:
    """A wait that times out and re-arms with a new token, as RunJob's Await does after its safety poll."""

    def task(timeout: int, then: dict[str, Any]) -> dict[str, Any]:
        arguments = {"FunctionName": "${FunctionArn}", "Payload": {"token": "{% $states.context.Task.Token %}"}}
        return {"Type": "Task", "Resource": WAIT_FOR_TOKEN, "Arguments": arguments, "TimeoutSeconds": timeout, **then}

    first = task(60, {"Catch": [{"ErrorEquals": ["States.Timeout"], "Next": "Again"}], "Next": "Done"})
    again = task(86400, {"Next": "Done"})
    states = {"First": first, "Again": again, "Done": {"Type": "Succeed"}}
    return {"QueryLanguage": "JSONata", "StartAt": "First", "States": states}


def test_the_token_of_a_task_that_timed_out_is_refused_while_the_execution_runs_on():
    """As the service answers: SendTaskSuccess with a timed-out task's token is TaskTimedOut, execution running."""
    tokens: list[str] = []
    with LocalStepFunctions({"fn": lambda event, context: tokens.append(event["token"])}) as sfn:
        machine = sfn.create_state_machine(
            json.dumps(re_arming_token_tasks()), "re-arm", {"FunctionArn": sfn.function_arn("fn")}
        )
        arn = sfn.start(machine, {})
        wait_for(lambda: len(tokens) == 2, "the second wait")
        client = boto3.client("stepfunctions", region_name="us-east-1")
        with pytest.raises(ClientError) as refused:
            client.send_task_success(taskToken=tokens[0], output="{}")
        client.send_task_success(taskToken=tokens[1], output=json.dumps({"second": True}))
        result = sfn.wait(arn)
    assert refused.value.response["Error"]["Code"] == "TaskTimedOut"
    assert result["status"] == "SUCCEEDED" and json.loads(result["output"]) == {"second": True}
