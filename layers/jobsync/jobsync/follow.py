"""Start an execution from a terminal and follow it: ``jobsync run``, ``jobsync status``, ``jobsync list``.

Everything is read from the execution's history (``GetExecutionHistory``), the
one record Step Functions keeps: each ``lambda:invoke`` task that succeeded has
a ``TaskSucceeded`` event whose ``output`` is the Invoke result as a JSON string,
``{"ExecutedVersion": ..., "Payload": {...loop state...}, "StatusCode": 200, ...}``.
Submit's and each Status's loop state become one line, in the shape of ``make
demo``::

    +00:01:55  RUNNING    PyTorchJobRunning            next wait 30s

and the execution's last event (``ExecutionSucceeded``, ``ExecutionFailed``,
``ExecutionAborted``, ``ExecutionTimedOut``) its outcome and exit code.

:class:`HistoryReader` (events to lines and an outcome) is pure; :func:`follow`
is the loop over a boto3 ``stepfunctions`` client; ``add_commands`` puts the
three commands on the ``jobsync`` parser.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from jobsync import input_file

# Exit codes: one per outcome, the same for `run` and `status`.
EXIT_SUCCEEDED = 0
EXIT_BAD_INPUT = 2  # no such file, not JSON, no such stack / state machine / execution, an AWS error
EXIT_JOB_FAILED = 3
EXIT_JOB_STOPPED = 4
EXIT_JOB_TIMED_OUT = 5
EXIT_JOB_NOT_FOUND = 6
EXIT_OTHER_ERROR = 7  # a step's error (SubmitFailed, StepFailed), an aborted or timed-out execution
EXIT_RUNNING = 8  # status only: the execution has not ended
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT): for run, what it started goes on

JOB_ERRORS = {
    "JobFailed": EXIT_JOB_FAILED,
    "JobStopped": EXIT_JOB_STOPPED,
    "JobTimedOut": EXIT_JOB_TIMED_OUT,
    "JobNotFound": EXIT_JOB_NOT_FOUND,
}

EXIT_CODES_HELP = f"""exit codes:
  {EXIT_SUCCEEDED}    the execution succeeded (the job's phase is SUCCEEDED)
  {EXIT_BAD_INPUT}    bad input: no such file, not a JSON object, over 256 KiB or 100 levels deep, no
       such stack, state machine or execution, or an AWS error (one line on stderr)
  {EXIT_JOB_FAILED}    JobFailed      the job failed
  {EXIT_JOB_STOPPED}    JobStopped     the job was stopped, cancelled or deleted on purpose
  {EXIT_JOB_TIMED_OUT}    JobTimedOut    the job ran past its deadline (the input's timeoutSeconds)
  {EXIT_JOB_NOT_FOUND}    JobNotFound    the job is gone from the cluster
  {EXIT_OTHER_ERROR}    any other error: a step's error (SubmitFailed, StepFailed: InvalidInput,
       a Lambda error, ...), an execution aborted (StopExecution) or timed out
  {EXIT_RUNNING}    (status) the execution is still running
  {EXIT_INTERRUPTED}  Ctrl-C: following stopped, the execution goes on (its ARN is printed), or none
       was started (said so)"""

TERMINAL_EVENTS = {
    "ExecutionSucceeded": ("SUCCEEDED", "executionSucceededEventDetails"),
    "ExecutionFailed": ("FAILED", "executionFailedEventDetails"),
    "ExecutionAborted": ("ABORTED", "executionAbortedEventDetails"),
    "ExecutionTimedOut": ("TIMED_OUT", "executionTimedOutEventDetails"),
}
TASK_FAILURES = {
    "TaskFailed": "taskFailedEventDetails",
    "TaskTimedOut": "taskTimedOutEventDetails",
    "LambdaFunctionFailed": "lambdaFunctionFailedEventDetails",
    "LambdaFunctionTimedOut": "lambdaFunctionTimedOutEventDetails",
}
EXECUTION_STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED", "PENDING_REDRIVE")


class FollowError(Exception):
    """Bad input or an AWS error: one line on stderr, exit code 2."""


# --------------------------------------------------------------------- events to lines


def clock_text(seconds: float) -> str:
    """``+HH:MM:SS``, as ``make demo`` prints the time since the execution started."""
    seconds = max(0, int(seconds))
    return f"+{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def timestamp(value: Any) -> float:
    """Seconds since the epoch from a history timestamp: a datetime (boto3), ISO text or a number."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, int | float):
        return float(value)
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


@dataclass
class Poll:
    """One loop state (Submit's or a Status's result), or one failed attempt of a task."""

    at: float  # seconds since the execution started
    state: str
    phase: str
    reason: str
    wait_seconds: int = 0
    terminal: bool = False
    polls: int = 0
    error: bool = False

    def line(self) -> str:
        if self.error:
            tail = f"{self.state} failed"
        else:
            tail = f"next wait {self.wait_seconds}s" if self.wait_seconds and not self.terminal else "done"
        return f"{clock_text(self.at)}  {self.phase:<10} {self.reason:<28} {tail}"


@dataclass
class Outcome:
    """How the execution ended, from its last event or DescribeExecution."""

    status: str  # SUCCEEDED, FAILED, ABORTED, TIMED_OUT (or RUNNING, for status)
    output: Any = None
    error: str | None = None
    cause: str | None = None

    @property
    def exit_code(self) -> int:
        if self.status == "SUCCEEDED":
            return EXIT_SUCCEEDED
        if self.status in ("RUNNING", "PENDING_REDRIVE"):
            return EXIT_RUNNING
        if self.status == "FAILED" and self.error in JOB_ERRORS:
            return JOB_ERRORS[self.error]
        return EXIT_OTHER_ERROR

    def lines(self) -> list[str]:
        """The result as printed at the end: the output, or the error and its Cause (JSON, pretty-printed)."""
        if self.status == "SUCCEEDED":
            return [f"result: {self.status}", _pretty(self.output)]
        head = f"result: {self.status}" + (f"  error: {self.error}" if self.error else "")
        if not self.cause:
            return [head]
        lines = [head, "cause:", _pretty(_json_or_text(self.cause))]
        cause = _json_or_text(self.cause)
        if isinstance(cause, dict) and isinstance(cause.get("logTail"), str) and cause["logTail"].strip():
            lines += ["log tail:", cause["logTail"].rstrip("\n")]
        return lines


def _json_or_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _pretty(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


def loop_state(payload: Any) -> dict[str, Any] | None:
    """The loop state in a task result, or None when it is not one (Cleanup's result, say)."""
    payload = _json_or_text(payload)
    if isinstance(payload, dict) and "phase" in payload and "job" in payload:
        return payload
    return None


@dataclass
class HistoryReader:
    """Turns execution history events, in order, into poll lines and an outcome; each event is used once."""

    started_at: float | None = None
    last_id: int = 0
    state: str = ""
    polls: list[Poll] = field(default_factory=list)
    last_state: dict[str, Any] | None = None
    outcome: Outcome | None = None

    def feed(self, events: Iterable[dict[str, Any]]) -> list[Poll]:
        """The new polls among ``events``; events already seen (by id) are skipped."""
        new: list[Poll] = []
        for event in events:
            event_id = int(event.get("id", 0))
            if event_id and event_id <= self.last_id:
                continue
            self.last_id = max(self.last_id, event_id)
            poll = self._event(event)
            if poll is not None:
                self.polls.append(poll)
                new.append(poll)
        return new

    def _since(self, event: dict[str, Any]) -> float:
        at = timestamp(event["timestamp"])
        if self.started_at is None:
            self.started_at = at
        return at - self.started_at

    def _event(self, event: dict[str, Any]) -> Poll | None:
        kind = event.get("type", "")
        if kind == "ExecutionStarted":
            self.started_at = timestamp(event["timestamp"])
            return None
        if kind.endswith("StateEntered"):
            self.state = (event.get("stateEnteredEventDetails") or {}).get("name", "")
            return None
        if kind in TERMINAL_EVENTS:
            status, key = TERMINAL_EVENTS[kind]
            details = event.get(key) or {}
            output = _json_or_text(details["output"]) if details.get("output") is not None else None
            self.outcome = Outcome(status, output, details.get("error"), details.get("cause"))
            return None
        if kind == "TaskSucceeded":
            # lambda:invoke: the output is the Invoke result, the function's result in its Payload.
            result = _json_or_text((event.get("taskSucceededEventDetails") or {}).get("output"))
            state = loop_state(result.get("Payload")) if isinstance(result, dict) else None
            return self._poll(event, state)
        if kind == "LambdaFunctionSucceeded":
            # A bare function ARN as Resource: the output is the function's result itself.
            return self._poll(event, loop_state((event.get("lambdaFunctionSucceededEventDetails") or {}).get("output")))
        if kind in TASK_FAILURES:
            details = event.get(TASK_FAILURES[kind]) or {}
            error = details.get("error") or ("States.Timeout" if kind.endswith("TimedOut") else kind)
            return Poll(self._since(event), self.state, "ERROR", error, error=True)
        return None

    def _poll(self, event: dict[str, Any], state: dict[str, Any] | None) -> Poll | None:
        if state is None:
            return None
        self.last_state = state
        return Poll(
            at=self._since(event),
            state=self.state,
            phase=str(state.get("phase", "")),
            reason=str(state.get("reason") or ""),
            wait_seconds=_int(state.get("waitSeconds")),
            terminal=bool(state.get("terminal")),
            polls=_int(state.get("polls")),
        )


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


# --------------------------------------------------------------------- reading the history


class HistoryPager:
    """Reads an execution's history oldest first, keeping its place between reads.

    The service gives a ``nextToken`` only while more events follow; at the end
    of the history there is none. So the token of the last page read is kept
    and that page read again next time, its events already seen skipped by id:
    every event is handed out once.
    """

    def __init__(self, client: Any, execution_arn: str, page_size: int = 1000) -> None:
        self.client = client
        self.execution_arn = execution_arn
        self.page_size = page_size
        self.token: str | None = None
        self.last_id = 0

    def read(self) -> list[dict[str, Any]]:
        """The events not handed out before."""
        new: list[dict[str, Any]] = []
        while True:
            kwargs: dict[str, Any] = {
                "executionArn": self.execution_arn,
                "reverseOrder": False,
                "maxResults": self.page_size,
            }
            if self.token:
                kwargs["nextToken"] = self.token
            try:
                page = self.client.get_execution_history(**kwargs)
            except Exception as err:
                if self.token and _error_code(err) == "InvalidToken":  # tokens expire (24 h): start over
                    self.token = None
                    continue
                raise
            for event in page.get("events", []):
                if int(event.get("id", 0)) > self.last_id:
                    new.append(event)
                    self.last_id = int(event["id"])
            next_token = page.get("nextToken")
            if not next_token:
                return new
            self.token = next_token


class Progress:
    """The line rewritten in place while waiting (``\\r``); nothing at all when the output is no TTY."""

    def __init__(self, out: TextIO, enabled: bool) -> None:
        self.out = out
        self.enabled = enabled
        self.width = 0

    def show(self, text: str) -> None:
        if not self.enabled:
            return
        self.out.write("\r" + text.ljust(self.width))
        self.out.flush()
        self.width = len(text)

    def clear(self) -> None:
        if self.enabled and self.width:
            self.out.write("\r" + " " * self.width + "\r")
            self.out.flush()
            self.width = 0


def follow(
    client: Any,
    execution_arn: str,
    out: TextIO,
    *,
    poll_interval: float = 5.0,
    tty: bool | None = None,
    sleep: Callable[[float], None] | None = None,
    now: Callable[[], float] | None = None,
) -> Outcome:
    """Print a line for each new poll until the execution ends; returns its outcome.

    ``sleep`` and ``now`` default to the wall clock's (``time.sleep``, ``time.time``).
    """
    sleep = sleep or time.sleep
    now = now or time.time
    reader = HistoryReader()
    pager = HistoryPager(client, execution_arn)
    progress = Progress(out, out.isatty() if tty is None else tty)
    while True:
        polls = reader.feed(pager.read())
        if polls:
            progress.clear()
            for poll in polls:
                print(poll.line(), file=out, flush=True)
        if reader.outcome is not None:
            progress.clear()
            return reader.outcome
        _wait(reader, progress, poll_interval, sleep, now)


def _wait(
    reader: HistoryReader,
    progress: Progress,
    seconds: float,
    sleep: Callable[[float], None],
    now: Callable[[], float],
) -> None:
    if not progress.enabled:
        sleep(seconds)
        return
    end = now() + seconds
    while (left := end - now()) > 0:
        progress.show(_progress_text(reader, now()))
        sleep(min(1.0, left))


def _progress_text(reader: HistoryReader, wall: float) -> str:
    elapsed = clock_text(wall - reader.started_at) if reader.started_at is not None else "+--:--:--"
    if not reader.polls:
        return f"{elapsed}  waiting for the first result ..."
    last = reader.polls[-1]
    text = f"{elapsed}  {last.phase:<10} {last.reason:<28} waiting"
    if reader.started_at is not None and last.wait_seconds and not last.error:
        due = reader.started_at + last.at + last.wait_seconds - wall
        text += f", next poll in {int(due)}s" if due > 0 else ", next poll due"
    return text


# --------------------------------------------------------------------- AWS calls


def _error_code(err: BaseException) -> str:
    response = getattr(err, "response", None)
    return str(((response or {}).get("Error") or {}).get("Code", "")) if isinstance(response, dict) else ""


def _aws_error(err: BaseException, what: str) -> FollowError:
    """A one-line message for an AWS error: its code and message, never a traceback or a credential."""
    code = _error_code(err)
    if code:
        message = str(((getattr(err, "response", None) or {}).get("Error") or {}).get("Message", "")).strip()
        return FollowError(f"{what}: {code}: {' '.join(message.split())}" if message else f"{what}: {code}")
    return FollowError(f"{what}: {' '.join(str(err).split()) or type(err).__name__}")


def _client(service: str, region: str | None) -> Any:
    from jobsync import aws  # only these commands need boto3

    try:
        return aws.client(service, region_name=region)
    except Exception as err:  # NoRegionError, a broken profile, ...
        raise _aws_error(err, f"cannot make a {service} client") from None


def _call(what: str, fn: Callable[..., Any], **kwargs: Any) -> Any:
    try:
        return fn(**kwargs)
    except Exception as err:
        raise _aws_error(err, what) from None


def state_machine_arn(args: argparse.Namespace) -> str:
    """--state-machine-arn, or the StateMachineArn output of --stack."""
    if args.state_machine_arn:
        return str(args.state_machine_arn)
    cfn = _client("cloudformation", args.region)
    try:
        stacks = cfn.describe_stacks(StackName=args.stack)["Stacks"]
    except Exception as err:
        if _error_code(err) == "ValidationError" and "does not exist" in str(err):
            raise FollowError(f"no such stack: {args.stack}") from None
        raise _aws_error(err, f"cannot describe stack {args.stack}") from None
    for output in (stacks[0].get("Outputs") or []) if stacks else []:
        if output.get("OutputKey") == "StateMachineArn":
            return str(output["OutputValue"])
    raise FollowError(f"stack {args.stack} has no StateMachineArn output (is it a jobsync stack?)")


def read_input(path: str) -> str:
    """The execution input: the text of ``path`` (``-`` for stdin), once it is known to be a JSON object.

    The text is sent as it is, so its size is the size Step Functions counts; both it and its nesting
    are held to what an execution accepts (``jobsync.input_file``).
    """
    source = input_file.source_name(path)
    try:
        text = input_file.read_text(path)
        document = input_file.load_json(text, source)
    except FileNotFoundError:
        raise FollowError(f"{source}: no such file") from None
    except input_file.InputError as err:
        raise FollowError(str(err)) from None
    except (OSError, UnicodeDecodeError) as err:
        raise FollowError(f"{source}: cannot read: {' '.join(str(err).split())}") from None
    except ValueError as err:
        raise FollowError(f"{source}: not JSON: {err}") from None
    if not isinstance(document, dict):
        raise FollowError(f"{source}: the execution input must be a JSON object, got {type(document).__name__}")
    return text


def execution_arn(state_machine: str, name: str) -> str | None:
    """The ARN Step Functions gives the execution named ``name`` of ``state_machine`` (a standard workflow)."""
    head, found, rest = state_machine.partition(":stateMachine:")
    machine = rest.split(":", 1)[0]  # less a version or alias qualifier
    return f"{head}:execution:{machine}:{name}" if found and machine else None


@dataclass
class Starting:
    """What is known of the StartExecution call when Ctrl-C cuts it short.

    The execution's name is chosen here (a UUID, unless ``--name``), so its ARN is known before the
    service answers, and a second ``run --name`` of the same input cannot start a second one.
    botocore's events tell whether the request may have left (the first ``before-send`` handler: the
    others, and the send, come after it) and whether an answer came back.
    """

    arn: str | None = None
    requested: bool = False  # the request may have reached the service
    started: bool = False  # the service answered with the execution's ARN

    def watch(self, client: Any) -> bool:
        events = getattr(getattr(client, "meta", None), "events", None)
        if events is None:
            return False
        events.register_first("before-send.sfn.StartExecution", self._requested)
        events.register("response-received.sfn.StartExecution", self._answered)
        return True

    def _requested(self, **_: Any) -> None:
        self.requested = True

    def _answered(self, parsed_response: Any = None, **_: Any) -> None:
        if isinstance(parsed_response, dict) and parsed_response.get("executionArn"):
            self.arn, self.started = str(parsed_response["executionArn"]), True


def _start(args: argparse.Namespace, client: Any, starting: Starting) -> str:
    execution_input = read_input(args.input)
    sm_arn = state_machine_arn(args)
    name = args.name or str(uuid.uuid4())
    starting.arn = execution_arn(sm_arn, name)
    # Without botocore's events, a call that began may have reached the service.
    starting.requested = not starting.watch(client)
    try:
        arn = str(client.start_execution(stateMachineArn=sm_arn, input=execution_input, name=name)["executionArn"])
    except Exception as err:
        code = _error_code(err)
        if code == "StateMachineDoesNotExist":
            raise FollowError(f"no such state machine: {sm_arn}") from None
        if code == "ExecutionAlreadyExists":
            raise FollowError(f"an execution named {name} already exists for {sm_arn}") from None
        raise _aws_error(err, "cannot start the execution") from None
    starting.arn, starting.started = arn, True
    return arn


def _interrupted_start(starting: Starting, args: argparse.Namespace) -> str:
    """What Ctrl-C left behind while the execution was being started."""
    if starting.started and starting.arn:
        return f"interrupted; execution {starting.arn} started and goes on: {_hint(starting.arn, args)}"
    if not starting.requested:
        return "interrupted: no execution was started"
    if not starting.arn:
        return "interrupted while starting the execution: it may have started (jobsync list tells)"
    name = starting.arn.rsplit(":", 1)[-1]
    return (
        f"interrupted while starting execution {starting.arn}: it may have started.\n"
        f"jobsync status {starting.arn} tells (no such execution: it did not); "
        f"run again with --name {name} to start it at most once"
    )


def _hint(arn: str, args: argparse.Namespace) -> str:
    """How to follow and how to stop ``arn``, in the region the command used."""
    region = f" --region {args.region}" if args.region else ""
    return (
        f"jobsync status {arn} --follow{region}\n"
        f"to stop it: aws stepfunctions stop-execution --execution-arn {arn}{region}"
    )


def _print_outcome(outcome: Outcome, out: TextIO) -> None:
    for line in outcome.lines():
        print(line, file=out)


# --------------------------------------------------------------------- commands


def cmd_run(args: argparse.Namespace) -> int:
    out = sys.stdout
    starting = Starting()
    try:
        client = _client("stepfunctions", args.region)
        arn = _start(args, client, starting)
        if args.no_follow:
            print(arn, file=out)
            return EXIT_SUCCEEDED
        print(f"execution {arn}", file=out, flush=True)
    except FollowError as err:
        print(f"jobsync run: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"jobsync run: {_interrupted_start(starting, args)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    return _follow_to_the_end(client, arn, args, "run")


def _follow_to_the_end(client: Any, arn: str, args: argparse.Namespace, command: str) -> int:
    """Follow a started execution, then print its result; returns the exit code."""
    out = sys.stdout
    try:
        outcome = follow(client, arn, out, poll_interval=args.poll_interval)
    except KeyboardInterrupt:
        print(f"\nstopped following; the execution goes on: {_hint(arn, args)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:
        error = _aws_error(err, f"cannot read the history of {arn} (the execution goes on)")
        print(f"jobsync {command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _print_outcome(outcome, out)
    return outcome.exit_code


def cmd_status(args: argparse.Namespace) -> int:
    out = sys.stdout
    try:
        client = _client("stepfunctions", args.region)
        description = _describe(client, args.execution_arn)
        if args.follow:
            print(f"execution {args.execution_arn}", file=out, flush=True)
            return _follow_to_the_end(client, args.execution_arn, args, "status")
        reader = HistoryReader()
        reader.feed(_call("cannot read the history", HistoryPager(client, args.execution_arn).read))
    except FollowError as err:
        print(f"jobsync status: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    status = str(description.get("status", ""))
    print(f"execution  {args.execution_arn}", file=out)
    print(f"status     {status}", file=out)
    started = description.get("startDate")
    if started is not None:
        print(f"started    {_iso(started)}", file=out)
    if description.get("stopDate") is not None:
        print(f"stopped    {_iso(description['stopDate'])}", file=out)
    if reader.polls:
        last = next((poll for poll in reversed(reader.polls) if not poll.error), reader.polls[-1])
        print(f"last poll  {last.line().strip()}", file=out)
    if reader.last_state and reader.last_state.get("message"):
        print(f"message    {reader.last_state['message']}", file=out)
    outcome = Outcome(
        status,
        _json_or_text(description["output"]) if description.get("output") is not None else None,
        description.get("error"),
        description.get("cause"),
    )
    if outcome.status not in ("RUNNING", "PENDING_REDRIVE"):
        _print_outcome(outcome, out)
    return outcome.exit_code


def _describe(client: Any, execution_arn: str) -> dict[str, Any]:
    try:
        return dict(client.describe_execution(executionArn=execution_arn))
    except Exception as err:
        if _error_code(err) == "ExecutionDoesNotExist":
            raise FollowError(f"no such execution: {execution_arn}") from None
        raise _aws_error(err, f"cannot describe {execution_arn}") from None


def _iso(value: Any) -> str:
    return datetime.fromtimestamp(timestamp(value), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cmd_list(args: argparse.Namespace) -> int:
    out = sys.stdout
    try:
        client = _client("stepfunctions", args.region)
        sm_arn = state_machine_arn(args)
        executions = _list(client, sm_arn, args.status, args.max)
        rows = []
        for execution in executions:
            status = str(execution.get("status", ""))
            error = ""
            if status in ("FAILED", "TIMED_OUT", "ABORTED"):
                description = _describe(client, execution["executionArn"])
                error = str(description.get("error") or "")
            name = execution.get("name") or str(execution.get("executionArn", "")).rsplit(":", 1)[-1]
            rows.append((str(name), status, _iso(execution["startDate"]), error))
    except FollowError as err:
        print(f"jobsync list: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    width = max([len(row[0]) for row in rows] + [4])
    for name, status, started, error in rows:
        print(f"{name:<{width}}  {status:<15} {started}  {error}".rstrip(), file=out)
    return EXIT_SUCCEEDED


def _list(client: Any, sm_arn: str, status: str | None, limit: int) -> list[dict[str, Any]]:
    executions: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"stateMachineArn": sm_arn, "maxResults": min(max(limit, 1), 1000)}
    if status:
        kwargs["statusFilter"] = status
    while len(executions) < limit:
        try:
            page = client.list_executions(**kwargs)
        except Exception as err:
            if _error_code(err) == "StateMachineDoesNotExist":
                raise FollowError(f"no such state machine: {sm_arn}") from None
            raise _aws_error(err, "cannot list executions") from None
        executions.extend(page.get("executions", []))
        if not page.get("nextToken"):
            break
        kwargs["nextToken"] = page["nextToken"]
    return executions[:limit]


# --------------------------------------------------------------------- the parser


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0: {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Every option with its default, and the exit codes as written."""


def _state_machine_options(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--stack", metavar="NAME", help="the jobsync stack; its StateMachineArn output is used")
    where.add_argument("--state-machine-arn", metavar="ARN", help="the state machine, instead of --stack")


def _poll_interval_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--poll-interval",
        metavar="SECONDS",
        type=_positive_seconds,
        default=5.0,
        help="how often the execution history is read while following",
    )


def _region_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--region", default=None, help="the AWS region (without one, AWS_REGION, AWS_DEFAULT_REGION or the profile's)"
    )


def add_commands(commands: Any) -> None:
    """Add ``run``, ``status`` and ``list`` to the ``jobsync`` subparsers."""
    run_cmd = commands.add_parser(
        "run",
        help="start an execution and follow it: a line per poll, then the result",
        description="Start an execution of the jobsync state machine and follow it: one line per poll\n"
        "(time since start, phase, reason, next wait), then the output or the error and its cause.\n"
        "On a terminal a progress line is rewritten in place while it waits.",
        epilog=EXIT_CODES_HELP,
        formatter_class=_HelpFormatter,
    )
    run_cmd.add_argument("input", metavar="INPUT.json", help="the execution input, a JSON object (- for stdin)")
    _state_machine_options(run_cmd)
    run_cmd.add_argument(
        "--name", default=None, help="the execution name (without one, a new UUID: the ARN is known before the answer)"
    )
    run_cmd.add_argument(
        "--no-follow", action="store_true", help="start the execution, print its ARN and exit (0) at once"
    )
    _poll_interval_option(run_cmd)
    _region_option(run_cmd)
    run_cmd.set_defaults(func=cmd_run)

    status_cmd = commands.add_parser(
        "status",
        help="an execution's status, last phase and reason, and its result if it ended",
        description="An execution's status, its last loop state's phase and reason, and the result if it ended;\n"
        "with --follow, a line per poll until it ends, as run prints them.",
        epilog=EXIT_CODES_HELP,
        formatter_class=_HelpFormatter,
    )
    status_cmd.add_argument("execution_arn", metavar="EXECUTION_ARN", help="the execution (jobsync run prints it)")
    status_cmd.add_argument(
        "--follow", action="store_true", help="follow it as run does: a line per poll until it ends, then the result"
    )
    _poll_interval_option(status_cmd)
    _region_option(status_cmd)
    status_cmd.set_defaults(func=cmd_status)

    list_cmd = commands.add_parser(
        "list",
        help="recent executions, one line each: name, status, start time, error",
        description="Recent executions of the state machine, newest first: name, status, start time\n"
        "and, for those that ended in error, the error. Exit code 0, or 2 on bad input.",
        formatter_class=_HelpFormatter,
    )
    _state_machine_options(list_cmd)
    list_cmd.add_argument("--status", choices=EXECUTION_STATUSES, default=None, help="only executions in this status")
    list_cmd.add_argument("--max", metavar="N", type=_positive_int, default=20, help="at most this many executions")
    _region_option(list_cmd)
    list_cmd.set_defaults(func=cmd_list)
