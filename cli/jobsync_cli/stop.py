"""``jobsync stop EXECUTION [--keep-job]``: stop an execution with a cause, then show what its cleanup did.

A stopped execution runs no Cleanup state: the stack's ExecutionEnded rule
hands its end to the cleanup function, which deletes the job Submit created
(by uid) as the execution's ``cleanup`` setting says, or keeps it when the stop
says so (``--keep-job``: the StopExecution error ``jobsync.KeepJob``;
``jobsync.run.execution_events``). The function keeps its answer in the
stack's table (``jobsync.aws.cleanups``); this command waits for it and prints
it: the job deleted or kept, by uid, and why.

A RunJobs execution stops its children; each child's job is cleaned up on its
own, and each outcome is printed. With ``--keep-job`` the children are stopped
first, each with the keep error, then the run.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from jobsync_cli.aws import FollowError, aws_error, call, client, region_of, stack_outputs
from jobsync_cli.follow import EXIT_BAD_INPUT, EXIT_OTHER_ERROR, EXIT_SUCCEEDED
from jobsync_cli.history import HistoryPager, error_code

STOPPED_ERROR = "jobsync.Stopped"
# The stack's state machines are named after it (template.yaml): <stack>-run-job, <stack>-run-jobs.
MACHINE_SUFFIXES = ("-run-jobs", "-run-job")


def stack_of(arn: str) -> str:
    """The stack an execution's state machine belongs to, by the template's names."""
    machine = arn.split(":")[6] if len(arn.split(":")) > 7 else ""
    for suffix in MACHINE_SUFFIXES:
        if machine.endswith(suffix):
            return machine.removesuffix(suffix)
    return machine


def children(sfn: Any, arn: str) -> list[str]:
    """The RunJob executions a RunJobs execution started, in input order (through its Map Run's children)."""
    from jobsync_cli.runjobs import MapRunChildren, RunJobsReader

    events = call(f"cannot read the history of {arn}", HistoryPager(sfn, arn).read)
    reader = RunJobsReader()
    reader.feed_parent(events)
    map_children = MapRunChildren(sfn)
    for map_run in reader.map_runs:
        for index, child in call(f"cannot list the children of {map_run}", lambda run=map_run: map_children.read(run)):
            reader.adopt(index, child)
    return [child.arn for child in reader.ordered() if child.arn]


def job_line(sfn: Any, arn: str) -> str:
    """``PyTorchJob ns/name (uid ...)``: the job the execution's Submit created, or what it did instead."""
    from jobsync.run.execution_events import submitted_job

    events = call(f"cannot read the history of {arn}", HistoryPager(sfn, arn).read)
    submitted = submitted_job(events, arn)
    if submitted.job is None:
        return "no job (its Submit did not answer)" if submitted.ran else "no job (it never reached Submit)"
    job = submitted.job
    return f"{job.kind} {job.namespace}/{job.name} (uid {job.uid})"


def outcome_line(record: dict[str, Any]) -> str:
    """A cleanup's answer, as a person reads it: deleted or kept, which job by uid, and why."""
    job = record.get("job") or {}
    named = f"{job.get('kind')} {job.get('namespace')}/{job.get('name')} (uid {job.get('uid')})" if job else "no job"
    verb = "deleted" if record.get("deleted") else "kept"
    return f"{verb}: {named}: {record.get('reason', '')}"


def cmd_stop(args: argparse.Namespace) -> int:
    out = sys.stdout
    arn = args.execution_arn
    region = args.region or region_of(arn)
    try:
        sfn = client("stepfunctions", region)
        description = _describe(sfn, arn)
        if description.get("status") != "RUNNING":
            raise FollowError(f"{arn} already ended {description.get('status')}: nothing to stop")
        targets = children(sfn, arn)
        from jobsync.run.execution_events import KEEP_JOB_ERROR

        error = KEEP_JOB_ERROR if args.keep_job else STOPPED_ERROR
        cause = args.cause or (
            "stopped with jobsync stop --keep-job: the job is kept"
            if args.keep_job
            else "stopped with jobsync stop: the job is cleaned up as its cleanup setting says"
        )
        if args.keep_job:  # each child with the keep error, before the run would stop them with its own
            for child in targets:
                _stop(sfn, child, error, cause)
        _stop(sfn, arn, error, cause)
        print(f"stopped {arn}", file=out, flush=True)
        watched = targets or [arn]
        for execution in watched:
            print(f"  {execution.rsplit(':', 1)[-1]}: {job_line(sfn, execution)}", file=out, flush=True)
        records = _records(args.stack or stack_of(arn), region)
    except FollowError as err:
        print(f"jobsync stop: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return _show_outcomes(records, watched, out, args.wait)


def _records(stack: str, region: str | None) -> Any:
    """The stack's cleanup records (its TableName output), or a FollowError saying why they cannot be read."""
    from jobsync.aws.cleanups import CleanupRecords

    outputs = stack_outputs(stack, region)
    table = outputs.get("TableName")
    if not table:
        raise FollowError(f"stack {stack} has no TableName output: the cleanup's outcome cannot be read")
    dynamodb = _resource("dynamodb", region)
    return CleanupRecords(dynamodb.Table(table))


def _resource(service: str, region: str | None) -> Any:
    from jobsync import aws  # bounded in seconds, as every client of jobsync's

    try:
        return aws.resource(service, region_name=region)
    except Exception as err:
        raise aws_error(err, f"cannot make a {service} client") from None


def _show_outcomes(
    records: Any,
    executions: list[str],
    out: Any,
    wait_seconds: float,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], float] = time.monotonic,
) -> int:
    """Wait up to ``wait_seconds`` for each execution's cleanup record; print each as it comes."""
    deadline = now() + wait_seconds
    pending = list(executions)
    print("cleanup (the ExecutionEnded rule):", file=out, flush=True)
    while pending:
        for execution in list(pending):
            try:
                record = records.get(execution)
            except Exception as err:
                print(f"jobsync stop: {aws_error(err, 'cannot read the cleanup outcome')}", file=sys.stderr)
                return EXIT_BAD_INPUT
            if record is not None:
                print(f"  {execution.rsplit(':', 1)[-1]}: {outcome_line(record)}", file=out, flush=True)
                pending.remove(execution)
        if pending and now() >= deadline:
            for execution in pending:
                print(
                    f"  {execution.rsplit(':', 1)[-1]}: no outcome after {wait_seconds:g}s; its cleanup may still "
                    "come (the function retries), or it failed: see the stack's CleanupFailedQueue",
                    file=out,
                )
            return EXIT_OTHER_ERROR
        if pending:
            sleep(1.0)
    return EXIT_SUCCEEDED


def _describe(sfn: Any, arn: str) -> dict[str, Any]:
    try:
        return dict(sfn.describe_execution(executionArn=arn))
    except Exception as err:
        if error_code(err) in ("ExecutionDoesNotExist", "InvalidArn"):
            raise FollowError(f"no such execution: {arn}") from None
        raise aws_error(err, f"cannot describe {arn}") from None


def _stop(sfn: Any, arn: str, error: str, cause: str) -> None:
    try:
        sfn.stop_execution(executionArn=arn, error=error, cause=cause)
    except Exception as err:
        raise aws_error(err, f"cannot stop {arn}") from None


def add_command(commands: Any) -> None:
    from jobsync_cli.follow import _HelpFormatter, _positive_seconds

    parser = commands.add_parser(
        "stop",
        help="stop an execution with a cause, then show what its cleanup did (the job deleted or kept, by uid)",
        description="Stop an execution (StopExecution, with a cause), then wait for its cleanup and print it:\n"
        "the job Submit created, deleted or kept, by uid, and why. The cleanup is the stack's ExecutionEnded\n"
        "rule's: it deletes the job as the execution's cleanup setting says, or keeps it with --keep-job.\n"
        "A RunJobs execution stops its children: each child's cleanup is printed.\n\n"
        "exit codes: 0 stopped, every cleanup outcome printed; 2 bad input, no such execution, one that\n"
        "already ended, an AWS error; 7 stopped, but a cleanup outcome did not come within --wait.",
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("execution_arn", metavar="EXECUTION_ARN", help="the execution (jobsync run prints it)")
    parser.add_argument(
        "--keep-job", action="store_true", help="keep the job running in the cluster; only the execution stops"
    )
    parser.add_argument("--cause", default=None, help="why it is stopped (the execution's Cause)")
    parser.add_argument(
        "--stack", default=None, help="the stack whose table holds the cleanup's outcome (without one: the ARN's)"
    )
    parser.add_argument(
        "--wait", metavar="SECONDS", type=_positive_seconds, default=60.0, help="how long to wait for the cleanup"
    )
    parser.add_argument("--region", default=None, help="the AWS region (without one: the ARN's)")
    parser.set_defaults(func=cmd_stop)
