"""Callback mode through the real state machine: the notifier's event resumes the execution.

The notifier runs as its own process (``python -m jobsync_notifier``, as deployed)
against the local Kubernetes API over HTTP and publishes over HTTP to moto's
EventBridge in this process; the stack's rule invokes the resume Lambda (harness
hook), which hands the loop state to SendTaskSuccess. Time is virtual; a callback
wait moves it on in steps while no answer comes.
"""

from __future__ import annotations

import itertools
import json
import os
import time

import boto3
import pytest

from harness.local import LocalJobsync
from jobsync import clock as jobsync_clock
from tests.support.lambdas import QUIET, load_event

CALLBACK = {**QUIET, "JOBSYNC_COMPLETION_MODE": "callback"}
FOUR_HOURS = {"pending_s": 60, "run_s": 4 * 3600}  # the input's deadline is 6 h


def calls(local: LocalJobsync, function: str) -> list:
    assert local.sfn
    return [c for c in local.sfn.invocations if c.function_name == function]


def history_events(local: LocalJobsync, arn: str) -> int:
    assert local.sfn
    return len(local.sfn.history(arn))


def test_a_four_hour_job_resumes_on_its_event_in_a_few_transitions():
    with LocalJobsync("success", FOUR_HOURS, env=CALLBACK) as local:
        result = local.run(load_event("run-job-input.json"), name="callback-success", timeout_s=120)
        assert result.status == "SUCCEEDED", result.cause
        assert result.output["phase"] == "SUCCEEDED"
        resumed = [c.result for c in calls(local, "jobsync-resume") if c.result and c.result["resumed"]]
        assert len(resumed) == 1
        # Polls while the job starts (the first pod check, then every shortest grace), then one an hour of the run.
        assert len(calls(local, "jobsync-status")) <= 3 + 4
        assert history_events(local, result.execution_arn) < 120  # poll mode: about 9 events a poll, 60+ polls


def test_a_failed_job_resumes_with_the_cause_poll_mode_gives():
    with LocalJobsync("failure", {"pending_s": 60, "run_s": 1800}, env=CALLBACK) as local:
        result = local.run(load_event("run-job-input.json"), name="callback-failure", timeout_s=120)
    assert (result.status, result.error) == ("FAILED", "JobFailed")
    cause = json.loads(result.cause)
    assert cause["reason"] == "PyTorchJobFailed" and cause["diagnostics"] and cause["logTail"]


def test_with_the_notifier_dead_the_safety_poll_finds_the_end():
    env = {**CALLBACK, "JOBSYNC_SAFETY_POLL_SECONDS": "3600"}
    with LocalJobsync("success", {"pending_s": 60, "run_s": 3 * 3600}, env=env, notifier=False) as local:
        result = local.run(load_event("run-job-input.json"), name="callback-dead-notifier", timeout_s=120)
        assert result.status == "SUCCEEDED"
        assert calls(local, "jobsync-resume") == []
        running = [p for p in result.polls if p.phase in ("RUNNING", "SUCCEEDED")]
        # One look an hour: a dead notifier costs at most one safety interval of delay.
        assert 3 <= len(running) <= 5
        waits = [p.wait_seconds for p in result.polls if p.phase == "RUNNING"]
        assert waits and all(w <= 3600 for w in waits)


@pytest.mark.parametrize("copies", [2, 3])
def test_a_second_event_for_an_ended_execution_changes_nothing(copies):
    """EventBridge delivers at least once: the same event again (its rule invoking Resume) wakes nothing.

    (A notifier's restart no longer republishes an end whose execution no longer waits: test_notifier_scale.)
    """
    with LocalJobsync("success", {"pending_s": 60, "run_s": 1800}, env=CALLBACK) as local:
        result = local.run(load_event("run-job-input.json"), name="callback-duplicate", timeout_s=120)
        assert result.status == "SUCCEEDED" and local.sfn is not None
        (woke,) = [c for c in calls(local, "jobsync-resume") if (c.result or {}).get("resumed")]
        arn = boto3.client("lambda").get_function(FunctionName="jobsync-resume")["Configuration"]["FunctionArn"]
        for _ in range(copies - 1):
            local.sfn.invoke_async(arn, woke.event).join(10)
        outcomes = [c.result for c in calls(local, "jobsync-resume") if c.result]
    assert [o["resumed"] for o in outcomes].count(True) == 1
    assert len(outcomes) >= copies
    assert all("no execution waits" in o["why"] for o in outcomes if not o["resumed"])


def test_the_notifier_is_a_process_of_its_own_configured_as_deployed_and_gone_after_the_run():
    with LocalJobsync("success", {"pending_s": 60, "run_s": 1800}, env=CALLBACK) as local:
        notifier = local.notifier
        assert notifier and notifier.running and notifier.pid != os.getpid()
        assert os.readlink(f"/proc/{notifier.pid}/exe") == os.readlink(f"/proc/{os.getpid()}/exe")
        env = notifier.env
        assert env["JOBSYNC_CLUSTER_MODE"] == "url" and env["JOBSYNC_KUBE_URL"] == local.api.url
        assert env["JOBSYNC_EVENT_BUS_NAME"] == "jobsync-jobs" and env["JOBSYNC_NAMESPACE"] == "ml-training"
        assert env["AWS_ENDPOINT_URL_EVENTBRIDGE"].startswith("http://127.0.0.1:")
        assert env["AWS_ACCESS_KEY_ID"] == "testing" and "AWS_ENDPOINT_URL" not in env
        status, ready = notifier.health("/readyz")  # its Deployment's readiness probe
        assert status == 200 and ready["ready"] and ready["kinds"]["PyTorchJob"]["synced"], ready
        result = local.run(load_event("run-job-input.json"), name="callback-process", timeout_s=120)
        assert result.status == "SUCCEEDED"
        pid = notifier.pid
    assert not notifier.running
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # ended and reaped: no orphan


def test_a_failing_run_leaves_no_notifier_behind():
    with pytest.raises(RuntimeError, match="a test fails here"), LocalJobsync(env=CALLBACK) as local:
        pid = local.notifier.pid
        raise RuntimeError("a test fails here")
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_the_jobs_end_reaches_the_execution_as_the_notifiers_event():
    """make demo MODE=callback: the simulator's write of the job's end wakes the execution through the notifier's
    event, which the Resume function turns into the wake. How long that takes is a figure, not a verdict: the
    benchmark measures it (bench/endtoend.py); here it is only printed (a loaded machine stretched it past 1 s)."""
    with LocalJobsync("success", FOUR_HOURS, env=CALLBACK) as local:
        ended: list[float] = []
        write = local.sim._write

        def recorded(track, job, status, now):
            if status.get("completionTime") and not ended:
                ended.append(time.monotonic())
            write(track, job, status, now)

        local.sim._write = recorded
        result = local.run(load_event("run-job-input.json"), name="callback-wall", timeout_s=120)
        finished = time.monotonic()
        assert result.status == "SUCCEEDED"
        assert [c.result["resumed"] for c in calls(local, "jobsync-resume") if c.result] == [True]
    assert ended, "the simulator never wrote the job's end"
    print(f"the execution ended {finished - ended[0]:.3f}s (wall) after the job's end")


def test_a_job_that_ends_before_its_token_is_stored_resumes_at_the_awaits_first_look():
    """The first Await runs only once the job has ended and the notifier's event has found no token."""
    with LocalJobsync("success", {"pending_s": 60, "run_s": 600}, env=CALLBACK) as local:
        original = local.sfn.handlers["jobsync-await"]
        held: list[bool] = []

        def late_await(event, context):
            if not held:
                held.append(True)
                job = ("kubeflow.org", "v1", "pytorchjobs", "ml-training", event["state"]["job"]["name"])
                deadline = time.monotonic() + 30
                while not local.jobs_left() or local.jobs_left()[0]["phase"] != "SUCCEEDED":
                    assert time.monotonic() < deadline, local.api.get(job)
                    local.clock.advance(30)
                while not calls(local, "jobsync-resume") or calls(local, "jobsync-resume")[0].result is None:
                    assert time.monotonic() < deadline, "the notifier's event never came"
                    time.sleep(0.01)
            return original(event, context)

        local.sfn.handlers["jobsync-await"] = late_await
        result = local.run(load_event("run-job-input.json"), name="callback-early", timeout_s=120)
        assert result.status == "SUCCEEDED", result.cause
        awaits = calls(local, "jobsync-await")
        assert len(awaits) == 1 and awaits[0].result == {
            "phase": "SUCCEEDED",
            "reason": "PyTorchJobSucceeded",
            "terminal": True,
        }
        assert calls(local, "jobsync-status") == []
        outcomes = [c.result for c in calls(local, "jobsync-resume")]
        assert outcomes and not any(o["resumed"] for o in outcomes)
        assert all("no execution waits" in o["why"] for o in outcomes)


def test_the_benchmarks_callback_cost_model_counts_what_the_execution_entered():
    from bench.statemachine import cost_models

    model = cost_models()["callback"]
    with LocalJobsync("success", {"pending_s": 400, "run_s": 2 * 3600}, env=CALLBACK) as local:
        result = local.run(load_event("run-job-input.json"), name="callback-cost", timeout_s=120)
        assert result.status == "SUCCEEDED"
        history = local.sfn.history(result.execution_arn)
        looks = len(calls(local, "jobsync-status")) + 1  # the timed-out Awaits' polls, then the event's resume
        entered = sum(1 for event in history if event["type"].endswith("StateEntered"))
        assert entered == model.transitions(looks) and len(history) == model.events(looks)
        # While PENDING: the first pod check 121 s after submission, then every shortest grace (120 s, jittered).
        submitted = jobsync_clock.parse(result.output["submittedAt"]) or 0.0
        pending = [p.at - submitted for p in result.polls if p.phase == "PENDING"]
        assert pending[0] == 121 and all(120 <= b - a <= 132 for a, b in itertools.pairwise(pending))
        assert len(pending) == 3  # 121, ~241, ~361: the job runs from 400 s on
