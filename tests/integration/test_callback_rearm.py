"""Callback mode's token store under a race: the wait re-arms while a Resume polls.

The real state machine, the real Await and Resume handlers and the real
``TokenStore`` on moto's DynamoDB, the notifier as its own process. A stale
terminal event reaches Resume while the job runs; Resume reads the token, and
its poll's GET is held until the Await task has timed out, Status has polled
and a new Await has stored a new token. Resume then writes its loop state back.
When the job really ends, the notifier's event must still resume the
execution, not leave it waiting for its safety poll an hour later.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import boto3

from harness.local import EVENT_BUS, TABLE, LocalJobsync
from jobsync import clock as jobsync_clock
from tests.support.lambdas import QUIET, load_event

SAFETY = 3600
CALLBACK = {**QUIET, "JOBSYNC_COMPLETION_MODE": "callback", "JOBSYNC_SAFETY_POLL_SECONDS": str(SAFETY)}
# The job ends about 600 s into the second safety-length wait (armed at 3,721 s): far from its timeout.
TIMINGS = {"pending_s": 60, "run_s": 4260}
JOB = ("kubeflow.org", "v1", "pytorchjobs", "ml-training")


def stored_token(execution: str) -> str | None:
    key = {"pk": {"S": f"token#{execution}"}}
    item = boto3.client("dynamodb").get_item(TableName=TABLE, Key=key, ConsistentRead=True).get("Item")
    return item["token"]["S"] if item else None


def wait_for(condition: Callable[[], Any], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def put_event(detail: dict[str, Any]) -> None:
    entry = {"Source": "jobsync", "DetailType": "Job Phase Changed", "Detail": json.dumps(detail)}
    boto3.client("events").put_events(Entries=[{**entry, "EventBusName": EVENT_BUS}])


def test_a_resume_that_polls_while_the_wait_re_arms_keeps_the_new_token_and_the_end_still_resumes():
    with LocalJobsync("success", TIMINGS, env=CALLBACK) as local:
        assert local.sfn and local.api
        sfn = local.sfn
        awaits: list[dict[str, Any]] = []  # each Await's token and wait, once its handler returned
        original_await = sfn.handlers["jobsync-await"]

        def recorded_await(event, context):
            result = original_await(event, context)
            awaits.append({"token": event["taskToken"], "wait": event["state"]["waitSeconds"], "at": local.clock.now()})
            return result

        sfn.handlers["jobsync-await"] = recorded_await
        execution_input = load_event("run-job-input.json")
        arn = local.start(execution_input, name="callback-rearm")
        job = local.job_name(arn, execution_input)

        def safety_waits() -> list[dict[str, Any]]:
            return [a for a in awaits if a["wait"] == SAFETY]

        wait_for(safety_waits, "the first safety-length wait")
        first = safety_waits()[0]["token"]
        assert stored_token(arn) == first

        # Resume's poll GETs the job (nothing else does while the execution waits): hold that one GET
        # until the wait has timed out, Status has polled and Await has stored a new token.
        held, released = threading.Event(), threading.Event()
        take_fault = local.api.take_fault

        def hold_one_get(method: str, path: str):
            if method == "GET" and path.endswith(f"/pytorchjobs/{job}") and not held.is_set():
                held.set()
                released.wait(60)
            return take_fault(method, path)

        local.api.take_fault = hold_one_get
        uid = local.api.get((*JOB, job))["metadata"]["uid"]
        ref = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "ml-training", "name": job}
        put_event({"job": {**ref, "uid": uid}, "executionArn": arn, "phase": "SUCCEEDED", "terminal": True})
        wait_for(held.is_set, "Resume's GET")
        wait_for(lambda: len(safety_waits()) >= 2, "the wait to re-arm")
        second = safety_waits()[1]
        assert second["token"] != first and stored_token(arn) == second["token"]
        sfn.callback_step_seconds = 5.0  # finer virtual steps from here: the notifier has time to react
        released.set()
        wait_for(lambda: any(c.function_name == "jobsync-resume" and c.result for c in sfn.invocations), "Resume")
        (stale,) = [c.result for c in sfn.invocations if c.function_name == "jobsync-resume"]
        assert not stale["resumed"] and "stale" in stale["why"] and "re-armed" in stale["why"], stale
        assert stored_token(arn) == second["token"], "Resume wrote the old token back over the re-armed wait's"

        description = sfn.wait(arn, timeout_s=120)
        for thread in sfn.async_invocations:
            thread.join(10)
        assert description["status"] == "SUCCEEDED", description
        outcomes = [c.result for c in sfn.invocations if c.function_name == "jobsync-resume"]
        assert [o["resumed"] for o in outcomes] == [False, True], outcomes
        # The event ended the wait: no safety poll after the re-arm, and the end long before it was due.
        assert [c.at for c in sfn.invocations if c.function_name == "jobsync-status" and c.at > second["at"]] == []
        finished = jobsync_clock.parse(local.api.get((*JOB, job))["status"]["completionTime"])
        stopped = description["stopDate"].timestamp()
        assert finished and finished <= stopped < second["at"] + SAFETY - 1000, (finished, stopped, second["at"])
