"""Start an execution from a terminal and follow it: ``jobsync run``, ``jobsync status``, ``jobsync list``.

Everything is read from the execution's history (``GetExecutionHistory``), the
one record Step Functions keeps: each ``lambda:invoke`` task that succeeded has
a ``TaskSucceeded`` event whose ``output`` is the Invoke result as a JSON string,
``{"ExecutedVersion": ..., "Payload": {...loop state...}, "StatusCode": 200, ...}``.
Submit's and each Status's loop state become one line, in the shape of ``make
demo``, with what the loop state says of the job's advance or its queue::

    +00:01:55  RUNNING    PyTorchJobRunning            next wait 30s
    +00:40:10  RUNNING    TrainJobRunning              next wait 95s  (42%, ETA 55m10s)
    +00:03:02  PENDING    WaitingForQuota              next wait 60s  (queued 3m02s in gpu-cq)

and the execution's last event (``ExecutionSucceeded``, ``ExecutionFailed``,
``ExecutionAborted``, ``ExecutionTimedOut``) its outcome and exit code.

:class:`HistoryReader` (events to lines and an outcome) is pure; :func:`follow`
is the loop over a boto3 ``stepfunctions`` client; ``add_commands`` puts the
three commands on the ``jobsync`` parser.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO

from jobsync.core.outcome import (
    EXIT_JOB_FAILED,
    EXIT_JOB_NOT_FOUND,
    EXIT_JOB_STOPPED,
    EXIT_JOB_TIMED_OUT,
    EXIT_OTHER_ERROR,
    EXIT_RUNNING,
    EXIT_SUCCEEDED,
    JOB_ERRORS,
)
from jobsync_cli.aws import (
    FollowError,
    Starting,
    aws_error,
    call,
    client,
    execution_arn,
    hint,
    interrupted_start,
    is_run_jobs_input,
    machine_kind,
    read_input,
    region_of,
    start,
    state_machine_arn,
)
from jobsync_cli.history import (
    HistoryPager,
    HistoryReader,
    Outcome,
    Poll,
    _json_or_text,
    clock_text,
    error_code,
    loop_state,
    timestamp,
)

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_JOB_FAILED",
    "EXIT_JOB_NOT_FOUND",
    "EXIT_JOB_STOPPED",
    "EXIT_JOB_TIMED_OUT",
    "EXIT_OTHER_ERROR",
    "EXIT_RUNNING",
    "EXIT_SUCCEEDED",
    "JOB_ERRORS",
    "FollowError",
    "HistoryPager",
    "HistoryReader",
    "Outcome",
    "Poll",
    "add_commands",
    "clock_text",
    "execution_arn",
    "follow",
    "loop_state",
    "read_input",
    "timestamp",
]

# Every client the commands make comes from ``_client`` (tests put a stub in its place).
_client, _aws_error = client, aws_error


def _clients(service: str, region: str | None) -> Any:
    return _client(service, region)


# Exit codes: one per outcome, the same for `run` and `status`; a job's come with its phase (jobsync.core.outcome).
EXIT_BAD_INPUT = 2  # no such file, not JSON, no such stack / state machine / execution, an AWS error
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT): for run, what it started goes on

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

EXECUTION_STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED", "PENDING_REDRIVE")


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
    text = f"{elapsed}  {last.phase:<10} {last.reason:<28} waiting" + (f" ({last.note})" if last.note else "")
    if reader.started_at is not None and last.wait_seconds and not last.error:
        due = reader.started_at + last.at + last.wait_seconds - wall
        text += f", next poll in {int(due)}s" if due > 0 else ", next poll due"
    return text


def _print_outcome(outcome: Outcome, out: TextIO) -> None:
    for line in outcome.lines():
        print(line, file=out)


# --------------------------------------------------------------------- commands


def cmd_run(args: argparse.Namespace) -> int:
    out = sys.stdout
    starting = Starting()
    try:
        sfn = _client("stepfunctions", args.region)
        arn = start(args, sfn, starting)
        if args.no_follow:
            print(arn, file=out)
            return EXIT_SUCCEEDED
        print(f"execution {arn}", file=out, flush=True)
    except FollowError as err:
        print(f"jobsync run: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"jobsync run: {interrupted_start(starting, args)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    several = is_run_jobs_input(starting.document)
    return _follow_to_the_end(sfn, arn, args, "run", starting.document if several else None)


def _follow_to_the_end(
    client: Any, arn: str, args: argparse.Namespace, command: str, run_jobs_input: Any = None
) -> int:
    """Follow a started execution, then print its result; returns the exit code.

    ``run_jobs_input``: the execution is RunJobs', with this input: followed job by job (``jobsync_cli.runjobs``).
    """
    out = sys.stdout
    if run_jobs_input is not None:
        return _follow_run_jobs(client, arn, args, command, run_jobs_input)
    try:
        outcome = follow(client, arn, out, poll_interval=args.poll_interval)
    except KeyboardInterrupt:
        print(f"\nstopped following; the execution goes on: {hint(arn, args)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:
        error = aws_error(err, f"cannot read the history of {arn} (the execution goes on)")
        print(f"jobsync {command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _print_outcome(outcome, out)
    return outcome.exit_code


def _follow_run_jobs(client: Any, arn: str, args: argparse.Namespace, command: str, execution_input: Any) -> int:
    from jobsync_cli import runjobs

    out = sys.stdout
    try:
        reader = runjobs.follow_run_jobs(client, arn, out, execution_input, poll_interval=args.poll_interval)
    except KeyboardInterrupt:
        print(f"\nstopped following; the execution goes on: {hint(arn, args)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:
        error = aws_error(err, f"cannot read the history of {arn} (the execution goes on)")
        print(f"jobsync {command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for line in runjobs.result_lines(reader):
        print(line, file=out)
    return reader.exit_code()


def cmd_status(args: argparse.Namespace) -> int:
    out = sys.stdout
    args.region = args.region or region_of(args.execution_arn)  # the ARN names its region
    try:
        sfn = _client("stepfunctions", args.region)
        description = _describe(sfn, args.execution_arn)
        if args.follow:
            print(f"execution {args.execution_arn}", file=out, flush=True)
            document = None
            if machine_kind(sfn, str(description.get("stateMachineArn", ""))) == "RunJobs":
                document = _json_or_text(description.get("input"))
                document = document if isinstance(document, dict) else {}
            return _follow_to_the_end(sfn, args.execution_arn, args, "status", document)
        reader = HistoryReader()
        reader.feed(call("cannot read the history", HistoryPager(sfn, args.execution_arn).read))
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
        if error_code(err) == "ExecutionDoesNotExist":
            raise FollowError(f"no such execution: {execution_arn}") from None
        raise aws_error(err, f"cannot describe {execution_arn}") from None


def _iso(value: Any) -> str:
    return datetime.fromtimestamp(timestamp(value), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def cmd_list(args: argparse.Namespace) -> int:
    out = sys.stdout
    try:
        sfn = _client("stepfunctions", args.region)
        sm_arn = state_machine_arn(args, _clients)
        executions = _list(sfn, sm_arn, args.status, args.max)
        rows = []
        for execution in executions:
            status = str(execution.get("status", ""))
            error = ""
            if status in ("FAILED", "TIMED_OUT", "ABORTED"):
                description = _describe(sfn, execution["executionArn"])
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
            if error_code(err) == "StateMachineDoesNotExist":
                raise FollowError(f"no such state machine: {sm_arn}") from None
            raise aws_error(err, "cannot list executions") from None
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
    where.add_argument(
        "--stack",
        metavar="NAME",
        help="the jobsync stack: its StateMachineArn output, or RunJobsStateMachineArn for an input with jobs",
    )
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
        "--region",
        default=None,
        help="the AWS region (without one: the ARN's, else AWS_REGION, AWS_DEFAULT_REGION or the profile's)",
    )


def add_commands(commands: Any) -> None:
    """Add ``run``, ``status`` and ``list`` to the ``jobsync`` subparsers."""
    run_cmd = commands.add_parser(
        "run",
        help="start an execution and follow it: a line per poll (per job, for RunJobs), then the result",
        description="Start an execution of the jobsync state machine and follow it: one line per poll\n"
        "(time since start, phase, reason, next wait), then the output or the error and its cause.\n"
        "On a terminal a progress line is rewritten in place while it waits.\n\n"
        'An input with "jobs" runs RunJobs (--stack picks it; the stack\'s RunJobsStateMachineArn):\n'
        "a line per job as its phase or reason changes, each naming its job, then a table of every\n"
        "job in input order; on a terminal a live table of the jobs. The exit code is the worst job's:\n"
        "JobFailed, JobTimedOut, JobNotFound, another error, JobStopped, in that order.",
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
