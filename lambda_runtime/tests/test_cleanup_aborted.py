"""events/cleanup-execution-aborted.json through ``sam local invoke``, on the execution it names, run and aborted.

In a module of its own: each answer needs a LocalJobsync of its own (the execution's name is the event's), and
only one may be active at a time.
"""

from __future__ import annotations

import json
from typing import Any

from harness.local import LocalJobsync
from lambda_runtime import sam
from lambda_runtime.daemon import Daemon
from lambda_runtime.tests.stack import stack
from lambda_runtime.tests.test_sample_events import differences, expected
from tests.support.kube import PYTORCHJOBS
from tests.support.lambdas import EVENTS, QUIET, load_event

NAME = "cleanup-execution-aborted.json"


def aborted(local: LocalJobsync) -> dict[str, Any]:
    """The execution the event is about, run for real and stopped mid-run (as tests/integration/test_events.py
    does); the event."""
    event = load_event(NAME)
    detail = event["detail"]
    assert local.sfn is not None and local._state_machine_arn == detail["stateMachineArn"]
    t0 = local.clock.now()
    local.clock.on_advance(lambda now: now - t0 >= 900 and local.sfn.stop_if_running(detail["executionArn"]))
    arn = local.start(json.loads(detail["input"]), name=detail["name"])
    assert local.sfn.wait(arn)["status"] == "ABORTED"
    return event


def test_sam_local_invoke_cleanup_of_an_aborted_execution(daemon: Daemon, gateway: str) -> None:
    """The cleanup function asks Step Functions (moto, through its endpoint) whether the execution was aborted
    and reads its job's uid from the execution's history, then deletes that job. Once in a container, once
    in-process, each on an execution of its own by the same name."""
    answers = []
    for in_container in (True, False):
        with LocalJobsync("success", {"pending_s": 30, "run_s": 6 * 3600}, env=QUIET) as local:
            event = aborted(local)
            assert local.api is not None
            (job,) = local.api.objects(*PYTORCHJOBS)
            with stack(daemon, gateway, local) as backing:
                if in_container:
                    answer = sam.invoke(daemon, "cleanup", EVENTS / NAME, backing.template, backing.env_vars).payload
                else:
                    answer = backing.in_process("cleanup", event)
            expected(NAME, answer)
            assert answer["job"]["uid"] == job["metadata"]["uid"]
            assert local.api.objects(*PYTORCHJOBS) == []
            answers.append(answer)
    assert differences(answers[0], answers[1]) == []
