"""The local run holds an execution to AWS's limits and to strict JSON, as the service does.

Each test is a small JSONata definition written here, checked against the service's
documented behaviour (Step Functions service quotas; error handling's States.ALL,
States.DataLimitExceeded and States.Runtime; SendTaskSuccess's InvalidOutput; the
Cause's 32,768 characters). The hooks are in harness/sfn/hooks.py.
"""

from __future__ import annotations

import json
import time
import uuid

import boto3
import pytest
from botocore.exceptions import ClientError

from harness.sfn import LocalStepFunctions

INVOKE = "arn:aws:states:::lambda:invoke"
WAIT_FOR_TOKEN = "arn:aws:states:::lambda:invoke.waitForTaskToken"
SYNC2 = "arn:aws:states:::states:startExecution.sync:2"
CAUGHT = {"Type": "Pass", "Output": "{% {'caught': $states.input} %}", "End": True}


def catch_all(next_state: str = "Caught") -> list[dict]:
    return [{"ErrorEquals": ["States.ALL"], "Output": "{% $states.errorOutput %}", "Next": next_state}]


def run(sfn: LocalStepFunctions, definition: dict, execution_input: dict | None = None, **subs: str) -> dict:
    arn = sfn.create_state_machine(definition, f"m-{uuid.uuid4().hex[:8]}", subs)
    return sfn.wait(sfn.start(arn, execution_input or {}), timeout_s=120)


# ----------------------------------------------------------------------- 25,000 history events


def test_an_execution_fails_at_25000_history_events_with_states_runtime():
    # Two Pass states in a loop that never ends: 2 events a lap.
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "A",
        "States": {"A": {"Type": "Pass", "Next": "B"}, "B": {"Type": "Pass", "Next": "A"}},
    }
    with LocalStepFunctions({}) as sfn:
        execution = sfn.start(sfn.create_state_machine(definition, "history"), {})
        result = sfn.wait(execution, timeout_s=240)
        types = sfn.history_types(execution)
    assert (result["status"], result["error"]) == ("FAILED", "States.Runtime")
    assert result["cause"] == "The execution reached the maximum number of history events (25000)."
    assert len(types) == 25_000 and types[-1] == "ExecutionFailed"


# ----------------------------------------------------------------------- 256 KiB payloads


def padded(size: int) -> dict:
    """A Pass whose output, as compact JSON, is ``size`` bytes: {"x":"xxx..."}."""
    return {"Type": "Pass", "Output": {"x": "{% $pad('', " + str(size - 8) + ", 'x') %}"}, "End": True}


@pytest.mark.parametrize(("size", "status"), [(262_144, "SUCCEEDED"), (262_145, "FAILED")])
def test_a_state_output_of_256_kib_passes_and_one_byte_more_fails_with_data_limit_exceeded(size, status):
    definition = {"QueryLanguage": "JSONata", "StartAt": "Big", "States": {"Big": padded(size)}}
    with LocalStepFunctions({}) as sfn:
        result = run(sfn, definition)
    assert result["status"] == status
    if status == "SUCCEEDED":
        assert len(result["output"].replace(" ", "").encode()) == size
    else:
        assert result["error"] == "States.DataLimitExceeded"


def test_a_task_result_over_256_kib_fails_the_execution_past_a_catch_on_states_all():
    big = {"blob": "é" * 140_000}  # 280,000 bytes of UTF-8, 140,000 characters
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Call",
        "States": {
            "Call": {
                "Type": "Task",
                "Resource": INVOKE,
                "Arguments": {"FunctionName": "${FunctionArn}", "Payload": {}},
                "Output": "{% $states.result.Payload %}",
                "Catch": catch_all(),
                "End": True,
            },
            "Caught": CAUGHT,
        },
    }
    with LocalStepFunctions({"fn": lambda event, context: big}) as sfn:
        result = run(sfn, definition, FunctionArn=sfn.function_arn("fn"))
    assert (result["status"], result["error"]) == ("FAILED", "States.DataLimitExceeded")


# ----------------------------------------------------------------------- strict JSON


def test_a_lambda_payload_with_infinity_fails_the_task_with_states_runtime_past_a_catch():
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Call",
        "States": {
            "Call": {
                "Type": "Task",
                "Resource": INVOKE,
                "Arguments": {"FunctionName": "${FunctionArn}", "Payload": {}},
                "Output": "{% $states.result.Payload %}",
                "Catch": catch_all(),
                "End": True,
            },
            "Caught": CAUGHT,
        },
    }
    with LocalStepFunctions({"fn": lambda event, context: {"accuracy": float("inf")}}) as sfn:
        result = run(sfn, definition, FunctionArn=sfn.function_arn("fn"))
        # The Lambda runtime wrote it as Python's json does: the payload is not JSON.
        assert sfn.invocations[0].result == {"accuracy": float("inf")}
    assert (result["status"], result["error"]) == ("FAILED", "States.Runtime")
    assert "not valid JSON" in result["cause"] and "Infinity" in result["cause"]


def test_a_lambda_payload_of_plain_text_is_a_string_as_before():
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Call",
        "States": {
            "Call": {
                "Type": "Task",
                "Resource": INVOKE,
                "Arguments": {"FunctionName": "${FunctionArn}", "Payload": {}},
                "Output": "{% $states.result.Payload %}",
                "End": True,
            }
        },
    }
    with LocalStepFunctions({"fn": lambda event, context: {"score": 0.5}}) as sfn:
        result = run(sfn, definition, FunctionArn=sfn.function_arn("fn"))
    assert json.loads(result["output"]) == {"score": 0.5}


def token_task() -> dict:
    return {
        "QueryLanguage": "JSONata",
        "StartAt": "Await",
        "States": {
            "Await": {
                "Type": "Task",
                "Resource": WAIT_FOR_TOKEN,
                "Arguments": {
                    "FunctionName": "${FunctionArn}",
                    "Payload": {"token": "{% $states.context.Task.Token %}"},
                },
                "TimeoutSeconds": 3600,
                "Output": "{% $states.result %}",
                "End": True,
            }
        },
    }


def test_send_task_success_refuses_output_that_is_not_strict_json_and_the_task_keeps_waiting():
    tokens: list[str] = []
    with LocalStepFunctions({"fn": lambda event, context: tokens.append(event["token"])}) as sfn:
        arn = sfn.start(sfn.create_state_machine(token_task(), "token", {"FunctionArn": sfn.function_arn("fn")}), {})
        deadline = time.monotonic() + 10
        while not tokens and time.monotonic() < deadline:
            time.sleep(0.01)
        client = boto3.client("stepfunctions", region_name="us-east-1")
        refused = {}
        for name, output in {
            "infinity": '{"accuracy": Infinity}',
            "nan": '{"accuracy": NaN}',
            "not json": "{accuracy",
            "too long": json.dumps({"x": "x" * 262_144}),
        }.items():
            with pytest.raises(ClientError) as error:
                client.send_task_success(taskToken=tokens[0], output=output)
            refused[name] = error.value.response["Error"]["Code"]
        client.send_task_success(taskToken=tokens[0], output='{"accuracy": 1e308}')
        result = sfn.wait(arn)
    assert refused == {
        "infinity": "InvalidOutput",
        "nan": "InvalidOutput",
        "not json": "InvalidOutput",
        "too long": "ValidationException",
    }
    assert result["status"] == "SUCCEEDED" and json.loads(result["output"]) == {"accuracy": 1e308}


# ----------------------------------------------------------------------- 32,768-character Causes


def test_a_cause_over_32768_characters_is_cut_to_its_first_32768():
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Fail",
        "States": {"Fail": {"Type": "Fail", "Error": "Long", "Cause": "{% $pad('', 40000, 'c') & 'end' %}"}},
    }
    with LocalStepFunctions({}) as sfn:
        result = run(sfn, definition)
    assert (result["status"], result["error"]) == ("FAILED", "Long")
    assert result["cause"] == "c" * 32_768


def test_a_sync_childs_long_failure_reaches_its_parent_cut_and_no_longer_json():
    child = {
        "QueryLanguage": "JSONata",
        "StartAt": "Fail",
        "States": {
            "Fail": {"Type": "Fail", "Error": "JobFailed", "Cause": "{% $string({'logTail': $pad('', 32700, 'l')}) %}"}
        },
    }
    parent = {
        "QueryLanguage": "JSONata",
        "StartAt": "Run",
        "States": {
            "Run": {
                "Type": "Task",
                "Resource": SYNC2,
                "Arguments": {"StateMachineArn": "${ChildArn}", "Input": {}},
                "Catch": catch_all(),
                "End": True,
            },
            "Caught": CAUGHT,
        },
    }
    with LocalStepFunctions({}) as sfn:
        child_arn = sfn.create_state_machine(child, "child")
        result = run(sfn, parent, ChildArn=child_arn)
    assert result["status"] == "SUCCEEDED"
    caught = json.loads(result["output"])["caught"]
    assert caught["Error"] == "States.TaskFailed"
    cause = caught["Cause"]
    assert len(cause) == 32_768  # the child's DescribeExecution, with its 32,714-character Cause inside, cut
    assert cause.startswith("{")
    with pytest.raises(json.JSONDecodeError):
        json.loads(cause)
