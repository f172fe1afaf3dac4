"""The hooks into moto's Step Functions interpreter, one function per patch, applied in :data:`HOOKS` order.

Each hook is ``hook(harness, patch)``: it patches moto (or jsonata-python) through
``patch(target, attribute, value)``, which undoes the patch when the harness closes.
Each docstring says which moto behaviour it corrects, and what the service does
instead; ``tests/harness/test_sfn_harness.py`` checks them against that.
They are written against the versions :mod:`harness.sfn.pins` requires.
"""

from __future__ import annotations

import copy
import json
import random
import threading
import types
import uuid
import weakref
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime, timezone
from typing import TYPE_CHECKING, Any
from unittest import mock

import botocore.session
import jsonata
import jsonata.timebox
from botocore.exceptions import ClientError
from moto.awslambda.models import LambdaFunction
from moto.core.exceptions import JsonRESTError
from moto.events.models import EventTemplateParser
from moto.events.models import Rule as EventsRule
from moto.stepfunctions.exceptions import AWSError as StepFunctionsAWSError
from moto.stepfunctions.exceptions import ValidationException as StepFunctionsValidationException
from moto.stepfunctions.parser import models as parser_models
from moto.stepfunctions.parser.api import (
    EvaluationFailedEventDetails,
    ExecutionFailedEventDetails,
    HistoryEventType,
    TaskFailedEventDetails,
)
from moto.stepfunctions.parser.asl.component import eval_component
from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import ErrorEqualsDecl
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
    FailureEvent,
    FailureEventException,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import StatesErrorNameType
from moto.stepfunctions.parser.asl.component.common.retry import jitter_strategy_decl, retrier_decl
from moto.stepfunctions.parser.asl.component.common.string.string_expression import StringJSONata
from moto.stepfunctions.parser.asl.component.program.program import Program
from moto.stepfunctions.parser.asl.component.state import state as state_module
from moto.stepfunctions.parser.asl.component.state.exec.execute_state import ExecutionState
from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.iteration_worker import IterationWorker
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.component.state.exec.state_task import state_task_lambda as state_task_lambda_module
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service as state_task_service_module,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_callback as callback_module,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_callback import (
    StateTaskServiceCallback,
)
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service.state_task_service_sfn import (
    StateTaskServiceSfn,
)
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import Timestamp
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction
from moto.stepfunctions.parser.asl.eval import states as states_module
from moto.stepfunctions.parser.asl.eval import variable_store as variable_store_module
from moto.stepfunctions.parser.asl.eval.environment import Environment
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager
from moto.stepfunctions.parser.asl.eval.program_state import ProgramStopped
from moto.stepfunctions.parser.asl.jsonata import jsonata as moto_jsonata
from moto.stepfunctions.parser.asl.jsonata import validations as jsonata_validations
from moto.stepfunctions.parser.backend import execution as execution_module
from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

from harness.clock import VirtualClock

if TYPE_CHECKING:
    from harness.sfn.service import LocalStepFunctions

Patch = Callable[[Any, str, Any], None]
Hook = Callable[["LocalStepFunctions", Patch], None]


# --------------------------------------------------------------------- JSONata


def evaluate_jsonata(harness: LocalStepFunctions, patch: Patch) -> None:
    """Evaluate JSONata with jsonata-python.

    moto composes each expression with its variables as JSONata literals and
    hands the text to an evaluator it leaves unset (upstream it is a JVM bridge).
    """
    patch(moto_jsonata, "_eval_jsonata", _evaluate_jsonata)


def encode_variables_as_json(harness: LocalStepFunctions, patch: Patch) -> None:
    """Pass every variable to the expression as the JSON value it is.

    moto writes string variables as ``f'"{value}"'``, unescaped: a quote, a backslash
    or a newline in any ``$states`` value or Assign'd string breaks the expression.
    Here each value goes through JSON (so it arrives as the service passes it, a number
    as JSONata reads the literal) and is bound to the expression by name
    (``$states:=$__v0;``) instead of written into it: the text stays the same from one
    evaluation to the next, so it is parsed once per thread, not once per state entered
    with the whole ``$states`` in it (``_evaluate``).
    """
    for module in (moto_jsonata, states_module, variable_store_module):
        patch(module, "encode_jsonata_variable_declarations", _encode_jsonata_variable_declarations)

    def get_variable_declarations(store: variable_store_module.VariableStore) -> str:
        # moto keeps the declarations' text while the variables stay the same; bound by position, they
        # are declared anew with each expression (the text comes out the same, so the parse is kept).
        return store._to_variable_declarations(store._outer_scope) + store._to_variable_declarations(store._inner_scope)

    patch(variable_store_module.VariableStore, "get_variable_declarations", get_variable_declarations)


def jsonata_errors_are_query_evaluation_errors(harness: LocalStepFunctions, patch: Patch) -> None:
    """A JSONata runtime error fails the state with States.QueryEvaluationError.

    That is what AWS does (catchable, with an EvaluationFailed event); in moto the
    error escapes as a Python exception and becomes States.Runtime.
    """
    original = StringJSONata._eval_body

    def string_jsonata_eval_body(component: StringJSONata, env: Any) -> None:
        try:
            original(component, env)
        except moto_jsonata.JSONataException as exc:
            raise _query_evaluation_error(env, component.expression, exc) from exc

    patch(StringJSONata, "_eval_body", string_jsonata_eval_body)


def jsonata_now_on_virtual_clock(harness: LocalStepFunctions, patch: Patch) -> None:
    """``$now()`` and ``$millis()`` read the service clock, which here is the virtual one (not the wall clock)."""
    clock = harness.clock
    patch(jsonata.timebox.Timebox, "current_milli_time", staticmethod(lambda: int(clock.now() * 1000)))


# --------------------------------------------------------------------- Lambda


def lambda_runs_in_process(harness: LocalStepFunctions, patch: Patch) -> None:
    """Run the functions the harness maps in-process, where moto would start a Docker container.

    ``lambda:invoke`` (and a bare function ARN as Resource) reach moto's Lambda backend
    through a real Invoke call, so ARNs, qualifiers and ResourceNotFoundException stay
    moto's; only the function's code runs here (see ``InProcessLambdas._invoke``).
    Unmapped functions go to moto as before.
    """
    original = LambdaFunction.invoke

    def lambda_invoke(function: LambdaFunction, body: Any, request_headers: Any, response_headers: Any) -> Any:
        handler = harness.handlers.get(function.function_name)
        if handler is None:
            return original(function, body, request_headers, response_headers)
        try:
            harness.activity()
            return harness._invoke(function, handler, body, response_headers)
        except JsonRESTError:
            raise  # an injected service error: Step Functions sees Lambda.<Code>
        except BaseException as exc:  # handler errors are caught inside; this is a harness or callback bug
            harness.internal_errors.append(exc)
            raise

    patch(LambdaFunction, "invoke", lambda_invoke)


def reuse_lambda_clients(harness: LocalStepFunctions, patch: Patch) -> None:
    """Speed only: reuse one boto3 client per (region, service).

    moto builds a new boto3 Lambda client for every task (~17 ms, a third of a poll iteration).
    """
    clients: dict[tuple[str, str], Any] = {}
    original = lambda_eval_utils.boto_client_for

    def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        with harness._lock:
            if (region, service) not in clients:
                clients[region, service] = original(region, service, state_credentials)
            return clients[region, service]

    patch(lambda_eval_utils, "boto_client_for", boto_client_for)


# --------------------------------------------------------------------- Wait states and Retry


def wait_on_virtual_clock(harness: LocalStepFunctions, patch: Patch) -> None:
    """A Wait state moves the virtual clock (and is recorded) instead of blocking on the wall clock.

    A StopExecution during the Wait ends it there, as in the service.
    """
    patch(WaitFunction, "_wait_interval", lambda wait_fn, env, wait_seconds: harness._wait_state(env, wait_seconds))


def wait_timestamp_in_utc(harness: LocalStepFunctions, patch: Patch) -> None:
    """Wait ``Timestamp``: wait until that instant, to the sub-second.

    moto compares the UTC timestamp with the naive *local* ``datetime.now()`` (wrong
    outside UTC) and truncates to whole seconds.
    """
    clock = harness.clock

    def timestamp_wait_seconds(wait_fn: Timestamp, env: Any) -> float:
        wait_fn.string.eval(env=env)
        text = env.stack.pop()
        parsed = wait_fn._from_timestamp_string(timestamp=text)
        if parsed is None:
            raise FailureEventException(wait_fn._create_failure_event(env, text))
        return parsed.replace(tzinfo=UTC).timestamp() - clock.now()

    patch(Timestamp, "_get_wait_seconds", timestamp_wait_seconds)


def retry_backoff_on_virtual_clock(harness: LocalStepFunctions, patch: Patch) -> None:
    """Retry back-off sleeps on the virtual clock (and is recorded in ``retry_sleeps``).

    moto computes the delay as the service does (IntervalSeconds x BackoffRate^n,
    MaxDelaySeconds, JitterStrategy) but sleeps it with ``time.sleep``.
    """
    patch(retrier_decl, "time", types.SimpleNamespace(sleep=harness._retry_sleep))


def seeded_full_jitter(harness: LocalStepFunctions, patch: Patch) -> None:
    """``JitterStrategy: FULL`` draws from a generator seeded with ``jitter_seed``, so runs repeat.

    moto draws from the process-wide ``random``; the bounds stay the service's.
    """
    patch(jitter_strategy_decl, "random", random.Random(harness.jitter_seed))


# --------------------------------------------------------------------- timestamps and execution time


def dates_on_virtual_clock(harness: LocalStepFunctions, patch: Patch) -> None:
    """``Execution.StartTime``, ``State.EnteredTime``, startDate and stopDate come from the virtual clock.

    moto reads ``datetime.now()``; the context object also shows them as AWS
    does, ``2025-01-01T00:00:00.000Z``, where moto prints Python's isoformat.
    """
    virtual_datetime = _virtual_datetime_module(harness.clock)
    for module in (state_module, parser_models, execution_module):
        patch(module, "datetime", virtual_datetime)


def history_timestamps_on_virtual_clock(harness: LocalStepFunctions, patch: Patch) -> None:
    """Execution history events carry virtual-clock timestamps (moto stamps them with the wall clock)."""
    clock = harness.clock
    patch(EventManager, "_get_current_timestamp", staticmethod(lambda: datetime.fromtimestamp(clock.now(), UTC)))


def execution_timeout_on_virtual_clock(harness: LocalStepFunctions, patch: Patch) -> None:
    """An execution's ``TimeoutSeconds`` counts virtual time.

    moto runs the program in a thread and joins it with a wall-clock timeout. Here
    it runs in the execution thread, and the virtual clock times it out when it
    reaches the deadline (see ``LocalStepFunctions._advance``), as the service does.
    """
    clock = harness.clock

    def program_eval(program: Program, env: Any) -> None:
        if program.timeout_seconds and not env.is_frame():
            harness._deadlines[id(env)] = (env, clock.now() + program.timeout_seconds.timeout_seconds)
        try:
            env.next_state_name = program.start_at.start_at_name
            eval_component.EvalComponent.eval(program, env)
        finally:
            harness._deadlines.pop(id(env), None)

    patch(Program, "eval", program_eval)


# --------------------------------------------------------------------- callbacks and events


def task_token_wait_on_virtual_clock(harness: LocalStepFunctions, patch: Patch) -> None:
    """A ``.waitForTaskToken`` task's ``TimeoutSeconds`` counts virtual time.

    moto waits for SendTaskSuccess on the wall clock for the whole timeout. Here it
    waits in short wall-clock slices and moves the virtual clock on by
    ``harness.callback_step_seconds`` after each slice without an answer, so the
    simulated job goes on and the timeout (``States.Timeout``) comes when the
    virtual clock reaches it, as the service does. SendTaskSuccess still ends the
    wait at once. Among concurrent executions (``cooperative_waits``) each step waits
    its turn as a Wait state does (``LocalStepFunctions.virtual_sleep``), so a thousand
    waiting tasks move time together instead of each racing it on.
    """
    clock = harness.clock

    def wait(task: StateTaskServiceCallback, timeout_seconds: int, callback_endpoint: Any) -> Any:
        deadline = clock.now() + timeout_seconds
        while True:
            outcome = callback_endpoint.wait(timeout=harness.callback_slice_seconds)
            if outcome is not None:
                return outcome
            if clock.now() >= deadline:
                return None
            if harness.cooperative_waits:
                # SendTaskSuccess sets the endpoint's event after its outcome: it wakes the sleep.
                answered = callback_endpoint._notify_event
                arrived = lambda: callback_endpoint.get_outcome() is not None  # noqa: E731
                harness.virtual_sleep(harness.callback_step_seconds, wake=answered, stop=arrived, until=deadline)
            else:
                harness._advance(min(harness.callback_step_seconds, deadline - clock.now()))

    patch(StateTaskServiceCallback, "_wait_for_task_token_timeout", wait)


def eventbridge_invokes_lambda_targets(harness: LocalStepFunctions, patch: Patch) -> None:
    """A rule's Lambda targets are invoked, asynchronously, with the (transformed) event.

    moto's EventBridge matches rules but delivers only to log groups, SQS queues,
    other buses, archives and API destinations. The service invokes a Lambda
    target asynchronously (InvocationType Event); here the function runs in a
    thread of its own, through moto's Lambda backend, so it is recorded and
    in-process like every other invocation.
    """
    original = EventsRule.send_to_targets

    def send_to_targets(rule: EventsRule, event: Any, transform_input: bool = True) -> None:
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

    patch(EventsRule, "send_to_targets", send_to_targets)


# --------------------------------------------------------------------- failures of the interpreter itself


def tasks_are_waits_for_the_clock(harness: LocalStepFunctions, patch: Patch) -> None:
    """Speed and order only: while a Task runs (on the thread moto gives it), its execution counts as waiting.

    Time among concurrent executions moves only when none is at work in the interpreter
    (``LocalStepFunctions.at_work``): a task's own waits (a watch, a task token) move it
    in their turn, and a Lambda's run is covered by ``wait_settle_seconds``. A .sync task's
    execution (the parent) waits for its children from its first such task on.
    """
    original = ExecutionState._evaluate_with_timeout

    def evaluate_with_timeout(state: ExecutionState, env: Any) -> None:
        arn = None if isinstance(state, StateTaskServiceSfn) else execution_arn(env)
        if arn:
            harness.parked(arn)
        try:
            original(state, env)
        finally:
            if arn and env.is_running():
                harness.at_work(arn)

    patch(ExecutionState, "_evaluate_with_timeout", evaluate_with_timeout)


def map_iterations_are_at_work(harness: LocalStepFunctions, patch: Patch) -> None:
    """Speed and order only: each worker thread of a Map counts as its execution at work until it parks.

    The Map state itself parks its execution's own thread while its iterations run on
    worker threads. Without this the clock could move between an iteration's start and its
    first park (evaluating its input and arguments, starting a child execution): on a
    loaded machine longer than ``wait_settle_seconds``, and then an item starts late.
    """
    original = IterationWorker.eval

    def worker_eval(worker: IterationWorker) -> None:
        arn = execution_arn(worker._env)
        if arn is None:
            original(worker)
            return
        harness.iteration_began(arn)
        try:
            original(worker)
        finally:
            harness.iteration_ended(arn)

    patch(IterationWorker, "eval", worker_eval)


def execution_thread_crashes_are_kept(harness: LocalStepFunctions, patch: Patch) -> None:
    """An exception that kills the execution thread is kept for ``wait()`` to raise.

    In moto it dies silently and the execution stays RUNNING forever. The hook also
    signals the end of every execution, so ``wait()`` needs no polling.
    """
    original = ExecutionWorker._execution_logic

    def execution_logic(worker: ExecutionWorker) -> None:
        arn = worker._evaluation_details.execution_details.arn
        harness.started(arn, this_thread=True)
        try:
            original(worker)
        except BaseException as exc:
            harness._crashes[arn] = exc
        finally:
            harness.parked(arn)  # ended
            harness._done_event(arn).set()

    patch(ExecutionWorker, "_execution_logic", execution_logic)


def state_exceptions_are_kept(harness: LocalStepFunctions, patch: Patch) -> None:
    """A Python exception inside a state is kept in ``internal_errors`` for ``wait()`` to raise (strict).

    A moto or harness bug, or a clock callback that raised, is logged here and then
    turned into States.Runtime by moto, which a Catch on States.ALL would hide.
    Exceptions moto raises on purpose (its own types, and ClientErrors from service
    calls such as an injected Lambda error) are how states fail, and are not kept.
    """
    original = eval_component.EvalComponent._log_exception

    def log_exception(component: Any, exception: Exception) -> None:
        expected = isinstance(exception, ClientError) or type(exception).__module__.startswith(
            "moto.stepfunctions.parser"
        )
        if not expected and not any(exception is seen for seen in harness.internal_errors):
            harness.internal_errors.append(exception)
        original(component, exception)

    patch(eval_component.EvalComponent, "_log_exception", log_exception)


# --------------------------------------------------------------------- nested executions (states:startExecution)


def sfn_integration_uses_api_names(harness: LocalStepFunctions, patch: Patch) -> None:
    """``states:startExecution`` takes ``StateMachineArn``/``Input``/``Name``, returns ``ExecutionArn``/``StartDate``.

    The service maps a task's Arguments onto the API by name and returns the API's
    members in that case (``.sync:2``: DescribeExecution's ``Status``, ``Output`` as
    JSON, ``Error``, ``Cause``...), timestamps as epoch milliseconds. LocalStack's
    interpreter, which moto's is ported from, does both through the botocore model; moto 5.2.5 leaves them out, so
    botocore rejects ``StateMachineArn`` and the task fails with States.Runtime.
    """
    model = botocore.session.get_session().get_service_model("stepfunctions")
    original = StateTaskServiceSfn._normalise_parameters

    def operation(task: StateTaskServiceSfn, service_action_name: str | None) -> Any:
        action = service_action_name or task.resource.api_action
        return model.operation_model("".join(part[:1].upper() + part[1:] for part in action.split("_")))

    def normalise_parameters(
        task: StateTaskServiceSfn,
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
        task: StateTaskServiceSfn,
        response: Any,
        boto_service_name: str | None = None,
        service_action_name: str | None = None,
    ) -> None:
        task._from_boto_response(response, operation(task, service_action_name).output_shape)
        _dates_as_epoch_millis(response)

    patch(StateTaskServiceSfn, "_normalise_parameters", normalise_parameters)
    patch(StateTaskServiceSfn, "_normalise_response", normalise_response)


def start_execution_without_a_name_gets_a_uuid(harness: LocalStepFunctions, patch: Patch) -> None:
    """StartExecution with no ``name`` names the execution with a UUID, as the service does.

    moto formats ``None`` into the ARN, so a second unnamed start (every item of a
    Map of ``startExecution`` tasks) fails with ExecutionAlreadyExists.
    """
    original = parser_models.StepFunctionsParserBackend.start_execution

    def start_execution(backend: Any, state_machine_arn: str, name: Any = None, *args: Any, **kwargs: Any) -> Any:
        harness.activity()
        execution = original(backend, state_machine_arn, name or str(uuid.uuid4()), *args, **kwargs)
        if execution.exec_status == "RUNNING":
            harness.started(execution.exec_arn)  # at work from now, not only once its thread runs
        return execution

    patch(parser_models.StepFunctionsParserBackend, "start_execution", start_execution)


def sync_wait_checks_promptly(harness: LocalStepFunctions, patch: Patch) -> None:
    """A ``.sync`` task waits for its child only: no task token, no time of its own.

    moto also waits, beside the child, for a task token no one has (the service
    gives a ``.sync`` task none), and that wait moves the virtual clock on
    (``task_token_wait_on_virtual_clock``): the parent would race time ahead of its
    children. Here the child's own states move time. Speed: moto sleeps 0.5 s of wall
    time between DescribeExecution calls; here the task looks again as soon as its child
    has ended (or its own execution stopped), checking every ``sync_poll_seconds``
    without a call (``LocalStepFunctions._sync_sleep``): a thousand parents' Map
    iterations asking DescribeExecution every few milliseconds would starve their children.
    """
    patch(callback_module, "time", types.SimpleNamespace(sleep=harness._sync_sleep))
    original = StateTaskServiceSfn._eval_sync

    def eval_sync(
        task: StateTaskServiceSfn,
        env: Any,
        sync_resolver: Any,
        timeout_seconds: int | None,
        callback_endpoint: Any,
        heartbeat_endpoint: Any,
    ) -> Any:
        return original(task, env, sync_resolver, timeout_seconds, None, heartbeat_endpoint)

    patch(StateTaskServiceSfn, "_eval_sync", eval_sync)


def sync_task_stops_its_child_when_cancelled(harness: LocalStepFunctions, patch: Patch) -> None:
    """A ``startExecution.sync`` task that is cancelled stops the child execution it waits for.

    When the parent execution is stopped, fails or times out, or a Map's iteration is
    cancelled because another failed, Step Functions stops the nested execution (the
    reason its .sync policy grants states:StopExecution). moto stops waiting and
    leaves the child running.
    """
    original = StateTaskServiceSfn._eval_integration_pattern

    def eval_integration_pattern(task: StateTaskServiceSfn, env: Any, *args: Any, **kwargs: Any) -> None:
        submitted = env.stack[-1] if env.stack else None
        child = submitted.get("ExecutionArn") if isinstance(submitted, dict) else None
        in_iteration = False
        if child:
            harness._sync_children.add(child)
            harness._sync_waits[threading.get_ident()] = (child, env)
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

    patch(StateTaskServiceSfn, "_eval_integration_pattern", eval_integration_pattern)


def execution_status_change_events(harness: LocalStepFunctions, patch: Patch) -> None:
    """An execution that ends sends "Step Functions Execution Status Change" to the default event bus.

    The service emits it for every execution (SUCCEEDED, FAILED, TIMED_OUT, ABORTED);
    moto emits nothing. Rules on the default bus then match it as in the service
    (a Lambda target is invoked by ``eventbridge_invokes_lambda_targets``).
    """
    original = ExecutionWorker._execution_logic

    def execution_logic(worker: ExecutionWorker) -> None:
        try:
            original(worker)
        finally:
            harness._emit_status_change(worker._evaluation_details.execution_details.arn)

    patch(ExecutionWorker, "_execution_logic", execution_logic)


def a_stopped_execution_stays_aborted(harness: LocalStepFunctions, patch: Patch) -> None:
    """An execution stopped while a state runs ends ABORTED, whatever that state then raises.

    In moto a StopExecution during a task (a child stopped by its parent mid-Lambda) can
    be overwritten by the error the interrupted state raises, and the execution ends
    FAILED; in the service a stopped execution is ABORTED.
    """
    original = Environment.set_error

    def set_error(env: Environment, error: Any) -> None:
        if isinstance(env._program_state, ProgramStopped):
            return
        original(env, error)

    patch(Environment, "set_error", set_error)


def jsonata_parse_function(harness: LocalStepFunctions, patch: Patch) -> None:
    """``$parse(text)``: the JSON-parsing function Step Functions adds to JSONata.

    jsonata-python has no ``$parse``; the service parses JSON text with it (text that
    is not JSON fails the state with States.QueryEvaluationError).
    """
    patch(moto_jsonata, "_eval_jsonata", _evaluate_jsonata_with_parse)


def jsonata_nothing_fails_naming_its_field(harness: LocalStepFunctions, patch: Patch) -> None:
    """A JSONata expression that returns nothing fails its state, naming the field, as AWS words it.

    AWS fails the state with States.QueryEvaluationError (catchable) when the expression
    of a field returns nothing: a whole field (``"Cause": "{% $x.absent %}"``), a value in
    a JSON object or array of the definition (``"Output": {"v": "{% $x.absent %}"}``), an
    Assign'd variable, Items, a Choice Condition. Inside a JSONata expression nothing is
    not an error: an object constructor drops the key (``{% {'v': $x.absent} %}`` is
    ``{}``), an array constructor drops the item. The Cause reads "The JSONata expression
    '...' specified for the field 'Output/v' returned nothing (undefined)."; moto fails in
    the same places but names no field, or a class of its own. Here the field is the
    innermost one a definition names (``Cause``, ``Output``, ``v``), not AWS's whole path.
    """
    original = jsonata_validations._validate_null_output
    original_field_name = eval_component.EvalComponent._field_name

    def field_name(component: Any) -> str | None:
        name = type(component).__name__
        if name == "ItemsJSONata":
            return "Items"
        if name.startswith(("JSONataTemplateValue", "AssignTemplateValue", "AssignDecl")):
            return None  # a value, not a field: the field is the key or the state's field around it
        if name.startswith("AssignTemplateBinding"):
            return str(component.identifier)
        return original_field_name(component)  # type: ignore[no-any-return]

    def validate_null_output(env: Any, expression: str, rich_jsonata_expression: str) -> None:
        try:
            original(env, expression, rich_jsonata_expression)
        except FailureEventException as exc:
            assert exc.failure_event.event_details is not None
            details = exc.failure_event.event_details["evaluationFailedEventDetails"]
            details["cause"] = (
                f"The JSONata expression '{expression}' specified for the field '{env.next_field_name}' "
                "returned nothing (undefined)."
            )
            raise

    patch(jsonata_validations, "_validate_null_output", validate_null_output)
    patch(eval_component.EvalComponent, "_field_name", field_name)


# --------------------------------------------------------------------- AWS's limits and strict JSON

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
    original_init = Environment.__init__
    original_add = EventManager.add_event
    ending = {
        HistoryEventType.ExecutionFailed,
        HistoryEventType.ExecutionSucceeded,
        HistoryEventType.ExecutionAborted,
        HistoryEventType.ExecutionTimedOut,
    }

    def environment_init(env: Environment, *args: Any, **kwargs: Any) -> None:
        original_init(env, *args, **kwargs)
        # A frame (a Map iteration, a Parallel branch) takes its execution's manager after this: the owner stays.
        env.event_manager._jobsync_owner = weakref.ref(env)  # type: ignore[attr-defined]

    def add_event(manager: EventManager, context: Any, event_type: Any, *args: Any, **kwargs: Any) -> int:
        if event_type not in ending and len(manager._history_event_list) >= HISTORY_LIMIT - 1:
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
            return len(manager._history_event_list)  # the history is full: nothing more is written
        return original_add(manager, context, event_type, *args, **kwargs)

    def set_error(env: Environment, error: Any) -> None:
        if getattr(env.event_manager, "_jobsync_full", False):
            return  # the execution ended at the limit: what the interrupted state raises after does not count
        original_set_error(env, error)

    original_set_error = Environment.set_error
    patch(Environment, "__init__", environment_init)
    patch(EventManager, "add_event", add_event)
    patch(Environment, "set_error", set_error)


def terminal_errors_pass_states_all(harness: LocalStepFunctions, patch: Patch) -> None:
    """States.ALL in a Retry or Catch does not match States.DataLimitExceeded nor States.Runtime.

    AWS: both are terminal; "States.ALL ... can't catch the States.DataLimitExceeded
    terminal error or Runtime error types": the execution fails with them. moto's
    States.ALL matches every error, so a Catch would route them on (to a cleanup that
    then runs on a state the service never gives it).
    """
    original = ErrorEqualsDecl._eval_body
    every = StatesErrorName(typ=StatesErrorNameType.StatesALL)

    def eval_body(decl: ErrorEqualsDecl, env: Any) -> None:
        error_name = env.stack[-1]
        if every in decl.error_names and getattr(error_name, "error_name", None) in TERMINAL_ERRORS:
            env.stack.pop()
            env.stack.append(False)
            return
        original(decl, env)

    patch(ErrorEqualsDecl, "_eval_body", eval_body)


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

    for module in (state_module, state_task_lambda_module, state_task_service_module):
        patch(module, "is_within_size_quota", is_within_size_quota)


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
    original = lambda_eval_utils.execute_lambda_function_integration

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

    patch(lambda_eval_utils, "_from_payload", from_payload)
    patch(lambda_eval_utils, "execute_lambda_function_integration", execute)


def send_task_success_needs_strict_json(harness: LocalStepFunctions, patch: Patch) -> None:
    """SendTaskSuccess refuses an output that is not strict JSON with InvalidOutput, and one over 262,144
    bytes with ValidationException; the task keeps waiting.

    AWS: "InvalidOutput: The provided JSON output data is not valid" (HTTP 400), and the
    output's length constraint (at most 262144). moto hands any text to the task, which
    then parses it with Python's ``json`` (``NaN`` and ``Infinity`` pass).
    """
    original = parser_models.StepFunctionsParserBackend.send_task_success

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

    patch(parser_models.StepFunctionsParserBackend, "send_task_success", send_task_success)


def causes_are_cut_to_32768_characters(harness: LocalStepFunctions, patch: Patch) -> None:
    """A failure's Cause longer than 32,768 characters is cut to its first 32,768, as the service keeps it.

    AWS: a Cause is at most 32,768 characters (ExecutionFailed, TaskFailed, a Catch's
    ``$states.errorOutput``). A ``.sync`` child's failure gives its parent's task the
    child's DescribeExecution as JSON text for Cause: cut, it is no longer valid JSON.
    moto keeps the whole text.
    """
    original_init = FailureEvent.__init__
    original_set_error = Environment.set_error

    def failure_event_init(event: FailureEvent, *args: Any, **kwargs: Any) -> None:
        original_init(event, *args, **kwargs)
        for details in (event.event_details or {}).values():
            if isinstance(details, dict):
                _cut_cause(details)

    def set_error(env: Environment, error: Any) -> None:
        if isinstance(error, dict):
            _cut_cause(error)
        original_set_error(env, error)

    patch(FailureEvent, "__init__", failure_event_init)
    patch(Environment, "set_error", set_error)


HOOKS: tuple[Hook, ...] = (
    evaluate_jsonata,
    encode_variables_as_json,
    jsonata_errors_are_query_evaluation_errors,
    jsonata_now_on_virtual_clock,
    lambda_runs_in_process,
    reuse_lambda_clients,
    wait_on_virtual_clock,
    wait_timestamp_in_utc,
    retry_backoff_on_virtual_clock,
    seeded_full_jitter,
    dates_on_virtual_clock,
    history_timestamps_on_virtual_clock,
    execution_timeout_on_virtual_clock,
    tasks_are_waits_for_the_clock,
    map_iterations_are_at_work,
    execution_status_change_events,  # before the next: wait() returns once the event is sent
    execution_thread_crashes_are_kept,
    state_exceptions_are_kept,
    task_token_wait_on_virtual_clock,
    eventbridge_invokes_lambda_targets,
    sfn_integration_uses_api_names,
    start_execution_without_a_name_gets_a_uuid,
    sync_wait_checks_promptly,
    sync_task_stops_its_child_when_cancelled,
    a_stopped_execution_stays_aborted,
    jsonata_parse_function,
    jsonata_nothing_fails_naming_its_field,
    history_limit_ends_the_execution,
    terminal_errors_pass_states_all,
    payload_limit_is_inclusive,
    lambda_payload_must_be_strict_json,
    send_task_success_needs_strict_json,
    causes_are_cut_to_32768_characters,
)


def install(harness: LocalStepFunctions, stack: ExitStack, hooks: tuple[Hook, ...] = HOOKS) -> None:
    """Apply ``hooks`` in order; closing ``stack`` undoes every patch."""

    def patch(target: Any, attribute: str, value: Any) -> None:
        stack.enter_context(mock.patch.object(target, attribute, value))

    for hook in hooks:
        hook(harness, patch)


# --------------------------------------------------------------------- helpers


def execution_arn(env: Any) -> str | None:
    """The ARN of the execution an interpreter environment belongs to (its context object's Execution.Id)."""
    try:
        return str(env.states.context_object.context_object_data["Execution"]["Id"])
    except (AttributeError, KeyError, TypeError):
        return None


# Per thread: the values bound so far for the expression being composed, those of the last one
# evaluated (moto's output checks evaluate it again, wrapped in $exists() or $type()), and the
# parsed expressions by text.
_jsonata_local = threading.local()


def _compiled(expression: str, with_parse: bool) -> Any:
    cache: dict[tuple[str, bool], Any] | None = getattr(_jsonata_local, "compiled", None)
    if cache is None:
        cache = _jsonata_local.compiled = {}
    compiled = cache.get((expression, with_parse))
    if compiled is None:
        compiled = jsonata.Jsonata(expression)
        if with_parse:
            compiled.register_lambda("parse", lambda text: json.loads(text))
        if len(cache) > 2000:  # expressions come from a few definitions: this only bounds a pathological run
            cache.clear()
        cache[(expression, with_parse)] = compiled
    return compiled


def _evaluate(expression: str, with_parse: bool) -> Any:
    building: list[Any] = getattr(_jsonata_local, "building", [])
    if building:  # a newly composed expression: its values
        _jsonata_local.values, _jsonata_local.building = building, []
    values: list[Any] = getattr(_jsonata_local, "values", [])
    try:
        return _compiled(expression, with_parse).evaluate(None, {f"__v{i}": v for i, v in enumerate(values)})
    except Exception as exc:
        raise moto_jsonata.JSONataException(getattr(exc, "error", type(exc).__name__), str(exc)) from exc


def _evaluate_jsonata(expression: str) -> Any:
    return _evaluate(expression, with_parse=False)


def _dates_as_epoch_millis(value: Any) -> None:
    """Timestamps in a service integration's result, as the service writes them: epoch milliseconds."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in list(items):
        if isinstance(item, datetime):
            value[key] = int(item.timestamp() * 1000)
        else:
            _dates_as_epoch_millis(item)


def _evaluate_jsonata_with_parse(expression: str) -> Any:
    return _evaluate(expression, with_parse=True)


def _json_default(value: Any) -> Any:
    # What moto's own encoder does with non-JSON values: dates as ISO text, the rest as str().
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _as_jsonata_literal(value: Any) -> Any:
    """``value`` as JSONata would read it written as JSON: dates as ISO text, an integral number as an int."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_json_default)
    return json.loads(text, parse_float=lambda number: jsonata.utils.Utils.convert_number(float(number)))


def _encode_jsonata_variable_declarations(bindings: dict[str, Any]) -> str:
    building: list[Any] = getattr(_jsonata_local, "building", None) or []
    _jsonata_local.building = building
    parts = []
    for name, value in bindings.items():
        parts.append(f"{name}:=$__v{len(building)};")
        building.append(_as_jsonata_literal(value))
    return "".join(parts)


def _query_evaluation_error(env: Any, expression: str, exc: Any) -> FailureEventException:
    error_name = StatesErrorName(typ=StatesErrorNameType.StatesQueryEvaluationError)
    cause = (
        f"The JSONata expression '{expression}' specified for the field '{env.next_field_name}' "
        f"threw an error during evaluation. {exc.details}"
    )
    details = EventDetails(
        evaluationFailedEventDetails=EvaluationFailedEventDetails(error=error_name.error_name, cause=cause)
    )
    failure = FailureEventException(
        FailureEvent(
            env=env, error_name=error_name, event_type=HistoryEventType.EvaluationFailed, event_details=details
        )
    )
    env.event_manager.add_event(
        context=env.event_history_context,
        event_type=HistoryEventType.EvaluationFailed,
        event_details=EventDetails(evaluationFailedEventDetails=failure.get_evaluation_failed_event_details()),
    )
    return failure


def _virtual_datetime_module(clock: VirtualClock) -> types.SimpleNamespace:
    """A stand-in for the ``datetime`` module whose ``datetime.now()`` reads the virtual clock."""

    class VirtualDatetime(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> VirtualDatetime:  # type: ignore[override]
            return cls.fromtimestamp(clock.now(), tz)

        def isoformat(self, *args: Any, **kwargs: Any) -> str:
            if args or kwargs or self.utcoffset() is None or self.utcoffset().total_seconds() != 0:
                return super().isoformat(*args, **kwargs)
            return f"{self:%Y-%m-%dT%H:%M:%S}.{self.microsecond // 1000:03d}Z"

    return types.SimpleNamespace(datetime=VirtualDatetime, timezone=timezone, UTC=UTC)


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
