"""Cleanup after an execution event deletes the uid its Submit returned, never a job found by label or name alone.

A person copies a running job (``kubectl get -o yaml``), renames it and applies the copy: it carries the
execution's labels, ``jobsync.io/execution`` included, but it is not the object Submit created. The real state
machine runs on the local run; the cleanup function reads the uid from the execution's own history
(GetExecutionHistory) and the copy is left, still there, whatever way the execution ended.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from harness.kubeapi import KubeAPI
from harness.local import LocalJobsync
from jobsync.run.manifests import EXECUTION_LABEL, execution_label
from tests.integration.test_aborts import LONG, cleanup, run_and_abort, status_change
from tests.support.kube import NAMESPACE, PYTORCHJOBS
from tests.support.lambdas import QUIET, load_event

TEMPLATE_INPUT = load_event("run-job-template-input.json")


@pytest.fixture
def local() -> Iterator[LocalJobsync]:
    with LocalJobsync("success", LONG, env=QUIET) as run:
        yield run


def kubectl(api: KubeAPI) -> client.CustomObjectsApi:
    """The real kubernetes client over HTTP, as a person's kubectl reaches the cluster."""
    cfg = client.Configuration()
    cfg.host = api.url
    return client.CustomObjectsApi(client.ApiClient(cfg))


def apply_renamed_copy(api: KubeAPI, job: dict[str, Any], name: str) -> dict[str, Any]:
    """``kubectl get -o yaml``, the name changed, the server's fields dropped, ``kubectl apply``: same labels."""
    body = copy.deepcopy(job)
    body.pop("status", None)
    meta = body["metadata"]
    for field in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
        meta.pop(field, None)
    meta["name"] = name
    group, version, plural = PYTORCHJOBS
    created: dict[str, Any] = kubectl(api).create_namespaced_custom_object(group, version, NAMESPACE, plural, body)
    return created


def reapply_under_the_same_name(api: KubeAPI, job: dict[str, Any]) -> dict[str, Any]:
    """``kubectl get -o yaml > f; kubectl delete; kubectl apply -f f``: the same name and labels, a new uid."""
    group, version, plural = PYTORCHJOBS
    kubectl(api).delete_namespaced_custom_object(group, version, NAMESPACE, plural, job["metadata"]["name"])
    return apply_renamed_copy(api, job, job["metadata"]["name"])


def uids(api: KubeAPI) -> list[str]:
    return sorted(job["metadata"]["uid"] for job in api.objects(*PYTORCHJOBS))


def labelled_for(arn: str, job: dict[str, Any]) -> bool:
    return (job["metadata"].get("labels") or {}).get(EXECUTION_LABEL) == execution_label(arn)


def copy_once_it_exists(local: LocalJobsync, name: str, copies: list[dict[str, Any]], prefix: str) -> None:
    """On the virtual clock: as soon as a job named ``prefix...`` exists, a person applies a renamed copy of it."""
    assert local.api is not None
    api = local.api

    def look(_now: float) -> None:
        if copies:
            return
        found = [j for j in api.objects(*PYTORCHJOBS) if j["metadata"]["name"].startswith(prefix)]
        if found:
            copies.append(apply_renamed_copy(api, found[0], name))

    local.clock.on_advance(look)


def cleanup_results(local: LocalJobsync) -> list[dict[str, Any]]:
    """What the cleanup function answered to the status change events the stack's rule delivered."""
    assert local.sfn is not None
    calls = [c for c in local.sfn.invocations if c.function_name == "jobsync-cleanup" and "detail" in (c.event or {})]
    return [c.result for c in calls]


def test_an_aborted_template_execution_deletes_its_own_job_and_leaves_a_renamed_copy(local):
    description = run_and_abort(local, TEMPLATE_INPUT)
    assert local.api is not None
    (own,) = local.api.objects(*PYTORCHJOBS)
    mine = own["metadata"]["uid"]
    person = apply_renamed_copy(local.api, own, "pytorch-mnist-by-hand")
    assert labelled_for(description["executionArn"], person)  # the copy carries the execution's label

    out = cleanup(status_change(description))

    assert out["deleted"] is True and out["reason"] == "deleted", out
    assert out["job"]["name"] == own["metadata"]["name"] and out["job"]["uid"] == mine
    assert uids(local.api) == [person["metadata"]["uid"]]  # the copy is still there
    again = cleanup(status_change(description))
    assert again["deleted"] is False and again["reason"] == "already gone"
    assert uids(local.api) == [person["metadata"]["uid"]]


def test_the_uid_comes_from_the_submit_attempt_that_answered_after_one_whose_answer_was_lost(local):
    # The first Submit creates the job and its answer is lost (the function timed out); the retry meets 409,
    # adopts the job and answers with its uid.
    assert local.sfn is not None and local.api is not None
    local.sfn.inject_lambda_timeout("jobsync-submit", times=1, call_handler=True)
    description = run_and_abort(local, TEMPLATE_INPUT)
    (own,) = local.api.objects(*PYTORCHJOBS)
    person = apply_renamed_copy(local.api, own, "pytorch-mnist-by-hand")

    out = cleanup(status_change(description))

    assert out["deleted"] is True and out["job"]["uid"] == own["metadata"]["uid"], out
    assert uids(local.api) == [person["metadata"]["uid"]]


def test_a_job_reapplied_under_the_same_name_is_not_the_object_submit_created(local):
    # An inline manifest: the name is the one submit gave it; the object behind it now is another one.
    description = run_and_abort(local, load_event("run-job-input.json"))
    assert local.api is not None
    (own,) = local.api.objects(*PYTORCHJOBS)
    person = reapply_under_the_same_name(local.api, own)
    assert labelled_for(description["executionArn"], person)
    local.api.clear_requests()

    out = cleanup(status_change(description))

    assert out["deleted"] is False, out
    assert out["reason"] == f"left alone: not the object Submit created (uid {own['metadata']['uid']})"
    assert uids(local.api) == [person["metadata"]["uid"]]
    assert not [r for r in local.api.requests if r.method == "DELETE"]


def test_a_failed_execution_whose_submit_never_answered_deletes_nothing_and_names_the_labelled_jobs():
    # Every Submit attempt creates (or adopts) the job and loses its answer: Submit fails, the execution FAILS
    # without its Cleanup state, and the stack's rule sends the status change to the cleanup function. No
    # uid is known, so nothing is deleted on its label: the jobs that carry it are named for a person to act.
    with LocalJobsync("success", LONG, env=QUIET, execution_events=True) as local:
        assert local.sfn is not None and local.api is not None
        local.sfn.inject_lambda_timeout("jobsync-submit", times=7, call_handler=True)
        copies: list[dict[str, Any]] = []
        copy_once_it_exists(local, "pytorch-mnist-by-hand", copies, "pytorch-mnist-")
        arn = local.start(TEMPLATE_INPUT, name="submit-lost")
        description = local.sfn.wait(arn)
        local.sfn.settle()
        assert (description["status"], description["error"]) == ("FAILED", "Sandbox.Timedout")
        jobs = local.api.objects(*PYTORCHJOBS)
        assert len(jobs) == 2 and copies and all(labelled_for(arn, j) for j in jobs)

        (out,) = cleanup_results(local)

        assert out["status"] == "FAILED" and out["deleted"] is False, out
        assert out["reason"].startswith("left alone: no Submit of this execution answered, so no uid is known")
        assert sorted(out["labelled"]) == sorted(j["metadata"]["name"] for j in jobs)
        assert uids(local.api) == sorted(j["metadata"]["uid"] for j in jobs)  # both still there


def test_an_execution_that_never_reached_submit_asks_the_cluster_nothing(local):
    assert local.api is not None and local.sfn is not None
    arn = local.sfn.start(local._state_machine_arn, ["not", "an", "object"], name="never-submitted")
    description = local.sfn.wait(arn)
    assert description["status"] == "FAILED"
    local.api.clear_requests()

    out = cleanup(status_change(description))

    assert out["deleted"] is False and out["reason"] == "no job: the execution never reached Submit", out
    assert local.api.requests == []


def test_a_run_jobs_child_aborted_by_fail_fast_deletes_its_own_job_and_leaves_a_copy_beside_it():
    execution_input = load_event("run-jobs-failfast-input.json")
    template_item = {k: v for k, v in TEMPLATE_INPUT.items() if k != "cleanup"} | {"cleanup": "onFailure"}
    execution_input["jobs"][0] = template_item  # runs on (success, 60 + 1800 s) while the failing one fails
    with LocalJobsync(env=QUIET, execution_events=True) as local:
        assert local.api is not None
        copies: list[dict[str, Any]] = []
        copy_once_it_exists(local, "pytorch-mnist-by-hand", copies, "pytorch-mnist-")
        result = local.run_jobs(execution_input)
        assert (result.status, result.error) == ("FAILED", "JobFailed")
        children = {arn: local.sfn.wait(arn) for arn in local.children(result.execution_arn)} if local.sfn else {}
        (template_child,) = [
            arn for arn, d in children.items() if json.loads(d["input"]).get("jobTemplate") and d["status"] == "ABORTED"
        ]
        by_execution = {r["execution"]: r for r in cleanup_results(local)}

        out = by_execution[template_child]

        assert out["deleted"] is True and out["job"]["name"].startswith("pytorch-mnist-"), out
        assert copies and uids(local.api) == [copies[0]["metadata"]["uid"]]  # only the person's copy is left
