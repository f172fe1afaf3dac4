"""Cleanup for executions that ended outside the loop: aborted, timed out, or failed without reaching Cleanup.

Step Functions runs no ``Catch`` when an execution is stopped by hand
(StopExecution), reaches its own ``TimeoutSeconds``, or fails in a state that
has no Catch. The job it submitted would run on, on its GPUs, with nobody
waiting for it. EventBridge reports each such end as a "Step Functions
Execution Status Change" event; a rule (template.yaml) sends the ABORTED,
TIMED_OUT and FAILED ones of this state machine to the cleanup Lambda, which
calls :func:`cleanup_after` here.

What the event gives, and how the job is found from it:

- the job's **name**, for a ``job`` manifest in the input, is
  ``manifests.job_name(executionArn, <the manifest's metadata.name>)``: the
  name submit gave it, from the same two values. For a ``jobTemplate`` input
  the name comes from the rendered template, which may have changed since (or
  read other parameters): it is not derived but looked up, by listing each
  allowed kind with the ``jobsync.io/execution`` label of this execution (the
  Role's ``list`` verb); every job found is then checked and deleted as below;
- its **namespace** is the deployment's (submit refuses any other);
- its **kind** is the ``job`` manifest's in the execution input. For a
  ``jobTemplate`` input each allowed kind is listed, and only a job whose
  ``jobsync.io/execution`` label is this execution's is deleted;
- the input's ``cleanup`` setting is honoured: ``never`` keeps the job,
  ``onFailure`` and ``always`` delete it (the execution did not succeed).
  The input is the one DescribeExecution returns, so an event that left it
  out (EventBridge drops inputs over its size limit) is handled by the
  input's real setting.

A job that is already gone is success; a job of that name that another
execution (or a person) created is left alone. The event arrives for FAILED
executions that did run their Cleanup state too: the job is then already
gone, or kept on purpose (``never``), and nothing changes.

The event itself is only a claim: anyone allowed events:PutEvents on the
bus, or lambda:InvokeFunction on the function, can send one. So before the
cluster is asked anything, Step Functions is (DescribeExecution): the
execution must be one of this deployment's state machine
(``JOBSYNC_STATE_MACHINE_ARN``) and must really have ended as ABORTED,
TIMED_OUT or FAILED. Its input, the ``cleanup`` setting and the kind, is
taken from that answer too, not from the event.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from jobsync.errors import ClusterConfigError, InvalidInput
from jobsync.evaluation.kinds import KindSpec
from jobsync.run import manifests
from jobsync.run.cleanup import delete_if_ours, should_delete
from jobsync.run.inputs import EXECUTION_ARN, parse
from jobsync.run.loop import Cluster as _LoopCluster
from jobsync.settings import Settings


class Cluster(_LoopCluster, Protocol):
    """The loop's cluster, and a list of jobs by label (a template's job is found by its execution label)."""

    def list_jobs(self, spec: KindSpec, namespace: str, label_selector: str) -> list[dict[str, Any]]: ...


DETAIL_TYPE = "Step Functions Execution Status Change"
SOURCE = "aws.states"
ENDED_OUTSIDE_THE_LOOP = frozenset({"ABORTED", "TIMED_OUT", "FAILED"})
CLEANUP_MODES = ("onFailure", "always", "never")


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


def cleanup_after(
    event: Any, cluster: Cluster, settings: Settings, describe: Describe, cleanup_ran: CleanupRan | None = None
) -> dict[str, Any]:
    """Delete the job of an execution that ended outside the loop, if its ``cleanup`` setting asks for it.

    ``describe`` is DescribeExecution (``jobsync.runtime.describe_execution``):
    None for an execution Step Functions does not know.
    """
    change: ExecutionStatusChange = parse(ExecutionStatusChange, event)
    detail = change.detail
    arn, status = detail.executionArn, detail.status
    job: dict[str, Any] = {"namespace": settings.namespace, "name": _inline_name(arn, detail.input)}
    result: dict[str, Any] = {"execution": arn, "status": status, "job": job, "deleted": False}
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

    execution_input = _execution_input(description.get("input"))
    mode = execution_input.get("cleanup", "onFailure")
    if mode not in CLEANUP_MODES:
        mode = "onFailure"  # submit refused the input, so there is no job; the label check below still applies
    result["cleanup"] = mode
    if not should_delete(mode, None):
        return {**result, "reason": f"cleanup is {mode}"}

    candidates = _candidate_kinds(execution_input, settings)
    if not candidates:
        return {**result, "reason": "the input's kind is not allowed here: submit created nothing"}
    name = _inline_name(arn, description.get("input"))
    if name is None:
        return _cleanup_by_label(cluster, settings, candidates, arn, result)
    outcomes = []
    for spec in candidates:
        ref = {"apiVersion": spec.api_version, "kind": spec.kind, "namespace": settings.namespace, "name": name}
        deleted, reason = delete_if_ours(cluster, spec, settings.namespace, name, arn)
        if deleted:
            return {**result, "job": ref, "deleted": True, "reason": reason}
        outcomes.append((ref, reason))
    foreign = [o for o in outcomes if o[1] != "already gone"]
    ref, reason = (foreign or outcomes)[0]
    return {**result, "job": ref, "reason": reason}


def _inline_name(arn: str, text: Any) -> str | None:
    """The job's name when the execution input holds its manifest (as submit names it); None for a template."""
    try:
        manifest = _execution_input(text if isinstance(text, str) else None).get("job")
    except InvalidInput:
        return None
    return manifests.job_name(arn, manifests.manifest_name(manifest)) if isinstance(manifest, dict) else None


def _cleanup_by_label(
    cluster: Cluster, settings: Settings, candidates: list[KindSpec], arn: str, result: dict[str, Any]
) -> dict[str, Any]:
    """A template's job: found by this execution's label, kind by kind, then deleted as any other (checked first)."""
    selector = f"{manifests.EXECUTION_LABEL}={manifests.execution_label(arn)}"
    deleted_refs: list[tuple[dict[str, Any], str]] = []
    outcomes: list[tuple[dict[str, Any], str]] = []
    for spec in candidates:
        for found in cluster.list_jobs(spec, settings.namespace, selector):
            name = str((found.get("metadata") or {}).get("name", ""))
            ref = {"apiVersion": spec.api_version, "kind": spec.kind, "namespace": settings.namespace, "name": name}
            deleted, reason = delete_if_ours(cluster, spec, settings.namespace, name, arn)
            (deleted_refs if deleted else outcomes).append((ref, reason))
    if deleted_refs:
        ref, reason = deleted_refs[0]
        return {**result, "job": ref, "deleted": True, "reason": reason}
    if outcomes:
        ref, reason = outcomes[0]
        return {**result, "job": ref, "reason": reason}
    return {**result, "reason": "already gone (no job carries this execution's label)"}


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
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        raise InvalidInput("detail.input: not JSON (the execution input, as a JSON string)") from None
    if not isinstance(value, dict):
        raise InvalidInput(f"detail.input: must be a JSON object, got {type(value).__name__}")
    return value


def _candidate_kinds(execution_input: dict[str, Any], settings: Settings) -> list[KindSpec]:
    job = execution_input.get("job")
    if isinstance(job, dict):
        api_version, kind = job.get("apiVersion"), job.get("kind")
        spec = settings.allowed(api_version, kind) if isinstance(api_version, str) and isinstance(kind, str) else None
        return [spec] if spec else []
    # A jobTemplate (or no usable job): the template's kind is not in the event; try each allowed one.
    return list(settings.allowed_kinds)
