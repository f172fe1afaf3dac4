"""A job's result end to end: the leading container's termination message in RunJob's output or Cause.

The real state machine in moto, the real handlers, the local Kubernetes API;
the operator simulator writes the jobsync.local/termination-message
annotation as the Master's terminated.message, as the kubelet would.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from harness.kubeapi import Fault
from harness.local import LocalJobsync
from harness.operator_sim import TERMINATION_MESSAGE_ANNOTATION, TERMINATION_UNCAPPED_ANNOTATION
from jobsync.core.result import MAX_RESULT_BYTES
from tests.support.lambdas import QUIET, load_event

RESULT = {"accuracy": 0.973, "modelUri": "s3://models/mnist/42/model.pt", "epochs": 1}


def job_input(message: str | None, *, master_only: bool = False, uncapped: bool = False) -> dict[str, Any]:
    execution_input = copy.deepcopy(load_event("run-job-input.json"))
    meta = execution_input["job"]["metadata"]
    annotations = meta.setdefault("annotations", {})
    if message is not None:
        annotations[TERMINATION_MESSAGE_ANNOTATION] = message
    if uncapped:
        annotations[TERMINATION_UNCAPPED_ANNOTATION] = "true"
    if master_only:
        del execution_input["job"]["spec"]["pytorchReplicaSpecs"]["Worker"]
    return execution_input


def run(scenario: str, execution_input: dict[str, Any], env: dict[str, str] | None = None, fault=None):
    timings = {"pending_s": 30, "run_s": 1800}
    with LocalJobsync(scenario, timings, env={**QUIET, **(env or {})}) as local:
        if fault is not None:
            assert local.api
            local.api.inject(fault, method="GET", path_contains="/pods", times=100)
        result = local.run(execution_input, name=f"result-{scenario}")
        requests = local.api.requests if local.api else []
        pod_lists = [r for r in requests if (r.verb, r.resource) == ("list", "pods")]
        return result, pod_lists


def test_a_json_termination_message_is_the_outputs_result_at_the_cost_of_one_pod_list():
    result, pod_lists = run("success", job_input(json.dumps(RESULT)))
    assert result.status == "SUCCEEDED"
    assert result.output["result"] == RESULT
    assert len(pod_lists) == 1  # the terminal poll's, and no other


def test_a_job_that_leaves_no_message_has_a_null_result():
    result, _ = run("success", job_input(None))
    assert result.status == "SUCCEEDED"
    assert "result" in result.output and result.output["result"] is None


def test_ten_kilobytes_are_bounded_and_the_run_still_succeeds():
    message = json.dumps({"blob": "x" * 10_000})
    result, _ = run("success", job_input(message, uncapped=True))
    assert result.status == "SUCCEEDED"
    value = result.output["result"]
    assert value["truncated"] is True and value["bytes"] == len(message)
    assert message.startswith(value["text"]) and len(value["text"]) < MAX_RESULT_BYTES


def test_the_kubelets_cap_keeps_the_messages_tail():
    message = "y" * 5000 + "accuracy=0.9"
    result, _ = run("success", job_input(message))
    assert result.output["result"] == ("y" * 5000 + "accuracy=0.9")[-MAX_RESULT_BYTES:]


def test_a_binary_message_is_reported_by_size_and_the_run_still_succeeds():
    message = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"  # as the API serves a PNG header: U+0089, NULs
    result, _ = run("success", job_input(message))
    assert result.status == "SUCCEEDED"
    assert result.output["result"] == {"binary": True, "bytes": len(message.encode())}


def test_a_failed_jobs_result_is_in_the_cause():
    failure = {"error": "loss diverged", "epoch": 7}
    result, pod_lists = run("failure", job_input(json.dumps(failure), master_only=True))
    assert (result.status, result.error) == ("FAILED", "JobFailed")
    cause = json.loads(result.cause)
    assert cause["result"] == failure
    assert "RuntimeError: CUDA error: out of memory" in cause["logTail"]  # the diagnostics are unchanged
    assert len(pod_lists) == 1  # the diagnostics' LIST serves the result too


def test_a_pod_list_error_gives_a_null_result_and_the_verdict_stands():
    result, pod_lists = run("success", job_input(json.dumps(RESULT)), fault=Fault.forbidden(verb="list"))
    assert result.status == "SUCCEEDED" and result.output["phase"] == "SUCCEEDED"
    assert result.output["result"] is None
    assert pod_lists  # it was asked, and refused


@pytest.mark.parametrize("mode", ["watch", "callback"])
def test_every_completion_mode_carries_the_result(mode):
    env = {"JOBSYNC_COMPLETION_MODE": mode} if mode == "callback" else {"JOBSYNC_WATCH_SECONDS": "600"}
    result, _ = run("success", job_input(json.dumps(RESULT)), env=env)
    assert result.status == "SUCCEEDED"
    assert result.output["result"] == RESULT


def test_run_jobs_outcomes_carry_each_jobs_result():
    execution_input = load_event("run-jobs-input.json")
    for index, job in enumerate(execution_input["jobs"]):
        annotations = job["job"]["metadata"]["annotations"]
        annotations["jobsync.local/scenario"] = "success"
        annotations[TERMINATION_MESSAGE_ANNOTATION] = json.dumps({"index": index})
    with LocalJobsync(env=QUIET) as local:
        result = local.run_jobs(execution_input)
        children = {arn: json.loads(local.sfn.wait(arn)["output"]) for arn in local.children(result.execution_arn)}
    assert result.status == "SUCCEEDED"
    outcomes = result.output["jobs"]
    assert [job["result"] for job in outcomes] == [{"index": 0}, {"index": 1}, {"index": 2}]
    # Once per outcome (the 256 KB payload holds 40 of them): the child's own output has it too.
    assert all("output" not in job for job in outcomes)
    assert [children[job["executionArn"]]["result"] for job in outcomes] == [{"index": i} for i in range(3)]
