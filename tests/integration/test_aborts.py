"""Aborts and timeouts leave nothing behind.

An execution stopped by hand, timed out at the state-machine level, or failed
outside the loop runs no Catch, so its Cleanup state never runs. template.yaml
routes its "Step Functions Execution Status Change" event to the cleanup
Lambda. Here the real state machine runs and is stopped mid-run; the event
the service would emit (built from DescribeExecution) goes to the real
cleanup handler.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.local import LocalJobsync
from harness.sfn.service import status_change_event
from jobsync.run.manifests import job_labels, job_name
from tests.cfn import load_template
from tests.support.kube import PYTORCHJOBS
from tests.support.lambdas import QUIET, invoke, load_event

LONG = {"pending_s": 30, "run_s": 6 * 3600}

# A template the local bucket does not hold: submit fails, as for a template removed after the run began.
MISSING_TEMPLATE = "s3://jobsync-templates-123456789012/jobsync/templates/missing.yaml"


def execution_arn(local: LocalJobsync, name: str) -> str:
    return local._state_machine_arn.replace(":stateMachine:", ":execution:") + ":" + name


def status_change(description: dict[str, Any]) -> dict[str, Any]:
    """The EventBridge event Step Functions emits when an execution ends, from DescribeExecution."""
    return status_change_event(description)


def cleanup(event: dict[str, Any]) -> dict[str, Any]:
    return invoke("cleanup", event)


def run_and_abort(local: LocalJobsync, execution_input: dict[str, Any], after_s: float = 900) -> dict[str, Any]:
    """Start an execution and StopExecution it ``after_s`` into the run (mid-Wait); returns DescribeExecution."""
    name = "aborted"
    arn = execution_arn(local, name)
    t0 = local.clock.now()
    stopped: list[float] = []

    def abort(now: float) -> None:
        if not stopped and now - t0 >= after_s:
            stopped.append(now)
            local.sfn.stop(arn, error="Cancelled", cause="stopped by hand")

    local.clock.on_advance(abort)
    local.start(execution_input, name=name)
    return local.sfn.wait(arn)


def requests(local: LocalJobsync) -> list[tuple[str, int | None]]:
    return [(r.method, r.status) for r in local.api.requests]


def test_an_aborted_executions_job_is_deleted_by_the_status_change_event():
    with LocalJobsync("success", LONG, env=QUIET) as local:
        description = run_and_abort(local, load_event("run-job-input.json"))
        assert description["status"] == "ABORTED"
        assert [j["phase"] for j in local.jobs_left()] == ["RUNNING"]  # no Catch ran: the job runs on
        local.api.clear_requests()

        out = cleanup(status_change(description))

        assert out["deleted"] is True and out["reason"] == "deleted"
        assert (
            out["job"]["name"] == job_name(description["executionArn"], "pytorch-simple")
            and out["cleanup"] == "onFailure"
        )
        assert requests(local) == [("GET", 200), ("DELETE", 200)]  # the label check, then the delete
        assert local.jobs_left() == []
        assert cleanup(status_change(description))["reason"] == "already gone"  # a redelivered event is harmless


def test_cleanup_never_keeps_the_job_of_an_aborted_execution():
    with LocalJobsync("success", LONG, env=QUIET) as local:
        description = run_and_abort(local, {**load_event("run-job-input.json"), "cleanup": "never"})
        local.api.clear_requests()
        out = cleanup(status_change(description))
        assert out["deleted"] is False and out["reason"] == "cleanup is never"
        assert requests(local) == []
        assert len(local.jobs_left()) == 1


def test_a_failed_template_execution_whose_submit_created_nothing_deletes_no_job_found_by_its_label():
    # A jobTemplate input says nothing of the kind or of the name (the template's); the execution's history
    # shows no Submit answered, so no uid is known. Each allowed kind is listed by this execution's label,
    # and what is found is named, not deleted: a label alone never makes a job this execution's.
    env = {**QUIET, "JOBSYNC_ALLOWED_KINDS": "TFJob,PyTorchJob"}
    with LocalJobsync("success", env=env) as local:
        # A real execution (cleanup checks with Step Functions); its submit fails, moto's S3 having no
        # template, and a job labelled for it is put by hand, named as the template would have named it.
        arn = local.start(
            load_event("submit-template.json") | {"cleanup": "always", "jobTemplate": MISSING_TEMPLATE},
            name="from-template",
        )
        description = local.sfn.wait(arn)
        name = job_name(arn, "resnet50-imagenet")
        meta = {"name": name, "namespace": "ml-training", "labels": job_labels(arn)}
        job = {**load_event("run-job-input.json")["job"], "metadata": meta}
        before = local.api.put((*PYTORCHJOBS, "ml-training", name), job)
        stranger = {**job, "metadata": {**meta, "name": "resnet50-imagenet-0000", "labels": {"team": "vision"}}}
        local.api.put((*PYTORCHJOBS, "ml-training", "resnet50-imagenet-0000"), stranger)
        local.api.clear_requests()
        out = cleanup(status_change(description))
        assert out["deleted"] is False and out["labelled"] == [name], out
        assert out["reason"].startswith("left alone: no Submit of this execution answered, so no uid is known")
        assert f"PyTorchJob ml-training/{name}" in out["reason"]
        assert [(r.method, r.resource, r.status) for r in local.api.requests] == [
            ("GET", "tfjobs", 200),  # the list, empty
            ("GET", "pytorchjobs", 200),  # the list: named, not deleted
        ]
        assert local.api.get((*PYTORCHJOBS, "ml-training", name)) == before
        assert local.api.get((*PYTORCHJOBS, "ml-training", "resnet50-imagenet-0000")) is not None


@pytest.mark.parametrize("labels", [{}, {"team": "vision"}, "another execution"], ids=["none", "team", "other"])
def test_a_job_of_that_name_this_execution_did_not_create_is_left_alone(labels):
    with LocalJobsync("success", env=QUIET) as local:
        arn = execution_arn(local, "failed-early")
        if labels == "another execution":
            labels = job_labels(execution_arn(local, "someone-else"))
        meta = {"name": job_name(arn, "pytorch-simple"), "namespace": "ml-training", "labels": labels}
        job = {**load_event("run-job-input.json")["job"], "metadata": meta}
        before = local.api.put((*PYTORCHJOBS, "ml-training", job_name(arn, "pytorch-simple")), job)
        # A real execution that failed early: submit refuses its namespace, so it created nothing.
        local.start({**load_event("run-job-input.json"), "namespace": "elsewhere"}, name="failed-early")
        description = local.sfn.wait(arn)
        assert description["status"] == "FAILED"
        out = cleanup(status_change(description))
        assert out["deleted"] is False and "left alone" in out["reason"]
        assert local.api.get((*PYTORCHJOBS, "ml-training", job_name(arn, "pytorch-simple"))) == before
        assert not [r for r in local.api.requests if r.method == "DELETE"]


def test_a_failed_execution_that_cleaned_up_itself_changes_nothing():
    with LocalJobsync("failure", {"pending_s": 30, "run_s": 300}, env=QUIET) as local:
        result = local.run(load_event("run-job-input.json"), name="failed")
        assert result.error == "JobFailed" and result.jobs_left == []
        description = local.sfn.wait(result.execution_arn)
        local.api.clear_requests()
        out = cleanup(status_change(description))
        assert out["deleted"] is False and out["reason"] == "the execution's own Cleanup state ran: left as it decided"
        assert local.api.requests == []  # the cluster is not even asked


@pytest.mark.parametrize("status", ["SUCCEEDED", "RUNNING"])
def test_other_statuses_delete_nothing(status):
    with LocalJobsync("success", env=QUIET) as local:
        event = load_event("cleanup-execution-aborted.json")
        event["detail"]["status"] = status
        out = cleanup(event)
        assert out["deleted"] is False and local.api.requests == []


def test_the_rule_in_the_template_matches_the_event_the_service_sends():
    function = load_template()["Resources"]["CleanupFunction"]["Properties"]
    rule = function["Events"]["ExecutionEnded"]
    assert rule["Type"] == "EventBridgeRule"
    pattern = rule["Properties"]["Pattern"]
    assert pattern["detail"].pop("stateMachineArn") == [{"Ref": "RunJobStateMachine"}]  # this state machine only

    def matches(pattern: dict[str, Any], event: dict[str, Any]) -> bool:
        return all(
            matches(want, event.get(key) or {}) if isinstance(want, dict) else event.get(key) in want
            for key, want in pattern.items()
        )

    event = load_event("cleanup-execution-aborted.json")
    for status in ("ABORTED", "TIMED_OUT", "FAILED"):
        assert matches(pattern, {**event, "detail": {**event["detail"], "status": status}})
    for status in ("SUCCEEDED", "RUNNING", "PENDING_REDRIVE"):
        assert not matches(pattern, {**event, "detail": {**event["detail"], "status": status}})
