"""AWS's limits, which moto does not enforce: 25,000 history events, 256 KiB payloads, strict JSON, a Cause's
32,768 characters, and the terminal errors no Catch sees. A local run that lets them pass hides defects.
"""

from __future__ import annotations

import json
import weakref
from datetime import datetime
from typing import TYPE_CHECKING, Any

from harness.sfn import moto
from harness.sfn.moto import (
    EventDetails,
    ExecutionFailedEventDetails,
    FailureEvent,
    FailureEventException,
    HistoryEventType,
    StatesErrorName,
    StatesErrorNameType,
    StepFunctionsAWSError,
    StepFunctionsValidationException,
    TaskFailedEventDetails,
)

if TYPE_CHECKING:
    from harness.sfn.hooks import Patch
    from harness.sfn.service import LocalStepFunctions

# Step Functions' quotas (docs: "Step Functions service quotas"; the API's length constraints).
HISTORY_LIMIT = 25_000  # events in a Standard execution's history


PAYLOAD_LIMIT = 262_144  # bytes of UTF-8: a state's input or output, a task's result, SendTaskSuccess's output


CAUSE_LIMIT = 32_768  # characters of a failure's Cause


# Errors a Retry or Catch on States.ALL does not match (AWS: "States.ALL ... can't catch the
# States.DataLimitExceeded terminal error or the States.Runtime error types").
TERMINAL_ERRORS = frozenset({"States.DataLimitExceeded", "States.Runtime"})


def history_limit_ends_the_execution(harness: LocalStepFunctions, patch: Patch) -> None:
    """An execution whose history reaches 25,000 events fails with States.Runtime, as the service ends it.

    AWS: a Standard execution's history holds at most 25,000 events; the execution
    then fails, error ``States.Runtime``, cause "The execution reached the maximum
    number of history events (25000)." (no Catch sees it: ``terminal_errors_pass_states_all``).
    moto's history grows without bound. Here the event that would be the 25,000th
    (not the execution's own end) is not recorded: the execution fails, and its
    ExecutionFailed event is the 25,000th; what the running state still writes is dropped.
    (A Map running when the history fills is not covered: moto cannot fail its iterations
    with a ``States.`` error, and the harness reports its internal error instead.)
    """
    original_init = moto.ENVIRONMENT_INIT.original
    original_add = moto.ADD_EVENT.original
    ending = {
        HistoryEventType.ExecutionFailed,
        HistoryEventType.ExecutionSucceeded,
        HistoryEventType.ExecutionAborted,
        HistoryEventType.ExecutionTimedOut,
    }

    def environment_init(env: Any, *args: Any, **kwargs: Any) -> None:
        original_init(env, *args, **kwargs)
        # A frame (a Map iteration, a Parallel branch) takes its execution's manager after this: the owner stays.
        env.event_manager._jobsync_owner = weakref.ref(env)  # type: ignore[attr-defined]

    def add_event(manager: Any, context: Any, event_type: Any, *args: Any, **kwargs: Any) -> int:
        if event_type not in ending and len(moto.history_list(manager)) >= HISTORY_LIMIT - 1:
            owner = getattr(manager, "_jobsync_owner", None)
            env = owner() if owner else None
            if env is not None and env.is_running():
                env.set_error(
                    ExecutionFailedEventDetails(
                        error="States.Runtime",
                        cause=f"The execution reached the maximum number of history events ({HISTORY_LIMIT}).",
                    )
                )
                manager._jobsync_full = True  # type: ignore[attr-defined]
            return len(moto.history_list(manager))  # the history is full: nothing more is written
        return original_add(manager, context, event_type, *args, **kwargs)

    def set_error(env: Any, error: Any) -> None:
        if getattr(env.event_manager, "_jobsync_full", False):
            return  # the execution ended at the limit: what the interrupted state raises after does not count
        original_set_error(env, error)

    original_set_error = moto.SET_ERROR.original
    patch(moto.ENVIRONMENT_INIT, environment_init)
    patch(moto.ADD_EVENT, add_event)
    patch(moto.SET_ERROR, set_error)


def terminal_errors_pass_states_all(harness: LocalStepFunctions, patch: Patch) -> None:
    """States.ALL in a Retry or Catch does not match States.DataLimitExceeded nor States.Runtime.

    AWS: both are terminal; "States.ALL ... can't catch the States.DataLimitExceeded
    terminal error or Runtime error types": the execution fails with them. moto's
    States.ALL matches every error, so a Catch would route them on (to a cleanup that
    then runs on a state the service never gives it).
    """
    original = moto.ERROR_EQUALS.original
    every = StatesErrorName(typ=StatesErrorNameType.StatesALL)

    def eval_body(decl: Any, env: Any) -> None:
        error_name = env.stack[-1]
        if every in decl.error_names and getattr(error_name, "error_name", None) in TERMINAL_ERRORS:
            env.stack.pop()
            env.stack.append(False)
            return
        original(decl, env)

    patch(moto.ERROR_EQUALS, eval_body)


def payload_limit_is_inclusive(harness: LocalStepFunctions, patch: Patch) -> None:
    """A state's input or output, or a task's result, of up to 262,144 bytes of UTF-8 passes; one byte more
    fails the state with States.DataLimitExceeded.

    AWS: "256 KiB of data as a UTF-8 encoded string" (SendTaskSuccess: output of
    length at most 262144). moto checks the same places (a task's result, a state's
    output), but measures Python's spaced, ASCII-escaped JSON and refuses exactly 262,144 bytes.
    """

    def is_within_size_quota(value: Any) -> bool:
        # As the service stores it: compact JSON, UTF-8 (moto measures ", "-separated, ASCII-escaped text).
        text = (
            value
            if isinstance(value, str)
            else json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=_json_default)
        )
        return len(text.encode("utf-8")) <= PAYLOAD_LIMIT

    for seam in moto.SIZE_QUOTAS:
        patch(seam, is_within_size_quota)


def lambda_payload_must_be_strict_json(harness: LocalStepFunctions, patch: Patch) -> None:
    """A ``lambda:invoke`` whose response Payload is not strict JSON (``NaN``, ``Infinity``) fails the task with
    States.Runtime.

    The Lambda Python runtime writes a float that is not finite as ``NaN`` or
    ``Infinity`` (its encoder allows them); Step Functions' JSON parser refuses
    them, and the execution fails on parsing the payload (reported by users, e.g.
    nasa/cumulus-message-adapter#105). moto parses with Python's ``json``, which
    reads them as floats and hands ``inf`` on. A payload that is text, not JSON at
    all, is a string as before.
    """
    original = moto.LAMBDA_INTEGRATION.original

    def from_payload(stream: Any) -> Any:
        text = stream.read().decode("utf-8")
        try:
            return json.loads(text, parse_constant=_refuse_constant)
        except _NotStrictJSON:
            raise
        except ValueError:
            return text

    def execute(env: Any, *args: Any, **kwargs: Any) -> None:
        try:
            original(env, *args, **kwargs)
        except _NotStrictJSON as exc:
            raise _runtime_failure(env, f"The Lambda function's response Payload is not valid JSON: {exc}") from exc

    patch(moto.LAMBDA_PAYLOAD, from_payload)
    patch(moto.LAMBDA_INTEGRATION, execute)


def send_task_success_needs_strict_json(harness: LocalStepFunctions, patch: Patch) -> None:
    """SendTaskSuccess refuses an output that is not strict JSON with InvalidOutput, and one over 262,144
    bytes with ValidationException; the task keeps waiting.

    AWS: "InvalidOutput: The provided JSON output data is not valid" (HTTP 400), and the
    output's length constraint (at most 262144). moto hands any text to the task, which
    then parses it with Python's ``json`` (``NaN`` and ``Infinity`` pass).
    """
    original = moto.SEND_TASK_SUCCESS.original

    def send_task_success(backend: Any, task_token: str, outcome: str) -> Any:
        if len(outcome.encode("utf-8")) > PAYLOAD_LIMIT:
            raise StepFunctionsValidationException(
                "1 validation error detected: Value at 'output' failed to satisfy constraint: "
                f"Member must have length less than or equal to {PAYLOAD_LIMIT}"
            )
        try:
            json.loads(outcome, parse_constant=_refuse_constant)
        except ValueError as exc:
            raise InvalidOutputError(f"Invalid Output: {exc}") from exc
        return original(backend, task_token, outcome)

    patch(moto.SEND_TASK_SUCCESS, send_task_success)


def causes_are_cut_to_32768_characters(harness: LocalStepFunctions, patch: Patch) -> None:
    """A failure's Cause longer than 32,768 characters is cut to its first 32,768, as the service keeps it.

    AWS: a Cause is at most 32,768 characters (ExecutionFailed, TaskFailed, a Catch's
    ``$states.errorOutput``). A ``.sync`` child's failure gives its parent's task the
    child's DescribeExecution as JSON text for Cause: cut, it is no longer valid JSON.
    moto keeps the whole text.
    """
    original_init = moto.FAILURE_EVENT_INIT.original
    original_set_error = moto.SET_ERROR.original

    def failure_event_init(event: Any, *args: Any, **kwargs: Any) -> None:
        original_init(event, *args, **kwargs)
        for details in (event.event_details or {}).values():
            if isinstance(details, dict):
                _cut_cause(details)

    def set_error(env: Any, error: Any) -> None:
        if isinstance(error, dict):
            _cut_cause(error)
        original_set_error(env, error)

    patch(moto.FAILURE_EVENT_INIT, failure_event_init)
    patch(moto.SET_ERROR, set_error)


def _json_default(value: Any) -> Any:
    # What moto's own encoder does with non-JSON values: dates as ISO text, the rest as str().
    return value.isoformat() if isinstance(value, datetime) else str(value)


class _NotStrictJSON(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity`` where strict JSON has none."""


def _refuse_constant(name: str) -> Any:
    raise _NotStrictJSON(f"{name} is not JSON")


class InvalidOutputError(StepFunctionsAWSError):
    """SendTaskSuccess's InvalidOutput, as the service answers it."""

    TYPE = "InvalidOutput"
    STATUS = 400


def _runtime_failure(env: Any, cause: str) -> FailureEventException:
    error = StatesErrorName(typ=StatesErrorNameType.StatesRuntime)
    details = EventDetails(taskFailedEventDetails=TaskFailedEventDetails(error=error.error_name, cause=cause))
    return FailureEventException(
        FailureEvent(env=env, error_name=error, event_type=HistoryEventType.TaskFailed, event_details=details)
    )


def _cut_cause(details: dict) -> None:
    cause = details.get("cause")
    if isinstance(cause, str) and len(cause) > CAUSE_LIMIT:
        details["cause"] = cause[:CAUSE_LIMIT]
