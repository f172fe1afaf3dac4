"""The execution input's free-form ``context`` is carried unchanged into the output and every failure's Cause."""

from __future__ import annotations

import json

import pytest

from harness.local import LocalJobsync
from jobsync.errors import InvalidInput
from jobsync.run.inputs import MAX_CONTEXT_BYTES, SubmitRequest, parse
from tests.support.lambdas import QUIET, load_event

CONTEXT = {"pipelineRun": "nightly-2026-11-29", "commit": "4b6d92d0e1", "tags": ["vision", 3], "nested": {"a": None}}
ARN = "arn:aws:states:us-east-1:123456789012:execution:jobsync-run-job:nightly"


@pytest.mark.parametrize(("scenario", "error"), [("success", None), ("failure", "JobFailed")])
def test_context_reaches_the_output_and_the_cause_unchanged(scenario, error):
    execution_input = {**load_event("run-job-input.json"), "context": CONTEXT}
    with LocalJobsync(scenario, {"pending_s": 90, "run_s": 1200}, env=QUIET) as local:
        result = local.run(execution_input, name=f"context-{scenario}")
    assert result.error == error
    carried = result.output if error is None else json.loads(result.cause or "{}")
    assert carried["context"] == CONTEXT


def test_without_context_the_output_has_none():
    with LocalJobsync("success", {"pending_s": 90, "run_s": 600}, env=QUIET) as local:
        result = local.run(load_event("run-job-input.json"), name="no-context")
    assert "context" not in result.output


def test_a_context_over_the_limit_is_refused_by_name():
    big = {"notes": "x" * MAX_CONTEXT_BYTES}
    with pytest.raises(InvalidInput, match=rf"context: \d+ bytes of JSON, over the limit of {MAX_CONTEXT_BYTES}"):
        parse(SubmitRequest, {**load_event("run-job-input.json"), "execution": ARN, "context": big})


def test_context_must_be_an_object_and_other_unknown_fields_stay_refused():
    base = {**load_event("run-job-input.json"), "execution": ARN}
    with pytest.raises(InvalidInput, match="context: Input should be a valid dictionary"):
        parse(SubmitRequest, {**base, "context": "run-42"})
    with pytest.raises(InvalidInput, match="pipelineRun: Extra inputs are not permitted"):
        parse(SubmitRequest, {**base, "pipelineRun": "run-42"})
    assert parse(SubmitRequest, {**base, "context": CONTEXT}).context == CONTEXT
