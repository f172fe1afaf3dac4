"""RunJobs at its documented limits, through the real parent and child state machines in the local run.

The largest run given inline (INLINE_JOBS jobs, each with a 4 KB result and a 4 KB context) must fit
Step Functions' 256 KB state payload, its outcomes in the output, and a failed one its 32,768-character
Cause; a refused input must start nothing and name its field; a child that ends in a shape AWS produces
(stopped by hand without a Cause, a Cause cut to 32,768 characters that is no longer JSON) must still give
an outcome. Runs of up to MAX_JOBS, their jobs and outcomes in S3: tests/integration/test_run_jobs_scale.py.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.local import LocalJobsync, RunResult
from tests.support.lambdas import QUIET, load_event

ROOT = Path(__file__).resolve().parents[2]
MAX_JOBS = 1000  # README "Several jobs at once"
# The most inline RunJob inputs with a 4 KB context StartExecution's 256 KB takes, with room (README).
INLINE_JOBS = 40
PAYLOAD_LIMIT = 256 * 1024  # a state's input or output, in UTF-8 bytes
CAUSE_LIMIT = 32_768  # characters


def aws_size(value: Any) -> int:
    """Bytes of ``value`` as Step Functions counts a payload: compact JSON in UTF-8."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def padded(template: dict[str, Any], field: str, size: int) -> dict[str, Any]:
    """``template`` with ``field`` a string that brings it to exactly ``size`` bytes of compact JSON."""
    value = {**template, field: ""}
    filler = 'ab"'  # with a quote, which JSON escapes (moto counts non-ASCII as \\u escapes, AWS as UTF-8)
    while aws_size(value) < size:
        value[field] += filler[len(value[field]) % len(filler)]
    while aws_size(value) > size:
        value[field] = value[field][:-1]
    while aws_size(value) < size:
        value[field] += "x"
    assert aws_size(value) == size
    return value


def job(index: int, scenario: str = "success", **extra: Any) -> dict[str, Any]:
    """A RunJob input from events/run-jobs-input.json: a short run, named by its index."""
    entry = copy.deepcopy(load_event("run-jobs-input.json")["jobs"][0])
    meta = entry["job"]["metadata"]
    meta["name"] = f"j{index}"
    meta["annotations"] = {
        "jobsync.local/scenario": scenario,
        "jobsync.local/timings": json.dumps({"pending_s": 10, "run_s": 60}),
        **extra.pop("annotations", {}),
    }
    return {**entry, **extra}


def run(
    execution_input: Any, timeout_s: float = 300, template_dir: Path | None = None, **hooks: Any
) -> tuple[RunResult, list[dict], list[dict]]:
    """Run RunJobs to its end, each of ``hooks`` wrapping the handler it names; its result, its children's
    descriptions and its history."""
    dirs = (template_dir,) if template_dir else ()
    with LocalJobsync(env=QUIET, execution_events=True, template_dirs=dirs) as local:
        assert local.sfn
        for name, wrap in hooks.items():
            local.sfn.handlers[name] = wrap(local, local.sfn.handlers[name])
        with contextlib.redirect_stdout(io.StringIO()):
            result = local.run_jobs(execution_input, timeout_s=timeout_s)
        history = local.sfn.history(result.execution_arn)
        children = [local.sfn.wait(arn) for arn in local.children(result.execution_arn)]
    return result, children, history


def payloads(history: list[dict]) -> list[tuple[str, int]]:
    """(event type, bytes) of every state input and output in an execution's history."""
    sized = []
    for event in history:
        for details in event.values():
            if isinstance(details, dict):
                for key in ("input", "output"):
                    if isinstance(details.get(key), str):
                        sized.append((event["type"], aws_size(json.loads(details[key]))))
    return sized


# ----------------------------------------------------------------------------- the largest run


def test_the_largest_run_fits_with_every_jobs_4kb_result_and_4kb_context(tmp_path):
    # As many inline jobs with 4 KB contexts fit StartExecution's own 256 KB limit, with room for larger manifests.
    inline = [
        {**job(i), "context": padded({"pipelineRun": f"nightly-{i}"}, "commit", 4096)} for i in range(INLINE_JOBS)
    ]
    assert aws_size({"jobs": inline, "failFast": False}) <= 0.85 * PAYLOAD_LIMIT
    # The run itself: what each job's container writes (the test-only annotation) comes from a template, so the
    # input stays what a caller sends. Each message is 4096 bytes, the kubelet's cap, once ${INDEX} is two digits.
    message = padded({"accuracy": 0.9, "modelUri": "s3://models/run/00/model.pt"}, "notes", 4096)
    text = json.dumps(message, separators=(",", ":"))
    manifest = job(0)["job"]
    manifest["metadata"]["name"] = "j${INDEX}"
    manifest["metadata"]["annotations"]["jobsync.local/termination-message"] = text.replace("/00/", "/${INDEX}/")
    (tmp_path / "max-result.yaml").write_text(json.dumps(manifest, ensure_ascii=False))
    template = "s3://jobsync-templates-123456789012/jobsync/templates/max-result.yaml"
    jobs = [
        {
            "jobTemplate": template,
            "parameters": {"INDEX": f"{i:02d}"},
            "context": padded({"pipelineRun": f"nightly-{i}"}, "commit", 4096),
        }
        for i in range(INLINE_JOBS)
    ]
    result, _, history = run({"jobs": jobs, "maxConcurrency": 0, "failFast": False}, template_dir=tmp_path)

    assert result.status == "SUCCEEDED", (result.error, (result.cause or "")[:300])
    outcomes = result.output["jobs"]
    assert [o["index"] for o in outcomes] == list(range(INLINE_JOBS))
    assert all(o["phase"] == "SUCCEEDED" for o in outcomes)
    expected = [json.loads(text.replace("/00/", f"/{i:02d}/")) for i in range(INLINE_JOBS)]
    assert [o["result"] for o in outcomes] == expected  # each result, once
    assert all(aws_size(o["result"]) == 4096 for o in outcomes)
    largest = max(payloads(history), key=lambda sized: sized[1])
    assert largest[1] <= PAYLOAD_LIMIT, largest
    assert aws_size(result.output) <= PAYLOAD_LIMIT


def test_a_failed_run_of_the_largest_inline_size_names_every_job_within_a_cause():
    jobs = [job(i, scenario="failure" if i % 2 else "success") for i in range(INLINE_JOBS)]
    result, _, _ = run({"jobs": jobs})
    assert (result.status, result.error) == ("FAILED", "JobsFailed")
    assert len(result.cause) <= CAUSE_LIMIT
    cause = json.loads(result.cause)
    assert cause["summary"]["total"] == INLINE_JOBS and cause["summary"]["failed"] == INLINE_JOBS // 2
    assert [j["phase"] for j in cause["jobs"]] == ["SUCCEEDED", "FAILED"] * (INLINE_JOBS // 2)


def test_a_valid_input_with_every_option_absent_runs():
    result, _, _ = run({"jobs": [job(0)]})
    assert result.status == "SUCCEEDED" and result.output["summary"]["succeeded"] == 1


# ----------------------------------------------------------------------------- children in AWS's shapes


def stop_by_hand(index: int, **stop: Any):
    """Wrap the status handler: on job ``index``'s first poll, stop its execution as a person would."""

    def wrap(local: LocalJobsync, handler: Any) -> Any:
        def status(event: Any, context: Any) -> Any:
            if isinstance(event, dict) and event.get("job", {}).get("name", "").startswith(f"j{index}-"):
                assert local.sfn
                local.sfn.stop_if_running(event["execution"], **stop)
            return handler(event, context)

        return status

    return wrap


@pytest.mark.parametrize("fail_fast", [False, True], ids=["all-run", "fail-fast"])
def test_a_child_stopped_by_hand_without_a_cause_is_an_aborted_outcome(fail_fast):
    jobs = [job(0), job(1)]
    result, children, _ = run({"jobs": jobs, "failFast": fail_fast}, **{"jobsync-status": stop_by_hand(1)})
    assert result.error != "States.QueryEvaluationError", result.cause
    [by_hand] = [c for c in children if json.loads(c["input"])["job"]["metadata"]["name"] == "j1"]
    assert by_hand["status"] == "ABORTED" and "cause" not in by_hand  # the shape AWS records: no Cause
    stopped = [by_hand]
    if fail_fast:
        assert result.status == "FAILED" and result.error == "ExecutionAborted"
        assert stopped[0]["executionArn"] in result.cause and "ABORTED" in result.cause
    else:
        assert (result.status, result.error) == ("FAILED", "JobsFailed")
        outcome = json.loads(result.cause)["jobs"][1]
        assert (outcome["phase"], outcome["executionArn"]) == ("ABORTED", stopped[0]["executionArn"])
        assert json.loads(result.cause)["summary"]["stopped"] == 1


LONG_CAUSE_CHILD = {
    "QueryLanguage": "JSONata",
    "StartAt": "Wait",
    "States": {
        # One after the other: with failFast the first failure (at 60 s) stops the second child (due at 3,600 s).
        # The stop goes through the Map Run and the parent's Catch while the run's clock moves on: an hour apart
        # leaves it 118 clock steps, where a minute left it two and a loaded machine let the second fail too.
        "Wait": {"Type": "Wait", "Seconds": "{% $states.input.n = 1 ? 60 : 3600 %}", "Next": "Fail"},
        "Fail": {"Type": "Fail", "Error": "JobFailed", "Cause": "{% $pad('{not json', 32768, '.') %}"},
    },
}


@pytest.mark.parametrize("fail_fast", [False, True], ids=["all-run", "fail-fast"])
def test_a_child_cause_of_32768_characters_that_is_not_json_is_an_outcome(fail_fast):
    with LocalJobsync(env=QUIET, execution_events=True) as local:
        child = local.add_state_machine(json.dumps(LONG_CAUSE_CHILD), "long-cause")
        definition = (ROOT / "statemachine" / "run_jobs.asl.json").read_text()
        parent = local.add_state_machine(definition, "run-jobs-long", {"RunJobStateMachineArn": child})
        with contextlib.redirect_stdout(io.StringIO()):
            result = local.run_nested(parent, {"jobs": [{"n": 1}, {"n": 2}], "failFast": fail_fast})
        assert local.sfn
        children = [local.sfn.wait(arn) for arn in local.children(result.execution_arn)]
    assert result.error != "States.QueryEvaluationError", (result.cause or "")[:300]
    assert result.status == "FAILED" and len(result.cause) <= CAUSE_LIMIT
    # The child's description around that Cause is longer still: AWS cuts it, so it is never parsed.
    if fail_fast:
        assert result.error == "ExecutionFailed" and result.cause.startswith('States.TaskFailed: {"ExecutionArn"')
        assert sorted(c["status"] for c in children) == ["ABORTED", "FAILED"]
    else:
        assert result.error == "JobsFailed"
        outcomes = json.loads(result.cause)["jobs"]
        assert [(o["phase"], o["error"]) for o in outcomes] == [("ERROR", "States.TaskFailed")] * 2
        assert all(re.fullmatch(r"arn:aws:states:.*:execution:long-cause:.*", o["executionArn"]) for o in outcomes)


def test_a_lambda_error_with_a_long_message_is_an_outcome():
    def fail_submit(local: LocalJobsync, handler: Any) -> Any:
        def submit(event: Any, context: Any) -> Any:
            raise RuntimeError("x" * 40_000)

        return submit

    result, _, _ = run({"jobs": [job(0), job(1)]}, **{"jobsync-submit": fail_submit})
    assert (result.status, result.error) == ("FAILED", "JobsFailed"), (result.cause or "")[:300]
    outcomes = json.loads(result.cause)["jobs"]
    # The child's Cause holds the message, so its description is over 32,768 characters: on AWS cut, never parsed.
    assert [(o["phase"], o["error"]) for o in outcomes] == [("ERROR", "States.TaskFailed")] * 2
    assert all(":execution:" in o["executionArn"] for o in outcomes)
