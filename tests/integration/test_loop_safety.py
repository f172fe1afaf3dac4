"""Losing sight of a job is not the job failing: faults that must neither kill a healthy job nor hide a failed one.

Each test runs a whole execution through the real state machine (LocalJobsync)
against the emulated API, injects one fault, and asserts the verdict and what
is left in the cluster. docs/reliability.md lists each row.
"""

from __future__ import annotations

import json

import pytest

from harness.kubeapi import Fault
from harness.local import LocalJobsync
from tests.conftest import load_event

QUIET = {"POWERTOOLS_LOG_LEVEL": "WARNING", "POWERTOOLS_METRICS_DISABLED": "true"}
WATCH = {**QUIET, "JOBSYNC_WATCH_SECONDS": "600"}
PYTORCHJOBS = ("kubeflow.org", "v1", "pytorchjobs")
SHORT = {"pending_s": 30, "run_s": 300}
JOB_GET = "/pytorchjobs/"  # a path fragment only a request for one job has
NOISE = ("", "v1", "configmaps", "ml-training", "noise")
GRACE = 90  # past Settings.not_found_grace_seconds (60 s)
WATCH_WINDOW = 2000  # the emulator's watch cache keeps this many events, as etcd keeps a compaction window


def execution_input(**overrides):
    return {**load_event("run-job-input.json"), **overrides}


def created(local: LocalJobsync) -> list:
    return [r for r in local.api.requests if r.method == "POST" and r.resource == "pytorchjobs" and r.status == 201]


def deletes(local: LocalJobsync) -> list:
    return [r for r in local.api.requests if r.method == "DELETE"]


def errors(local: LocalJobsync, function: str | None = None) -> list[str]:
    return [
        c.error["errorType"]
        for c in local.sfn.invocations
        if c.error and (function is None or c.function_name == function)
    ]


def when_running(local: LocalJobsync, action) -> list[bool]:
    """Run ``action()`` once, when jobsync has seen the job RUNNING, past the not-found grace after submit.

    Returns a list that holds True once the action ran.
    """
    done: list[bool] = []

    def hook(now: float) -> None:
        if done:
            return
        calls = [c for c in local.sfn.invocations if isinstance(c.result, dict)]
        polls = [c for c in calls if c.function_name == "jobsync-status"]
        if polls and polls[-1].result["phase"] == "RUNNING" and now - calls[0].at > GRACE:
            done.append(True)
            action()

    local.clock.on_advance(hook)
    return done


def unrelated_writes(local: LocalJobsync, count: int = WATCH_WINDOW + 100) -> None:
    """Enough writes to other objects that the job's own resourceVersion leaves the watch window."""
    for i in range(count):
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "noise", "namespace": "ml-training"}}
        local.api.put(NOISE, {**body, "data": {"i": str(i)}})


def watches(local: LocalJobsync) -> list:
    return [r for r in local.api.requests if r.method == "GET" and r.verb == "watch"]


# --- 1. a watch answered 410 Gone -------------------------------------------------------


def test_a_watch_from_a_compacted_resource_version_is_expected_and_the_job_lives():
    # The stream answers with an ERROR event (410 Expired), as an API server does after compaction.
    with LocalJobsync("success", {"pending_s": 60, "run_s": 3600}, env=WATCH) as local:
        noisy = when_running(local, lambda: unrelated_writes(local))
        result = local.run(execution_input(), name="watch-expired")
        assert noisy
        assert result.status == "SUCCEEDED", result.cause
        assert errors(local) == []
        assert len(created(local)) == 1
        assert [j["phase"] for j in result.jobs_left] == ["SUCCEEDED"]
        assert deletes(local) == []
        # After a 410 the watch starts again from now (no resourceVersion: the server sends the current
        # object first), never from the job's own expired version.
        versions = [r.query.get("resourceVersion") for r in watches(local)]
        assert None in versions or "" in versions


def test_a_watch_refused_with_http_410_keeps_the_verdict_and_the_job():
    with LocalJobsync("success", {"pending_s": 60, "run_s": 3600}, env=WATCH) as local:
        gone = Fault.status(410, "Expired", "too old resource version: 5 (2100)")
        when_running(local, lambda: local.api.inject(gone, method="GET", path_contains="watch=", times=1))
        result = local.run(execution_input(), name="watch-410")
        assert result.status == "SUCCEEDED", result.cause
        assert errors(local) == []
        assert [j["phase"] for j in result.jobs_left] == ["SUCCEEDED"]
        assert deletes(local) == []
        assert [r.status for r in watches(local)].count(410) == 1


# --- 2. one 404 mid-run -------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        # What an API server answers for a resource type while its CRD is being re-established.
        "the server could not find the requested resource",
        # An object's 404 from a lagging replica: a second look finds the job.
        'pytorchjobs.kubeflow.org "{name}" not found',
    ],
    ids=["resource-type", "object"],
)
def test_one_404_mid_run_does_not_end_the_run_or_delete_the_job(message):
    with LocalJobsync("success", {"pending_s": 30, "run_s": 1800}, env=QUIET) as local:

        def storm() -> None:
            (job,) = local.api.objects(*PYTORCHJOBS)
            text = message.format(name=job["metadata"]["name"])
            local.api.inject(Fault.status(404, "NotFound", text), method="GET", path_contains=JOB_GET, times=1)

        stormed = when_running(local, storm)
        result = local.run(execution_input(), name="one-404")
        assert stormed
        assert [r.status for r in local.api.requests if r.verb == "get"].count(404) == 1
        assert result.status == "SUCCEEDED", result.cause
        assert [j["phase"] for j in result.jobs_left] == ["SUCCEEDED"]
        assert deletes(local) == []


def test_a_job_really_gone_mid_run_is_still_not_found():
    # The confirmation does not hide a real disappearance: deleted by hand while it runs.
    with LocalJobsync("success", {"pending_s": 30, "run_s": 3600}, env=QUIET) as local:

        def delete_by_hand() -> None:
            (job,) = local.api.objects(*PYTORCHJOBS)
            local.api.delete((*PYTORCHJOBS, "ml-training", job["metadata"]["name"]))

        when_running(local, delete_by_hand)
        result = local.run(execution_input(), name="deleted-by-hand")
        assert result.error == "JobNotFound"
        assert "last seen RUNNING" in json.loads(result.cause)["message"]


# --- 3. a jobsync error is not a job failure ------------------------------------------------

STATUS_ATTEMPTS = 7  # the first try and the Status state's 6 retries


@pytest.mark.parametrize(
    "inject",
    [
        pytest.param(
            lambda local: local.sfn.inject_lambda_error(
                "jobsync-status", "Lambda.TooManyRequestsException", times=STATUS_ATTEMPTS
            ),
            id="lambda-throttled",
        ),
        pytest.param(
            lambda local: local.api.inject(
                Fault.unavailable(), method="GET", path_contains=JOB_GET, times=STATUS_ATTEMPTS
            ),
            id="cluster-unavailable",
        ),
    ],
)
def test_transient_trouble_past_the_retries_keeps_the_loop_alive(inject):
    with LocalJobsync("success", {"pending_s": 30, "run_s": 1800}, env=QUIET) as local:
        troubled = when_running(local, lambda: inject(local))
        result = local.run(execution_input(), name="throttled-past-retries")
        assert troubled
        assert len(errors(local, "jobsync-status")) == STATUS_ATTEMPTS
        assert result.status == "SUCCEEDED", result.cause
        assert [j["phase"] for j in result.jobs_left] == ["SUCCEEDED"]
        assert deletes(local) == []


def test_transient_trouble_that_outlasts_the_deadline_ends_the_run_and_keeps_the_job():
    with LocalJobsync("success", {"pending_s": 30, "run_s": 10 * 3600}, env=QUIET) as local:
        when_running(local, lambda: local.api.inject(Fault.unavailable(), method="GET", times=100_000))
        result = local.run(execution_input(timeoutSeconds=3600), name="trouble-to-the-deadline")
        assert result.status == "FAILED" and result.error == "TransientClusterError"
        assert [j["phase"] for j in result.jobs_left] == ["RUNNING"]  # nothing is known of it: left alone
        assert deletes(local) == []


@pytest.mark.parametrize(("cleanup", "kept"), [("onFailure", True), ("always", False)])
def test_a_permanent_error_fails_the_run_and_deletes_the_job_only_under_always(cleanup, kept):
    with LocalJobsync("success", {"pending_s": 30, "run_s": 3600}, env=QUIET) as local:
        denied = Fault.forbidden()
        # One denial is enough (ClusterAccessDenied is not retried); cleanup's own GET then reads the labels.
        when_running(local, lambda: local.api.inject(denied, method="GET", path_contains=JOB_GET, times=1))
        result = local.run(execution_input(cleanup=cleanup), name=f"denied-{cleanup.lower()}")
        assert result.status == "FAILED" and result.error == "ClusterAccessDenied"
        assert [j["phase"] for j in result.jobs_left] == (["RUNNING"] if kept else [])
        assert len(deletes(local)) == (0 if kept else 1)


# --- 5. a DELETE whose answer is lost -------------------------------------------------------

TIMEOUTS_03 = {**QUIET, "JOBSYNC_CONNECT_TIMEOUT_SECONDS": "2", "JOBSYNC_READ_TIMEOUT_SECONDS": "0.3"}


def test_a_delete_whose_answer_stalled_is_reported_as_deleted():
    # The API deletes the job, then its answer stalls past the client's read timeout: the DELETE
    # that follows answers 404 for the uid this execution just deleted.
    with LocalJobsync("failure", SHORT, env=TIMEOUTS_03) as local:
        local.api.inject(Fault.stall_after(0.6), method="DELETE", times=1)
        result = local.run(execution_input(), name="delete-answer-lost")
        assert result.error == "JobFailed"
        assert json.loads(result.cause)["deleted"] is True
        assert [r.status for r in deletes(local)] == [200, 404]
        assert result.jobs_left == []
