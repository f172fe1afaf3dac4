"""GetExecutionHistory through the local run answers as the service does: pages, order, tokens, limits.

A real JSONata definition loops a Pass and a Choice state to write a few hundred events; the history is then
read through boto3, as the cleanup function and ``jobsync run`` read it.
"""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from botocore.exceptions import ClientError

from harness.sfn import LocalStepFunctions

LOOPS = 60  # ExecutionStarted, 4 events a lap, 3 for the end: 1 + 4 * 60 + 3 = 244 events

COUNTER = {
    "QueryLanguage": "JSONata",
    "StartAt": "Count",
    "States": {
        "Count": {"Type": "Pass", "Output": "{% {'n': $states.input.n + 1} %}", "Next": "More"},
        "More": {
            "Type": "Choice",
            "Choices": [{"Condition": f"{{% $states.input.n < {LOOPS} %}}", "Next": "Count"}],
            "Default": "Done",
        },
        "Done": {"Type": "Succeed"},
    },
}


@pytest.fixture(scope="module")
def ran() -> Iterator[tuple[object, str]]:
    with LocalStepFunctions({}) as sfn:
        machine = sfn.create_state_machine(COUNTER, "counter")
        arn = sfn.start(machine, {"n": 0})
        assert sfn.wait(arn)["status"] == "SUCCEEDED"
        yield boto3.client("stepfunctions", region_name=sfn.region), arn


def read_all(client: object, arn: str, **kwargs: object) -> list[list[int]]:
    pages: list[list[int]] = []
    token = None
    while True:
        page = client.get_execution_history(executionArn=arn, **kwargs, **({"nextToken": token} if token else {}))  # type: ignore[attr-defined]
        pages.append([event["id"] for event in page["events"]])
        token = page.get("nextToken")
        if not token:
            return pages


def test_pages_hold_100_events_by_default_oldest_first_with_a_token_while_more_follow(ran):
    client, arn = ran
    pages = read_all(client, arn)
    ids = [i for page in pages for i in page]
    assert [len(page) for page in pages] == [100, 100, 44]
    assert ids == list(range(1, 245))


def test_reverse_order_hands_out_the_newest_events_first(ran):
    client, arn = ran
    first = client.get_execution_history(executionArn=arn, reverseOrder=True, maxResults=3)
    assert first["events"][0]["type"] == "ExecutionSucceeded"
    assert [event["id"] for event in first["events"]] == [244, 243, 242] and first["nextToken"]
    assert [i for page in read_all(client, arn, reverseOrder=True, maxResults=50) for i in page] == list(
        range(244, 0, -1)
    )


def test_a_page_holds_at_most_1000_events_and_zero_asks_for_the_default(ran):
    client, arn = ran
    assert [len(p) for p in read_all(client, arn, maxResults=1000)] == [244]
    assert [len(p) for p in read_all(client, arn, maxResults=0)] == [100, 100, 44]
    with pytest.raises(ClientError) as caught:
        client.get_execution_history(executionArn=arn, maxResults=1001)
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert "maxResults" in caught.value.response["Error"]["Message"]


def test_a_token_handed_out_for_other_arguments_is_invalid(ran):
    client, arn = ran
    token = client.get_execution_history(executionArn=arn, maxResults=10)["nextToken"]
    for kwargs in ({"reverseOrder": True}, {}):
        bad = token if kwargs else "not-a-token"
        with pytest.raises(ClientError) as caught:
            client.get_execution_history(executionArn=arn, nextToken=bad, **kwargs)
        assert caught.value.response["Error"]["Code"] == "InvalidToken"


def test_without_execution_data_the_events_carry_no_input_or_output(ran):
    client, arn = ran
    events = client.get_execution_history(executionArn=arn, includeExecutionData=False, maxResults=5)["events"]
    entered = next(e for e in events if e["type"] == "PassStateEntered")
    assert entered["stateEnteredEventDetails"] == {"name": "Count"}
    with_data = client.get_execution_history(executionArn=arn, maxResults=5)["events"]
    assert "input" in next(e for e in with_data if e["type"] == "PassStateEntered")["stateEnteredEventDetails"]
