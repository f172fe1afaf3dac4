"""The harness's callback pieces against what the service does: task tokens on virtual time,
and EventBridge rules that invoke Lambda functions."""

from __future__ import annotations

import json
import threading
import time
import uuid

import boto3
import pytest
from botocore.exceptions import ClientError

from harness.sfn import LocalStepFunctions

WAIT_FOR_TOKEN = "arn:aws:states:::lambda:invoke.waitForTaskToken"


def token_task(timeout_seconds: int) -> dict:
    return {
        "QueryLanguage": "JSONata",
        "StartAt": "Await",
        "States": {
            "Await": {
                "Type": "Task",
                "Resource": WAIT_FOR_TOKEN,
                "Arguments": {
                    "FunctionName": "${FunctionArn}",
                    "Payload": {"input": "{% $states.input %}", "token": "{% $states.context.Task.Token %}"},
                },
                "TimeoutSeconds": "{% $states.input.timeout %}",
                "Output": "{% $states.result %}",
                "Catch": [{"ErrorEquals": ["States.Timeout"], "Output": "{% {'timedOut': true} %}", "Next": "Done"}],
                "Next": "Done",
            },
            "Done": {"Type": "Succeed"},
        },
        "Comment": f"timeout {timeout_seconds}",
    }


def start(sfn: LocalStepFunctions, timeout: int) -> str:
    sm = sfn.create_state_machine(
        token_task(timeout), f"m-{uuid.uuid4().hex[:8]}", {"FunctionArn": sfn.function_arn("fn")}
    )
    return sfn.start(sm, {"timeout": timeout})


def test_send_task_success_resumes_the_task_with_its_output():
    tokens: list[str] = []
    with LocalStepFunctions({"fn": lambda event, context: tokens.append(event["token"])}) as sfn:
        arn = start(sfn, 3600)
        deadline = time.monotonic() + 10
        while not tokens and time.monotonic() < deadline:
            time.sleep(0.01)
        boto3.client("stepfunctions", region_name="us-east-1").send_task_success(
            taskToken=tokens[0], output=json.dumps({"phase": "SUCCEEDED"})
        )
        result = sfn.wait(arn)
    assert result["status"] == "SUCCEEDED"
    assert json.loads(result["output"]) == {"phase": "SUCCEEDED"}


def test_a_token_nobody_answers_times_out_on_the_virtual_clock_and_is_then_refused():
    tokens: list[str] = []
    with LocalStepFunctions({"fn": lambda event, context: tokens.append(event["token"])}) as sfn:
        started, wall = sfn.clock.now(), time.monotonic()
        arn = start(sfn, 3600)
        result = sfn.wait(arn, timeout_s=30)
        assert json.loads(result["output"]) == {"timedOut": True}
        assert sfn.clock.now() - started == pytest.approx(3600, abs=10)  # an hour of virtual time...
        assert time.monotonic() - wall < 20  # ...in seconds
        with pytest.raises(ClientError) as refused:
            boto3.client("stepfunctions", region_name="us-east-1").send_task_success(taskToken=tokens[0], output="{}")
    # The service answers TaskTimedOut for the token of a task that timed out.
    assert refused.value.response["Error"]["Code"] in {"TaskTimedOut", "InvalidToken", "TaskDoesNotExist"}


def test_an_eventbridge_rule_invokes_its_lambda_target_asynchronously_with_the_event():
    seen: list[dict] = []
    arrived = threading.Event()

    def handler(event, context):
        seen.append(event)
        arrived.set()

    with LocalStepFunctions({"target": handler}) as sfn:
        events = boto3.client("events", region_name="us-east-1")
        events.create_event_bus(Name="jobs")
        pattern = {"source": ["jobsync"], "detail": {"terminal": [True]}}
        events.put_rule(Name="ended", EventBusName="jobs", EventPattern=json.dumps(pattern))
        events.put_targets(Rule="ended", EventBusName="jobs", Targets=[{"Id": "t", "Arn": sfn.function_arn("target")}])
        for terminal in (False, True):
            detail = json.dumps({"phase": "SUCCEEDED" if terminal else "RUNNING", "terminal": terminal})
            entry = {"Source": "jobsync", "DetailType": "Job Phase Changed", "Detail": detail, "EventBusName": "jobs"}
            events.put_events(Entries=[entry])
        assert arrived.wait(10)
        for thread in sfn.async_invocations:
            thread.join(5)
    (event,) = seen  # only the event the rule matches
    assert event["source"] == "jobsync" and event["detail-type"] == "Job Phase Changed"
    assert event["detail"] == {"phase": "SUCCEEDED", "terminal": True}
    assert [i.function_name for i in sfn.invocations] == ["target"]
