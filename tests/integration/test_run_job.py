"""The real state machine, executed end to end for every scenario.

statemachine/run_job.asl.json runs in moto's interpreter; its tasks call the
real handlers, which reach the local Kubernetes API over HTTP; the operator
simulator moves the job. Each test asserts the execution's verdict, the
phases it went through, and what was left in the cluster.
"""

from __future__ import annotations

import itertools
import json

import pytest

from harness.kubeapi import Fault
from harness.local import LocalJobsync
from jobsync import clock
from tests.harness.test_sfn_harness import REAL_ITERATION
from tests.support.lambdas import QUIET, load_event


def run(scenario, timings=None, **overrides):
    execution_input = {**load_event("run-job-input.json"), **overrides}
    with LocalJobsync(scenario, timings, env=QUIET) as local:
        result = local.run(execution_input, name=f"test-{scenario}")
        return result, local


def phases(result):
    """The distinct phases in the order the polls saw them."""
    seen = []
    for poll in result.polls:
        if not seen or seen[-1] != poll.phase:
            seen.append(poll.phase)
    return seen


def test_success_ends_when_the_job_does_and_keeps_the_job():
    result, _ = run("success", {"pending_s": 90, "run_s": 3600})
    assert result.status == "SUCCEEDED"
    assert phases(result) == ["PENDING", "RUNNING", "SUCCEEDED"]
    out = result.output
    assert out["phase"] == "SUCCEEDED" and out["reason"] == "PyTorchJobSucceeded"
    assert out["polls"] == len(result.polls)
    assert out["deleted"] is False  # cleanup onFailure keeps a successful job
    # The job's own run time (its 90 s pending excluded), noticed within one running_max wait of its end.
    assert out["durationSeconds"] == 3600
    assert 0 <= clock.parse(out["noticedAt"]) - clock.parse(out["finishedAt"]) <= 360
    assert [job["phase"] for job in result.jobs_left] == ["SUCCEEDED"]


def test_failure_reports_the_crash_and_deletes_the_job():
    result, _ = run("failure", {"pending_s": 90, "run_s": 1200})
    assert result.status == "FAILED" and result.error == "JobFailed"
    cause = json.loads(result.cause)
    assert cause["reason"] == "PyTorchJobFailed"
    assert any(d["reason"] == "Error" and d["exitCode"] == 1 for d in cause["diagnostics"])
    assert "RuntimeError: CUDA error: out of memory" in cause["logTail"]
    assert len(cause["logTail"].encode()) <= 4096
    assert cause["deleted"] is True
    assert result.jobs_left == []


def test_restarting_is_running_and_the_job_still_succeeds():
    result, _ = run("restarting", {"pending_s": 60, "restart_at": 600, "restart_s": 600, "run_s": 2400})
    assert result.status == "SUCCEEDED"
    assert "PyTorchJobRestarting" in {p.reason for p in result.polls if p.phase == "RUNNING"}


def test_image_pull_backoff_fails_after_the_grace_with_the_pod_reason():
    result, _ = run("image-pull-backoff")
    assert result.error == "JobFailed"
    cause = json.loads(result.cause)
    assert cause["reason"] in {"ImagePullBackOff", "ErrImagePull"}
    assert "stuck for" in cause["message"]
    assert result.polls[-1].at - result.started_at <= 900 + 120 + 2 * 60  # grace + diagnose delay + two waits
    assert result.jobs_left == []


def test_operator_down_fails_with_a_clear_reason():
    result, _ = run("operator-down")
    assert result.error == "JobFailed"
    assert json.loads(result.cause)["reason"] == "OperatorNotReconciling"


def test_deadline_ends_the_loop_and_cleans_up():
    result, _ = run("success", {"pending_s": 60, "run_s": 10 * 3600}, timeoutSeconds=3 * 3600)
    assert result.error == "JobTimedOut"
    assert result.polls[-1].phase == "TIMED_OUT"
    # Never waits past the deadline: the last poll is at it, not after it.
    assert result.polls[-1].at - result.started_at == pytest.approx(3 * 3600, abs=1)
    assert result.jobs_left == []


@pytest.mark.parametrize(("mode", "left"), [("always", 0), ("never", 1)])
def test_cleanup_setting_is_honoured(mode, left):
    scenario = "success" if mode == "always" else "failure"
    result, _ = run(scenario, {"pending_s": 60, "run_s": 600}, cleanup=mode)
    assert len(result.jobs_left) == left


def test_each_wait_is_what_status_returned():
    with LocalJobsync("success", {"pending_s": 60, "run_s": 1800}, env=QUIET) as local:
        result = local.run(load_event("run-job-input.json"), name="waits")
        asked = [
            call.result["waitSeconds"] for call in local.sfn.invocations if call.function_name != "jobsync-cleanup"
        ]
        assert local.sfn.waits == asked[:-1]  # every wait but the terminal poll's 0
        assert result.polls[1].at - result.polls[0].at == result.polls[0].wait_seconds


@pytest.mark.parametrize(
    "fault",
    [Fault.internal_error(), Fault.unavailable(), Fault.too_many_requests(retry_after=2), Fault.drop()],
    ids=["500", "503", "429", "connection-reset"],
)
def test_transient_api_faults_are_retried_and_the_verdict_stands(fault):
    with LocalJobsync("success", {"pending_s": 60, "run_s": 900}, env=QUIET) as local:
        local.api.inject(fault, method="GET", path_contains="/pytorchjobs/", times=3)
        result = local.run(load_event("run-job-input.json"), name="faulty")
        assert result.status == "SUCCEEDED"
        errors = [c.error["errorType"] for c in local.sfn.invocations if c.error]
        # The client retries a dropped connection once itself, so 1 to 3 failed polls.
        assert set(errors) == {"TransientClusterError"} and 1 <= len(errors) <= 3
        assert len(local.api.objects("kubeflow.org", "v1", "pytorchjobs")) == 1


def test_permanent_forbidden_ends_at_once_with_a_clear_error():
    with LocalJobsync("success", env=QUIET) as local:
        local.api.inject(Fault.forbidden(verb="get"), method="GET", path_contains="/pytorchjobs/", times=100)
        result = local.run(load_event("run-job-input.json"), name="forbidden")
        assert result.status == "FAILED" and result.error == "ClusterAccessDenied"
        assert 'cannot get resource \\"pytorchjobs\\"' in result.cause
        status_calls = [c for c in local.sfn.invocations if c.function_name == "jobsync-status"]
        assert len(status_calls) == 1  # not retried, no loop
        # A jobsync error says nothing of the job: under the default onFailure the Catch leaves it alone.
        assert [j["phase"] for j in local.jobs_left()] == ["PENDING"]


def test_rejected_input_fails_submit_and_creates_nothing():
    bad = load_event("run-job-input.json")
    bad["job"]["metadata"]["namespace"] = "kube-system"
    with LocalJobsync("success", env=QUIET) as local:
        result = local.run(bad, name="rejected")
        assert result.status == "FAILED" and result.error == "InvalidInput"
        assert "job.metadata.namespace" in result.cause
        assert local.api.objects("kubeflow.org", "v1", "pytorchjobs") == []


def test_a_typo_in_the_spec_is_rejected_by_strict_validation():
    bad = load_event("run-job-input.json")
    bad["job"]["spec"]["pytorchReplicaSpecs"]["Master"]["replicass"] = 1
    with LocalJobsync("success", env=QUIET) as local:
        result = local.run(bad, name="typo")
        assert result.error == "InvalidInput"
        assert "replicass" in result.cause
        assert local.api.objects("kubeflow.org", "v1", "pytorchjobs") == []


def test_one_poll_costs_nine_history_events():
    with LocalJobsync("success", {"pending_s": 60, "run_s": 1800}, env=QUIET) as local:
        result = local.run(load_event("run-job-input.json"), name="history")
        types = [event["type"] for event in local.sfn.history(result.execution_arn)]
    starts = [i for i, t in enumerate(types) if t == "WaitStateEntered"]
    iterations = [types[a:b] for a, b in itertools.pairwise(starts)]
    assert iterations and all(it == REAL_ITERATION for it in iterations)
    # The whole execution: 9 per poll plus a fixed number for Submit, Cleanup and the end.
    fixed = len(types) - 9 * len(starts)
    assert fixed == 20  # 10 before the first Wait (CheckInput 2); Cleanup 5, Outcome 2, Succeed 2, ExecutionSucceeded 1


WATCH = {**QUIET, "JOBSYNC_WATCH_SECONDS": "600"}


def test_watch_mode_notices_the_end_at_once_with_few_polls():
    with LocalJobsync("success", {"pending_s": 90, "run_s": 3600}, env=WATCH) as local:
        result = local.run(load_event("run-job-input.json"), name="watch")
        verbs = [(r.method, r.verb) for r in local.api.requests]
    assert result.status == "SUCCEEDED"
    # The watch returns when the phase changes: the job ended at 90 + 3600 s.
    assert result.output["durationSeconds"] == 3600
    noticed = clock.parse(result.output["noticedAt"]) - clock.parse(result.output["finishedAt"])
    assert noticed == pytest.approx(0, abs=5)
    assert len(result.polls) <= 3690 / 600 + 3
    assert all(poll.wait_seconds == 0 for poll in result.polls)  # the watch did the waiting
    assert ("GET", "watch") in verbs


def test_watch_mode_still_ends_at_the_deadline():
    with LocalJobsync("success", {"pending_s": 60, "run_s": 10 * 3600}, env=WATCH) as local:
        result = local.run({**load_event("run-job-input.json"), "timeoutSeconds": 3600}, name="watch-deadline")
    assert result.error == "JobTimedOut"
    assert result.polls[-1].at - result.started_at <= 3600
    assert json.loads(result.cause)["reason"] == "DeadlineExceeded"
