"""Callback mode against the real control plane, with the notifier as the process it is when deployed.

The state machine runs in moto's interpreter on the wall clock, its Lambdas as jobsync-lambda; the
notifier (``python -m jobsync_notifier``, harness.notifier_process) watches the real API server as its
own ServiceAccount with only the Role the chart installs for it, configured as the chart's Deployment, and
puts its events over HTTP on the local bus, whose rule invokes the resume function. The real
training-operator and kwok move the jobs. Covered: a job's end resumes the execution through the
notifier's event; a notifier killed while the job ends, then restarted (its resync on start publishes
the end), or left dead (the safety poll finds it); a job that ended before its token was stored (the
Await's first look resumes at once).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import boto3
import pytest

from e2e.controlplane import ControlPlane
from e2e.tests.jobs import condition, wait_for
from e2e.tests.runs import (
    apply_role,
    execution_arn,
    get_job,
    job_of,
    jobsync_run,
    pod_annotations,
    pytorch_input,
)
from harness.local import LocalJobsync

PLURAL = "pytorchjobs"
CALLBACK = {"JOBSYNC_COMPLETION_MODE": "callback"}
NOTIFIER_ENV = {"POWERTOOLS_LOG_LEVEL": "INFO"}  # its "phase change published" lines, in logs/notifier.log


@pytest.fixture(scope="module", autouse=True)
def lambdas_role(control_plane: ControlPlane) -> None:
    apply_role(control_plane, "PyTorchJob")


def calls(local: LocalJobsync, function: str, arn: str) -> list[Any]:
    """The invocations of ``function`` for the execution ``arn``, in order."""
    assert local.sfn

    def execution(call: Any) -> str | None:
        event = call.event if isinstance(call.event, dict) else {}
        state = event.get("state") if function == "jobsync-await" else event
        detail = event.get("detail") if function == "jobsync-resume" else None
        source = detail if isinstance(detail, dict) else state if isinstance(state, dict) else {}
        return source.get("executionArn") or source.get("execution")

    return [c for c in list(local.sfn.invocations) if c.function_name == function and execution(c) == arn]


def ended(cp: ControlPlane, name: str) -> dict[str, Any] | None:
    """The job's Succeeded condition once the real operator has set it."""
    job = get_job(cp, PLURAL, name)
    return condition(job, "Succeeded") if job else None


def published(local: LocalJobsync, name: str) -> list[str]:
    """The phases the notifier (every run of it) logged as published for the job ``name``."""
    assert local.notifier
    return [
        line["phase"]
        for line in local.notifier.log_lines()
        if line.get("message") == "phase change published" and (line.get("job") or {}).get("name") == name
    ]


def stop_date(local: LocalJobsync, arn: str) -> datetime:
    assert local.sfn
    description = local.sfn.wait(arn, timeout_s=90)
    assert description["status"] == "SUCCEEDED", description.get("cause")
    return description["stopDate"]


def status(arn: str) -> str:
    return str(boto3.client("stepfunctions", region_name="us-east-1").describe_execution(executionArn=arn)["status"])


def parse_time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def await_armed_while_running(local: LocalJobsync, arn: str) -> Callable[[], bool]:
    """Whether an Await stored its token with the job RUNNING: the execution now waits up to the safety poll."""
    return lambda: any((c.result or {}).get("phase") == "RUNNING" for c in calls(local, "jobsync-await", arn))


def test_a_job_that_ends_resumes_its_execution_through_the_notifiers_event(control_plane: ControlPlane) -> None:
    with jobsync_run(control_plane, CALLBACK, notifier=True, notifier_env=NOTIFIER_ENV) as local:
        assert local.notifier and local.notifier.running and local.notifier.pid
        name = job_of(local, "cb-event")
        arn = local.start(pytorch_input(pod_annotations(run_duration="3s"), cleanup="never"), name="cb-event")
        stopped = stop_date(local, arn)
        assert local.sfn
        local.sfn.settle()

        resumed = [c.result for c in calls(local, "jobsync-resume", arn) if c.result]
        assert [r["resumed"] for r in resumed].count(True) == 1, resumed
        # The end came as the event: it woke the execution, and the look it woke (the Await after the wake)
        # saw the job terminal; no Status poll (a wait that timed out) did, nor any Await before the wake.
        (woke,) = [c for c in calls(local, "jobsync-resume", arn) if (c.result or {}).get("resumed")]
        assert all(not (c.result or {}).get("terminal") for c in calls(local, "jobsync-status", arn))
        saw_the_end = [c for c in calls(local, "jobsync-await", arn) if (c.result or {}).get("terminal")]
        assert len(saw_the_end) == 1 and saw_the_end[0].at >= woke.at, (saw_the_end, woke.at)
        assert published(local, name)[-1] == "SUCCEEDED", published(local, name)

        done = ended(control_plane, name)
        assert done is not None
        # lastTransitionTime is whole seconds (truncated): the delay is overstated by up to 1 s.
        delay = (stopped - parse_time(done["lastTransitionTime"])).total_seconds()
        print(f"cb-event: the execution ended {delay:.2f}s after the job's Succeeded lastTransitionTime")
        assert delay < 10, delay


def test_a_notifier_killed_while_the_job_ends_publishes_the_end_when_restarted(control_plane: ControlPlane) -> None:
    """SIGKILL while the job runs; the job ends while nobody watches; the restarted notifier's list sees it."""
    with jobsync_run(control_plane, CALLBACK, notifier=True, notifier_env=NOTIFIER_ENV) as local:
        name = job_of(local, "cb-restart")
        arn = local.start(pytorch_input(pod_annotations(run_duration="5s"), cleanup="never"), name="cb-restart")
        wait_for("an Await armed while the job runs", await_armed_while_running(local, arn), 60, 0.1)
        local.kill_notifier()
        assert local.notifier and not local.notifier.running
        wait_for("the job to succeed while the notifier is down", lambda: ended(control_plane, name), 60, 0.2)
        assert status(arn) == "RUNNING"  # nothing told the execution

        restarted = time.monotonic()
        local.start_notifier()  # its resync on start: the list shows the job SUCCEEDED
        stop_date(local, arn)
        print(f"cb-restart: resumed {time.monotonic() - restarted:.2f}s after the restart began")
        local.sfn.settle()

        resumed = [c.result for c in calls(local, "jobsync-resume", arn) if c.result]
        assert [r["resumed"] for r in resumed] == [True], resumed
        assert all(not (c.result or {}).get("terminal") for c in calls(local, "jobsync-status", arn))
        assert published(local, name)[-1] == "SUCCEEDED"


def test_with_the_notifier_dead_the_safety_poll_finds_the_end(control_plane: ControlPlane) -> None:
    env = {**CALLBACK, "JOBSYNC_SAFETY_POLL_SECONDS": "5"}
    with jobsync_run(control_plane, env, notifier=True, notifier_env=NOTIFIER_ENV) as local:
        name = job_of(local, "cb-safety")
        arn = local.start(pytorch_input(pod_annotations(run_duration="3s"), cleanup="never"), name="cb-safety")
        wait_for("an Await armed while the job runs", await_armed_while_running(local, arn), 60, 0.1)
        local.kill_notifier()  # and never started again
        stopped = stop_date(local, arn)

        assert local.sfn
        assert calls(local, "jobsync-resume", arn) == []
        statuses = [c.result for c in calls(local, "jobsync-status", arn) if c.result]
        assert statuses and statuses[-1]["phase"] == "SUCCEEDED", statuses
        # Every wait while it ran was the safety poll's.
        armed = [c.event["state"] for c in calls(local, "jobsync-await", arn)]
        running = [state for state in armed if state["phase"] == "RUNNING"]
        assert running and all(state["waitSeconds"] <= 5 for state in running), running
        done = ended(control_plane, name)
        assert done is not None
        delay = (stopped - parse_time(done["lastTransitionTime"])).total_seconds()
        print(f"cb-safety: the safety poll ended the execution {delay:.2f}s after the job's end")
        assert delay < 5 + 5, delay  # one safety interval, plus the poll and a loaded machine


def test_a_job_that_ends_before_its_token_is_stored_resumes_at_the_awaits_first_look(
    control_plane: ControlPlane,
) -> None:
    """The Await task starts only once the job has ended and the notifier's event found no token to resume."""
    with jobsync_run(control_plane, CALLBACK, notifier=True, notifier_env=NOTIFIER_ENV) as local:
        assert local.sfn
        execution = "cb-early"
        name = job_of(local, execution)
        arn = execution_arn(local, execution)
        original = local.sfn.handlers["jobsync-await"]
        held: list[float] = []

        def late_await(event: Any, context: Any) -> Any:
            if not held:  # the first Await only: the one right after Submit
                wait_for("the job to end", lambda: ended(control_plane, name), 60, 0.1)
                # Answered, not just begun: a resume still running could find the token stored next.
                answered = lambda: [c.result for c in calls(local, "jobsync-resume", arn) if c.result]  # noqa: E731
                wait_for("the notifier's event to find no token", answered, 30, 0.05)
                held.append(time.monotonic())
            return original(event, context)

        local.sfn.handlers["jobsync-await"] = late_await
        assert local.start(pytorch_input(pod_annotations(run_duration="1s"), cleanup="never"), name=execution) == arn
        stop_date(local, arn)
        print(f"cb-early: the execution ended {time.monotonic() - held[0]:.2f}s after its Await began")
        local.sfn.settle()

        awaits = calls(local, "jobsync-await", arn)
        assert len(awaits) == 1, awaits
        # Its SendTaskSuccess ended the task before the function returned: the answer is recorded just after.
        answer = wait_for("the Await function's answer", lambda: awaits[0].result, 10, 0.05)
        assert answer == {"phase": "SUCCEEDED", "reason": "PyTorchJobSucceeded", "terminal": True}, answer
        assert calls(local, "jobsync-status", arn) == []  # no poll: the first look had the verdict
        resumes = [c.result for c in calls(local, "jobsync-resume", arn) if c.result]
        assert resumes and not any(r["resumed"] for r in resumes), resumes
        assert all("no execution waits" in r["why"] for r in resumes), resumes
        assert "SUCCEEDED" in published(local, name)
