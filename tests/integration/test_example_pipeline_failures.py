"""examples/train-evaluate-deploy when a step's child execution ends in a shape AWS produces.

A child stopped by hand has no Cause; a child whose Cause is 32,768 characters has a description longer
than AWS keeps in a Cause, cut and no longer JSON. Either way the pipeline fails with a named error and a
Cause, not with States.QueryEvaluationError from its own Catch.
"""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

from harness.local import LocalJobsync
from tests.integration.test_example_pipeline import EXAMPLE, MODEL, example_input
from tests.support.lambdas import QUIET

CAUSE_LIMIT = 32_768

LONG_CAUSE_CHILD = {
    "QueryLanguage": "JSONata",
    "StartAt": "Fail",
    "States": {"Fail": {"Type": "Fail", "Error": "JobFailed", "Cause": "{% $pad('{not json', 32768, '.') %}"}},
}


def run(execution_input: dict[str, Any], run_job: str | None = None, stop_training: bool = False):
    """The example in the local run; ``run_job`` stands in for RunJob; ``stop_training`` stops the training
    child by hand at its first poll, without a cause."""
    with LocalJobsync(env=QUIET, template_dirs=(EXAMPLE / "templates",)) as local:
        assert local.sfn
        substitutions = {"RunJobStateMachineArn": local.add_state_machine(run_job, "stand-in")} if run_job else {}
        if stop_training:
            status = local.sfn.handlers["jobsync-status"]

            def stopping(event: Any, context: Any) -> Any:
                assert local.sfn
                local.sfn.stop_if_running(event["execution"])
                return status(event, context)

            local.sfn.handlers["jobsync-status"] = stopping
        arn = local.add_state_machine((EXAMPLE / "pipeline.asl.json").read_text(), "pipeline", substitutions)
        with contextlib.redirect_stdout(io.StringIO()):
            result = local.run_nested(arn, execution_input)
        children = [local.sfn.wait(child) for child in local.children(result.execution_arn)]
    return result, children


def test_a_training_stopped_by_hand_without_a_cause_fails_the_pipeline_by_name():
    result, children = run(example_input({"accuracy": 0.97, "modelUri": MODEL}), stop_training=True)
    assert [c["status"] for c in children] == ["ABORTED"] and "cause" not in children[0]
    assert (result.status, result.error) == ("FAILED", "ExecutionAborted"), result.cause
    assert children[0]["executionArn"] in result.cause and "ABORTED" in result.cause


def test_a_training_cause_of_32768_characters_that_is_not_json_fails_the_pipeline_by_name():
    result, children = run(example_input(None), run_job=json.dumps(LONG_CAUSE_CHILD))
    assert [c["status"] for c in children] == ["FAILED"]
    assert (result.status, result.error) == ("FAILED", "ExecutionFailed"), (result.cause or "")[:300]
    assert result.cause.startswith('States.TaskFailed: {"ExecutionArn"') and len(result.cause) <= CAUSE_LIMIT
