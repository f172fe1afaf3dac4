"""Cleanup for executions that ended outside the loop: aborted, timed out, or failed without reaching Cleanup.

Step Functions runs no ``Catch`` when an execution is stopped by hand
(StopExecution), reaches its own ``TimeoutSeconds``, or fails in a state that
has no Catch. The job it submitted would run on, on its GPUs, with nobody
waiting for it. EventBridge reports each such end as a "Step Functions
Execution Status Change" event; a rule (template.yaml) sends the ABORTED,
TIMED_OUT and FAILED ones of this state machine (RunJobs' children among
them: each is a RunJob execution) to the cleanup Lambda, which calls
:func:`cleanup_after` here.

The event itself is only a claim: anyone allowed events:PutEvents on the
bus, or lambda:InvokeFunction on the function, can send one. So before the
cluster is asked anything, Step Functions is (DescribeExecution): the
execution must be one of this deployment's state machine
(``JOBSYNC_STATE_MACHINE_ARN``) and must really have ended as ABORTED,
TIMED_OUT or FAILED. Its ``cleanup`` setting is taken from that answer's
input (an event may leave the input out: EventBridge drops inputs over its
size limit), not from the event.

Which job is the execution's own is read from its history
(GetExecutionHistory): the answer of its Submit task (``TaskSucceeded``, or
``LambdaFunctionSucceeded``) holds the job's kind, name and **uid**. Only that
object is deleted, after a GET that checks its label and uid, by a DELETE
with the uid as precondition. Never a job found by its name or by the
``jobsync.io/execution`` label alone: a person may have applied a copy of the
job (``kubectl get -o yaml``, renamed), which carries the same labels, or
applied it again under the same name (another uid). Such an object is left
alone and reported. The history is read oldest first, and only as far as the
Submit state: it is among the first events (its retries included), so one
page answers.

When the history shows no Submit that answered:

- Submit never ran (the input was refused before it, or the execution was
  stopped first): there is no job, and the cluster is not asked;
- Submit ran and no attempt answered (each was refused, timed out, or the
  execution was stopped while one was in flight): a job may exist all the
  same, created by an attempt whose answer was lost, and it carries the
  execution's label. No uid is known, so nothing is deleted: the jobs that
  carry the label are listed and named in the answer (``labelled``) and the
  log, for a person to check and delete (docs/reliability.md).

A job that is already gone is success. The event arrives for FAILED
executions that did run their Cleanup state too; their own Cleanup decided,
and nothing changes.

An execution stopped with the error ``KEEP_JOB_ERROR`` (``jobsync stop
--keep-job``) keeps its job, whatever its ``cleanup`` setting says: the person
who stopped it asked to. Keeping is always safe; only a deletion needs the
checks above. The error is Step Functions' record of the stop (DescribeExecution,
or the history's ExecutionAborted event), not the event's claim.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jobsync.aws.executions import History
from jobsync.bodies import meta
from jobsync.core.ours import EXECUTION_LABEL, allowed_spec, execution_label
from jobsync.core.state import EXECUTION_ARN, JobRef
from jobsync.errors import ClusterConfigError, InvalidInput
from jobsync.evaluation.kinds import KindSpec
from jobsync.run.cleanup import delete_if_ours, should_delete
from jobsync.run.inputs import parse
from jobsync.run.loop import Cluster as _LoopCluster
from jobsync.settings import Settings


class Cluster(_LoopCluster, Protocol):
    """The loop's cluster, and a list of jobs by label (to name a job whose uid no Submit answered with)."""

    def list_jobs(self, spec: KindSpec, namespace: str, label_selector: str) -> list[dict[str, Any]]: ...


DETAIL_TYPE = "Step Functions Execution Status Change"
SOURCE = "aws.states"
ENDED_OUTSIDE_THE_LOOP = frozenset({"ABORTED", "TIMED_OUT", "FAILED"})
CLEANUP_MODES = ("onFailure", "always", "never")
SUBMIT_STATE = "Submit"  # statemachine/run_job.asl.json
# The StopExecution error that asks cleanup to keep the job (jobsync stop --keep-job).
KEEP_JOB_ERROR = "jobsync.KeepJob"
# The events that carry a task's answer (lambda:invoke, or a Lambda ARN as the Resource), and their details.
_ANSWERS = {
    "TaskSucceeded": "taskSucceededEventDetails",
    "LambdaFunctionSucceeded": "lambdaFunctionSucceededEventDetails",
}


class ExecutionDetail(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    executionArn: str = Field(pattern=EXECUTION_ARN)
    stateMachineArn: str | None = None
    status: str
    input: str | None = None


class ExecutionStatusChange(BaseModel):
    """The parts of the EventBridge event cleanup reads."""

    model_config = ConfigDict(extra="ignore", strict=True, populate_by_name=True)

    detail_type: Literal["Step Functions Execution Status Change"] = Field(alias="detail-type")
    source: Literal["aws.states"]
    detail: ExecutionDetail


def is_execution_event(event: Any) -> bool:
    """Whether ``event`` is an EventBridge event (rather than the state machine's loop state)."""
    return isinstance(event, dict) and "detail-type" in event


Describe = Callable[[str], "dict[str, Any] | None"]
CleanupRan = Callable[[str], bool]
StoppedWith = Callable[[str], "str | None"]


@dataclass(frozen=True)
class Submitted:
    """What an execution's history says of its Submit state: whether it ran, and the job it answered with."""

    ran: bool
    job: JobRef | None = None


def cleanup_after(
    event: Any,
    cluster: Cluster,
    settings: Settings,
    describe: Describe,
    history: History,
    cleanup_ran: CleanupRan | None = None,
    stopped: StoppedWith | None = None,
) -> dict[str, Any]:
    """Delete the job of an execution that ended outside the loop, if its ``cleanup`` setting asks for it.

    ``describe`` is DescribeExecution (``jobsync.runtime.describe_execution``):
    None for an execution Step Functions does not know. ``history`` is
    GetExecutionHistory (``jobsync.aws.executions.history_reader``). ``stopped``
    gives the error a StopExecution recorded (``jobsync.aws.executions.stopped_with``).
    """
    change: ExecutionStatusChange = parse(ExecutionStatusChange, event)
    detail = change.detail
    arn, status = detail.executionArn, detail.status
    result: dict[str, Any] = {"execution": arn, "status": status, "job": None, "deleted": False}
    if status not in ENDED_OUTSIDE_THE_LOOP:
        return {**result, "reason": f"the execution is {status}: nothing to clean up"}
    _execution_input(detail.input)  # a malformed event is refused by name, before any request

    description, why = _verified(arn, settings, describe)
    if description is None:
        return {**result, "reason": f"{why}: left alone"}
    status = result["status"] = str(description.get("status"))
    if status not in ENDED_OUTSIDE_THE_LOOP:
        return {**result, "reason": f"Step Functions says the execution is {status}: left alone"}
    if status == "FAILED" and cleanup_ran is not None and cleanup_ran(arn):
        # Its own Cleanup state already did what the cleanup setting says; a run that lost sight of
        # its job (ERROR) kept it on purpose, and this event must not delete it after all.
        return {**result, "reason": "the execution's own Cleanup state ran: left as it decided"}

    if status == "ABORTED" and _stopped_error(arn, description, stopped) == KEEP_JOB_ERROR:
        submitted = submitted_job(history(arn), arn)
        result["job"] = submitted.job.model_dump() if submitted.job is not None else None
        return {**result, "cleanup": "kept", "reason": f"stopped with {KEEP_JOB_ERROR} (jobsync stop --keep-job): kept"}

    execution_input = _execution_input(description.get("input"))
    mode = execution_input.get("cleanup", "onFailure")
    if mode not in CLEANUP_MODES:
        mode = "onFailure"  # submit refused the input, so there is no job; the history below says so
    result["cleanup"] = mode
    if not should_delete(mode, None):
        return {**result, "reason": f"cleanup is {mode}"}

    submitted = submitted_job(history(arn), arn)
    if not submitted.ran:
        return {**result, "reason": "no job: the execution never reached Submit"}
    job = submitted.job
    if job is None or not job.uid:
        return _no_known_uid(cluster, settings, execution_input, arn, result)
    uid: str = job.uid
    result["job"] = job.model_dump()
    try:
        spec = allowed_spec(job, settings)  # as Submit allowed it; a deployment changed since touches nothing
    except InvalidInput as exc:
        return {**result, "reason": f"left alone: {exc}"}
    deleted, reason = delete_if_ours(cluster, spec, job.namespace, job.name, arn, uid)
    return {**result, "deleted": deleted, "reason": reason}


def _stopped_error(arn: str, description: dict[str, Any], stopped: StoppedWith | None) -> str | None:
    """The error the execution was stopped with: DescribeExecution's, else its history's ExecutionAborted's."""
    error = description.get("error")
    if isinstance(error, str) and error:
        return error
    return stopped(arn) if stopped is not None else None


def submitted_job(events: Iterable[dict[str, Any]], arn: str) -> Submitted:
    """Whether the Submit state ran, and the job its answer named (with its uid), from the history oldest first.

    RunJob has no parallel branch: the events between entering Submit and
    entering the next state are Submit's (its attempts and retries). Reading
    stops there, or at the answer.
    """
    ran = False
    current: str | None = None
    for event in events:
        entered = event.get("stateEnteredEventDetails")
        if isinstance(entered, dict):
            if ran:
                break  # past Submit: no answer came
            current = entered.get("name")
            ran = current == SUBMIT_STATE
            continue
        details = event.get(_ANSWERS.get(str(event.get("type")), ""))
        if current == SUBMIT_STATE and isinstance(details, dict):
            job = _answered_job(details.get("output"), arn)
            if job is not None:
                return Submitted(ran=True, job=job)
    return Submitted(ran=ran)


def _answered_job(output: Any, arn: str) -> JobRef | None:
    """The job Submit's answer names: lambda:invoke wraps it in ``Payload``, a plain Lambda task does not."""
    try:
        answer = json.loads(output) if isinstance(output, str) else None
    except ValueError:
        return None  # cut short (outputDetails.truncated): no uid can be read
    if isinstance(answer, dict) and isinstance(answer.get("Payload"), dict):
        answer = answer["Payload"]
    if not isinstance(answer, dict) or answer.get("execution") != arn:
        return None
    try:
        return JobRef.model_validate(answer.get("job"))
    except ValidationError:
        return None


def _no_known_uid(
    cluster: Cluster, settings: Settings, execution_input: dict[str, Any], arn: str, result: dict[str, Any]
) -> dict[str, Any]:
    """Submit ran and no attempt answered: name the jobs labelled for this execution, delete none of them."""
    selector = f"{EXECUTION_LABEL}={execution_label(arn)}"
    found = [
        (spec.kind, meta(job).name)
        for spec in _candidate_kinds(execution_input, settings)
        for job in cluster.list_jobs(spec, settings.namespace, selector)
    ]
    reason = "left alone: no Submit of this execution answered, so no uid is known"
    if not found:
        return {**result, "labelled": [], "reason": f"{reason}, and no job carries the label {selector}"}
    names = ", ".join(f"{kind} {settings.namespace}/{name}" for kind, name in found)
    return {
        **result,
        "labelled": [name for _, name in found],
        "reason": f"{reason}; labelled {selector}, perhaps created by an attempt whose answer was lost: {names} "
        "(check each, and delete by hand the one that is this execution's)",
    }


def _verified(arn: str, settings: Settings, describe: Describe) -> tuple[dict[str, Any] | None, str]:
    """(DescribeExecution of ``arn``, "") when it is an execution of this deployment's state machine;
    else (None, why not)."""
    machine = settings.state_machine_arn
    if not machine:
        raise ClusterConfigError(
            "environment variable JOBSYNC_STATE_MACHINE_ARN is not set: cleanup cannot check with Step "
            "Functions that an execution ended, so it acts on no execution event"
        )
    executions = machine.replace(":stateMachine:", ":execution:", 1) + ":"
    if not arn.startswith(executions):
        return None, "not an execution of this deployment's state machine"
    description = describe(arn)
    if description is None:
        return None, "Step Functions knows no such execution"
    if description.get("stateMachineArn") != machine:
        return None, "not an execution of this deployment's state machine"
    return description, ""


def _execution_input(text: str | None) -> dict[str, Any]:
    """The execution input as an object; {} for one that is not (the state machine refuses it before Submit)."""
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        raise InvalidInput("detail.input: not JSON (the execution input, as a JSON string)") from None
    return value if isinstance(value, dict) else {}


def _candidate_kinds(execution_input: dict[str, Any], settings: Settings) -> list[KindSpec]:
    job = execution_input.get("job")
    if isinstance(job, dict):
        api_version, kind = job.get("apiVersion"), job.get("kind")
        spec = settings.allowed(api_version, kind) if isinstance(api_version, str) and isinstance(kind, str) else None
        return [spec] if spec else []
    # A jobTemplate (or no usable job): the template's kind is not in the event; try each allowed one.
    return list(settings.allowed_kinds)
