"""The harness's Distributed Map (harness/sfn/hooks/distributed_map.py), each behaviour against what AWS documents.

Small JSONata machines written here, one behaviour each: every item a child workflow execution of the
Map Run, MaxConcurrency, the tolerated failure threshold, ResultWriter's files, ItemReader, ListExecutions.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import boto3
import pytest

from harness.clock import VirtualClock
from harness.sfn import LocalStepFunctions
from harness.sfn.hooks.distributed_map import map_runs

BUCKET = "results"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
PROCESSOR = {
    "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
    "StartAt": "Wait",
    "States": {
        "Wait": {"Type": "Wait", "Seconds": "{% $states.input.wait %}", "Next": "Fails"},
        "Fails": {
            "Type": "Choice",
            "Choices": [{"Condition": "{% $states.input.fail %}", "Next": "Fail"}],
            "Default": "Done",
        },
        "Fail": {"Type": "Fail", "Error": "JobFailed", "Cause": "{% 'item ' & $states.input.index %}"},
        "Done": {"Type": "Succeed", "Output": "{% {'index': $states.input.index, 'tag': $states.input.tag} %}"},
    },
}
SELECTOR = {
    "wait": "{% $states.context.Map.Item.Value.wait %}",
    "fail": "{% $states.context.Map.Item.Value.fail = true %}",
    "index": "{% $states.context.Map.Item.Index %}",
    "tag": "{% $states.input.tag %}",
}
WRITER = {
    "Resource": "arn:aws:states:::s3:putObject",
    "Arguments": {"Bucket": BUCKET, "Prefix": "{% 'runs/' & $states.context.Execution.Name %}"},
}


def machine(**fields: Any) -> dict[str, Any]:
    """A Distributed Map over ``$states.input.items`` whose children wait, then fail or succeed."""
    the_map = {"Type": "Map", "Items": "{% $states.input.items %}", "ItemSelector": SELECTOR, "End": True}
    the_map["ItemProcessor"] = PROCESSOR
    return {"QueryLanguage": "JSONata", "StartAt": "Map", "States": {"Map": {**the_map, **fields}}}


@pytest.fixture
def sfn():
    with LocalStepFunctions({}, clock=VirtualClock(max_step=30)) as harness:
        harness.cooperative_waits = True
        boto3.client("s3", region_name=harness.region).create_bucket(Bucket=BUCKET)
        yield harness


def run(sfn: LocalStepFunctions, items: list[dict[str, Any]], name: str = "run-1", **fields: Any) -> dict[str, Any]:
    arn = sfn.create_state_machine(machine(**fields), f"parent-{len(sfn._sfn.list_state_machines()['stateMachines'])}")
    return sfn.wait(sfn.start(arn, {"tag": "t", "items": items}, name=name), timeout_s=60)


def children(sfn: LocalStepFunctions, execution_arn: str) -> list[dict[str, Any]]:
    """The Map Run's children, through ListExecutions(mapRunArn=...), each described, in start order."""
    [map_run] = sfn._sfn.list_map_runs(executionArn=execution_arn)["mapRuns"]
    listed = sfn._sfn.list_executions(mapRunArn=map_run["mapRunArn"])["executions"]
    return [sfn.wait(e["executionArn"]) for e in listed]


def until(condition: Callable[[], Any], timeout_s: float = 30) -> Any:
    """Wait (wall clock) for ``condition()`` to be true; its value."""
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)
    return value


def started_children(sfn: LocalStepFunctions) -> list[str]:
    """The ARNs of the one Map Run's children, once every one of them started."""
    runs = list(map_runs(sfn).runs.values())
    return [c.arn for c in runs[0].children] if runs and all(c.arn for c in runs[0].children) else []


def seconds(description: dict[str, Any]) -> float:
    return float((description["stopDate"] - description["startDate"]).total_seconds())


def s3_json(key: str) -> Any:
    return json.loads(boto3.client("s3", region_name="us-east-1").get_object(Bucket=BUCKET, Key=key)["Body"].read())


def test_each_item_is_a_child_execution_of_the_map_run_with_a_history_of_its_own(sfn):
    description = run(sfn, [{"wait": 10}, {"wait": 20}], Label="Jobs")
    assert description["status"] == "SUCCEEDED"
    assert json.loads(description["output"]) == [{"index": 0, "tag": "t"}, {"index": 1, "tag": "t"}]
    parent_events = [e["type"] for e in sfn.history(description["executionArn"])]
    assert "MapRunStarted" in parent_events and "MapRunSucceeded" in parent_events
    assert not [e for e in parent_events if e.startswith(("Wait", "Choice", "Succeed"))]  # the items' are theirs
    kids = children(sfn, description["executionArn"])
    machine_arn = description["stateMachineArn"] + "/Jobs"
    assert [json.loads(k["input"])["index"] for k in kids] == [0, 1]
    for kid in kids:
        assert kid["status"] == "SUCCEEDED" and kid["stateMachineArn"] == machine_arn
        assert re.fullmatch(
            re.escape(machine_arn.replace(":stateMachine:", ":execution:")) + ":" + UUID, kid["executionArn"]
        )
        assert [e["type"] for e in sfn.history(kid["executionArn"])][:2] == ["ExecutionStarted", "WaitStateEntered"]


def test_the_item_selector_sees_the_item_its_index_and_the_map_input(sfn):
    description = run(sfn, [{"wait": 1}, {"wait": 2}])
    inputs = [json.loads(k["input"]) for k in children(sfn, description["executionArn"])]
    assert inputs == [
        {"wait": 1, "fail": False, "index": 0, "tag": "t"},
        {"wait": 2, "fail": False, "index": 1, "tag": "t"},
    ]


def test_max_concurrency_zero_starts_every_child_at_once(sfn):
    description = run(sfn, [{"wait": 100}, {"wait": 50}, {"wait": 3000}])
    kids = children(sfn, description["executionArn"])
    assert {k["startDate"] for k in kids} == {description["startDate"]}
    assert [seconds(k) for k in kids] == [100, 50, 3000]
    assert seconds(description) == 3000


def test_max_concurrency_starts_the_next_item_when_one_ends(sfn):
    description = run(sfn, [{"wait": 100}, {"wait": 50}, {"wait": 3000}], MaxConcurrency=2)
    t0 = description["startDate"].timestamp()
    offsets = [k["startDate"].timestamp() - t0 for k in children(sfn, description["executionArn"])]
    assert offsets == [0, 0, 50]  # the third starts when the 50-second child ends
    assert seconds(description) == 3050


def test_the_virtual_clock_holds_for_hundreds_of_children_each_waiting_its_own_time(sfn):
    items = [{"wait": 60 * (1 + i % 7)} for i in range(300)]
    description = run(sfn, items)
    assert description["status"] == "SUCCEEDED"
    kids = children(sfn, description["executionArn"])
    assert len(kids) == 300 and {k["startDate"] for k in kids} == {description["startDate"]}
    assert [seconds(k) for k in kids] == [item["wait"] for item in items]
    assert seconds(description) == 420


def test_a_failure_over_the_threshold_fails_the_map_run_and_stops_the_others(sfn):
    items = [{"wait": 3000}, {"wait": 50, "fail": True}, {"wait": 10}, {"wait": 10}]
    description = run(sfn, items, MaxConcurrency=2, ToleratedFailureCount=0)
    assert (description["status"], description["error"]) == ("FAILED", "States.ExceedToleratedFailureThreshold")
    assert description["cause"] == "The specified tolerated failure threshold was exceeded"
    assert seconds(description) == 50  # not the 3,000 s the first child would have waited
    kids = children(sfn, description["executionArn"])
    assert [k["status"] for k in kids] == ["ABORTED", "FAILED"]  # the last two never started
    events = [e["type"] for e in sfn.history(description["executionArn"])]
    assert "MapRunFailed" in events and "MapStateFailed" in events


def test_failures_within_the_tolerated_count_let_the_map_succeed(sfn):
    items = [{"wait": 5, "fail": True}, {"wait": 6}, {"wait": 7, "fail": True}]
    assert run(sfn, items, ToleratedFailureCount=2)["status"] == "SUCCEEDED"
    assert run(sfn, items, name="run-2", ToleratedFailureCount=1)["error"] == "States.ExceedToleratedFailureThreshold"


def test_the_tolerated_percentage_counts_failed_items_over_all_items(sfn):
    items = [{"wait": 5, "fail": True}, {"wait": 6}, {"wait": 7}, {"wait": 8, "fail": True}]
    assert run(sfn, items, ToleratedFailurePercentage=50.0)["status"] == "SUCCEEDED"  # 2 of 4 is not over 50 %
    assert run(sfn, items, name="run-2", ToleratedFailurePercentage=49.5)["status"] == "FAILED"


def test_without_a_threshold_any_failure_fails_the_map_run(sfn):
    description = run(sfn, [{"wait": 5, "fail": True}, {"wait": 6}])
    assert description["error"] == "States.ExceedToleratedFailureThreshold"


def test_a_child_stopped_by_hand_is_aborted_not_a_failure_for_the_threshold(sfn):
    arn = sfn.create_state_machine(machine(ToleratedFailureCount=0), "parent")
    execution = sfn.start(arn, {"tag": "t", "items": [{"wait": 3000}, {"wait": 100}]})
    first = until(lambda: started_children(sfn))[0]
    until(lambda: sfn.stop_if_running(first))
    description = sfn.wait(execution, timeout_s=60)
    assert description["status"] == "SUCCEEDED"
    assert [k["status"] for k in children(sfn, execution)] == ["ABORTED", "SUCCEEDED"]


def test_a_stopped_parent_stops_its_map_runs_children(sfn):
    arn = sfn.create_state_machine(machine(), "parent")
    execution = sfn.start(arn, {"tag": "t", "items": [{"wait": 3000}, {"wait": 4000}]})
    until(lambda: started_children(sfn))
    sfn.stop(execution)
    assert sfn.wait(execution, timeout_s=60)["status"] == "ABORTED"
    assert [k["status"] for k in children(sfn, execution)] == ["ABORTED", "ABORTED"]


def test_the_result_writer_exports_every_child_by_status_with_a_manifest(sfn):
    description = run(sfn, [{"wait": 5}, {"wait": 6}], Label="Jobs", ResultWriter=WRITER)
    output = json.loads(description["output"])
    map_run = output["MapRunArn"]
    run_id = map_run.rsplit(":", 1)[1]
    assert output["ResultWriterDetails"] == {"Bucket": BUCKET, "Key": f"runs/run-1/{run_id}/manifest.json"}
    manifest = s3_json(output["ResultWriterDetails"]["Key"])
    assert (manifest["DestinationBucket"], manifest["MapRunArn"]) == (BUCKET, map_run)
    [succeeded] = manifest["ResultFiles"]["SUCCEEDED"]
    assert manifest["ResultFiles"]["FAILED"] == [] and manifest["ResultFiles"]["PENDING"] == []
    assert succeeded["Key"] == f"runs/run-1/{run_id}/SUCCEEDED_0.json"
    records = s3_json(succeeded["Key"])
    assert succeeded["Size"] == len(json.dumps(records, separators=(",", ":")).encode())
    kids = children(sfn, description["executionArn"])
    for record, kid in zip(records, kids, strict=True):
        assert record["ExecutionArn"] == kid["executionArn"] and record["Name"] == kid["name"]
        assert (record["Status"], record["StateMachineArn"]) == ("SUCCEEDED", kid["stateMachineArn"])
        assert json.loads(record["Input"]) == json.loads(kid["input"])
        assert json.loads(record["Output"]) == json.loads(kid["output"])
        assert record["InputDetails"] == record["OutputDetails"] == {"Included": True}
        assert record["StartDate"].endswith("Z")  # ISO 8601, milliseconds, UTC: the child's own start
        assert datetime.fromisoformat(record["StartDate"].replace("Z", "+00:00")) == kid["startDate"]


def test_a_failed_map_run_still_exports_failed_aborted_and_pending_items(sfn):
    items = [{"wait": 3000}, {"wait": 50, "fail": True}, {"wait": 1}]
    description = run(sfn, items, MaxConcurrency=2, ToleratedFailureCount=0, ResultWriter=WRITER)
    assert description["error"] == "States.ExceedToleratedFailureThreshold"
    [manifest_key] = [
        o["Key"]
        for o in boto3.client("s3", region_name="us-east-1").list_objects_v2(Bucket=BUCKET)["Contents"]
        if o["Key"].endswith("manifest.json")
    ]
    files = s3_json(manifest_key)["ResultFiles"]
    assert files["SUCCEEDED"] == []
    failed = s3_json(files["FAILED"][0]["Key"])
    assert sorted((r["Status"], r.get("Error"), r.get("Cause")) for r in failed) == [
        ("ABORTED", None, None),
        ("FAILED", "JobFailed", "item 1"),
    ]
    [pending] = s3_json(files["PENDING"][0]["Key"])
    assert json.loads(pending["Input"]) == {"wait": 1}


def test_a_result_writer_that_cannot_write_fails_the_map_with_states_result_writer_failed(sfn):
    writer = {"Resource": "arn:aws:states:::s3:putObject", "Arguments": {"Bucket": "no-such-bucket", "Prefix": "x"}}
    description = run(sfn, [{"wait": 1}], ResultWriter=writer)
    assert (description["status"], description["error"]) == ("FAILED", "States.ResultWriterFailed")


def test_the_item_reader_reads_the_items_from_a_json_object_in_s3(sfn):
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.put_object(Bucket=BUCKET, Key="in/items.json", Body=json.dumps([{"wait": 3}, {"wait": 4}]).encode())
    reader = {
        "Resource": "arn:aws:states:::s3:getObject",
        "ReaderConfig": {"InputType": "JSON"},
        "Arguments": {"Bucket": BUCKET, "Key": "{% $states.input.key %}"},
    }
    the_map = machine(ItemReader=reader)
    del the_map["States"]["Map"]["Items"]
    arn = sfn.create_state_machine(the_map, "reader")
    description = sfn.wait(sfn.start(arn, {"tag": "r", "key": "in/items.json"}), timeout_s=60)
    assert json.loads(description["output"]) == [{"index": 0, "tag": "r"}, {"index": 1, "tag": "r"}]


def test_list_executions_of_an_unknown_map_run_is_resource_not_found(sfn):
    arn = "arn:aws:states:us-east-1:123456789012:mapRun:parent/Jobs:00000000-0000-0000-0000-000000000000"
    with pytest.raises(sfn._sfn.exceptions.ClientError, match="ResourceNotFound"):
        sfn._sfn.list_executions(mapRunArn=arn)
