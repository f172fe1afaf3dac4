"""The harness hooks for nested executions (states:startExecution), each against what the service does.

Small JSONata machines written in the test, as in test_sfn_harness.py: one behaviour each.
"""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest
from moto.stepfunctions.parser import models as parser_models

from harness.clock import VirtualClock
from harness.sfn import LocalStepFunctions

SYNC2 = "arn:aws:states:::states:startExecution.sync:2"

CHILD = {
    "QueryLanguage": "JSONata",
    "StartAt": "Wait",
    "States": {
        "Wait": {"Type": "Wait", "Seconds": "{% $states.input.wait %}", "Next": "Fails"},
        "Fails": {
            "Type": "Choice",
            "Choices": [{"Condition": "{% $states.input.fail = true %}", "Next": "Fail"}],
            "Default": "Done",
        },
        "Fail": {"Type": "Fail", "Error": "JobFailed", "Cause": "{% $string({'reason': 'boom'}) %}"},
        "Done": {"Type": "Succeed", "Output": "{% {'waited': $states.input.wait} %}"},
    },
}


def parent(task: dict[str, Any] | None = None, max_concurrency: int = 0, fail_fast: bool = False) -> dict[str, Any]:
    """A Map of startExecution.sync:2 tasks over $states.input.items; a failure is caught unless fail_fast."""
    run = {
        "Type": "Task",
        "Resource": SYNC2,
        "Arguments": {"StateMachineArn": "${ChildArn}", "Input": "{% $states.input %}"},
        "End": True,
        **(task or {}),
    }
    # fail_fast: the failure ends the iteration in a Fail state, as RunJobs does (moto cannot build the
    # Map's error from an uncaught task failure inside an iteration: an internal AttributeError).
    caught = "Stop" if fail_fast else "Caught"
    run["Catch"] = [{"ErrorEquals": ["States.ALL"], "Output": "{% $states.errorOutput %}", "Next": caught}]
    return {
        "QueryLanguage": "JSONata",
        "StartAt": "Map",
        "States": {
            "Map": {
                "Type": "Map",
                "Items": "{% $states.input.items %}",
                "MaxConcurrency": max_concurrency,
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "Run",
                    "States": {
                        "Run": run,
                        "Caught": {"Type": "Pass", "End": True},
                        "Stop": {
                            "Type": "Fail",
                            # The child's error: moto cannot fail an iteration with a States.* error (ValueError).
                            "Error": "{% $parse($states.input.Cause).Error %}",
                            "Cause": "{% $states.input.Cause %}",
                        },
                    },
                },
                "End": True,
            }
        },
    }


@pytest.fixture
def sfn():
    with LocalStepFunctions({}, clock=VirtualClock(max_step=30)) as harness:
        harness.cooperative_waits = True
        yield harness


def machines(sfn: LocalStepFunctions, definition: dict[str, Any]) -> tuple[str, str]:
    child = sfn.create_state_machine(CHILD, "child")
    return child, sfn.create_state_machine(definition, "parent", {"ChildArn": child})


def run(sfn: LocalStepFunctions, definition: dict[str, Any], items: list[dict[str, Any]]) -> tuple[dict, str]:
    child, arn = machines(sfn, definition)
    return sfn.wait(sfn.start(arn, {"items": items}), timeout_s=60), child


def children(sfn: LocalStepFunctions, child_arn: str) -> list[dict[str, Any]]:
    listed = sfn._sfn.list_executions(stateMachineArn=child_arn)["executions"]
    return [sfn.wait(e["executionArn"]) for e in listed]


def test_sync2_waits_for_the_child_and_returns_its_description_with_output_parsed(sfn):
    description, _ = run(sfn, parent(), [{"wait": 100}])
    [result] = json.loads(description["output"])
    assert result["Status"] == "SUCCEEDED"
    assert result["Output"] == {"waited": 100}  # .sync:2: JSON, not text
    assert result["Input"] == {"wait": 100}
    assert result["ExecutionArn"].split(":")[5] == "execution" and result["Name"]
    assert result["StopDate"] - result["StartDate"] == 100_000  # timestamps as epoch milliseconds
    assert description["stopDate"].timestamp() - description["startDate"].timestamp() == pytest.approx(100)


def test_a_failed_child_fails_the_task_with_states_taskfailed_and_its_description_as_cause(sfn):
    description, _ = run(sfn, parent(), [{"wait": 10, "fail": True}])
    [caught] = json.loads(description["output"])
    assert caught["Error"] == "States.TaskFailed"
    cause = json.loads(caught["Cause"])
    assert (cause["Status"], cause["Error"]) == ("FAILED", "JobFailed")
    assert json.loads(cause["Cause"]) == {"reason": "boom"}


def test_start_execution_takes_the_api_names_and_returns_them(sfn):
    task = {"Resource": "arn:aws:states:::states:startExecution", "Output": "{% $states.result %}"}
    description, child = run(sfn, parent(task), [{"wait": 1}])
    [result] = json.loads(description["output"])
    assert set(result) == {"ExecutionArn", "StartDate"}
    assert result["ExecutionArn"].startswith(child.replace(":stateMachine:", ":execution:") + ":")


def test_unnamed_children_get_distinct_uuid_names(sfn):
    description, _ = run(sfn, parent(), [{"wait": 1}, {"wait": 2}, {"wait": 3}])
    names = [r["Name"] for r in json.loads(description["output"])]
    assert len(set(names)) == 3 and all(len(n) == 36 for n in names)


def test_children_share_virtual_time_as_concurrent_executions(sfn):
    # Started together, each child waits its own time from the same start: the parent ends with the longest.
    description, child = run(sfn, parent(), [{"wait": 100}, {"wait": 50}, {"wait": 3000}])
    starts = {c["startDate"] for c in children(sfn, child)}
    assert len(starts) == 1
    assert description["stopDate"].timestamp() - description["startDate"].timestamp() == pytest.approx(3000)


@pytest.mark.parametrize(("quantum", "ends"), [(0, [3, 7, 12]), (10, [10, 10, 20])])
def test_a_wait_quantum_ends_concurrent_waits_together_on_its_multiples(sfn, quantum, ends):
    # bench.runjobs: a thousand jittered Waits step the shared clock together instead of once each.
    sfn.wait_quantum_seconds = quantum
    description, child = run(sfn, parent(), [{"wait": 3}, {"wait": 7}, {"wait": 12}])
    t0 = description["startDate"].timestamp()
    assert t0 % 10 == 0  # the virtual clock starts on a multiple: the ends below are the quantum's
    assert sorted(c["stopDate"].timestamp() - t0 for c in children(sfn, child)) == pytest.approx(ends)
    assert sfn.time_steps == len(set(ends))


def test_max_concurrency_starts_the_next_item_when_one_ends(sfn):
    description, child = run(sfn, parent(max_concurrency=2), [{"wait": 100}, {"wait": 50}, {"wait": 3000}])
    t0 = description["startDate"].timestamp()
    offsets = sorted(c["startDate"].timestamp() - t0 for c in children(sfn, child))
    assert offsets == pytest.approx([0, 0, 50])  # the third starts when the 50-second child ends


def test_a_failed_iteration_stops_the_other_children(sfn):
    description, child = run(sfn, parent(fail_fast=True), [{"wait": 3000}, {"wait": 50, "fail": True}])
    assert description["status"] == "FAILED" and description["error"] == "JobFailed"
    statuses = sorted(c["status"] for c in children(sfn, child))
    assert statuses == ["ABORTED", "FAILED"]
    duration = description["stopDate"].timestamp() - description["startDate"].timestamp()
    assert duration == pytest.approx(50)  # not the 3000 seconds the other child would have waited


@pytest.mark.parametrize(
    "items",
    [[{"wait": 100}], [{"wait": 3000}, {"wait": 50, "fail": True}]],
    ids=["its child ended", "its iteration was cancelled"],
)
def test_a_sync_task_is_woken_by_the_end_it_waits_for_not_by_a_poll(sfn, items):
    # Backstop polls an hour apart: the parent ends only if the child's end, or the cancelled iteration's,
    # wakes its .sync task (a thousand Map Run children polling every few milliseconds starve their jobs).
    sfn.sync_poll_seconds = 3600
    description, child = run(sfn, parent(fail_fast=True), items)
    assert description["status"] == ("SUCCEEDED" if len(items) == 1 else "FAILED")
    assert sorted(c["status"] for c in children(sfn, child)) == (
        ["SUCCEEDED"] if len(items) == 1 else ["ABORTED", "FAILED"]
    )


def test_an_execution_that_ends_sends_its_status_change_to_the_default_bus(sfn):
    events = boto3.client("events", region_name="us-east-1")
    queue = boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="changes")["QueueUrl"]
    queue_arn = boto3.client("sqs", region_name="us-east-1").get_queue_attributes(
        QueueUrl=queue, AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    pattern = {"source": ["aws.states"], "detail-type": ["Step Functions Execution Status Change"]}
    events.put_rule(Name="changes", EventPattern=json.dumps(pattern))
    events.put_targets(Rule="changes", Targets=[{"Id": "q", "Arn": queue_arn}])
    child = sfn.create_state_machine(CHILD, "child")
    arn = sfn.start(child, {"wait": 5, "fail": True})
    sfn.wait(arn)
    messages = boto3.client("sqs", region_name="us-east-1").receive_message(QueueUrl=queue, MaxNumberOfMessages=10)
    [event] = [json.loads(m["Body"]) for m in messages["Messages"]]
    assert event["source"] == "aws.states" and event["resources"] == [arn]
    detail = event["detail"]
    assert (detail["executionArn"], detail["status"], detail["error"]) == (arn, "FAILED", "JobFailed")
    assert detail["stateMachineArn"] == child and detail["stopDate"] - detail["startDate"] == 5000


def test_parse_reads_json_text_and_fails_the_state_on_anything_else(sfn):
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Parse",
        "States": {"Parse": {"Type": "Pass", "Output": "{% $parse($states.input.text) %}", "End": True}},
    }
    arn = sfn.create_state_machine(definition, "parse")
    good = sfn.wait(sfn.start(arn, {"text": '{"a": [1, 2]}'}))
    assert json.loads(good["output"]) == {"a": [1, 2]}
    bad = sfn.wait(sfn.start(arn, {"text": "{oops"}))
    assert (bad["status"], bad["error"]) == ("FAILED", "States.QueryEvaluationError")


def test_an_execution_stopped_while_its_task_runs_ends_aborted_not_failed():
    holder: dict[str, Any] = {}

    def handler(event: Any, context: Any) -> Any:
        holder["sfn"].stop(holder["arn"], error="Stopped", cause="mid-task")
        raise RuntimeError("the task fails after the stop")

    with LocalStepFunctions({"work": handler}) as sfn:
        definition = {
            "QueryLanguage": "JSONata",
            "StartAt": "Work",
            "States": {
                "Work": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::lambda:invoke",
                    "Arguments": {"FunctionName": "${FunctionArn}", "Payload": {}},
                    "End": True,
                }
            },
        }
        arn = sfn.create_state_machine(definition, "stopped", {"FunctionArn": sfn.function_arn("work")})
        holder["sfn"] = sfn
        holder["arn"] = arn.replace(":stateMachine:", ":execution:") + ":one"
        sfn.start(arn, {}, name="one")
        assert sfn.wait(holder["arn"])["status"] == "ABORTED"


def test_the_next_item_starts_on_time_when_moto_is_slow_to_start_it(sfn, monkeypatch):
    """On a loaded machine the Map's next iteration may start its child long after the last one
    ended; the clock must not move on meanwhile (it did: the third child started at 100 s)."""
    real_activity = sfn.activity

    def slow_activity() -> None:  # called first thing by StartExecution, then on other work
        time.sleep(0.3)  # six times wait_settle_seconds
        real_activity()

    monkeypatch.setattr(sfn, "activity", slow_activity)
    description, child = run(sfn, parent(max_concurrency=2), [{"wait": 100}, {"wait": 50}, {"wait": 3000}])
    t0 = description["startDate"].timestamp()
    offsets = sorted(c["startDate"].timestamp() - t0 for c in children(sfn, child))
    assert offsets == pytest.approx([0, 0, 50])


def test_an_item_slow_to_start_its_child_starts_with_the_others(sfn, monkeypatch):
    """A Map iteration is at work from its start until it parks: while the second item's
    StartExecution is slow (a loaded machine, seen in CI), the first child's Wait must not move
    the clock (the second child started at 100 s)."""
    hooked = parser_models.StepFunctionsParserBackend.start_execution

    def slow_for_the_second_item(backend: Any, state_machine_arn: str, name: Any = None, *args: Any, **kw: Any) -> Any:
        execution_input = kw.get("execution_input", args[0] if args else None) or "{}"
        if json.loads(execution_input).get("wait") == 50:
            time.sleep(0.3)  # six times wait_settle_seconds, before anything of the harness runs
        return hooked(backend, state_machine_arn, name, *args, **kw)

    monkeypatch.setattr(parser_models.StepFunctionsParserBackend, "start_execution", slow_for_the_second_item)
    description, child = run(sfn, parent(max_concurrency=2), [{"wait": 100}, {"wait": 50}, {"wait": 3000}])
    t0 = description["startDate"].timestamp()
    offsets = sorted(c["startDate"].timestamp() - t0 for c in children(sfn, child))
    assert offsets == pytest.approx([0, 0, 50])
