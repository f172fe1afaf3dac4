"""LocalStepFunctions: run a real Amazon States Language definition locally, on virtual time.

The execution's life (create, start, wait, stop, history) goes through moto's
Step Functions API; virtual time (Wait states, retry sleeps, TimeoutSeconds)
is kept here; moto is patched by :mod:`harness.sfn.hooks`.
"""

from __future__ import annotations

import io
import json
import math
import threading
import time
import traceback
import uuid
import zipfile
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import boto3
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.stepfunctions.parser import models as parser_models

from harness.clock import VirtualClock
from harness.sfn import history, hooks
from harness.sfn.lambdas import Handler, Injection, InProcessLambdas, Invocation
from jobsync import clock as jobsync_clock

_active: LocalStepFunctions | None = None


class HarnessError(RuntimeError):
    """The harness or moto's interpreter broke; not something the state machine did."""


@dataclass
class WaitRecord:
    """One entry into a Wait state: what it asked for and how long it really waited."""

    execution_arn: str
    state: str
    seconds: float
    started_at: float
    waited: float = 0.0


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


class LocalStepFunctions(InProcessLambdas):
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
        self.async_invocations: list[threading.Thread] = []
        # Callback tasks: wall seconds to wait for SendTaskSuccess before the virtual clock moves on, and by how much.
        self.callback_slice_seconds = 0.02
        self.callback_step_seconds = 30.0
        # .sync tasks: wall seconds between looks at the child execution.
        self.sync_poll_seconds = 0.002
        # Concurrent executions: a Wait moves time only once every other Wait that ends sooner has
        # moved it, and no Wait began or ended for ``wait_settle_seconds`` of wall time (see _wait_state).
        self.cooperative_waits = False
        self.wait_settle_seconds = 0.05
        self._sleepers: dict[object, tuple[float, threading.Event]] = {}
        # Executions at work in the interpreter (started, or woken from a wait, and not yet waiting again, in a
        # Lambda, or ended): time does not move for them, for up to busy_grace_seconds of wall time each.
        self._busy: dict[object, float] = {}
        self._parked_once: set[str] = set()
        self._execution_of_thread = threading.local()
        self.busy_grace_seconds = 5.0
        # Map iterations at work per execution (each worker thread of a Map counts while it is not parked).
        self._iterations: dict[str, int] = {}
        # Parents whose .sync task saw its child end, since when: see _observed.
        self._holds: dict[str, float] = {}
        self.observed_hold_seconds = 1.0
        self.time_steps = 0  # how often a cooperative sleeper moved the clock: each waited wait_settle_seconds first
        self.sleeper_idle_seconds = 1.0  # a sleeper not due looks again at least this often (wall s)
        self._sleepers_changed = threading.Condition()
        self._last_sleeper_change = 0.0
        # Children of .sync tasks, and those that ended before their parent's task saw it: time waits for it to.
        self._sync_children: set[str] = set()
        # The .sync task each thread runs: thread id -> (the child it waits for, the task's own environment).
        self._sync_waits: dict[int, tuple[str, Any]] = {}
        self._unobserved: set[str] = set()
        # Every "Step Functions Execution Status Change" event sent to the default bus, in order.
        self.status_changes: list[dict[str, Any]] = []

        self._function_arns: dict[str, str] = {}
        self._injections: dict[str, list[Injection]] = {}
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

    def history_types(self, exec_arn: str) -> list[str]:
        """The types of the execution's history events, in order, read once from moto's backend.

        For long histories: GetExecutionHistory copies the whole history for each page of
        1,000, so ``history`` of 25,000 events takes half a minute.
        """
        backend = parser_models.stepfunctions_parser_backends[DEFAULT_ACCOUNT_ID][self.region]
        env = backend.describe_execution(exec_arn).exec_worker.env
        return (
            [getattr(e["type"], "value", str(e["type"])) for e in env.event_manager._history_event_list] if env else []
        )

    def stop(self, exec_arn: str, error: str | None = None, cause: str | None = None) -> None:
        """StopExecution: the execution ends ABORTED, with ``error``/``cause`` in its ExecutionAborted event.

        Goes to moto's backend directly: moto's StopExecution API handler drops error and cause.
        """
        backend = parser_models.stepfunctions_parser_backends[DEFAULT_ACCOUNT_ID][self.region]
        backend.describe_execution(exec_arn).stop(stop_date=self.clock.utcnow(), error=error, cause=cause)

    def stop_if_running(self, exec_arn: str, error: str | None = None, cause: str | None = None) -> bool:
        """StopExecution unless the execution has already ended; returns whether it stopped it."""
        backend = parser_models.stepfunctions_parser_backends[DEFAULT_ACCOUNT_ID][self.region]
        execution = backend.describe_execution(exec_arn)
        if execution.exec_status != "RUNNING":
            return False
        execution.stop(stop_date=self.clock.utcnow(), error=error, cause=cause)
        return True

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

    @property
    def waits(self) -> list[float]:
        """Seconds each Wait state entry asked for, in order."""
        return [record.seconds for record in self.wait_records]

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
        if self._sleepers:
            self._wake_sleepers()
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
        if not self.cooperative_waits:
            record.waited = self._advance(seconds, env)
            return
        record.waited = self._cooperative_wait(env, seconds)

    def _cooperative_wait(self, env: Any, seconds: float) -> float:
        """A Wait among concurrent executions: time moves to the soonest Wait's end once all are waiting.

        One clock serves every execution. Moving it at once, as a lone execution's Wait
        does, would let one execution's Wait pass hours that another, still busy in a
        Lambda task, has not lived. Here each Wait records when it ends; the soonest moves
        the clock there, once no Wait has begun or ended for ``wait_settle_seconds`` of
        wall time (the others are waiting too, or in a .sync, callback or watch wait, which
        take part the same way: ``virtual_sleep``); those due by then end with it.
        """
        return self._cooperative_sleep(self.clock.now() + max(0.0, seconds), env.is_running, env=env)

    def virtual_sleep(
        self,
        seconds: float,
        wake: threading.Event | None = None,
        stop: Callable[[], bool] | None = None,
        until: float | None = None,
    ) -> float:
        """Let ``seconds`` of virtual time pass for a caller that is not a Wait state (a watch, a task token wait).

        Alone (``cooperative_waits`` off) the clock moves at once. Among concurrent executions the
        caller waits its turn as a Wait does, its end rounded up to a multiple of ``seconds`` so
        that every caller with the same step (a thousand open watches) moves time together.
        ``wake`` is the event the caller's other news arrives on (a task token's answer) and
        ``stop()`` says whether it has: the sleep then ends early. ``until``, when given, caps the
        rounded end (a timeout's deadline). Returns how far the clock moved meanwhile.
        """
        if not self.cooperative_waits:
            return self._advance(seconds)
        now = self.clock.now()
        target = now + seconds if seconds <= 0 else (math.floor(now / seconds) + 1) * seconds
        if until is not None:
            target = min(target, until)
        return self._cooperative_sleep(target, lambda: True, wake=wake, stop=stop)

    def _cooperative_sleep(
        self,
        target: float,
        running: Callable[[], bool],
        wake: threading.Event | None = None,
        stop: Callable[[], bool] | None = None,
        env: Any = None,
    ) -> float:
        """Sleep among the others until the clock reaches ``target`` (see ``_cooperative_wait``).

        Only the soonest sleeper looks, every ``wait_settle_seconds``, whether all is quiet; the
        others sleep on their own event until the clock passes them or they become the soonest
        (``_wake_sleepers``), so a thousand sleepers cost no more than one.
        """
        start = self.clock.now()
        key = object()
        event = wake or threading.Event()
        cv = self._sleepers_changed
        arn = hooks.execution_arn(env) if env is not None else self.current_execution()
        with cv:
            self._sleepers[key] = (target, event)
            self._last_sleeper_change = time.monotonic()
        if arn:
            self.parked(arn)
        try:
            while running() and self.clock.now() < target:
                if stop is not None and stop():
                    break
                event.clear()  # before looking: a wake from here on is not lost
                if stop is not None and stop():
                    break
                with cv:
                    soonest = min(t for t, _ in self._sleepers.values())
                    now = time.monotonic()
                    settled = now - self._last_sleeper_change >= self.wait_settle_seconds
                    settled = settled and not self._unobserved
                    settled = settled and all(now - since >= self.busy_grace_seconds for since in self._busy.values())
                    settled = settled and all(
                        now - since >= self.observed_hold_seconds for since in self._holds.values()
                    )
                if target <= soonest and settled:
                    self.time_steps += 1
                    self._advance(target - self.clock.now(), env)
                    continue
                event.wait(self.wait_settle_seconds if target <= soonest else self.sleeper_idle_seconds)
        finally:
            with cv:
                self._sleepers.pop(key, None)
                self._last_sleeper_change = time.monotonic()
            if arn and (env is None or env.is_running()):
                self.at_work(arn)
            self._wake_sleepers()
        return self.clock.now() - start

    def current_execution(self) -> str | None:
        """The execution whose thread this is (its worker thread), if any."""
        return getattr(self._execution_of_thread, "arn", None)

    def started(self, arn: str, this_thread: bool = False) -> None:
        """An execution started: at work until it first waits, calls a Lambda or ends."""
        if this_thread:
            self._execution_of_thread.arn = arn
        with self._sleepers_changed:
            if arn not in self._parked_once:  # its thread may have got there first
                self._busy.setdefault(arn, time.monotonic())
            self._last_sleeper_change = time.monotonic()

    def parked(self, arn: str) -> None:
        """The execution waits (a Wait, a task token, a .sync child), is in a Lambda, or ended.

        On one of its Map's worker threads only that iteration parks: the others may still be at work.
        """
        if getattr(self._execution_of_thread, "iteration", None) == arn:
            self.iteration_parked(arn)
            return
        with self._sleepers_changed:
            self._parked_once.add(arn)
            self._busy.pop(arn, None)
            self._holds.pop(arn, None)
            self._last_sleeper_change = time.monotonic()

    def at_work(self, arn: str) -> None:
        """The execution goes on in the interpreter (its wait ended, its Lambda answered)."""
        if getattr(self._execution_of_thread, "iteration", None) == arn:
            self.iteration_at_work(arn)
            return
        with self._sleepers_changed:
            self._parked_once.add(arn)
            self._busy[arn] = time.monotonic()
            self._last_sleeper_change = time.monotonic()

    def iteration_began(self, arn: str) -> None:
        """This thread runs iterations of a Map of ``arn``: at work until it parks or ends."""
        self._execution_of_thread.iteration = arn
        self.iteration_at_work(arn)

    def iteration_ended(self, arn: str) -> None:
        self.iteration_parked(arn)
        self._execution_of_thread.iteration = None

    def in_iterations(self, arn: str) -> bool:
        """Whether a Map of ``arn`` has an iteration at work (a .sync task's thread cannot tell its own)."""
        with self._sleepers_changed:
            return self._iterations.get(arn, 0) > 0

    def iteration_at_work(self, arn: str) -> None:
        """One of the Map's iterations goes on in the interpreter: time waits for it, as for an execution."""
        with self._sleepers_changed:
            self._iterations[arn] = self._iterations.get(arn, 0) + 1
            self._busy[("iterations", arn)] = time.monotonic()
            self._last_sleeper_change = time.monotonic()

    def iteration_parked(self, arn: str) -> None:
        with self._sleepers_changed:
            left = self._iterations.get(arn, 0) - 1
            if left > 0:
                self._iterations[arn] = left
            else:
                self._iterations.pop(arn, None)
                self._busy.pop(("iterations", arn), None)
            self._holds.pop(arn, None)
            self._last_sleeper_change = time.monotonic()

    def _wake_sleepers(self) -> None:
        """Wake the sleepers the clock has reached, and the soonest of the rest (it looks next)."""
        with self._sleepers_changed:
            if not self._sleepers:
                return
            now = self.clock.now()
            soonest = min(self._sleepers.values(), key=lambda sleeper: sleeper[0])
            soonest[1].set()
            for target, event in self._sleepers.values():
                if target <= now:
                    event.set()

    def _sync_sleep(self, seconds: float) -> None:
        """A .sync task's pause between looks at its child: until the child ends or the task's execution stops.

        Waits on the child's end (``_done_event``), checking the task's own execution every
        ``sync_poll_seconds``; at most ``seconds`` (moto's 0.5 s), then the task looks anyway.
        """
        waiting = self._sync_waits.get(threading.get_ident())
        if waiting is None:
            time.sleep(min(seconds, self.sync_poll_seconds))
            return
        child, env = waiting
        done = self._done_event(child)
        deadline = time.monotonic() + seconds
        while env.is_running() and not done.wait(min(self.sync_poll_seconds, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                return

    def _retry_sleep(self, seconds: float) -> None:
        self.retry_sleeps.append(seconds)
        self._advance(seconds)

    def activity(self) -> None:
        """Something happened (an execution started or ended, a Lambda ran): a cooperative Wait settles anew."""
        with self._sleepers_changed:
            self._last_sleeper_change = time.monotonic()

    def _observed(self, child_arn: str, parent_arn: str | None = None) -> None:
        """A .sync task has seen its child end: its parent moves on, and time stands still until it waits again.

        The parent's next step (a Map's next iteration starting the next child, say) runs on
        moto's threads, which may take longer than ``wait_settle_seconds`` on a loaded machine:
        until the parent parks again, or ``observed_hold_seconds`` pass, the clock does not move.
        """
        with self._sleepers_changed:
            self._unobserved.discard(child_arn)
            self._sync_children.discard(child_arn)
            if parent_arn is not None:
                self._holds[parent_arn] = time.monotonic()
            self._last_sleeper_change = time.monotonic()
            self._sleepers_changed.notify_all()

    def _emit_status_change(self, exec_arn: str) -> None:
        """Send the execution's status change event to the default bus, as the service does when it ends."""
        with self._sleepers_changed:
            if exec_arn in self._sync_children:
                self._unobserved.add(exec_arn)
            self._last_sleeper_change = time.monotonic()
        try:
            description = self._sfn.describe_execution(executionArn=exec_arn)
        except Exception as exc:  # a harness bug: keep it for wait() to report
            self.internal_errors.append(exc)
            return
        event = status_change_event(description)
        self.status_changes.append(event)
        boto3.client("events", region_name=self.region).put_events(
            Entries=[
                {
                    "Source": event["source"],
                    "DetailType": event["detail-type"],
                    "Resources": event["resources"],
                    "Detail": json.dumps(event["detail"]),
                }
            ]
        )

    def _done_event(self, exec_arn: str) -> threading.Event:
        with self._lock:
            return self._done.setdefault(exec_arn, threading.Event())

    # ----------------------------------------------------------------- moto hooks

    def _install_hooks(self, stack: ExitStack) -> None:
        """Patch moto's interpreter with :data:`harness.sfn.hooks.HOOKS`, in order, until ``stack`` closes;
        and its GetExecutionHistory (:mod:`harness.sfn.history`)."""
        hooks.install(self, stack, (*hooks.HOOKS, history.execution_history_in_pages))
