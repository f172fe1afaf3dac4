"""A termination message with a number JSON cannot carry, through whole runs: the result stays strict JSON.

``{"accuracy": 1e999}`` is valid JSON text, but its number is out of a double's
range: Python reads it as Infinity, and writes that back as ``Infinity``, which
Step Functions refuses in a Lambda's Payload and in SendTaskSuccess's output
(the local run refuses both as AWS does: tests/harness/test_sfn_limits.py).
The message is then kept as its text.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from harness.local import LocalJobsync
from harness.operator_sim import TERMINATION_MESSAGE_ANNOTATION
from tests.support.lambdas import QUIET, load_event

MESSAGE = '{"accuracy": 1e999}'
MODES = {
    "poll": QUIET,
    "callback": {**QUIET, "JOBSYNC_COMPLETION_MODE": "callback"},
}


def strict(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def job_input(message: str) -> dict[str, Any]:
    execution_input = copy.deepcopy(load_event("run-job-input.json"))
    execution_input["job"]["metadata"].setdefault("annotations", {})[TERMINATION_MESSAGE_ANNOTATION] = message
    return execution_input


@pytest.mark.parametrize("mode", sorted(MODES))
def test_an_out_of_range_number_in_the_message_ends_succeeded_with_the_message_as_text(mode):
    with LocalJobsync("success", {"pending_s": 30, "run_s": 1800}, env=MODES[mode]) as local:
        result = local.run(job_input(MESSAGE), name=f"strict-{mode}", timeout_s=120)
        assert local.sfn
        description = local.sfn._sfn.describe_execution(executionArn=result.execution_arn)
        answered = [c for c in local.sfn.invocations if c.result is not None]
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    output = strict(description["output"])
    assert output["result"] == MESSAGE
    # Every Lambda answered strict JSON: what the runtime would write for it parses strictly.
    for call in answered:
        strict(json.dumps(call.result))
