"""The notifier at cluster scale: a LIST in pages, only running jobs kept, restarts that republish only what a
waiting execution may not have seen, PutEvents in batches with failed entries put again.

Against the in-process Kubernetes API over real HTTP and moto's EventBridge and DynamoDB (the stack's table:
its token items say which executions wait). PutEvents meets AWS's 256 KB request limit and, where a test asks,
AWS's partial failures (harness.eventbridge).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from harness.eventbridge import MAX_REQUEST_BYTES, THROTTLE, PutEventsFaults, aws_entry_size, put_events_size_limit
from harness.kubeapi import KubeAPI
from harness.local import pytorchjob_crd
from jobsync.cluster import get_api_client, reset_cache
from jobsync.core.event import DETAIL_TYPE, SOURCE, EventJob, PhaseChangedDetail
from jobsync.core.outcome import Phase
from jobsync.run.manifests import job_labels
from jobsync.settings import ClusterSettings, Settings
from jobsync_notifier.notifier import Notifier
from jobsync_notifier.publish import ATTEMPTS, BatchedPublisher
from jobsync_notifier.settings import NotifierSettings
from jobsync_notifier.waiting import WaitingExecutions
from jobsync_notifier.watch import KindWatcher

NS = "ml-training"
KEY = ("kubeflow.org", "v1", "pytorchjobs", NS)
BUS = "jobsync-test-jobs"
TABLE = "jobsync-test-table"
SPEC = Settings().allowed_kinds[0]


def arn(name: str) -> str:
    return f"arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:{name}"


def job(name: str, *types: str) -> dict[str, Any]:
    meta = {"name": name, "labels": job_labels(arn(name)), "annotations": {"jobsync.io/execution-arn": arn(name)}}
    obj: dict[str, Any] = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta, "spec": {}}
    if types:
        obj["status"] = conditions(*types)
    return obj


def conditions(*types: str) -> dict[str, Any]:
    return {
        "conditions": [
            {
                "type": t,
                "status": "True",
                "reason": f"PyTorchJob{t}",
                "message": f"PyTorchJob {t}",
                "lastTransitionTime": f"2026-11-29T10:0{i}:00Z",
            }
            for i, t in enumerate(types)
        ]
    }


class Stack:
    """The stack's bus (a rule copies its events to a queue the test reads) and its table."""

    def __init__(self) -> None:
        self.events = boto3.client("events", region_name="us-east-1")
        self.dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        self.sqs = boto3.client("sqs", region_name="us-east-1")
        self.events.create_event_bus(Name=BUS)
        self.queue = self.sqs.create_queue(QueueName="seen")["QueueUrl"]
        attributes = self.sqs.get_queue_attributes(QueueUrl=self.queue, AttributeNames=["QueueArn"])
        pattern = {"source": [SOURCE], "detail-type": [DETAIL_TYPE]}
        self.events.put_rule(Name="all", EventBusName=BUS, EventPattern=json.dumps(pattern))
        target = {"Id": "q", "Arn": attributes["Attributes"]["QueueArn"]}
        self.events.put_targets(Rule="all", EventBusName=BUS, Targets=[target])
        self.dynamodb.create_table(
            TableName=TABLE,
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )

    def waits(self, execution: str) -> None:
        """An Await stored this execution's token (jobsync.run.callback.TokenStore.put)."""
        item = {"pk": {"S": f"token#{execution}"}, "token": {"S": "a-task-token"}, "state": {"S": "{}"}}
        self.dynamodb.put_item(TableName=TABLE, Item=item)

    def received(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """The details of at least ``count`` events (fewer if the timeout passes), in order of arrival."""
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while len(seen) < count and time.monotonic() < deadline:
            answer = self.sqs.receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10, WaitTimeSeconds=0)
            for message in answer.get("Messages", []):
                seen.append(json.loads(message["Body"])["detail"])
                self.sqs.delete_message(QueueUrl=self.queue, ReceiptHandle=message["ReceiptHandle"])
            if len(seen) < count:
                time.sleep(0.05)
        return seen


@pytest.fixture
def api() -> Iterator[KubeAPI]:
    with KubeAPI() as server:
        server.register_crd(pytorchjob_crd())
        server.create_namespace(NS)
        yield server
    reset_cache()


@pytest.fixture
def stack() -> Iterator[Stack]:
    with mock_aws(), put_events_size_limit():
        yield Stack()


def watcher(api: KubeAPI, stack: Stack, reported: list[PhaseChangedDetail], page_size: int = 5) -> KindWatcher:
    client = get_api_client(ClusterSettings(mode="url", url=api.url))
    waiting = WaitingExecutions(TABLE, stack.dynamodb)
    return KindWatcher(client, SPEC, NS, reported.append, 1, waiting, page_size)


def notifier(api: KubeAPI, stack: Stack, events: Any = None, page_size: int = 5) -> Notifier:
    client = get_api_client(ClusterSettings(mode="url", url=api.url))
    settings = NotifierSettings(event_bus_name=BUS, health_port=0, watch_timeout_seconds=2, page_size=page_size)
    return Notifier(client, Settings(namespace=NS, table_name=TABLE), settings, events or stack.events, stack.dynamodb)


def lists(api: KubeAPI) -> list[Any]:
    return [r for r in api.requests if r.verb == "list" and r.resource == "pytorchjobs"]


def test_the_list_is_read_in_pages_and_only_the_jobs_that_run_are_kept(api, stack):
    for i in range(20):  # the history the default cleanup keeps: succeeded jobs stay
        api.put((*KEY, f"done-{i:02d}"), job(f"done-{i:02d}", "Created", "Running", "Succeeded"))
    for i in range(3):
        api.put((*KEY, f"runs-{i}"), job(f"runs-{i}", "Created", "Running"))
    reported: list[PhaseChangedDetail] = []
    watch = watcher(api, stack, reported)
    watch.sync()
    assert [r.query.get("limit") for r in lists(api)] == ["5"] * 5  # 23 jobs, 5 a page
    assert all(r.query.get("continue") for r in lists(api)[1:])
    assert watch.tracked == 3  # the history is read, not kept
    assert reported == []  # no execution waits for any of them: a start has nothing to say
    api.update_status((*KEY, "runs-1"), conditions("Created", "Running", "Failed"))
    watch.watch_once()
    assert [(c.job.name, c.phase) for c in reported] == [("runs-1", "FAILED")]
    assert watch.tracked == 2


def test_a_restart_publishes_only_the_ends_that_a_waiting_execution_may_not_have_seen(api, stack):
    for i in range(12):
        api.put((*KEY, f"done-{i:02d}"), job(f"done-{i:02d}", "Created", "Running", "Succeeded"))
    api.put((*KEY, "ended-while-down"), job("ended-while-down", "Created", "Running", "Failed"))
    api.put((*KEY, "still-running"), job("still-running", "Created", "Running"))
    stack.waits(arn("ended-while-down"))
    stack.waits(arn("still-running"))
    running = notifier(api, stack).start()
    try:
        assert running.wait_synced(10)
        details = stack.received(1)
        assert stack.received(1, timeout=1.0) == []  # that one only
        api.update_status((*KEY, "still-running"), conditions("Created", "Running", "Succeeded"))
        details += stack.received(1)
    finally:
        running.stop()
    assert [(d["job"]["name"], d["phase"], d["terminal"]) for d in details] == [
        ("ended-while-down", "FAILED", True),
        ("still-running", "SUCCEEDED", True),
    ]
    first = details[0]
    assert first["executionArn"] == arn("ended-while-down") and first["reason"] == "PyTorchJobFailed"
    assert first["message"] == "PyTorchJob Failed" and first["finishedAt"] == "2026-11-29T10:02:00Z"


def test_an_execution_that_begins_to_wait_while_the_list_is_read_still_gets_its_end(api, stack):
    for i in range(12):
        api.put((*KEY, f"job-{i:02d}"), job(f"job-{i:02d}", "Created", "Running", "Succeeded"))
    take_fault = api.take_fault
    pages: list[str] = []

    def token_stored_during_the_list(method: str, path: str) -> Any:
        if method == "GET" and path.endswith("/pytorchjobs") is False and "/pytorchjobs?" in path:
            pages.append(path)
            if len(pages) == 2:  # after the first page: the token of job-11's execution (on the third page)
                stack.waits(arn("job-11"))
        return take_fault(method, path)

    api.take_fault = token_stored_during_the_list
    reported: list[PhaseChangedDetail] = []
    watcher(api, stack, reported).sync()
    assert len(pages) == 3
    assert [(c.job.name, c.phase, c.reason, c.executionArn) for c in reported] == [
        ("job-11", "SUCCEEDED", "PyTorchJobSucceeded", arn("job-11"))
    ]


def test_a_continue_token_that_expires_lists_again_and_reports_each_change_once(api, stack):
    for i in range(9):
        api.put((*KEY, f"job-{i}"), job(f"job-{i}", "Created", "Running"))
    reported: list[PhaseChangedDetail] = []
    watch = watcher(api, stack, reported, page_size=4)
    watch.sync()
    for name in ("job-1", "job-7"):  # end while the watch is broken: the next LIST sees it
        api.update_status((*KEY, name), conditions("Created", "Running", "Succeeded"))
    take_fault = api.take_fault
    compacted: list[bool] = []

    def compact_after_the_first_page(method: str, path: str) -> Any:
        if "/pytorchjobs?" in path and "continue=" in path and not compacted:
            compacted.append(True)
            for i in range(2100):
                noise = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"noise-{i}"}}
                api.put(("", "v1", "configmaps", NS, f"noise-{i}"), noise)
        return take_fault(method, path)

    api.take_fault = compact_after_the_first_page
    api.clear_requests()
    watch.sync()
    assert [r.status for r in lists(api)] == [200, 410, 200, 200, 200]  # listed again from the first page
    assert sorted((c.job.name, c.phase) for c in reported) == [("job-1", "SUCCEEDED"), ("job-7", "SUCCEEDED")]
    assert watch.tracked == 7


def test_the_notifier_is_ready_once_its_list_is_read_not_once_everything_is_published(api, stack):
    for i in range(15):
        api.put((*KEY, f"job-{i:02d}"), job(f"job-{i:02d}", "Created", "Running", "Succeeded"))
        stack.waits(arn(f"job-{i:02d}"))
    released = threading.Event()
    stack.events.meta.events.register("before-call.events.PutEvents", lambda **_: released.wait(10) and None)
    running = notifier(api, stack).start()
    try:
        assert running.wait_synced(10)
        assert running.publisher.published == 0  # ready, and still publishing
        released.set()
        details = stack.received(15)
    finally:
        released.set()
        running.stop()
    assert sorted(d["job"]["name"] for d in details) == [f"job-{i:02d}" for i in range(15)]


def change(name: str, message: str = "") -> PhaseChangedDetail:
    ref = EventJob(apiVersion="kubeflow.org/v1", kind="PyTorchJob", namespace=NS, name=name, uid=f"uid-{name}")
    return PhaseChangedDetail(
        job=ref,
        executionArn=arn(name),
        phase=Phase.SUCCEEDED,
        terminal=True,
        reason="PyTorchJobSucceeded",
        message=message,
    )


def held_publisher(
    stack: Stack, first: PhaseChangedDetail, sleep: Any = time.sleep
) -> tuple[BatchedPublisher, threading.Event, list[list[int]]]:
    """A publisher (one worker) whose call with ``first`` waits until released: what comes meanwhile queues up."""
    released, calling = threading.Event(), threading.Event()
    sizes: list[list[int]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        sizes.append([aws_entry_size(e) for e in params["Entries"]])
        calling.set()
        released.wait(10)

    stack.events.meta.events.register("provide-client-params.events.PutEvents", record)
    publisher = BatchedPublisher(BUS, stack.events, concurrency=1, sleep=sleep)
    publisher.submit(first)
    assert calling.wait(10)
    return publisher, released, sizes


def test_put_events_takes_ten_entries_a_call(stack):
    publisher, released, sizes = held_publisher(stack, change("job-00"))
    for i in range(1, 25):
        publisher.submit(change(f"job-{i:02d}"))
    released.set()
    assert publisher.flush(10)
    publisher.stop()
    assert [len(call) for call in sizes] == [1, 10, 10, 4]  # the first call left before the rest came
    assert sorted(d["job"]["name"] for d in stack.received(25)) == [f"job-{i:02d}" for i in range(25)]
    assert (publisher.published, publisher.lost) == (25, 0)


def test_put_events_stays_within_256_kb_a_call_and_cuts_a_message_too_long_for_one(stack):
    publisher, released, sizes = held_publisher(stack, change("job-0", "x" * 60_000))
    for i in range(1, 6):
        publisher.submit(change(f"job-{i}", "x" * 60_000))  # 4 fit in 256 KB
    publisher.submit(change("huge", "y" * 300_000))
    released.set()
    assert publisher.flush(10)
    publisher.stop()
    assert all(sum(call) <= MAX_REQUEST_BYTES for call in sizes), sizes
    assert [len(call) for call in sizes] == [1, 4, 1, 1]
    details = {d["job"]["name"]: d for d in stack.received(7)}
    assert len(details) == 7 and publisher.lost == 0
    assert details["huge"]["message"].endswith(" [cut]") and details["huge"]["phase"] == "SUCCEEDED"
    assert details["job-5"]["message"] == "x" * 60_000


def test_entries_put_events_did_not_take_and_throttled_calls_are_put_again(stack):
    faults = PutEventsFaults(stack.events)
    # The held call as moto answers it; the five together with two not taken; those two throttled whole; then taken.
    faults.plan(None, {1, 3}, THROTTLE)
    backoffs: list[float] = []
    publisher, released, _ = held_publisher(stack, change("first"), sleep=backoffs.append)
    for i in range(5):
        publisher.submit(change(f"job-{i}"))
    released.set()
    assert publisher.flush(10)
    publisher.stop()
    assert faults.calls == [1, 5, 2, 2]
    names = sorted(d["job"]["name"] for d in stack.received(6))
    assert names == ["first", *(f"job-{i}" for i in range(5))]
    assert stack.received(1, timeout=0.5) == []  # each once: the entries taken were not put again
    assert (publisher.published, publisher.lost) == (6, 0)
    assert len(backoffs) == 2 and all(0 <= b <= 8 for b in backoffs)


def test_an_entry_that_keeps_failing_is_given_up_after_its_attempts(stack):
    faults = PutEventsFaults(stack.events, code="InternalFailure")
    faults.plan(None, *[{0}] * ATTEMPTS)
    publisher, released, _ = held_publisher(stack, change("first"), sleep=lambda _: None)
    publisher.submit(change("unlucky"))
    publisher.submit(change("fine"))
    released.set()
    assert publisher.flush(10)
    publisher.stop()
    assert (publisher.published, publisher.lost) == (2, 1)
    assert sorted(d["job"]["name"] for d in stack.received(2)) == ["fine", "first"]
    assert faults.calls == [1, 2, 1, 1, 1]
