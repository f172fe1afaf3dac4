"""Step Functions and EventBridge behaviour moto lacks: status change events, Lambda targets, nested executions.

Each hook names what the service does that moto does not (or does otherwise);
``tests/harness/`` checks each against that behaviour.
"""

from __future__ import annotations

import copy
import threading
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import botocore.session

from harness.sfn import moto
from harness.sfn.moto import EventTemplateParser, FailureEventException
from harness.sfn.scheduler import SyncWait

if TYPE_CHECKING:
    from harness.sfn.hooks import Patch
    from harness.sfn.service import LocalStepFunctions


def wait_timestamp_in_utc(harness: LocalStepFunctions, patch: Patch) -> None:
    """Wait ``Timestamp``: wait until that instant, to the sub-second.

    moto compares the UTC timestamp with the naive *local* ``datetime.now()`` (wrong
    outside UTC) and truncates to whole seconds.
    """
    clock = harness.clock

    def timestamp_wait_seconds(wait_fn: Any, env: Any) -> float:
        wait_fn.string.eval(env=env)
        text = env.stack.pop()
        parsed = moto.timestamp_of(wait_fn, text)
        if parsed is None:
            raise FailureEventException(moto.timestamp_failure(wait_fn, env, text))
        return parsed.replace(tzinfo=UTC).timestamp() - clock.now()

    patch(moto.WAIT_TIMESTAMP, timestamp_wait_seconds)


def eventbridge_invokes_lambda_targets(harness: LocalStepFunctions, patch: Patch) -> None:
    """A rule's Lambda targets are invoked, asynchronously, with the (transformed) event.

    moto's EventBridge matches rules but delivers only to log groups, SQS queues,
    other buses, archives and API destinations. The service invokes a Lambda
    target asynchronously (InvocationType Event); here the function runs in a
    thread of its own, through moto's Lambda backend, so it is recorded and
    in-process like every other invocation.
    """
    original = moto.RULE_TARGETS.original

    def send_to_targets(rule: Any, event: Any, transform_input: bool = True) -> None:
        functions = [t for t in rule.targets if ":lambda:" in t["Arn"]]
        # moto raises NotImplementedError for a Lambda target: it sees a copy of the rule without them
        # (a copy, not the rule itself: events from several threads reach one rule at once).
        others = copy.copy(rule)
        others.targets = [t for t in rule.targets if t not in functions]
        original(others, event, transform_input)
        if not rule.event_pattern.matches_event(event):
            return
        for target in functions:
            arn = target["Arn"]
            transformer = target.get("InputTransformer", {}) if transform_input else {}
            payload = EventTemplateParser.parse(
                input_template=transformer.get("InputTemplate"),
                input_paths_map=transformer.get("InputPathsMap", {}),
                event=event,
            )
            harness.invoke_async(arn, payload)

    patch(moto.RULE_TARGETS, send_to_targets)


def execution_status_change_events(harness: LocalStepFunctions, patch: Patch) -> None:
    """An execution that ends sends "Step Functions Execution Status Change" to the default event bus.

    The service emits it for every execution (SUCCEEDED, FAILED, TIMED_OUT, ABORTED);
    moto emits nothing. Rules on the default bus then match it as in the service
    (a Lambda target is invoked by ``eventbridge_invokes_lambda_targets``).
    """
    original = moto.EXECUTION_LOGIC.original

    def execution_logic(worker: Any) -> None:
        try:
            original(worker)
        finally:
            harness._emit_status_change(worker._evaluation_details.execution_details.arn)

    patch(moto.EXECUTION_LOGIC, execution_logic)


def sfn_integration_uses_api_names(harness: LocalStepFunctions, patch: Patch) -> None:
    """``states:startExecution`` takes ``StateMachineArn``/``Input``/``Name``, returns ``ExecutionArn``/``StartDate``.

    The service maps a task's Arguments onto the API by name and returns the API's
    members in that case (``.sync:2``: DescribeExecution's ``Status``, ``Output`` as
    JSON, ``Error``, ``Cause``...), timestamps as epoch milliseconds. LocalStack's
    interpreter, which moto's is ported from, does both through the botocore model; moto 5.2.5 leaves them out, so
    botocore rejects ``StateMachineArn`` and the task fails with States.Runtime.
    """
    model = botocore.session.get_session().get_service_model("stepfunctions")
    original = moto.SFN_PARAMETERS.original

    def operation(task: Any, service_action_name: str | None) -> Any:
        action = service_action_name or task.resource.api_action
        return model.operation_model("".join(part[:1].upper() + part[1:] for part in action.split("_")))

    def normalise_parameters(
        task: Any,
        parameters: dict,
        boto_service_name: str | None = None,
        service_action_name: str | None = None,
    ) -> None:
        original(task, parameters, boto_service_name, service_action_name)  # Input as JSON text
        members = {name.lower(): name for name in operation(task, service_action_name).input_shape.members}
        for key in list(parameters):
            member = members.get(key.lower())
            if member is not None and member != key:
                parameters[member] = parameters.pop(key)

    def normalise_response(
        task: Any,
        response: Any,
        boto_service_name: str | None = None,
        service_action_name: str | None = None,
    ) -> None:
        moto.from_boto_response(task, response, operation(task, service_action_name).output_shape)
        _dates_as_epoch_millis(response)

    patch(moto.SFN_PARAMETERS, normalise_parameters)
    patch(moto.SFN_RESPONSE, normalise_response)


def start_execution_without_a_name_gets_a_uuid(harness: LocalStepFunctions, patch: Patch) -> None:
    """StartExecution with no ``name`` names the execution with a UUID, as the service does.

    moto formats ``None`` into the ARN, so a second unnamed start (every item of a
    Map of ``startExecution`` tasks) fails with ExecutionAlreadyExists.
    """
    original = moto.START_EXECUTION.original

    def start_execution(backend: Any, state_machine_arn: str, name: Any = None, *args: Any, **kwargs: Any) -> Any:
        harness.activity()
        execution = original(backend, state_machine_arn, name or str(uuid.uuid4()), *args, **kwargs)
        if execution.exec_status == "RUNNING":
            harness.started(execution.exec_arn)  # at work from now, not only once its thread runs
        return execution

    patch(moto.START_EXECUTION, start_execution)


def sync_task_stops_its_child_when_cancelled(harness: LocalStepFunctions, patch: Patch) -> None:
    """A ``startExecution.sync`` task that is cancelled stops the child execution it waits for.

    When the parent execution is stopped, fails or times out, or a Map's iteration is
    cancelled because another failed, Step Functions stops the nested execution (the
    reason its .sync policy grants states:StopExecution). moto stops waiting and
    leaves the child running.
    """
    original = moto.SFN_PATTERN.original

    def eval_integration_pattern(task: Any, env: Any, *args: Any, **kwargs: Any) -> None:
        submitted = env.stack[-1] if env.stack else None
        child = submitted.get("ExecutionArn") if isinstance(submitted, dict) else None
        in_iteration = False
        if child:
            harness._sync_children.add(child)
            harness._sync_waits[threading.get_ident()] = SyncWait(child, env)
            parent = env.states.context_object.context_object_data["Execution"]["Id"]
            # Its child is at work now; the parent's end is _observed's. This thread is not the
            # iteration's own: a Map with an iteration at work means this task is one of them.
            in_iteration = harness.in_iterations(parent)
            if in_iteration:
                harness.iteration_parked(parent)
            else:
                harness.parked(parent)
        try:
            original(task, env, *args, **kwargs)
        finally:
            harness._sync_waits.pop(threading.get_ident(), None)
            if child and not env.is_running():
                harness.stop_if_running(child, error="States.Aborted", cause="the parent's task was cancelled")
            if in_iteration:
                harness.iteration_at_work(parent)  # the iteration's worker ends it, running or not
            if child:
                harness._observed(child, parent if env.is_running() else None)

    patch(moto.SFN_PATTERN, eval_integration_pattern)


def stop_execution_keeps_its_error_and_cause(harness: LocalStepFunctions, patch: Patch) -> None:
    """StopExecution stops the execution with the error and cause it is given, at the harness's time.

    The service records both in the ExecutionAborted event (``executionAbortedEventDetails``), where
    the cleanup reads why an execution was stopped; moto's API handler drops them, and would date
    the stop on the wall clock. This is the API's StopExecution, over HTTP too (``jobsync stop``).
    """

    def stop_execution(response: Any) -> Any:
        arn = moto.request_param(response, "executionArn")
        harness.stop(arn, error=moto.request_param(response, "error"), cause=moto.request_param(response, "cause"))
        return moto.ActionResult({"stopDate": harness.clock.utcnow()})

    patch(moto.STOP_EXECUTION, stop_execution)


def a_stopped_execution_stays_aborted(harness: LocalStepFunctions, patch: Patch) -> None:
    """An execution stopped while a state runs ends ABORTED, whatever that state then raises.

    In moto a StopExecution during a task (a child stopped by its parent mid-Lambda) can
    be overwritten by the error the interrupted state raises, and the execution ends
    FAILED; in the service a stopped execution is ABORTED.
    """
    original = moto.SET_ERROR.original

    def set_error(env: Any, error: Any) -> None:
        if moto.stopped(env):
            return
        original(env, error)

    patch(moto.SET_ERROR, set_error)


def _dates_as_epoch_millis(value: Any) -> None:
    """Timestamps in a service integration's result, as the service writes them: epoch milliseconds."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in list(items):
        if isinstance(item, datetime):
            value[key] = int(item.timestamp() * 1000)
        else:
            _dates_as_epoch_millis(item)
