"""Run a real Amazon States Language definition locally, on virtual time.

moto's Step Functions interpreter (``execute_state_machine``) runs the
definition; ``lambda:invoke`` tasks call the real Python handlers in-process;
Wait states, retry back-off and every timestamp the execution shows go through
a :class:`~harness.clock.VirtualClock`, so a multi-hour run takes seconds.

    with LocalStepFunctions({"status": status.lambda_handler}) as sfn:
        arn = sfn.create_state_machine(definition, "jobsync", {"StatusFunctionArn": sfn.function_arn("status")})
        result = sfn.wait(sfn.start(arn, {"job": ...}))

Every hook into moto's internals lives in this module, each one commented with
the real behaviour it reproduces. They are written against moto 5.2.5 exactly
(and jsonata-python 0.7.1); importing this module with other versions raises.
"""

from __future__ import annotations

import importlib.metadata
import io
import json
import random
import threading
import traceback
import types
import uuid
import zipfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timezone
from typing import Any
from unittest import mock

_PINNED = {"moto": "5.2.5", "jsonata-python": "0.7.1"}
for _dist, _version in _PINNED.items():
    _installed = importlib.metadata.version(_dist)
    if _installed != _version:
        raise ImportError(
            f"harness.sfn patches {_dist} internals and is written for {_dist}=={_version}, "
            f"but {_dist}=={_installed} is installed: install the pinned requirements-dev.txt, "
            "or re-check every hook in harness/sfn.py against the new version."
        )

import boto3  # noqa: E402
import jsonata  # noqa: E402
import jsonata.timebox  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402
from moto import mock_aws  # noqa: E402
from moto.awslambda.models import LambdaFunction  # noqa: E402
from moto.core import DEFAULT_ACCOUNT_ID  # noqa: E402
from moto.core.exceptions import JsonRESTError  # noqa: E402
from moto.stepfunctions.parser import models as parser_models  # noqa: E402
from moto.stepfunctions.parser.api import EvaluationFailedEventDetails, HistoryEventType  # noqa: E402
from moto.stepfunctions.parser.asl.component import eval_component  # noqa: E402
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (  # noqa: E402
    FailureEvent,
    FailureEventException,
)
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName  # noqa: E402
from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name_type import (  # noqa: E402
    StatesErrorNameType,
)
from moto.stepfunctions.parser.asl.component.common.retry import jitter_strategy_decl, retrier_decl  # noqa: E402
from moto.stepfunctions.parser.asl.component.common.string.string_expression import StringJSONata  # noqa: E402
from moto.stepfunctions.parser.asl.component.program.program import Program  # noqa: E402
from moto.stepfunctions.parser.asl.component.state import state as state_module  # noqa: E402
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils  # noqa: E402
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import Timestamp  # noqa: E402
from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction  # noqa: E402
from moto.stepfunctions.parser.asl.eval import states as states_module  # noqa: E402
from moto.stepfunctions.parser.asl.eval import variable_store as variable_store_module  # noqa: E402
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails  # noqa: E402
from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager  # noqa: E402
from moto.stepfunctions.parser.asl.jsonata import jsonata as moto_jsonata  # noqa: E402
from moto.stepfunctions.parser.backend import execution as execution_module  # noqa: E402
from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker  # noqa: E402

from harness.clock import VirtualClock  # noqa: E402
from jobsync import clock as jobsync_clock  # noqa: E402

Handler = Callable[[Any, Any], Any]

# Lambda's own default status codes for the service errors a caller may inject.
_SERVICE_ERROR_STATUS = {
    "TooManyRequestsException": 429,
    "ResourceNotFoundException": 404,
    "ResourceNotReadyException": 502,
}
_SERVICE_ERROR_MESSAGE = {
    "TooManyRequestsException": "Rate Exceeded.",
    "ServiceException": "Lambda encountered an internal error.",
}

_active: LocalStepFunctions | None = None


class HarnessError(RuntimeError):
    """The harness or moto's interpreter broke; not something the state machine did."""


@dataclass
class Invocation:
    """One call of a mapped Lambda function, as the Lambda service saw it."""

    function_name: str
    event: Any
    request_id: str
    at: float
    result: Any = None
    error: dict | None = None  # the error payload Lambda returned (errorType, errorMessage, ...)


@dataclass
class WaitRecord:
    """One entry into a Wait state: what it asked for and how long it really waited."""

    execution_arn: str
    state: str
    seconds: float
    started_at: float
    waited: float = 0.0


@dataclass
class LambdaContext:
    """What the Python runtime passes as ``context``; remaining time runs on the virtual clock."""

    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int
    aws_request_id: str
    log_group_name: str
    log_stream_name: str
    function_version: str = "$LATEST"
    identity: Any = None
    client_context: Any = None
    _deadline: float = 0.0
    _clock: Callable[[], float] = field(default=lambda: 0.0, repr=False)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - self._clock()) * 1000))


@dataclass
class _Injection:
    error: str
    cause: str | None
    call_handler: bool
    times: int


class LocalStepFunctions:
    """moto's ASL interpreter with in-process Lambda handlers and virtual time (a context manager)."""

    def __init__(
        self,
        handlers: dict[str, Handler],
        clock: VirtualClock | None = None,
        region: str = "us-east-1",
        *,
        function_timeout_s: int = 30,
        memory_mb: int = 256,
        strict: bool = True,
        jitter_seed: int = 0,
    ) -> None:
        self.handlers = dict(handlers)
        self.clock = clock or VirtualClock()
        self.region = region
        self.function_timeout_s = function_timeout_s
        self.memory_mb = memory_mb
        # strict: wait() raises when moto's interpreter hit a Python exception
        # (it would otherwise turn it into a States.Runtime failure, or a Catch).
        self.strict = strict
        self.jitter_seed = jitter_seed

        self.invocations: list[Invocation] = []
        self.wait_records: list[WaitRecord] = []
        self.retry_sleeps: list[float] = []
        self.internal_errors: list[BaseException] = []

        self._function_arns: dict[str, str] = {}
        self._injections: dict[str, list[_Injection]] = {}
        self._done: dict[str, threading.Event] = {}
        self._crashes: dict[str, BaseException] = {}
        self._deadlines: dict[int, tuple[Any, float]] = {}  # id(env) -> (env, virtual deadline)
        self._lock = threading.Lock()
        self._stack: ExitStack | None = None

    # ----------------------------------------------------------------- lifecycle

    def __enter__(self) -> LocalStepFunctions:
        global _active
        if _active is not None:
            raise HarnessError("another LocalStepFunctions is active; the moto hooks are process-wide")
        stack = ExitStack()
        try:
            stack.enter_context(mock_aws(config={"stepfunctions": {"execute_state_machine": True}}))
            self._install_hooks(stack)
            previous_clock = jobsync_clock._now  # restore whatever the caller had, not just the wall clock
            jobsync_clock.set_clock(self.clock.now)
            stack.callback(jobsync_clock.set_clock, previous_clock)
            self._sfn = boto3.client("stepfunctions", region_name=self.region)
            self._role_arn = self._create_role()
            for name in self.handlers:
                self._function_arns[name] = self._create_function(name)
        except BaseException:
            stack.close()
            raise
        self._stack = stack
        _active = self
        return self

    def __exit__(self, *exc_info: object) -> None:
        global _active
        try:
            self._stop_running()
        finally:
            _active = None
            if self._stack is not None:
                self._stack.close()
                self._stack = None

    def _stop_running(self) -> None:
        # A test that failed before wait() leaves a thread in moto's interpreter;
        # stop it while the hooks are still in place, so it ends on virtual time.
        for arn, done in list(self._done.items()):
            if not done.is_set():
                self.stop(arn, error="HarnessExit", cause="LocalStepFunctions closed")
                done.wait(5)

    def _create_role(self) -> str:
        iam = boto3.client("iam", region_name=self.region)
        trust = {"Version": "2012-10-17", "Statement": []}
        role = iam.create_role(RoleName="jobsync-local", AssumeRolePolicyDocument=json.dumps(trust))
        return role["Role"]["Arn"]

    def _create_function(self, name: str) -> str:
        # A real function in moto's Lambda backend, so ARNs, qualifiers and
        # ResourceNotFoundException resolve as in AWS; its code is never run.
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("handler.py", "")
        function = boto3.client("lambda", region_name=self.region).create_function(
            FunctionName=name,
            Runtime="python3.11",
            Role=self._role_arn,
            Handler="handler.lambda_handler",
            Code={"ZipFile": archive.getvalue()},
            Timeout=self.function_timeout_s,
            MemorySize=self.memory_mb,
        )
        return function["FunctionArn"]

    # ----------------------------------------------------------------- public API

    def function_arn(self, name: str) -> str:
        return self._function_arns[name]

    def create_state_machine(
        self, definition: str | dict, name: str, substitutions: dict[str, str] | None = None
    ) -> str:
        """Create the machine as SAM would: ``${Key}`` DefinitionSubstitutions replaced first."""
        text = definition if isinstance(definition, str) else json.dumps(definition)
        for key, value in (substitutions or {}).items():
            text = text.replace("${" + key + "}", value)
        leftover = sorted({part.split("}", 1)[0] for part in text.split("${")[1:]})
        if leftover:
            raise HarnessError(f"definition substitutions missing for: {', '.join(leftover)}")
        response = self._sfn.create_state_machine(name=name, definition=text, roleArn=self._role_arn)
        return response["stateMachineArn"]

    def start(self, sm_arn: str, input: Any = None, name: str | None = None) -> str:
        """StartExecution; returns the execution ARN. The name defaults to a UUID, as in AWS."""
        name = name or str(uuid.uuid4())
        arn = self._sfn.start_execution(
            stateMachineArn=sm_arn, name=name, input=json.dumps({} if input is None else input)
        )["executionArn"]
        self._done_event(arn)
        return arn

    def wait(self, exec_arn: str, timeout_s: float = 30.0) -> dict:
        """Block (wall clock) until the execution is no longer RUNNING; returns DescribeExecution."""
        if not self._done_event(exec_arn).wait(timeout_s):
            tail = [event["type"] for event in self.history(exec_arn)[-12:]]
            raise HarnessError(f"{exec_arn} still RUNNING after {timeout_s}s of wall time; last events: {tail}")
        if exec_arn in self._crashes:
            raise HarnessError(f"moto's interpreter thread crashed for {exec_arn}") from self._crashes[exec_arn]
        if self.strict and self.internal_errors:
            details = "\n".join("".join(traceback.format_exception(exc)) for exc in self.internal_errors)
            raise HarnessError(f"moto's interpreter hit Python exceptions (strict=True):\n{details}")
        description = self._sfn.describe_execution(executionArn=exec_arn)
        description.pop("ResponseMetadata", None)
        return description

    def history(self, exec_arn: str) -> list[dict]:
        events: list[dict] = []
        kwargs: dict[str, Any] = {"executionArn": exec_arn}
        while True:
            page = self._sfn.get_execution_history(**kwargs)
            events.extend(page["events"])
            if not page.get("nextToken"):
                return events
            kwargs["nextToken"] = page["nextToken"]

    def stop(self, exec_arn: str, error: str | None = None, cause: str | None = None) -> None:
        """StopExecution: the execution ends ABORTED, with ``error``/``cause`` in its ExecutionAborted event.

        Goes to moto's backend directly: moto's StopExecution API handler drops error and cause.
        """
        backend = parser_models.stepfunctions_parser_backends[DEFAULT_ACCOUNT_ID][self.region]
        backend.describe_execution(exec_arn).stop(stop_date=self.clock.utcnow(), error=error, cause=cause)

    def inject_lambda_error(
        self, function_name: str, error: str, cause: str | None = None, times: int = 1, call_handler: bool = False
    ) -> None:
        """Make the next ``times`` invocations of ``function_name`` fail.

        ``Lambda.<Code>`` (Lambda.ServiceException, Lambda.TooManyRequestsException, ...)
        is a Lambda *service* error: the Invoke API call itself fails, the handler
        never runs, and Step Functions reports ``Lambda.<Code>``. Any other name is
        a *function* error: Lambda answers with FunctionError=Unhandled and an
        errorType of that name, which Step Functions reports as the error (as it
        does for an exception the handler raises). With ``call_handler`` a
        function error comes after the handler ran: its side effects happen,
        its result is lost.
        """
        if error.startswith("States."):
            raise ValueError("States.* errors come from Step Functions itself, not from Lambda")
        self._injections.setdefault(function_name, []).append(_Injection(error, cause, call_handler, times))

    def inject_lambda_timeout(self, function_name: str, times: int = 1, call_handler: bool = False) -> None:
        """The next ``times`` invocations run into the function's timeout.

        As in AWS: Invoke returns FunctionError=Unhandled with errorType
        ``Sandbox.Timedout`` and "Task timed out after N.00 seconds"; Step Functions
        reports the error ``Sandbox.Timedout``. The virtual clock moves on by the
        function's timeout.
        """
        self.inject_lambda_error(function_name, "Sandbox.Timedout", None, times, call_handler)

    @property
    def waits(self) -> list[float]:
        """Seconds each Wait state entry asked for, in order."""
        return [record.seconds for record in self.wait_records]

    # ----------------------------------------------------------------- Lambda, in-process

    def _invoke(self, function: LambdaFunction, handler: Handler, body: Any, response_headers: dict) -> bytes:
        event = json.loads(body) if body else {}  # the JSON the service received: a fresh copy
        request_id = str(uuid.uuid4())
        record = Invocation(function.function_name, event, request_id, self.clock.now())
        self.invocations.append(record)
        response_headers["x-amz-executed-version"] = "$LATEST"
        injection = self._take_injection(function.function_name)
        if injection is not None and injection.error.startswith("Lambda."):
            code = injection.error.removeprefix("Lambda.")
            record.error = {"errorType": injection.error, "errorMessage": injection.cause or ""}
            service_error = JsonRESTError(code, injection.cause or _SERVICE_ERROR_MESSAGE.get(code, code))
            service_error.code = _SERVICE_ERROR_STATUS.get(code, 500)
            raise service_error

        error: dict | None = None
        payload = "null"
        if injection is None or injection.call_handler:
            timeout = float(function.timeout)
            context = LambdaContext(
                function_name=function.function_name,
                invoked_function_arn=function.function_arn,
                memory_limit_in_mb=int(function.memory_size),
                aws_request_id=request_id,
                log_group_name=f"/aws/lambda/{function.function_name}",
                log_stream_name=f"{self.clock.utcnow():%Y/%m/%d}/[$LATEST]{uuid.uuid4().hex}",
                _deadline=self.clock.now() + timeout,
                _clock=self.clock.now,
            )
            try:
                result = handler(event, context)
            except Exception as exc:  # what the Python runtime reports for an uncaught exception
                error = _runtime_error(exc, request_id)
            else:
                try:
                    payload = json.dumps(result)
                except (TypeError, ValueError) as exc:
                    error = {
                        "errorMessage": f"Unable to marshal response: {exc}",
                        "errorType": "Runtime.MarshalError",
                        "requestId": request_id,
                        "stackTrace": [],
                    }
        if injection is not None and injection.error == "Sandbox.Timedout":
            timeout = float(function.timeout)
            error = {
                "errorType": "Sandbox.Timedout",
                "errorMessage": f"RequestId: {request_id} Error: Task timed out after {timeout:.2f} seconds",
            }
            self._advance(timeout)
        elif injection is not None:
            error = {"errorType": injection.error, "errorMessage": injection.cause or "", "requestId": request_id}

        if error is not None:
            record.error = error
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps(error).encode()
        record.result = json.loads(payload)
        return payload.encode()

    def _take_injection(self, function_name: str) -> _Injection | None:
        with self._lock:
            queue = self._injections.get(function_name) or []
            if not queue:
                return None
            injection = queue[0]
            injection.times -= 1
            if injection.times <= 0:
                queue.pop(0)
            return injection

    # ----------------------------------------------------------------- virtual time

    def _advance(self, seconds: float, env: Any = None) -> float:
        """Move virtual time on by ``seconds``; returns how far it really moved.

        Stops early when ``env`` stops running (StopExecution from a clock
        callback) or when a running execution reaches its TimeoutSeconds, which
        then times out, as the service does on its own clock.
        """
        start = self.clock.now()
        target = start + max(0.0, seconds)
        while self.clock.now() < target:
            now = self.clock.now()
            pending = [deadline for _, deadline in list(self._deadlines.values()) if deadline > now]
            self.clock.advance_to(min([target, *pending]), stop=(lambda: not env.is_running()) if env else None)
            if self._fire_deadlines() or (env is not None and not env.is_running()):
                break
        return self.clock.now() - start

    def _fire_deadlines(self) -> bool:
        fired = False
        for env, deadline in list(self._deadlines.values()):
            if deadline <= self.clock.now() and env.is_running():
                env.set_timed_out()
                fired = True
        return fired

    def _wait_state(self, env: Any, seconds: float) -> None:
        context = env.states.context_object.context_object_data
        record = WaitRecord(context["Execution"]["Id"], context["State"]["Name"], seconds, self.clock.now())
        self.wait_records.append(record)
        record.waited = self._advance(seconds, env)

    def _retry_sleep(self, seconds: float) -> None:
        self.retry_sleeps.append(seconds)
        self._advance(seconds)

    def _done_event(self, exec_arn: str) -> threading.Event:
        with self._lock:
            return self._done.setdefault(exec_arn, threading.Event())

    # ----------------------------------------------------------------- moto hooks

    def _install_hooks(self, stack: ExitStack) -> None:
        # One flat list of hooks, read top to bottom; each says what it reproduces.
        harness = self
        clock = self.clock

        def patch(target: Any, attribute: str, value: Any) -> None:
            stack.enter_context(mock.patch.object(target, attribute, value))

        # 1. JSONata. moto composes each expression with its variables as JSONata
        #    literals and hands the text to an evaluator it leaves unset (upstream
        #    it is a JVM bridge). jsonata-python evaluates it.
        patch(moto_jsonata, "_eval_jsonata", _evaluate_jsonata)

        # 2. moto writes string variables as f'"{value}"', unescaped: a quote, a
        #    backslash or a newline in any $states value or Assign'd string breaks
        #    the expression. Encode every value as JSON (which JSONata reads).
        for module in (moto_jsonata, states_module, variable_store_module):
            patch(module, "encode_jsonata_variable_declarations", _encode_jsonata_variable_declarations)

        # 3. A JSONata runtime error is a States.QueryEvaluationError failure in AWS
        #    (catchable, with an EvaluationFailed event); in moto it escapes as a
        #    Python exception and becomes States.Runtime.
        original_string_jsonata = StringJSONata._eval_body

        def string_jsonata_eval_body(component: StringJSONata, env: Any) -> None:
            try:
                original_string_jsonata(component, env)
            except moto_jsonata.JSONataException as exc:
                raise _query_evaluation_error(env, component.expression, exc) from exc

        patch(StringJSONata, "_eval_body", string_jsonata_eval_body)

        # 4. $now() and $millis() read the service clock: the virtual one.
        patch(jsonata.timebox.Timebox, "current_milli_time", staticmethod(lambda: int(clock.now() * 1000)))

        # 5. lambda:invoke (and a bare function ARN as Resource) reach moto's Lambda
        #    backend through a real Invoke call; moto would start a Docker container.
        #    Functions the harness maps run in-process instead.
        original_invoke = LambdaFunction.invoke

        def lambda_invoke(function: LambdaFunction, body: Any, request_headers: Any, response_headers: Any) -> Any:
            handler = harness.handlers.get(function.function_name)
            if handler is None:
                return original_invoke(function, body, request_headers, response_headers)
            try:
                return harness._invoke(function, handler, body, response_headers)
            except JsonRESTError:
                raise  # an injected service error: Step Functions sees Lambda.<Code>
            except BaseException as exc:  # handler errors are caught inside; this is a harness or callback bug
                harness.internal_errors.append(exc)
                raise

        patch(LambdaFunction, "invoke", lambda_invoke)

        # 5b. Speed only: moto builds a new boto3 Lambda client for every task
        #     (~17 ms, a third of a poll iteration). Reuse one per region.
        clients: dict[tuple[str, str], Any] = {}
        original_client_for = lambda_eval_utils.boto_client_for

        def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
            with harness._lock:
                if (region, service) not in clients:
                    clients[region, service] = original_client_for(region, service, state_credentials)
                return clients[region, service]

        patch(lambda_eval_utils, "boto_client_for", boto_client_for)

        # 6. Wait states block on the wall clock in moto; here they move the virtual
        #    clock (and are recorded). A StopExecution during the Wait ends it there.
        patch(WaitFunction, "_wait_interval", lambda wait_fn, env, wait_seconds: harness._wait_state(env, wait_seconds))

        # 7. Wait "Timestamp": moto compares a UTC timestamp with the naive *local*
        #    datetime.now() (wrong outside UTC) and truncates to whole seconds.
        def timestamp_wait_seconds(wait_fn: Timestamp, env: Any) -> float:
            wait_fn.string.eval(env=env)
            text = env.stack.pop()
            parsed = wait_fn._from_timestamp_string(timestamp=text)
            if parsed is None:
                raise FailureEventException(wait_fn._create_failure_event(env, text))
            return parsed.replace(tzinfo=UTC).timestamp() - clock.now()

        patch(Timestamp, "_get_wait_seconds", timestamp_wait_seconds)

        # 8. Retry back-off (IntervalSeconds x BackoffRate^n, MaxDelaySeconds,
        #    JitterStrategy) is computed by moto and slept with time.sleep: virtual.
        #    FULL jitter draws from a seeded generator so runs repeat.
        patch(retrier_decl, "time", types.SimpleNamespace(sleep=harness._retry_sleep))
        patch(jitter_strategy_decl, "random", random.Random(self.jitter_seed))

        # 9. Timestamps: $states.context.Execution.StartTime, State.EnteredTime, the
        #    history events, startDate/stopDate all come from the virtual clock, and
        #    the context object shows them as AWS does: 2025-01-01T00:00:00.000Z.
        virtual_datetime = _virtual_datetime_module(clock)
        for module in (state_module, parser_models, execution_module):
            patch(module, "datetime", virtual_datetime)
        patch(EventManager, "_get_current_timestamp", staticmethod(lambda: datetime.fromtimestamp(clock.now(), UTC)))

        # 10. An execution's TimeoutSeconds: moto joins the program thread with a
        #     wall-clock timeout. Run it in the execution thread and let the virtual
        #     clock time it out (see _advance).
        def program_eval(program: Program, env: Any) -> None:
            if program.timeout_seconds and not env.is_frame():
                harness._deadlines[id(env)] = (env, clock.now() + program.timeout_seconds.timeout_seconds)
            try:
                env.next_state_name = program.start_at.start_at_name
                eval_component.EvalComponent.eval(program, env)
            finally:
                harness._deadlines.pop(id(env), None)

        patch(Program, "eval", program_eval)

        # 11. An exception in the execution thread kills it silently in moto (the
        #     execution stays RUNNING forever). Record it for wait(), and signal
        #     the end of every execution so wait() needs no polling.
        original_logic = ExecutionWorker._execution_logic

        def execution_logic(worker: ExecutionWorker) -> None:
            arn = worker._evaluation_details.execution_details.arn
            try:
                original_logic(worker)
            except BaseException as exc:
                harness._crashes[arn] = exc
            finally:
                harness._done_event(arn).set()

        patch(ExecutionWorker, "_execution_logic", execution_logic)

        # 12. A Python exception inside a state (a moto or harness bug, a callback
        #     that raised) is logged here, then turned into States.Runtime - which
        #     a Catch on States.ALL would hide. Keep it for wait() to raise.
        original_log_exception = eval_component.EvalComponent._log_exception

        def log_exception(component: Any, exception: Exception) -> None:
            expected = isinstance(exception, ClientError) or type(exception).__module__.startswith(
                "moto.stepfunctions.parser"
            )
            if not expected and not any(exception is seen for seen in harness.internal_errors):
                harness.internal_errors.append(exception)
            original_log_exception(component, exception)

        patch(eval_component.EvalComponent, "_log_exception", log_exception)


# --------------------------------------------------------------------- helpers


def _evaluate_jsonata(expression: str) -> Any:
    try:
        return jsonata.Jsonata(expression).evaluate(None)
    except Exception as exc:
        raise moto_jsonata.JSONataException(getattr(exc, "error", type(exc).__name__), str(exc)) from exc


def _json_default(value: Any) -> Any:
    # What moto's own encoder does with non-JSON values: dates as ISO text, the rest as str().
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _encode_jsonata_variable_declarations(bindings: dict[str, Any]) -> str:
    return "".join(
        f"{name}:={json.dumps(value, ensure_ascii=False, separators=(',', ':'), default=_json_default)};"
        for name, value in bindings.items()
    )


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


def _runtime_error(exc: BaseException, request_id: str) -> dict:
    """The payload the Lambda Python runtime returns for an uncaught exception."""
    frames = traceback.extract_tb(exc.__traceback__.tb_next if exc.__traceback__ else None)
    return {
        "errorMessage": str(exc),
        "errorType": type(exc).__name__,
        "requestId": request_id,
        "stackTrace": traceback.format_list(frames),
    }


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
