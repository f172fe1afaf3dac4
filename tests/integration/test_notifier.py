"""The notifier against the local Kubernetes API over real HTTP, publishing to moto's EventBridge.

Events are read the way a user's rule would get them: a rule on the bus
sends every jobsync event to an SQS queue, and the test reads the queue.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from harness.kubeapi import KubeAPI
from harness.local import pytorchjob_crd
from jobsync.cluster import get_api_client, reset_cache
from jobsync.core.event import DETAIL_TYPE, SOURCE
from jobsync.run.manifests import job_labels
from jobsync.settings import ClusterSettings, Settings
from jobsync_notifier.notifier import Notifier
from jobsync_notifier.settings import NotifierSettings
from jobsync_notifier.watch import Expired, KindWatcher

NS = "ml-training"
ARN = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:nightly"
KEY = ("kubeflow.org", "v1", "pytorchjobs", NS)
BUS = "jobsync-test-jobs"


def job(name: str, ours: bool = True, status: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if ours:
        meta["labels"] = job_labels(ARN)
        meta["annotations"] = {"jobsync.io/execution-arn": ARN}
    obj = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta, "spec": {"pytorchReplicaSpecs": {}}}
    if status is not None:
        obj["status"] = status
    return obj


def conditions(*types: str) -> dict[str, Any]:
    stamp = "2026-11-29T10:0{}:00Z"
    return {
        "conditions": [
            {"type": t, "status": "True", "reason": f"PyTorchJob{t}", "lastTransitionTime": stamp.format(i)}
            for i, t in enumerate(types)
        ]
    }


class Bus:
    """The stack's bus, with a rule that copies jobsync events to a queue the test reads."""

    def __init__(self) -> None:
        self.events = boto3.client("events", region_name="us-east-1")
        sqs = boto3.client("sqs", region_name="us-east-1")
        self.events.create_event_bus(Name=BUS)
        self.queue = sqs.create_queue(QueueName="seen")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=self.queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        pattern = {"source": [SOURCE], "detail-type": [DETAIL_TYPE]}
        self.events.put_rule(Name="all", EventBusName=BUS, EventPattern=json.dumps(pattern))
        self.events.put_targets(Rule="all", EventBusName=BUS, Targets=[{"Id": "q", "Arn": arn}])
        self.sqs = sqs

    def received(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """The details of at least ``count`` events, in order of arrival."""
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
def bus() -> Iterator[Bus]:
    with mock_aws():
        yield Bus()


def notifier_for(api: KubeAPI, bus: Bus) -> Notifier:
    client = get_api_client(ClusterSettings(mode="url", url=api.url))
    settings = NotifierSettings(event_bus_name=BUS, health_port=0, watch_timeout_seconds=2)
    return Notifier(client, Settings(namespace=NS), settings, events_client=bus.events)


def test_each_phase_change_of_a_jobsync_job_is_one_event_with_the_execution(api, bus):
    notifier = notifier_for(api, bus).start()
    try:
        assert notifier.wait_synced(5)
        api.put((*KEY, "mnist"), job("mnist"))
        api.put((*KEY, "not-ours"), job("not-ours", ours=False, status=conditions("Created", "Failed")))
        api.update_status((*KEY, "mnist"), conditions("Created"))
        api.update_status((*KEY, "mnist"), conditions("Created", "Running"))
        api.update_status((*KEY, "mnist"), conditions("Created", "Running"))  # no change: no event
        api.update_status((*KEY, "mnist"), conditions("Created", "Running", "Succeeded"))
        details = bus.received(3)
    finally:
        notifier.stop()
    assert [(d["job"]["name"], d["phase"], d["terminal"]) for d in details] == [
        ("mnist", "PENDING", False),
        ("mnist", "RUNNING", False),
        ("mnist", "SUCCEEDED", True),
    ]
    done = details[-1]
    assert done["executionArn"] == ARN and done["reason"] == "PyTorchJobSucceeded"
    assert done["job"]["uid"] == api.get((*KEY, "mnist"))["metadata"]["uid"]
    assert done["finishedAt"] == "2026-11-29T10:02:00Z" and done["startedAt"] == "2026-11-29T10:01:00Z"
    assert bus.received(1, timeout=0.5) == []  # nothing more: the stranger's job was never reported


def test_a_restart_publishes_what_changed_while_the_notifier_was_down(api, bus):
    api.put((*KEY, "mnist"), job("mnist", status=conditions("Created", "Running")))
    first = notifier_for(api, bus).start()
    assert first.wait_synced(5)
    assert [d["phase"] for d in bus.received(1)] == ["RUNNING"]
    first.stop()
    api.update_status((*KEY, "mnist"), conditions("Created", "Running", "Failed"))  # while nobody watches
    second = notifier_for(api, bus).start()
    try:
        assert second.wait_synced(5)
        assert [d["phase"] for d in bus.received(1)] == ["FAILED"]
    finally:
        second.stop()


def test_a_job_deleted_before_it_ended_is_reported_gone(api, bus):
    notifier = notifier_for(api, bus).start()
    try:
        assert notifier.wait_synced(5)
        api.put((*KEY, "mnist"), job("mnist", status=conditions("Created", "Running")))
        api.delete((*KEY, "mnist"))
        details = bus.received(2)
    finally:
        notifier.stop()
    assert [(d["phase"], d["reason"]) for d in details] == [
        ("RUNNING", "PyTorchJobRunning"),
        ("NOT_FOUND", "JobDeleted"),
    ]


def test_a_410_on_the_watch_lists_again_and_misses_nothing(api, bus):
    reported: list[Any] = []
    watcher = KindWatcher(
        get_api_client(ClusterSettings(mode="url", url=api.url)), Settings().allowed_kinds[0], NS, reported.append, 1
    )
    api.put((*KEY, "mnist"), job("mnist", status=conditions("Created", "Running")))
    watcher.sync()
    stale = watcher.resource_version
    for i in range(2100):  # writes elsewhere push the version out of the API's watch window
        noise = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"noise-{i}"}}
        api.put(("", "v1", "configmaps", NS, f"noise-{i}"), noise)
    api.update_status((*KEY, "mnist"), conditions("Created", "Running", "Succeeded"))
    with pytest.raises(Expired):
        watcher.resource_version = stale
        watcher.watch_once()
    watcher.sync()  # what run() does after Expired
    assert [(c.phase, c.reason) for c in reported] == [
        ("RUNNING", "PyTorchJobRunning"),
        ("SUCCEEDED", "PyTorchJobSucceeded"),
    ]


def test_health_says_ready_once_every_kind_is_listed(api, bus):
    import urllib.request

    notifier = notifier_for(api, bus).start()
    try:
        assert notifier.wait_synced(5)
        base = f"http://127.0.0.1:{notifier.health.port}"
        ready = json.loads(urllib.request.urlopen(f"{base}/readyz", timeout=5).read())
        alive = json.loads(urllib.request.urlopen(f"{base}/healthz", timeout=5).read())
    finally:
        notifier.stop()
    assert ready == {
        "ready": True,
        "kinds": {
            "PyTorchJob": {
                "synced": True,
                "lastContactSecondsAgo": ready["kinds"]["PyTorchJob"]["lastContactSecondsAgo"],
            }
        },
    }
    assert alive["alive"] is True
