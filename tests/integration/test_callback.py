"""Callback mode through the real state machine: the notifier's event resumes the execution.

The notifier runs on its own threads against the local Kubernetes API and
publishes to moto's EventBridge; the stack's rule invokes the resume Lambda
(harness hook), which hands the loop state to SendTaskSuccess. Time is virtual;
a callback wait moves it on in steps while no answer comes.
"""

from __future__ import annotations

import itertools
import json

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


@pytest.mark.parametrize("copies", [2])
def test_a_second_event_for_an_ended_execution_changes_nothing(copies):
    with LocalJobsync("success", {"pending_s": 60, "run_s": 1800}, env=CALLBACK) as local:
        result = local.run(load_event("run-job-input.json"), name="callback-duplicate", timeout_s=120)
        assert result.status == "SUCCEEDED"
        local.stop_notifier()
        local.start_notifier()  # a restart publishes the ended job's phase again
        for thread in local.sfn.async_invocations:
            thread.join(10)
        outcomes = [c.result for c in calls(local, "jobsync-resume") if c.result]
    assert [o["resumed"] for o in outcomes].count(True) == 1
    assert len(outcomes) >= copies
    assert all("no execution waits" in o["why"] for o in outcomes if not o["resumed"])


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
