"""LocalStepFunctions: run a real Amazon States Language definition locally, on virtual time.

The execution's life (create, start, wait, stop, history) goes through moto's
Step Functions API; virtual time (Wait states, retry sleeps, TimeoutSeconds)
is kept here; moto is patched by :mod:`harness.sfn.hooks`.
"""

from __future__ import annotations

import io
import json
import threading
import time
import traceback
import uuid
import zipfile
from contextlib import ExitStack
from typing import Any

import boto3
from moto import mock_aws

from harness.clock import VirtualClock
from harness.sfn import history, hooks, moto
from harness.sfn.definition import check_definition
from harness.sfn.lambdas import Handler, Injection, InProcessLambdas, Invocation
from harness.sfn.scheduler import VirtualTime
from jobsync import clock as jobsync_clock

_active: LocalStepFunctions | None = None


class HarnessError(RuntimeError):
    """The harness or moto's interpreter broke; not something the state machine did."""


def status_change_event(description: dict[str, Any]) -> dict[str, Any]:
    """The "Step Functions Execution Status Change" event for a DescribeExecution response."""
    arn = description["executionArn"]

    def millis(date: Any) -> int | None:
        return int(date.timestamp() * 1000) if date else None

    stopped = description.get("stopDate") or description.get("startDate")
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "time": stopped.strftime("%Y-%m-%dT%H:%M:%SZ") if stopped else None,
        "detail-type": "Step Functions Execution Status Change",
        "source": "aws.states",
        "account": arn.split(":")[4],
        "region": arn.split(":")[3],
        "resources": [arn],
        "detail": {
            "executionArn": arn,
            "stateMachineArn": description["stateMachineArn"],
            "name": description["name"],
            "status": description["status"],
            "startDate": millis(description.get("startDate")),
            "stopDate": millis(description.get("stopDate")),
            "input": description.get("input"),
            "output": description.get("output"),
            "inputDetails": {"included": True},
            "outputDetails": {"included": True} if description.get("output") else None,
            "error": description.get("error"),
            "cause": description.get("cause"),
        },
    }


class LocalStepFunctions(InProcessLambdas, VirtualTime):
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
        self.internal_errors: list[BaseException] = []
        self.async_invocations: list[threading.Thread] = []
        self._init_virtual_time()
        # Every "Step Functions Execution Status Change" event sent to the default bus, in order.
        self.status_changes: list[dict[str, Any]] = []

        self._function_arns: dict[str, str] = {}
        self._injections: dict[str, list[Injection]] = {}
        self._done: dict[str, threading.Event] = {}
        self._crashes: dict[str, BaseException] = {}
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
        check_definition(json.loads(text))
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

    def history_types(self, exec_arn: str) -> list[str]:
        """The types of the execution's history events, in order, read once from moto's backend.

        For long histories: GetExecutionHistory copies the whole history for each page of
        1,000, so ``history`` of a long one is slow.
        """
        backend = moto.backend(self.region)
        env = backend.describe_execution(exec_arn).exec_worker.env
        return (
            [getattr(e["type"], "value", str(e["type"])) for e in moto.history_list(env.event_manager)] if env else []
        )

    def started_by(self, exec_arn: str) -> list[str]:
        """The executions an execution's ``states:startExecution`` tasks started, in order (TaskSubmitted).

        Read once from moto's backend, as ``history_types``: a Map Run's thousand children would
        each cost a GetExecutionHistory.
        """
        backend = moto.backend(self.region)
        env = backend.describe_execution(exec_arn).exec_worker.env
        started = []
        for event in moto.history_list(env.event_manager) if env else []:
            details = event.get("taskSubmittedEventDetails")
            if details and details.get("resourceType") == "states" and details.get("output"):
                started.append(str(json.loads(details["output"])["ExecutionArn"]))
        return started

    def stop(self, exec_arn: str, error: str | None = None, cause: str | None = None) -> None:
        """StopExecution: the execution ends ABORTED, with ``error``/``cause`` in its ExecutionAborted event.

        Goes to moto's backend directly: moto's StopExecution API handler drops error and cause.
        """
        backend = moto.backend(self.region)
        execution = backend.describe_execution(exec_arn)
        self._until_stoppable(execution)
        execution.stop(stop_date=self.clock.utcnow(), error=error, cause=cause)

    def stop_if_running(self, exec_arn: str, error: str | None = None, cause: str | None = None) -> bool:
        """StopExecution unless the execution has already ended; returns whether it stopped it."""
        backend = moto.backend(self.region)
        execution = backend.describe_execution(exec_arn)
        self._until_stoppable(execution)
        if execution.exec_status != "RUNNING":
            return False
        execution.stop(stop_date=self.clock.utcnow(), error=error, cause=cause)
        return True

    @staticmethod
    def _until_stoppable(execution: Any, timeout_s: float = 10.0) -> None:
        """Wait (wall clock) until a just-started execution runs its program: moto would drop a stop before.

        StartExecution returns before moto's thread has built the execution's environment and entered
        its first state; a StopExecution then is lost (or raises), where the service stops the execution.
        """
        deadline = time.monotonic() + timeout_s
        while execution.exec_status == "RUNNING" and time.monotonic() < deadline:
            env = moto.execution_env(execution)
            if env is not None and env.is_running():
                return
            time.sleep(0.001)

    def settle(self, timeout_s: float = 30.0) -> None:
        """Wait (wall clock) for the asynchronous invocations in flight: EventBridge's deliveries to Lambda."""
        deadline = time.monotonic() + timeout_s
        while True:
            pending = [thread for thread in list(self.async_invocations) if thread.is_alive()]
            if not pending:
                return
            if time.monotonic() > deadline:
                raise HarnessError(f"{len(pending)} asynchronous invocations still running after {timeout_s}s")
            pending[0].join(max(0.0, deadline - time.monotonic()))

    def _emit_status_change(self, exec_arn: str) -> None:
        """Send the execution's status change event to the default bus, as the service does when it ends."""
        with self._sleepers_changed:
            if exec_arn in self._sync_children:
                self._unobserved.add(exec_arn)
            self._last_sleeper_change = time.monotonic()
        try:
            # Read from moto's backend and put on its bus directly: a Map Run's thousands of children end
            # each with this event, and two API round trips through moto would cost more than the children.
            description = moto.describe_output(moto.backend(self.region).describe_execution(exec_arn))
        except Exception as exc:  # a harness bug: keep it for wait() to report
            self.internal_errors.append(exc)
            return
        event = status_change_event(description)
        self.status_changes.append(event)
        entry = {
            "Source": event["source"],
            "DetailType": event["detail-type"],
            "Resources": event["resources"],
            "Detail": json.dumps(event["detail"]),
        }
        moto.put_events(self.region, [entry])

    def _done_event(self, exec_arn: str) -> threading.Event:
        with self._lock:
            return self._done.setdefault(exec_arn, threading.Event())

    # ----------------------------------------------------------------- moto hooks

    def _install_hooks(self, stack: ExitStack) -> None:
        """Patch moto's interpreter with :data:`harness.sfn.hooks.HOOKS`, in order, until ``stack`` closes;
        and its GetExecutionHistory (:mod:`harness.sfn.history`)."""
        hooks.install(self, stack, (*hooks.HOOKS, history.execution_history_in_pages))
