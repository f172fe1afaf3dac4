"""The local Step Functions harness: moto's ASL interpreter, in-process handlers, virtual time.

Every definition here is written in the test, small, in JSONata: each test checks one
behaviour of the real service the harness claims to reproduce.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime

import pytest

from harness.clock import VirtualClock, default_start
from harness.sfn import HarnessError, LocalStepFunctions
from jobsync import clock as jobsync_clock

INVOKE = "arn:aws:states:::lambda:invoke"

# What the real service writes for one Wait -> lambda:invoke Task -> Choice pass.
REAL_ITERATION = [
    "WaitStateEntered",
    "WaitStateExited",
    "TaskStateEntered",
    "TaskScheduled",
    "TaskStarted",
    "TaskSucceeded",
    "TaskStateExited",
    "ChoiceStateEntered",
    "ChoiceStateExited",
]


def poll_loop(first_wait: int = 5, timeout_seconds: int | None = None) -> dict:
    """Init -> Wait -> Status -> Phase, looping until Status says SUCCEEDED (the jobsync shape)."""
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Init",
        "States": {
            "Init": {"Type": "Pass", "Assign": {"polls": 0, "waitSeconds": first_wait}, "Next": "Wait"},
            "Wait": {"Type": "Wait", "Seconds": "{% $waitSeconds %}", "Next": "Status"},
            "Status": {
                "Type": "Task",
                "Resource": INVOKE,
                "Arguments": {
                    "FunctionName": "${StatusFunctionArn}",
                    "Payload": "{% $merge([$states.input, {'poll': $polls}]) %}",
                },
                "Assign": {"waitSeconds": "{% $states.result.Payload.waitSeconds %}", "polls": "{% $polls + 1 %}"},
                "Output": "{% $states.result.Payload %}",
                "Next": "Phase",
            },
            "Phase": {
                "Type": "Choice",
                "Choices": [{"Condition": "{% $states.input.phase = 'SUCCEEDED' %}", "Next": "Done"}],
                "Default": "Wait",
            },
            "Done": {"Type": "Succeed", "Output": "{% {'phase': $states.input.phase, 'polls': $polls} %}"},
        },
    }
    if timeout_seconds is not None:
        definition["TimeoutSeconds"] = timeout_seconds
    return definition


def one_task(task_fields: dict, extra_states: dict | None = None) -> dict:
    """A machine with a single lambda:invoke Task named Call (plus any extra states)."""
    task = {
        "Type": "Task",
        "Resource": INVOKE,
        "Arguments": {"FunctionName": "${FunctionArn}", "Payload": "{% $states.input %}"},
        "Output": "{% $states.result.Payload %}",
        "End": True,
    }
    task.update(task_fields)
    return {"QueryLanguage": "JSONata", "StartAt": "Call", "States": {"Call": task, **(extra_states or {})}}


def run(sfn: LocalStepFunctions, definition: dict, name: str = "fn", input: object = None) -> tuple[str, dict]:
    sm = sfn.create_state_machine(definition, f"m-{uuid.uuid4().hex[:8]}", {"FunctionArn": sfn.function_arn(name)})
    arn = sfn.start(sm, input or {})
    return arn, sfn.wait(arn)


def failures(sfn: LocalStepFunctions, arn: str) -> list[dict]:
    return [e["taskFailedEventDetails"] for e in sfn.history(arn) if e["type"] == "TaskFailed"]


def status_handler(waits: Iterable[int], phases: Iterable[str]):
    """A Status stand-in: the i-th call returns the i-th of ``phases`` and, as waitSeconds, of ``waits``."""
    calls: list[dict] = []
    next_wait, next_phase = iter(waits), iter(phases)

    def handler(event, context):
        calls.append({"event": event, "now": jobsync_clock.now(), "context": context})
        returned = {"phase": next(next_phase), "waitSeconds": next(next_wait), "tags": ("a", "b")}
        calls[-1]["returned"] = returned
        return returned

    return handler, calls


# ----------------------------------------------------------------------- the poll loop


def test_poll_loop_waits_exactly_what_status_returned_on_virtual_time():
    waits = [30, 600, 3600, 7200, 0]
    phases = ["PENDING", "RUNNING", "RUNNING", "RUNNING", "SUCCEEDED"]
    handler, calls = status_handler(waits, phases)
    wall = time.monotonic()
    with LocalStepFunctions({"status": handler}) as sfn:
        t0 = sfn.clock.now()
        sm = sfn.create_state_machine(
            poll_loop(first_wait=5), "loop", {"StatusFunctionArn": sfn.function_arn("status")}
        )
        result = sfn.wait(sfn.start(sm, {"job": "train-1"}))
        elapsed_virtual = sfn.clock.now() - t0
        recorded = [(r.state, r.seconds, r.waited) for r in sfn.wait_records]
    wall = time.monotonic() - wall

    assert result["status"] == "SUCCEEDED"
    assert json.loads(result["output"]) == {"phase": "SUCCEEDED", "polls": 5}
    # The first Wait is the initial one; every later one is what the previous Status said.
    assert recorded == [("Wait", s, s) for s in [5, 30, 600, 3600, 7200]]
    assert elapsed_virtual == 5 + 30 + 600 + 3600 + 7200  # over three hours...
    assert wall < 10  # ...in a few wall seconds
    # The handlers read the virtual clock through jobsync.clock.
    assert [c["now"] - t0 for c in calls] == [5, 35, 635, 4235, 11435]
    assert [c["event"]["poll"] for c in calls] == [0, 1, 2, 3, 4]
    assert calls[0]["event"] == {"job": "train-1", "poll": 0}
    # Results and events cross a JSON boundary, as with the real service: no shared objects, no tuples.
    assert calls[1]["event"] == {"phase": "PENDING", "waitSeconds": 30, "tags": ["a", "b"], "poll": 1}
    assert calls[1]["event"] is not calls[0]["returned"]
    assert jobsync_clock.now() == pytest.approx(jobsync_clock.wall(), abs=5)  # the wall clock is back


def test_handler_gets_a_lambda_context_and_the_task_the_invoke_response():
    handler, calls = status_handler([1], ["SUCCEEDED"])
    with LocalStepFunctions({"status": handler}, function_timeout_s=45, memory_mb=512) as sfn:
        _, result = run(sfn, one_task({"Output": "{% $states.result %}"}), "status")
        arn = sfn.function_arn("status")
    assert json.loads(result["output"]) == {
        "ExecutedVersion": "$LATEST",
        "Payload": {"phase": "SUCCEEDED", "waitSeconds": 1, "tags": ["a", "b"]},
        "StatusCode": 200,
    }
    context = calls[0]["context"]
    assert context.function_name == "status"
    assert context.invoked_function_arn == arn == "arn:aws:lambda:us-east-1:123456789012:function:status"
    assert context.memory_limit_in_mb == 512
    assert context.get_remaining_time_in_millis() == 45_000  # no virtual time passed in the handler
    assert context.log_group_name == "/aws/lambda/status"
    assert len(context.aws_request_id) == 36


def test_history_of_one_iteration_has_the_real_services_nine_events():
    handler, _ = status_handler([10, 10, 10], ["RUNNING", "RUNNING", "SUCCEEDED"])
    with LocalStepFunctions({"status": handler}) as sfn:
        sm = sfn.create_state_machine(poll_loop(), "loop", {"StatusFunctionArn": sfn.function_arn("status")})
        arn = sfn.start(sm, {})
        sfn.wait(arn)
        types = [event["type"] for event in sfn.history(arn)]

    assert types[:3] == ["ExecutionStarted", "PassStateEntered", "PassStateExited"]
    assert types[-3:] == ["SucceedStateEntered", "SucceedStateExited", "ExecutionSucceeded"]
    loop = types[3:-3]
    assert len(loop) == 3 * 9
    assert [loop[i : i + 9] for i in range(0, len(loop), 9)] == [REAL_ITERATION] * 3


# ----------------------------------------------------------------------- JSONata


def test_context_object_and_now_run_on_the_virtual_clock():
    start = datetime(2026, 3, 1, 12, 0, tzinfo=UTC).timestamp()
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Hour",
        "States": {
            "Hour": {"Type": "Wait", "Seconds": "{% 1800 * 2 %}", "Next": "Show"},
            "Show": {
                "Type": "Pass",
                "Output": (
                    "{% {'start': $states.context.Execution.StartTime, 'entered': $states.context.State.EnteredTime,"
                    " 'state': $states.context.State.Name, 'name': $states.context.Execution.Name,"
                    " 'id': $states.context.Execution.Id, 'now': $now(), 'millis': $millis()} %}"
                ),
                "End": True,
            },
        },
    }
    with LocalStepFunctions({}, clock=VirtualClock(start=start)) as sfn:
        sm = sfn.create_state_machine(definition, "ctx")
        arn = sfn.start(sm, {}, name="run-1")
        result = sfn.wait(arn)
        event_times = {e["type"]: e["timestamp"] for e in sfn.history(arn)}

    assert json.loads(result["output"]) == {
        "start": "2026-03-01T12:00:00.000Z",
        "entered": "2026-03-01T13:00:00.000Z",
        "state": "Show",
        "name": "run-1",
        "id": arn,
        "now": "2026-03-01T13:00:00.000Z",
        "millis": int((start + 3600) * 1000),
    }
    assert result["startDate"] == datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    assert result["stopDate"] == datetime(2026, 3, 1, 13, 0, tzinfo=UTC)
    assert event_times["WaitStateExited"] == datetime(2026, 3, 1, 13, 0, tzinfo=UTC)


def test_assigned_strings_with_quotes_backslashes_and_unicode_survive():
    tricky = 'Back-off pulling image "repo/img:v1"\nC:\\path 😀 é'
    handler = lambda event, context: {"message": tricky}  # noqa: E731
    definition = one_task(
        {"Assign": {"message": "{% $states.result.Payload.message %}"}, "Next": "Echo", "End": None},
        {"Echo": {"Type": "Pass", "Output": "{% {'message': $message, 'length': $length($message)} %}", "End": True}},
    )
    del definition["States"]["Call"]["End"]
    with LocalStepFunctions({"fn": handler}) as sfn:
        _, result = run(sfn, definition)
    assert json.loads(result["output"]) == {"message": tricky, "length": len(tricky)}


def test_fail_state_takes_error_and_cause_from_jsonata():
    handler = lambda event, context: {"phase": "FAILED", "reason": 'ImagePullBackOff: "no such image"'}  # noqa: E731
    definition = one_task(
        {"Next": "Phase", "End": None},
        {
            "Phase": {
                "Type": "Choice",
                "Choices": [{"Condition": "{% $states.input.phase = 'FAILED' %}", "Next": "JobFailed"}],
                "Default": "Ok",
            },
            "JobFailed": {
                "Type": "Fail",
                "Error": "{% 'Job.' & $states.input.phase %}",
                "Cause": "{% $states.input.reason %}",
            },
            "Ok": {"Type": "Succeed"},
        },
    )
    del definition["States"]["Call"]["End"]
    with LocalStepFunctions({"fn": handler}) as sfn:
        arn, result = run(sfn, definition)
        last = sfn.history(arn)[-1]
    assert result["status"] == "FAILED"
    assert (result["error"], result["cause"]) == ("Job.FAILED", 'ImagePullBackOff: "no such image"')
    assert last["type"] == "ExecutionFailed"


def test_a_jsonata_runtime_error_is_a_query_evaluation_error():
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Bad",
        "States": {"Bad": {"Type": "Pass", "Output": "{% $states.input.n + 'x' %}", "End": True}},
    }
    with LocalStepFunctions({}) as sfn:
        arn = sfn.start(sfn.create_state_machine(definition, "bad"), {"n": 1})
        result = sfn.wait(arn)
        types = [e["type"] for e in sfn.history(arn)]
    assert result["status"] == "FAILED"
    assert result["error"] == "States.QueryEvaluationError"
    assert "An error occurred while executing the state 'Bad'" in result["cause"]
    assert "$states.input.n + 'x'" in result["cause"]
    assert types[-2:] == ["EvaluationFailed", "ExecutionFailed"]


def test_wait_timestamp_from_jsonata_waits_until_that_time():
    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "Until",
        "States": {
            "Until": {
                "Type": "Wait",
                "Timestamp": "{% $fromMillis($toMillis($states.context.Execution.StartTime) + 5400000) %}",
                "End": True,
            }
        },
    }
    with LocalStepFunctions({}) as sfn:
        sfn.wait(sfn.start(sfn.create_state_machine(definition, "until"), {}))
        assert sfn.clock.now() == default_start() + 5400
        assert sfn.waits == [5400]


# ----------------------------------------------------------------------- errors, Retry, Catch


class FlakyError(Exception):
    pass


def test_retry_on_a_handler_exception_backs_off_on_virtual_time():
    attempts: list[float] = []

    def handler(event, context):
        attempts.append(jobsync_clock.now())
        if len(attempts) < 3:
            raise FlakyError(f"attempt {len(attempts)}")
        return {"ok": True}

    definition = one_task(
        {
            "Retry": [{"ErrorEquals": ["FlakyError"], "IntervalSeconds": 3, "BackoffRate": 2, "MaxAttempts": 3}],
            "Output": "{% {'ok': $states.result.Payload.ok, 'retries': $states.context.State.RetryCount} %}",
        }
    )
    with LocalStepFunctions({"fn": handler}) as sfn:
        arn, result = run(sfn, definition)
        failed = failures(sfn, arn)
        assert sfn.retry_sleeps == [3, 6]
        assert sfn.clock.now() - default_start() == 9

    assert result["status"] == "SUCCEEDED"
    assert json.loads(result["output"]) == {"ok": True, "retries": 2}
    assert [a - default_start() for a in attempts] == [0, 3, 9]
    assert [f["error"] for f in failed] == ["FlakyError", "FlakyError"]
    cause = json.loads(failed[0]["cause"])
    assert cause["errorType"] == "FlakyError"
    assert cause["errorMessage"] == "attempt 1"
    assert any("test_sfn_harness.py" in line and "in handler" in line for line in cause["stackTrace"])


def test_retries_exhausted_then_catch_routes_with_error_output():
    calls = []

    def handler(event, context):
        calls.append(event)
        raise ValueError("boom")

    definition = one_task(
        {
            "Retry": [{"ErrorEquals": ["States.TaskFailed"], "IntervalSeconds": 1, "BackoffRate": 1, "MaxAttempts": 2}],
            "Catch": [
                {
                    "ErrorEquals": ["States.ALL"],
                    "Assign": {"failedWith": "{% $states.errorOutput.Error %}"},
                    "Output": "{% $states.errorOutput %}",
                    "Next": "Handled",
                }
            ],
        },
        {
            "Handled": {
                "Type": "Pass",
                "Output": "{% {'error': $states.input.Error, 'cause': $states.input.Cause, 'assigned': $failedWith} %}",
                "End": True,
            }
        },
    )
    with LocalStepFunctions({"fn": handler}) as sfn:
        _, result = run(sfn, definition)
        assert sfn.retry_sleeps == [1, 1]

    assert result["status"] == "SUCCEEDED"
    assert len(calls) == 3
    output = json.loads(result["output"])
    assert output["error"] == output["assigned"] == "ValueError"
    cause = json.loads(output["cause"])
    assert (cause["errorType"], cause["errorMessage"]) == ("ValueError", "boom")
    assert isinstance(cause["stackTrace"], list)


def test_retry_max_delay_caps_backoff_and_full_jitter_is_bounded_and_seeded():
    def always_fails(event, context):
        raise FlakyError("again")

    def retrier(jitter: bool) -> dict:
        rule = {"ErrorEquals": ["States.ALL"], "IntervalSeconds": 10, "BackoffRate": 3, "MaxAttempts": 4}
        rule["MaxDelaySeconds"] = 60
        if jitter:
            rule["JitterStrategy"] = "FULL"
        return one_task({"Retry": [rule]})

    with LocalStepFunctions({"fn": always_fails}) as sfn:
        _, result = run(sfn, retrier(jitter=False))
        assert result["status"] == "FAILED" and result["error"] == "FlakyError"
        assert sfn.retry_sleeps == [10, 30, 60, 60]  # 90 and 270 capped at 60

    jittered = []
    for _ in range(2):
        with LocalStepFunctions({"fn": always_fails}, jitter_seed=7) as sfn:
            run(sfn, retrier(jitter=True))
            jittered.append(list(sfn.retry_sleeps))
            assert sfn.clock.now() - default_start() == pytest.approx(sum(sfn.retry_sleeps))
    assert jittered[0] == jittered[1]
    assert all(0 <= s <= cap for s, cap in zip(jittered[0], [10, 30, 60, 60], strict=True))
    assert jittered[0] != [10, 30, 60, 60]


def test_injected_lambda_service_errors_are_retried_like_the_service():
    handler, calls = status_handler([1], ["SUCCEEDED"])
    definition = one_task(
        {
            "Retry": [
                {
                    "ErrorEquals": ["Lambda.ServiceException", "Lambda.TooManyRequestsException"],
                    "IntervalSeconds": 2,
                    "BackoffRate": 2,
                    "MaxAttempts": 3,
                }
            ]
        }
    )
    with LocalStepFunctions({"fn": handler}) as sfn:
        sfn.inject_lambda_error("fn", "Lambda.ServiceException")
        sfn.inject_lambda_error("fn", "Lambda.TooManyRequestsException")
        arn, result = run(sfn, definition)
        failed = failures(sfn, arn)
        assert sfn.retry_sleeps == [2, 4]
        assert len(sfn.invocations) == 3

    assert result["status"] == "SUCCEEDED"
    assert len(calls) == 1  # the service errors never reached the handler
    assert [f["error"] for f in failed] == ["Lambda.ServiceException", "Lambda.TooManyRequestsException"]
    assert "Service: AWSLambda; Status Code: 500; Error Code: ServiceException" in failed[0]["cause"]
    assert failed[1]["cause"].startswith("Rate Exceeded. (Service: AWSLambda; Status Code: 429;")


def test_an_uncaught_service_error_fails_the_execution():
    handler, _ = status_handler([1], ["SUCCEEDED"])
    with LocalStepFunctions({"fn": handler}) as sfn:
        sfn.inject_lambda_error("fn", "Lambda.TooManyRequestsException", times=2)
        _, first = run(sfn, one_task({}))
        assert first["status"] == "FAILED"
        assert first["error"] == "Lambda.TooManyRequestsException"
        _, second = run(sfn, one_task({}))
        _, third = run(sfn, one_task({}))
    assert (second["status"], third["status"]) == ("FAILED", "SUCCEEDED")  # times=2, then healthy


def test_injected_lambda_timeout_is_sandbox_timedout_and_takes_the_function_timeout():
    handler, calls = status_handler([1, 1], ["SUCCEEDED", "SUCCEEDED"])
    definition = one_task(
        {"Retry": [{"ErrorEquals": ["Sandbox.Timedout"], "IntervalSeconds": 1, "MaxAttempts": 1}]},
    )
    with LocalStepFunctions({"fn": handler}, function_timeout_s=30) as sfn:
        sfn.inject_lambda_timeout("fn")
        arn, result = run(sfn, definition)
        failed = failures(sfn, arn)
        assert sfn.clock.now() - default_start() == 30 + 1

    assert result["status"] == "SUCCEEDED"
    assert len(calls) == 1
    assert failed[0]["error"] == "Sandbox.Timedout"
    cause = json.loads(failed[0]["cause"])
    assert cause["errorType"] == "Sandbox.Timedout"
    assert cause["errorMessage"].endswith("Error: Task timed out after 30.00 seconds")


def test_injected_function_error_after_the_handler_ran():
    handler, calls = status_handler([1], ["SUCCEEDED"])
    with LocalStepFunctions({"fn": handler}) as sfn:
        sfn.inject_lambda_error("fn", "Runtime.ExitError", "exit status 137", call_handler=True)
        _, result = run(sfn, one_task({}))
    assert len(calls) == 1  # the side effect happened, the result was lost
    assert result["status"] == "FAILED"
    assert result["error"] == "Runtime.ExitError"
    assert json.loads(result["cause"])["errorMessage"] == "exit status 137"


def test_unserialisable_result_is_a_runtime_marshal_error():
    with LocalStepFunctions({"fn": lambda event, context: {"at": datetime.now(UTC)}}) as sfn:
        _, result = run(sfn, one_task({}))
    assert (result["status"], result["error"]) == ("FAILED", "Runtime.MarshalError")


def test_an_unknown_function_is_lambda_resource_not_found():
    with LocalStepFunctions({"fn": lambda event, context: {}}) as sfn:
        arn = sfn.function_arn("fn").replace(":fn", ":missing")
        sm = sfn.create_state_machine(one_task({}), "m", {"FunctionArn": arn})
        result = sfn.wait(sfn.start(sm, {}))
    assert (result["status"], result["error"]) == ("FAILED", "Lambda.ResourceNotFoundException")


# ----------------------------------------------------------------------- stopping and timing out


def test_stop_execution_in_the_middle_of_a_wait_aborts_it_there():
    handler, calls = status_handler([600] * 5, ["RUNNING"] * 5)
    clock = VirtualClock(max_step=10)
    started = threading.Event()
    target: dict[str, str] = {}

    with LocalStepFunctions({"status": handler}, clock=clock) as sfn:
        t0 = clock.now()

        def abort_at_105s(now: float) -> None:
            if now - t0 >= 105 and "stopped" not in target:
                started.wait(5)
                target["stopped"] = "yes"
                sfn.stop(target["arn"], error="Cancelled", cause="operator asked")

        clock.on_advance(abort_at_105s)
        sm = sfn.create_state_machine(
            poll_loop(first_wait=5), "loop", {"StatusFunctionArn": sfn.function_arn("status")}
        )
        target["arn"] = sfn.start(sm, {})
        started.set()
        result = sfn.wait(target["arn"])
        events = sfn.history(target["arn"])
        records = [(r.seconds, r.waited) for r in sfn.wait_records]
        elapsed = clock.now() - t0

    assert result["status"] == "ABORTED"
    assert len(calls) == 1
    assert records == [(5, 5), (600, 100)]  # the second Wait stopped 100 s in
    assert elapsed == 105
    types = [e["type"] for e in events]
    last_wait = len(types) - 1 - types[::-1].index("WaitStateEntered")
    assert "WaitStateExited" not in types[last_wait:]  # the Wait never completed
    assert types[-1] == "ExecutionAborted"
    assert events[-1]["executionAbortedEventDetails"] == {"error": "Cancelled", "cause": "operator asked"}


def test_the_stop_execution_api_keeps_its_error_and_cause_and_the_harness_time():
    """StopExecution as a client calls it (``jobsync stop``): the service's ExecutionAborted carries both."""
    import boto3

    # A job that runs on: on a loaded machine the clock may pass many polls before the stop comes, and a
    # stand-in with five answers failed the execution first (one CI run in several).
    handler, _ = status_handler(itertools.repeat(600), itertools.repeat("RUNNING"))
    clock = VirtualClock(max_step=10)
    with LocalStepFunctions({"status": handler}, clock=clock) as sfn:
        sm = sfn.create_state_machine(
            poll_loop(first_wait=5), "loop", {"StatusFunctionArn": sfn.function_arn("status")}
        )
        arn = sfn.start(sm, {})
        client = boto3.client("stepfunctions", region_name="us-east-1")
        while not any(e["type"] == "WaitStateEntered" for e in sfn.history(arn)[4:]):
            time.sleep(0.01)
        answer = client.stop_execution(executionArn=arn, error="jobsync.KeepJob", cause="stopped by hand")
        stopped_at = clock.now()
        result = sfn.wait(arn)
        events = sfn.history(arn)
        with pytest.raises(client.exceptions.ExecutionDoesNotExist):
            client.stop_execution(executionArn=arn.rsplit(":", 1)[0] + ":nope")

    assert result["status"] == "ABORTED"
    assert events[-1]["type"] == "ExecutionAborted"
    assert events[-1]["executionAbortedEventDetails"] == {"error": "jobsync.KeepJob", "cause": "stopped by hand"}
    assert answer["stopDate"].timestamp() == stopped_at  # the harness's clock, not the wall's


def test_execution_timeout_seconds_counts_virtual_time():
    handler, calls = status_handler([600] * 5, ["RUNNING"] * 5)
    with LocalStepFunctions({"status": handler}) as sfn:
        sm = sfn.create_state_machine(
            poll_loop(first_wait=5, timeout_seconds=1000), "loop", {"StatusFunctionArn": sfn.function_arn("status")}
        )
        arn = sfn.start(sm, {})
        result = sfn.wait(arn)
        assert sfn.clock.now() - default_start() == 1000
        assert [(r.seconds, r.waited) for r in sfn.wait_records] == [(5, 5), (600, 600), (600, 395)]
        last = sfn.history(arn)[-1]["type"]
    assert result["status"] == "TIMED_OUT"
    assert len(calls) == 2
    assert last == "ExecutionTimedOut"


# ----------------------------------------------------------------------- the harness itself


def test_a_python_exception_inside_the_interpreter_surfaces_from_wait():
    def broken_simulator(now: float) -> None:
        raise RuntimeError("simulator broke")

    definition = {
        "QueryLanguage": "JSONata",
        "StartAt": "W",
        "States": {"W": {"Type": "Wait", "Seconds": 60, "End": True}},
    }
    with LocalStepFunctions({}) as sfn:
        sfn.clock.on_advance(broken_simulator)
        arn = sfn.start(sfn.create_state_machine(definition, "w"), {})
        with pytest.raises(HarnessError, match="simulator broke"):
            sfn.wait(arn)
        sfn.strict = False
        assert sfn.wait(arn)["error"] == "States.Runtime"


def test_missing_definition_substitutions_are_reported():
    with LocalStepFunctions({"fn": lambda e, c: {}}) as sfn, pytest.raises(HarnessError, match="FunctionArn"):
        sfn.create_state_machine(one_task({}), "m")


def test_only_one_harness_at_a_time_and_the_clock_is_restored():
    before = jobsync_clock._now
    with LocalStepFunctions({}) as sfn:
        assert jobsync_clock.now() == sfn.clock.now()
        with pytest.raises(HarnessError, match="another LocalStepFunctions"), LocalStepFunctions({}):
            pass
    assert jobsync_clock._now is before


def test_virtual_clock_steps_and_callbacks():
    clock = VirtualClock(start=100, max_step=25)
    seen: list[float] = []
    remove = clock.on_advance(seen.append)
    assert clock.advance_to(160, stop=lambda: clock.now() >= 150) == 150
    assert seen == [125, 150]
    clock.sleep(-5)  # never backwards
    remove()
    clock.advance(10)
    assert (clock.now(), seen) == (160, [125, 150])
    with pytest.raises(ValueError):
        clock.advance(-1)
