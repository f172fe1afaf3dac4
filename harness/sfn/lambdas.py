"""Lambda, in-process: the mapped handlers run as the Python runtime would run them, with injectable errors."""

from __future__ import annotations

import json
import threading
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.clock import VirtualClock
from harness.sfn import moto
from harness.sfn.moto import JsonRESTError

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


@dataclass
class Invocation:
    """One call of a mapped Lambda function, as the Lambda service saw it."""

    function_name: str
    event: Any
    request_id: str
    at: float
    result: Any = None
    error: dict | None = None  # the error payload Lambda returned (errorType, errorMessage, ...)
    answered: float | None = None  # when the handler returned (a watch holds the call open)


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
class Injection:
    """Errors queued for a function's next ``times`` invocations."""

    error: str
    cause: str | None
    call_handler: bool
    times: int


class InProcessLambdas:
    """The Lambda side of :class:`~harness.sfn.LocalStepFunctions`: invocations, error and timeout injection.

    The ``lambda_runs_in_process`` hook calls ``_invoke`` from moto's Lambda backend,
    for the functions in ``handlers``; ``_advance`` (virtual time) is LocalStepFunctions'.
    """

    handlers: dict[str, Handler]
    clock: VirtualClock
    invocations: list[Invocation]
    internal_errors: list[BaseException]
    async_invocations: list[threading.Thread]
    _injections: dict[str, list[Injection]]
    _lock: threading.Lock
    _advance: Callable[[float], float]

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
        self._injections.setdefault(function_name, []).append(Injection(error, cause, call_handler, times))

    def inject_lambda_timeout(self, function_name: str, times: int = 1, call_handler: bool = False) -> None:
        """The next ``times`` invocations run into the function's timeout.

        As in AWS: Invoke returns FunctionError=Unhandled with errorType
        ``Sandbox.Timedout`` and "Task timed out after N.00 seconds"; Step Functions
        reports the error ``Sandbox.Timedout``. The virtual clock moves on by the
        function's timeout.
        """
        self.inject_lambda_error(function_name, "Sandbox.Timedout", None, times, call_handler)

    def _invoke(self, function: Any, handler: Handler, body: Any, response_headers: dict) -> bytes:
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
                # A handler that runs elsewhere (a container) raises with the payload its runtime returned.
                error = getattr(exc, "lambda_error", None) or runtime_error(exc, request_id)
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
        record.answered = self.clock.now()
        return payload.encode()

    def invoke_async(self, function_arn: str, event: Any) -> threading.Thread:
        """Invoke a function as EventBridge does (InvocationType Event): in a thread, the caller does not wait."""

        parts = function_arn.split(":")  # arn:aws:lambda:<region>:<account>:function:<name>
        region, account, name = parts[3], parts[4], parts[6]

        def run() -> None:
            try:
                function = moto.lambda_function(account, region, name)
                function.invoke(json.dumps(event), {}, {})
            except BaseException as exc:  # a harness bug: keep it for wait() to report
                self.internal_errors.append(exc)

        thread = threading.Thread(target=run, name=f"event-{name}", daemon=True)
        thread.start()
        self.async_invocations.append(thread)
        return thread

    def _take_injection(self, function_name: str) -> Injection | None:
        with self._lock:
            queue = self._injections.get(function_name) or []
            if not queue:
                return None
            injection = queue[0]
            injection.times -= 1
            if injection.times <= 0:
                queue.pop(0)
            return injection


def runtime_error(exc: BaseException, request_id: str) -> dict:
    """The payload the Lambda Python runtime returns for an uncaught exception."""
    frames = traceback.extract_tb(exc.__traceback__.tb_next if exc.__traceback__ else None)
    return {
        "errorMessage": str(exc),
        "errorType": type(exc).__name__,
        "requestId": request_id,
        "stackTrace": traceback.format_list(frames),
    }
