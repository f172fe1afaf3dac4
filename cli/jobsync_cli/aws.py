"""The AWS calls the commands make: a client, an error as one line, the stack's state machine, a start.

No traceback and no credential ever reaches the terminal: every failure of a
call becomes a ``FollowError`` naming the call, the service's error code and
message. Starting an execution names it first, so the ARN is known before the
service answers, and Ctrl-C during the start can say what it left (``Starting``).
"""

from __future__ import annotations

import argparse
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobsync_cli import input_file
from jobsync_cli.history import error_code


class FollowError(Exception):
    """Bad input or an AWS error: one line on stderr, exit code 2."""


def aws_error(err: BaseException, what: str) -> FollowError:
    """A one-line message for an AWS error: its code and message, never a traceback or a credential."""
    code = error_code(err)
    if code:
        message = str(((getattr(err, "response", None) or {}).get("Error") or {}).get("Message", "")).strip()
        return FollowError(f"{what}: {code}: {' '.join(message.split())}" if message else f"{what}: {code}")
    return FollowError(f"{what}: {' '.join(str(err).split()) or type(err).__name__}")


def region_of(arn: str) -> str | None:
    """The region an ARN names (``arn:aws:states:us-east-1:...``), or None when it is no ARN with one."""
    parts = arn.split(":")
    return parts[3] if len(parts) > 4 and parts[0] == "arn" and parts[3] else None


def client(service: str, region: str | None) -> Any:
    from jobsync import aws  # only these commands need boto3

    try:
        return aws.client(service, region_name=region)
    except Exception as err:  # NoRegionError, a broken profile, ...
        raise aws_error(err, f"cannot make a {service} client") from None


def call(what: str, fn: Callable[..., Any], **kwargs: Any) -> Any:
    try:
        return fn(**kwargs)
    except Exception as err:
        raise aws_error(err, what) from None


# The stack's outputs that name its state machines (template.yaml): RunJob's, and RunJobs'.
RUN_JOB_OUTPUT = "StateMachineArn"
RUN_JOBS_OUTPUT = "RunJobsStateMachineArn"


def stack_outputs(
    stack: str,
    region: str | None,
    make_client: Callable[[str, str | None], Any] | None = None,
    part: str = "Outputs",
) -> dict[str, str]:
    """The outputs (or ``part="Parameters"``) of a stack, by key; FollowError naming the stack when there is none."""
    cfn = (make_client or client)("cloudformation", region)
    try:
        stacks = cfn.describe_stacks(StackName=stack)["Stacks"]
    except Exception as err:
        if error_code(err) == "ValidationError" and "does not exist" in str(err):
            raise FollowError(f"no such stack: {stack}") from None
        raise aws_error(err, f"cannot describe stack {stack}") from None
    entries = (stacks[0].get(part) or []) if stacks else []
    key, value = ("OutputKey", "OutputValue") if part == "Outputs" else ("ParameterKey", "ParameterValue")
    return {str(e.get(key)): str(e.get(value) or "") for e in entries if e.get(key)}


def state_machine_arn(
    args: argparse.Namespace,
    make_client: Callable[[str, str | None], Any] | None = None,
    output: str = RUN_JOB_OUTPUT,
) -> str:
    """--state-machine-arn, or the ``output`` (RunJob's, by default) of --stack."""
    if args.state_machine_arn:
        return str(args.state_machine_arn)
    outputs = stack_outputs(args.stack, args.region, make_client)
    if output in outputs:
        return outputs[output]
    if RUN_JOB_OUTPUT not in outputs:
        raise FollowError(f"stack {args.stack} has no {RUN_JOB_OUTPUT} output (is it a jobsync stack?)")
    raise FollowError(f"stack {args.stack} has no {output} output (a jobsync stack older than RunJobs?)")


def is_run_jobs_input(document: Any) -> bool:
    """Whether an execution input is RunJobs' (several jobs, ``{"jobs": [...]}``) rather than one job's."""
    return isinstance(document, dict) and "jobs" in document


def machine_kind(sfn: Any, arn: str) -> str | None:
    """``RunJob`` or ``RunJobs`` from a state machine's definition; None when it is neither, or unreadable.

    RunJob submits the job itself (a ``Submit`` state); RunJobs maps its jobs to child executions
    (a Map whose task starts an execution).
    """
    try:
        definition = json.loads(sfn.describe_state_machine(stateMachineArn=arn)["definition"])
    except Exception:  # no permission, a qualifier moto or the service refuses here: no check, no harm
        return None
    states = definition.get("States") if isinstance(definition, dict) else None
    if not isinstance(states, dict):
        return None
    if "Submit" in states:
        return "RunJob"
    for state in states.values():
        inner = (state.get("ItemProcessor") or state.get("Iterator") or {}) if isinstance(state, dict) else {}
        for task in (inner.get("States") or {}).values():
            if isinstance(task, dict) and str(task.get("Resource", "")).startswith(_START_EXECUTION):
                return "RunJobs"
    return None


_START_EXECUTION = "arn:aws:states:::states:startExecution"


def target(args: argparse.Namespace, document: Any, sfn: Any) -> str:
    """The state machine an input goes to: with --stack, RunJobs for ``{"jobs": [...]}``, RunJob otherwise;
    with --state-machine-arn, that one, unless it is the other kind (FollowError saying which to use)."""
    several = is_run_jobs_input(document)
    if not args.state_machine_arn:
        return state_machine_arn(args, output=RUN_JOBS_OUTPUT if several else RUN_JOB_OUTPUT)
    arn = str(args.state_machine_arn)
    kind = machine_kind(sfn, arn)
    source = input_file.source_name(args.input)
    if several and kind == "RunJob":
        raise FollowError(
            f"{source} has 'jobs': it is RunJobs' input, and {arn} is RunJob, which runs one job; "
            f"give --stack NAME (it picks RunJobs) or the stack's {RUN_JOBS_OUTPUT}"
        )
    if not several and kind == "RunJobs":
        raise FollowError(
            f"{source} is one job's input (no 'jobs'), and {arn} is RunJobs; give --stack NAME (it picks "
            f'RunJob), the stack\'s {RUN_JOB_OUTPUT}, or wrap the input as {{"jobs": [...]}}'
        )
    return arn


def read_input(path: str) -> str:
    """The execution input: the text of ``path`` (``-`` for stdin), once it is known to be a JSON object.

    The text is sent as it is, so its size is the size Step Functions counts; both it and its nesting
    are held to what an execution accepts (``jobsync_cli.input_file``).
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
    document: Any = None  # the execution input, parsed

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


def start(args: argparse.Namespace, client: Any, starting: Starting) -> str:
    execution_input = read_input(args.input)
    starting.document = json.loads(execution_input)
    sm_arn = target(args, starting.document, client)
    name = args.name or str(uuid.uuid4())
    starting.arn = execution_arn(sm_arn, name)
    # Without botocore's events, a call that began may have reached the service.
    starting.requested = not starting.watch(client)
    try:
        arn = str(client.start_execution(stateMachineArn=sm_arn, input=execution_input, name=name)["executionArn"])
    except Exception as err:
        code = error_code(err)
        if code == "StateMachineDoesNotExist":
            raise FollowError(f"no such state machine: {sm_arn}") from None
        if code == "ExecutionAlreadyExists":
            raise FollowError(f"an execution named {name} already exists for {sm_arn}") from None
        raise aws_error(err, "cannot start the execution") from None
    starting.arn, starting.started = arn, True
    return arn


def interrupted_start(starting: Starting, args: argparse.Namespace) -> str:
    """What Ctrl-C left behind while the execution was being started."""
    if starting.started and starting.arn:
        return f"interrupted; execution {starting.arn} started and goes on: {hint(starting.arn, args)}"
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


def hint(arn: str, args: argparse.Namespace) -> str:
    """How to follow and how to stop ``arn``, in the region the command used."""
    region = f" --region {args.region}" if args.region else ""
    return (
        f"jobsync status {arn} --follow{region}\n"
        f"to stop it: aws stepfunctions stop-execution --execution-arn {arn}{region}"
    )
