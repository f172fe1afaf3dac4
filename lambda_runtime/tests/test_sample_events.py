"""Every sample event in events/, answered by its function in the Lambda runtime as the in-process handler answers it.

The function is the event file's prefix (``status-running.json`` -> StatusFunction); the execution inputs
(``run-job*``) belong to the state machines, not to a function. Most answers come from one
``sam local start-lambda`` (a warm container per function); each function also answers one event through a
real ``sam local invoke -e``. Each answer is held to the in-process handler's for the same event against the
same cluster and AWS, and to what the event is for (phase, shape).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.local import LocalJobsync
from jobsync import clock
from lambda_runtime import sam
from lambda_runtime.daemon import Daemon
from lambda_runtime.tests.stack import Stack, stack
from tests.support.kube import PYTORCHJOBS
from tests.support.lambdas import EVENTS, load_event
from tests.unit.test_evaluate_handler import EXPECTED_PHASES, WITH_PROGRESS

EXECUTION_INPUTS = ("run-job-", "run-jobs-")
EVENT_FILES = sorted(p.name for p in EVENTS.glob("*.json") if not p.name.startswith(EXECUTION_INPUTS))


def function_of(event_file: str) -> str:
    return event_file.split("-", 1)[0]


def test_every_function_has_a_sample_event_and_every_event_a_function() -> None:
    assert {function_of(name) for name in EVENT_FILES} == set(sam.FUNCTIONS)
    built = json.dumps(sam.BUILD.joinpath("template.yaml").read_text())
    assert all(logical in built for logical in sam.FUNCTIONS.values())


@pytest.fixture(scope="module")
def served(daemon: Daemon, gateway: str) -> Iterator[tuple[Stack, sam.StartLambda]]:
    with stack(daemon, gateway) as backing, sam.StartLambda(daemon, backing.template, backing.env_vars) as server:
        yield backing, server


def put_job(local: LocalJobsync, ref: dict[str, Any], execution: str | None) -> str:
    """The job ``ref`` names, running, as submit would have made it; its uid."""
    from jobsync.run.manifests import job_labels

    assert local.api is not None
    local.api.delete((*PYTORCHJOBS, ref["namespace"], ref["name"]))
    job = {
        "apiVersion": ref["apiVersion"],
        "kind": ref["kind"],
        "metadata": {
            "name": ref["name"],
            "namespace": ref["namespace"],
            "labels": job_labels(execution) if execution else {},
        },
        "spec": {"pytorchReplicaSpecs": {}},
        "status": {
            "conditions": [
                {"type": "Created", "status": "True", "reason": "PyTorchJobCreated"},
                {"type": "Running", "status": "True", "reason": "PyTorchJobRunning"},
            ]
        },
    }
    return str(local.api.put((*PYTORCHJOBS, ref["namespace"], ref["name"]), job)["metadata"]["uid"])


def prepared(local: LocalJobsync, name: str) -> Any:
    """The sample event, with the job it is about put in the cluster (its uid filled in, as the loop would)."""
    event = load_event(name)
    if name in ("status-running.json", "cleanup-failed.json"):
        event["job"]["uid"] = put_job(local, event["job"], event.get("execution"))
    elif name == "await-running.json":
        state = event["state"]
        state["job"]["uid"] = put_job(local, state["job"], state.get("execution"))
    elif name == "resume-job-ended.json":  # no execution waits for it: an earlier Await's token is gone
        import boto3

        key = {"pk": {"S": f"token#{event['detail']['executionArn']}"}}
        boto3.client("dynamodb").delete_item(TableName=os.environ["JOBSYNC_TABLE_NAME"], Key=key)
    return event


def expected(name: str, answer: Any) -> None:
    """What each sample is for, whoever answers it."""
    assert isinstance(answer, dict) and "errorType" not in answer, answer
    function = function_of(name)
    if function == "evaluate":
        assert answer["phase"] == EXPECTED_PHASES[name]
        expected_keys = {"phase", "terminal", "reason", "message", "since", "kind"}
        if name in WITH_PROGRESS:  # only the kinds whose status reports it
            assert isinstance(answer.get("progress"), dict) and answer["progress"], answer
            expected_keys.add("progress")
        assert set(answer) == expected_keys
    elif function == "submit":
        assert answer["phase"] == "PENDING" and answer["polls"] == 0 and answer["waitSeconds"] > 0
        assert answer["job"]["uid"]
    elif function == "status":
        assert answer["phase"] == "RUNNING" and answer["reason"] == "PyTorchJobRunning" and answer["waitSeconds"] > 0
    elif function == "cleanup":
        assert answer["deleted"] is True and answer["job"]["uid"]
    elif function == "await":
        assert answer == {"phase": "RUNNING", "reason": "PyTorchJobRunning", "terminal": False}
    elif function == "resume":
        assert answer["resumed"] is False and answer["why"].startswith("no execution waits"), answer
    elif function == "sweep":
        assert answer["errors"] == answer["resumed"] == answer["failed_starts"] == 0, answer
    elif function == "jobs":
        event = load_event(name)
        assert answer["key"] == f"runs/{event['run']}/jobs.json" and answer["count"] == len(event["jobs"]), answer


# What legitimately differs between two answers to one event: the instant each call was made (the two
# calls are seconds apart), and the uid of a job put again between the two calls.
INSTANT_TOLERANCE_S = 5


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two answers differ, but for job uids and timestamps within INSTANT_TOLERANCE_S of each other."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(set(a) | set(b))
        return [d for key in keys if key != "uid" for d in differences(a.get(key), b.get(key), f"{path}.{key}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, str) and isinstance(b, str) and a != b:
        at, bt = clock.parse(a), clock.parse(b)
        if at is not None and bt is not None and abs(at - bt) <= INSTANT_TOLERANCE_S:
            return []
    return [] if a == b else [f"{path or '.'}: {a!r} != {b!r}"]


@pytest.mark.parametrize("name", [n for n in EVENT_FILES if n != "cleanup-execution-aborted.json"])
def test_start_lambda_answers_as_in_process(served: tuple[Stack, sam.StartLambda], name: str) -> None:
    backing, server = served
    function = function_of(name)
    answer = server.invoke(function, prepared(backing.local, name))
    expected(name, answer.payload)
    in_process = backing.in_process(function, prepared(backing.local, name))
    expected(name, in_process)
    assert differences(answer.payload, in_process) == []


#: The one event each function answers through a real ``sam local invoke -e`` (a container for the call).
INVOKED = {
    "evaluate": "evaluate-pytorchjob-succeeded-index5.json",
    "submit": "submit-inline.json",
    "status": "status-running.json",
    "cleanup": "cleanup-execution-aborted.json",
    "await": "await-running.json",
    "resume": "resume-job-ended.json",
    "sweep": "sweep-schedule.json",
    "jobs": "jobs-prepare.json",
}


def test_sam_local_invoke_covers_every_function() -> None:
    assert set(INVOKED) == set(sam.FUNCTIONS) and all(name in EVENT_FILES for name in INVOKED.values())


@pytest.mark.parametrize("function", [f for f in sam.FUNCTIONS if f != "cleanup"])
def test_sam_local_invoke(
    served: tuple[Stack, sam.StartLambda], daemon: Daemon, tmp_event: Path, function: str
) -> None:
    """cleanup: test_cleanup_aborted.py, on an aborted execution of its own."""
    backing, _ = served
    name = INVOKED[function]
    event = prepared(backing.local, name)
    unchanged = event == load_event(name)
    path = EVENTS / name if unchanged else tmp_event
    if not unchanged:  # the uid of the job put for it, as the loop fills it in
        tmp_event.write_text(json.dumps(event))
    answer = sam.invoke(daemon, function, path, backing.template, backing.env_vars)
    expected(name, answer.payload)
    in_process = backing.in_process(function, prepared(backing.local, name))
    assert differences(answer.payload, in_process) == []
    assert "Invoking app.lambda_handler (python3.11)" in answer.log
